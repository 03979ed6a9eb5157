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
    for (int64_t k = 1; k < n; k++) {
        int64_t limit = path[k - 1];
        for (int64_t s = 0; s < syncs; s++) {
            int64_t by_pods = limit + SCALE_UP_PODS, by_percent = limit * 2;
            limit = by_pods > by_percent ? by_pods : by_percent;
        }
        if (path[k] > limit) path[k] = limit;
    }
    return 0;
}
