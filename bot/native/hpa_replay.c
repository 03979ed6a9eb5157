/* The Kubernetes HPA controller walked step by step: the C twin of
 * bot/recommend/replay/controller.py's ``replay_exact`` (read its module doc for the model and
 * its upstream sources). Every floating-point operation is the one the Python walk does, in the
 * same order, so both give the same replicas to the bit (tests/native).
 *
 * usage:  metrics pointers to n doubles (total usage per step, NaN where unknown);
 * request, target: per metric (request > 0, target > 0: the caller drops the others);
 * out: n int64 replicas; reach: the largest value the maxReplicas clamp met.
 * Returns 0, or -1 when the window is longer than WINDOW_MAX steps.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#define TOLERANCE 0.1
#define SCALE_UP_PODS 4
#define WINDOW_MAX 4096

/* floor(x) for the values a walk meets: truncation where that is floor, libm elsewhere. */
static inline double floor_of(double x) {
    if (x >= 0.0 && x < 9.0e18) return (double)(int64_t)x;
    return floor(x);
}

/* ceil(x) likewise. */
static inline double ceil_of(double x) {
    if (x >= 0.0 && x < 9.0e18) {
        double t = (double)(int64_t)x;
        return t < x ? t + 1.0 : t;
    }
    return ceil(x);
}

static double scale_up_limit(double replicas, int64_t syncs) {
    for (int64_t s = 0; s < syncs; s++) {
        double by_pods = replicas + SCALE_UP_PODS;
        double by_percent = replicas * 2.0; /* Percent 100: R * 200 // 100 on whole R */
        replicas = by_pods > by_percent ? by_pods : by_percent;
    }
    return replicas;
}

int tb_hpa_replay(const double *const *usage, const double *request, const double *target,
                  int64_t metrics, int64_t n, int64_t min_replicas, int64_t max_replicas,
                  int64_t initial, int64_t syncs, int64_t window, int64_t *out,
                  double *reach) {
    double recent[WINDOW_MAX];
    if (window < 1 || window > WINDOW_MAX) return -1;
    double start = (double)(initial > min_replicas ? initial : min_replicas);
    double reached = start;
    double replicas = start < (double)max_replicas ? start : (double)max_replicas;
    double low = 1.0 - TOLERANCE, high = 1.0 + TOLERANCE;
    double lo_clamp = (double)min_replicas, hi_clamp = (double)max_replicas;
    for (int64_t k = 0; k < n; k++) out[k] = (int64_t)replicas;
    if (n == 0 || metrics == 0) {
        *reach = reached;
        return 0;
    }
    /* Per metric, the whole percentages u with low <= u / target <= high: [band_lo, band_hi]
     * (rounded division is monotone in u), so a step compares its truncated utilisation with
     * them instead of dividing again; the exact arithmetic runs only outside the band. */
    double band_lo[64], band_hi[64], divisor[64];
    if (metrics > 64) return -1;
    for (int64_t i = 0; i < metrics; i++) {
        double u = ceil(low * target[i]) - 2.0;
        if (u < 0.0) u = 0.0;
        while (u / target[i] < low) u += 1.0;
        band_lo[i] = u;
        u = floor(high * target[i]) + 2.0;
        while (u / target[i] > high) u -= 1.0;
        band_hi[i] = u;
    }
    double banded_for = -1.0;
    int64_t head = 0, filled = 1;
    recent[0] = replicas;
    for (int64_t k = 1; k < n; k++) {
        double desired = -1.0;
        if (replicas != banded_for) {
            for (int64_t i = 0; i < metrics; i++) divisor[i] = replicas * request[i];
            banded_for = replicas;
        }
        for (int64_t i = 0; i < metrics && replicas > 0.0; i++) {
            double value = usage[i][k];
            if (isnan(value)) continue;
            double whole = floor_of(value * 100.0 / divisor[i]);
            if (band_lo[i] <= whole && whole <= band_hi[i]) { /* within the tolerance: keep R */
                if (replicas > desired) desired = replicas;
                continue;
            }
            double ratio = whole / target[i];
            double proposal = (low <= ratio && ratio <= high) ? replicas : ceil_of(ratio * replicas);
            if (proposal > desired) desired = proposal;
        }
        if (desired < 0.0) desired = replicas;
        head = head + 1 == window ? 0 : head + 1;
        recent[head] = desired;
        if (filled < window) filled++;
        double stabilised = desired;
        if (desired < replicas) {
            for (int64_t j = 0; j < filled; j++)
                if (recent[j] > stabilised) stabilised = recent[j];
        }
        if (stabilised > replicas) {
            double up = scale_up_limit(replicas, syncs);
            double wanted = stabilised < up ? stabilised : up;
            if (wanted > reached) reached = wanted;
            replicas = wanted < hi_clamp ? wanted : hi_clamp;
        } else if (stabilised < replicas) {
            replicas = stabilised > lo_clamp ? stabilised : lo_clamp;
        }
        out[k] = (int64_t)replicas;
    }
    *reach = reached;
    return 0;
}

