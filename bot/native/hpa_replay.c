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

/* Inlined into each caller, so that the arguments it is called with as constants stay so. */
#if defined(__GNUC__)
#define ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE static inline
#endif

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

#define METRICS_MAX 64

/* Per metric, the whole percentages u with 1 - TOLERANCE <= u / target <= 1 + TOLERANCE:
 * [band_lo, band_hi] (a rounded division is monotone in u), so a step compares its truncated
 * utilisation with them instead of dividing it by the target. */
static void tolerance_bands(const double *target, int64_t metrics, double *band_lo,
                            double *band_hi) {
    double low = 1.0 - TOLERANCE, high = 1.0 + TOLERANCE;
    for (int64_t i = 0; i < metrics; i++) {
        double u = ceil(low * target[i]) - 2.0;
        if (u < 0.0) u = 0.0;
        while (u / target[i] < low) u += 1.0;
        band_lo[i] = u;
        u = floor(high * target[i]) + 2.0;
        while (u / target[i] > high) u -= 1.0;
        band_hi[i] = u;
    }
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
    /* the exact arithmetic runs only outside the tolerance bands */
    double band_lo[METRICS_MAX], band_hi[METRICS_MAX], divisor[METRICS_MAX];
    if (metrics > METRICS_MAX) return -1;
    tolerance_bands(target, metrics, band_lo, band_hi);
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

/* The largest of a[k] and the values before it in a window of `window` steps (from a[0]). */
static inline double window_max(const double *a, int64_t k, int64_t window) {
    double m = a[k];
    for (int64_t lag = 1; lag < window && lag <= k; lag++) m = max_of(m, a[k - lag]);
    return m;
}

/* The step rule's desired replicas at step j + 1 against prev (the starting path at step j):
 * per metric the truncated utilisation against prev's pods, prev within the tolerance, else
 * the proposal; the largest over the metrics; prev when no metric has a sample. */
ALWAYS_INLINE double desired_of(const double *const *usage, const double *request,
                                const double *target, int64_t metrics, int64_t j, double prev) {
    double low = 1.0 - TOLERANCE, high = 1.0 + TOLERANCE, d = 0.0;
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
    return d;
}

#if defined(__GNUC__)
#define PAIRS 1
/* Two doubles at once (SSE2 on x86-64, NEON on arm64): the same IEEE operations, two steps
 * per instruction, for the step rule's two divisions per step. */
typedef double pair __attribute__((vector_size(16)));
typedef int64_t pair_mask __attribute__((vector_size(16)));
#define TWO_52 4503599627370496.0
#define WHOLE_BELOW 9.0e18

static inline pair select_pair(pair_mask m, pair a, pair b) {
    return (pair)(((pair_mask)a & m) | ((pair_mask)b & ~m));
}

static inline pair max_pair(pair a, pair b) { return select_pair(a < b, b, a); } /* max_of */
static inline pair min_pair(pair a, pair b) { return select_pair(b < a, b, a); } /* min_of */

/* window_max of steps k and k + 1, k >= window - 1 (a whole window behind each). */
static inline pair window_max_pair(const double *a, int64_t k, int64_t window) {
    pair m;
    memcpy(&m, a + k, sizeof m);
    for (int64_t lag = 1; lag < window; lag++) {
        pair before;
        memcpy(&before, a + k - lag, sizeof before);
        m = max_pair(m, before);
    }
    return m;
}

/* floor and ceil of lanes in [0, WHOLE_BELOW) (the caller checks): adding 2^52 and taking it
 * away rounds a lane below 2^52 to the nearest whole number, which one step corrects; a lane
 * at or above 2^52 is whole already. The values of floor_of and ceil_of. */
static inline pair floor_pair(pair x) {
    pair big = {TWO_52, TWO_52}, one = {1.0, 1.0};
    pair t = (x + big) - big;
    t = select_pair(t > x, t - one, t);
    return select_pair(x >= big, x, t);
}

static inline pair ceil_pair(pair x) {
    pair big = {TWO_52, TWO_52}, one = {1.0, 1.0};
    pair t = (x + big) - big;
    t = select_pair(t < x, t + one, t);
    return select_pair(x >= big, x, t);
}

/* desired_of for one metric, two steps at a time; a pair with a lane outside what the pair
 * arithmetic takes (no sample, no pods, a quotient beyond WHOLE_BELOW) goes to desired_of.
 * Returns the number of steps done (the caller does the rest). */
static int64_t desired_pairs(const double *u, double request, double target, const double *path,
                             int64_t n, double *desired) {
    const double *const usage[1] = {u};
    pair hundred = {100.0, 100.0}, req = {request, request}, tgt = {target, target};
    pair low = {1.0 - TOLERANCE, 1.0 - TOLERANCE}, high = {1.0 + TOLERANCE, 1.0 + TOLERANCE};
    pair zero = {0.0, 0.0}, below = {WHOLE_BELOW, WHOLE_BELOW};
    int64_t j = 0;
    for (; j + 2 < n; j += 2) {
        pair prev, now;
        memcpy(&prev, path + j, sizeof prev);
        memcpy(&now, u + j + 1, sizeof now);
        pair q = now * hundred;
        q = q / (prev * req);
        pair ratio = floor_pair(q) / tgt;
        pair y = ratio * prev;
        pair_mask ok = (q >= zero) & (q < below) & (y >= zero) & (y < below);
        if (!(ok[0] & ok[1])) {
            desired[j] = desired_of(usage, &request, &target, 1, j, path[j]);
            desired[j + 1] = desired_of(usage, &request, &target, 1, j + 1, path[j + 1]);
            continue;
        }
        pair d = select_pair((ratio >= low) & (ratio <= high), prev, ceil_pair(y));
        d = select_pair(d >= zero, d, prev);
        memcpy(desired + j, &d, sizeof d);
    }
    return j;
}

/* Stage 1 of fast_stages for one metric, two steps at a time: each step's need at the
 * starting utilisation, clamped (into passed), the largest unclamped need into *top. A pair
 * with a lane the pair arithmetic does not take (no sample, beyond WHOLE_BELOW) is done one
 * step at a time, as fast_stages does. Returns the steps done (all but the last odd one). */
static int64_t needs_pairs(const double *u, double scale, int64_t n, double start,
                           double lo_clamp, double hi_clamp, double *passed, double *top) {
    pair by = {scale, scale}, zero = {0.0, 0.0}, below = {WHOLE_BELOW, WHOLE_BELOW};
    pair lo = {lo_clamp, lo_clamp}, hi = {hi_clamp, hi_clamp}, most = {*top, *top};
    int64_t k = 0;
    for (; k + 1 < n; k += 2) {
        pair y;
        memcpy(&y, u + k, sizeof y);
        y = y * by;
        pair_mask ok = (y >= zero) & (y < below);
        pair need;
        if (ok[0] & ok[1]) {
            need = max_pair(ceil_pair(y), lo);
        } else {
            for (int lane = 0; lane < 2; lane++) {
                double one = ceil_of(y[lane]);
                if (!isfinite(one)) one = start;
                need[lane] = max_of(one, lo_clamp);
            }
        }
        most = select_pair(need > most, need, most);
        need = min_pair(need, hi);
        memcpy(passed + k, &need, sizeof need);
    }
    double best = most[0] > most[1] ? most[0] : most[1];
    if (best > *top) *top = best;
    return k;
}

/* The stabilisation and the clamps of stage 3 (fast_stages), two steps at a time, for the
 * steps from window - 1 (*from: a whole window behind each, start out of it) to the returned
 * step (the steps before and after are the caller's). The same values as the scalar loop:
 * every operation is a lane's max, min, product or sum, and stepped (the largest stabilised
 * value) is a max, whatever its order. */
static int64_t stabilised_pairs(const double *path, const double *desired, int64_t n,
                                int64_t window, double up_factor, double lo_clamp,
                                double hi_clamp, double *passed, double *stepped,
                                int64_t *from) {
    int64_t first = window - 1;
    *from = first;
    if (first < 0 || first + 2 >= n) return first;
    pair zero = {0.0, 0.0}, pods = {(double)SCALE_UP_PODS, (double)SCALE_UP_PODS};
    pair two = {2.0, 2.0}, factor = {up_factor, up_factor};
    pair lo = {lo_clamp, lo_clamp}, hi = {hi_clamp, hi_clamp};
    pair top = {*stepped, *stepped};
    int64_t j = first;
    for (; j + 2 < n; j += 2) {
        pair prev, d;
        memcpy(&prev, path + j, sizeof prev);
        memcpy(&d, desired + j, sizeof d);
        pair recent = window_max_pair(desired, j, window);
        recent = select_pair(d >= prev, d, recent);
        pair counts = max_pair(prev, zero);
        pair up = max_pair(counts + pods, counts * two) * factor;
        pair stabilised = min_pair(recent, up);
        top = select_pair(stabilised > top, stabilised, top);
        stabilised = min_pair(stabilised, hi);
        stabilised = max_pair(stabilised, lo);
        memcpy(passed + j + 1, &stabilised, sizeof stabilised);
    }
    double best = top[0] > top[1] ? top[0] : top[1];
    if (best > *stepped) *stepped = best;
    return j;
}
#else
#define PAIRS 0
#endif

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
ALWAYS_INLINE void fast_stages(const double *const *usage, const double *request,
                               const double *target, const double *scale, int64_t metrics,
                               int64_t n, int64_t min_replicas, int64_t max_replicas,
                               double start, double reach0, int64_t syncs, int64_t window,
                               double *path, double *passed, double *desired, int64_t *out,
                               double *reach) {
    double lo_clamp = (double)min_replicas, hi_clamp = (double)max_replicas;
    /* 1. each step's need at the starting utilisation (into passed), clamped */
    double top = -INFINITY;
    int64_t k = 0;
#if PAIRS
    if (metrics == 1)
        k = needs_pairs(usage[0], scale[0], n, start, lo_clamp, hi_clamp, passed, &top);
#endif
    for (; k < n; k++) {
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
    k = 0;
#if PAIRS
    for (; k < window - 1 && k < n; k++) path[k] = window_max(passed, k, window);
    for (; k + 1 < n; k += 2) { /* two steps at a time, a whole window behind each */
        pair m = window_max_pair(passed, k, window);
        memcpy(path + k, &m, sizeof m);
    }
#endif
    for (; k < n; k++) path[k] = window_max(passed, k, window);
    path[0] = start;
    /* 3. the step rule at every step, against the starting path's step before */
    double up_factor = ldexp(1.0, (int)(syncs - 1));
    double stepped = -INFINITY;
    /* (desired first, for every step: no step waits on the one before) */
    int64_t done = 0;
#if PAIRS
    if (metrics == 1) done = desired_pairs(usage[0], request[0], target[0], path, n, desired);
#endif
    for (int64_t j = done; j + 1 < n; j++)
        desired[j] = desired_of(usage, request, target, metrics, j, path[j]);
    int64_t from = 0, to = 0; /* the steps [from, to) done two at a time */
#if PAIRS
    to = stabilised_pairs(path, desired, n, window, up_factor, lo_clamp, hi_clamp, passed,
                          &stepped, &from);
#endif
    for (int64_t j = 0; j + 1 < n; j++) {
        if (j == from && to > from) {
            j = to - 1;
            continue;
        }
        double prev = path[j], d = desired[j];
        double recent = window_max(desired, j, window);
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
     * stays within the tolerance of it (or has no sample). First each step's run value (into
     * desired, no longer needed) and whether the step is within the tolerance of it (into out:
     * no step's test waits on the one before), then the holds themselves. */
    double band_lo[METRICS_MAX], band_hi[METRICS_MAX];
    tolerance_bands(target, metrics, band_lo, band_hi);
    double held = passed[0];
    for (int64_t k = 0; k < n; k++) {
        held = pick(k > 0 && path[k] != path[k - 1], passed[k], held);
        desired[k] = held;
        int within = 1;
        for (int64_t i = 0; i < metrics; i++) {
            double whole = usage[i][k] * 100.0;
            whole = floor_of(whole / (held * request[i])); /* in the band, or no sample */
            within &= ((whole >= band_lo[i]) & (whole <= band_hi[i])) | (whole != whole);
        }
        out[k] = within;
    }
    int intact = 0;
    for (int64_t k = 0; k < n; k++) {
        int starts = k == 0 || path[k] != path[k - 1];
        intact = (starts | intact) & (int)out[k];
        out[k] = (int64_t)pick(intact, desired[k], passed[k]);
    }
    *reach = reached < stepped ? stepped : reached;
}

int tb_hpa_fast(const double *const *usage, const double *request, const double *target,
                const double *scale, int64_t metrics, int64_t n, int64_t min_replicas,
                int64_t max_replicas, double start, double reach0, int64_t syncs,
                int64_t window, double *path, double *passed, double *desired, int64_t *out,
                double *reach) {
    if (n < 2 || metrics < 1 || metrics > METRICS_MAX || window < 1 || window > WINDOW_MAX ||
        min_replicas > max_replicas || syncs < 1 || syncs > 60)
        return -1;
#define STAGES(m)                                                                                \
    fast_stages(usage, request, target, scale, m, n, min_replicas, max_replicas, start, reach0,  \
                syncs, window, path, passed, desired, out, reach)
    if (metrics == 1) /* one metric, the common HPA: its loops over metrics unrolled */
        STAGES(1);
    else
        STAGES(metrics);
#undef STAGES
    return 0;
}

/* The pods serving at step k: the fewest replicas over the step and the `lag` before it. */
static inline double serving_at(const int64_t *path, int64_t k, int64_t lag, double replicas) {
    double serving = replicas;
    for (int64_t back = 1; back <= lag && back <= k; back++) {
        double before = (double)path[k - back];
        serving = before < serving ? before : serving;
    }
    return serving;
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
    if (lag < 0 || lag > WINDOW_MAX || metrics < 0 || metrics > METRICS_MAX) return -1;
    double top = (double)max_replicas;
    int64_t short_steps = 0;
    if (metrics == 1) { /* the common HPA: the start-up test without a branch */
        const double *u = usage[0];
        double req = request[0], limit = above[0];
        for (int64_t k = 0; k < n; k++) {
            double replicas = (double)path[k];
            double serving = serving_at(path, k, lag, replicas);
            double value = u[k];
            int hit = (serving < replicas) & (value > serving * req);
            if (replicas >= top) { /* in runs: a branch the predictor learns */
                double util = value * 100.0;
                util = util / (replicas * req);
                hit |= floor_of(util) > limit;
            }
            out[k] = (uint8_t)hit;
            short_steps += hit;
        }
        return short_steps;
    }
    for (int64_t k = 0; k < n; k++) {
        double replicas = (double)path[k];
        double serving = serving_at(path, k, lag, replicas);
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