/* Every rise of a replica path (n int64, in place) faster than the default scale-up policies
 * allow in ``syncs`` syncs slowed to their limit: the twin of controller.py's ``_rate_limited``
 * (which walks forward from each too-fast rise; one forward pass does the same, as a lowered
 * step only lowers the limit of the next). Returns 0, or -1 when syncs is beyond 40 (the twin
 * then: its whole numbers do not overflow). */
int tb_rate_limit(int64_t *path, int64_t n, int64_t syncs) {
    if (syncs < 0 || syncs > 40) return -1;
    /* every sync allows at least SCALE_UP_PODS more, so a step no higher than that many per
     * sync above the one before is within the limit (nearly every step: no loop over syncs) */
    int64_t sure = SCALE_UP_PODS * syncs;
    for (int64_t k = 1; k < n; k++) {
        if (path[k] <= path[k - 1] || (path[k - 1] >= 0 && path[k] - path[k - 1] <= sure))
            continue;
        int64_t limit = path[k - 1];
        for (int64_t s = 0; s < syncs; s++) {
            int64_t by_pods = limit + SCALE_UP_PODS, by_percent = limit * 2;
            limit = by_pods > by_percent ? by_pods : by_percent;
        }
        if (path[k] > limit) path[k] = limit;
    }
    return 0;
}

/* numpy's fmax: NaN gives the other operand. */
static inline double fmax_of(double a, double b) {
    if (a != a) return b;
    if (b != b) return a;
    return a > b ? a : b;
}

/* cond ? a : b without a branch (the conditions below follow noisy loads, which a branch
 * predictor cannot learn: a wrong guess costs more than both values). */
static inline double pick(int cond, double a, double b) {
    uint64_t x, y, mask = (uint64_t)0 - (uint64_t)(cond != 0);
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    x = (x & mask) | (y & ~mask);
    memcpy(&a, &x, sizeof a);
    return a;
}

/* numpy's maximum and minimum of values that are never NaN here. */
static inline double max_of(double a, double b) { return a < b ? b : a; }
static inline double min_of(double a, double b) { return b < a ? b : a; }

/* The vectorised model of the controller, ``replay_fast_reach`` in controller.py (read its doc:
 * a starting path, one pass of the step rule against it, then the holds along each run of the
 * starting path), as one forward pass per stage with the same operations in the same order as
 * numpy makes them, so both give the same replicas to the bit (tests/native).
 *
 * usage, request, target: as tb_hpa_replay (usable metrics only); scale: per metric,
 * 100 / (request × target × FAST_START_UTILISATION) as the caller computes it; start: the
 * first step's replicas (the recorded ones clamped); reach0: the start before the clamp.
 * Scratch: path, passed, desired (n doubles each). Out: out (n int64, before the scale-up rate
 * limit, which the caller applies), reach (the largest value the maxReplicas clamp met: the
 * starting path's and the pass's). Returns 0, or -1 for what it does not take (fewer than two
 * steps, no metric, a window beyond WINDOW_MAX, minReplicas above maxReplicas, syncs outside
 * 1..60): the caller runs numpy then. */
int tb_hpa_fast(const double *const *usage, const double *request, const double *target,
                const double *scale, int64_t metrics, int64_t n, int64_t min_replicas,
                int64_t max_replicas, double start, double reach0, int64_t syncs,
                int64_t window, double *path, double *passed, double *desired, int64_t *out,
                double *reach) {
    if (n < 2 || metrics < 1 || window < 1 || window > WINDOW_MAX || min_replicas > max_replicas ||
        syncs < 1 || syncs > 60)
        return -1;
    double low = 1.0 - TOLERANCE, high = 1.0 + TOLERANCE;
    double lo_clamp = (double)min_replicas, hi_clamp = (double)max_replicas;
    /* 1. each step's need at the starting utilisation (into passed), clamped */
    double top = -INFINITY;
    for (int64_t k = 0; k < n; k++) {
        double need = 0.0;
        for (int64_t i = 0; i < metrics; i++) {
            double each = ceil_of(usage[i][k] * scale[i]);
            need = i == 0 ? each : fmax_of(need, each);
        }
        if (!isfinite(need)) need = start;
        need = max_of(need, lo_clamp);
        if (need > top) top = need;
        passed[k] = min_of(need, hi_clamp);
    }
    double reached = reach0 < top ? top : reach0;
    /* 2. held over the stabilisation window: the starting path */
    for (int64_t k = 0; k < n; k++) {
        double m = passed[k];
        for (int64_t lag = 1; lag < window && lag <= k; lag++) m = max_of(m, passed[k - lag]);
        path[k] = m;
    }
    path[0] = start;
    /* 3. the step rule at every step, against the starting path's step before */
    double up_factor = ldexp(1.0, (int)(syncs - 1));
    double stepped = -INFINITY;
    /* (desired first, for every step: no step waits on the one before) */
    for (int64_t j = 0; j + 1 < n; j++) {
        double prev = path[j], d = 0.0;
        for (int64_t i = 0; i < metrics; i++) {
            double ratio = usage[i][j + 1] * 100.0;
            ratio = ratio / (prev * request[i]);
            ratio = floor_of(ratio);
            ratio = ratio / target[i];
            int within = (ratio >= low) & (ratio <= high);
            ratio = pick(within, prev, ceil_of(ratio * prev));
            d = i == 0 ? ratio : fmax_of(d, ratio);
        }
        if (!(d >= 0.0)) d = prev; /* no sample in any metric: nothing to act on */
        desired[j] = d;
    }
    for (int64_t j = 0; j + 1 < n; j++) {
        double prev = path[j], d = desired[j];
        double recent = d;
        for (int64_t lag = 1; lag < window && lag <= j; lag++)
            recent = max_of(recent, desired[j - lag]);
        if (j < window - 1) recent = max_of(recent, start);
        recent = pick(d >= prev, d, recent);
        double counts = max_of(prev, 0.0);
        double up = max_of(counts + (double)SCALE_UP_PODS, counts * 2.0) * up_factor;
        double stabilised = min_of(recent, up);
        if (stabilised > stepped) stepped = stabilised;
        stabilised = min_of(stabilised, hi_clamp);
        passed[j + 1] = max_of(stabilised, lo_clamp);
    }
    passed[0] = start;
    /* 4. holds: along each run of the starting path, the run's first value while every metric
     * stays within the tolerance of it (or has no sample) */
    double held = 0.0;
    int intact = 0;
    for (int64_t k = 0; k < n; k++) {
        if (k == 0 || path[k] != path[k - 1]) {
            held = passed[k];
            intact = 1;
        }
        if (intact) {
            for (int64_t i = 0; i < metrics; i++) {
                double ratio = usage[i][k] * 100.0;
                ratio = ratio / (held * request[i]);
                ratio = floor_of(ratio);
                ratio = ratio / target[i];
                if (!((ratio >= low && ratio <= high) || isnan(ratio))) {
                    intact = 0;
                    break;
                }
            }
        }
        if (intact) passed[k] = held;
        out[k] = (int64_t)passed[k];
    }
    *reach = reached < stepped ? stepped : reached;
    return 0;
}

/* The steps of capacity shortfall of a replica path (``figures._replica_path``, the module doc
 * there): at maxReplicas with some metric's truncated utilisation above its target beyond the
 * tolerance (``above``: target × (1 + tolerance) per metric, as the caller computes it), or
 * while new pods are still starting (the path above its minimum over the last `lag` steps:
 * the serving pods) with some metric's usage above the serving pods' requests. path: n int64
 * replicas; usage, request: as tb_hpa_replay; out: n bytes (1: short). Returns the number of
 * short steps, or -1 for a lag beyond WINDOW_MAX or more metrics than METRICS. */
int64_t tb_hpa_shortfall(const int64_t *path, int64_t n, const double *const *usage,
                         const double *request, const double *above, int64_t metrics,
                         int64_t max_replicas, int64_t lag, uint8_t *out) {
    if (lag < 0 || lag > WINDOW_MAX || metrics < 0 || metrics > 64) return -1;
    double top = (double)max_replicas;
    int64_t short_steps = 0;
    for (int64_t k = 0; k < n; k++) {
        double replicas = (double)path[k];
        double serving = replicas;
        for (int64_t back = 1; back <= lag && back <= k; back++) {
            double before = (double)path[k - back];
            serving = before < serving ? before : serving;
        }
        int at_max = replicas >= top, starting = serving < replicas, hit = 0;
        for (int64_t i = 0; i < metrics && (at_max || starting) && !hit; i++) {
            double value = usage[i][k];
            if (at_max) {
                double util = value * 100.0;
                util = util / (replicas * request[i]);
                hit = floor_of(util) > above[i];
            }
            if (starting && !hit) hit = value > serving * request[i];
        }
        out[k] = (uint8_t)hit;
        short_steps += hit;
    }
    return short_steps;
}
