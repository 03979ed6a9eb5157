/* Raw samples to step values: the C twin of bot/metrics/raw.py's ``counter_rates`` and
 * ``step_max`` (read its module doc for the formulas), for the usual case where every kept
 * sample falls in a step of its own, in time order (one scrape per step). Every operation is
 * the one numpy does, in the same order, so both give the same doubles to the bit.
 *
 * t, v: n samples (seconds, values); first: the first evaluation time; steps: the last step's
 * number; step: seconds; max_gap: max_gap_s + EPSILON_S (counters only);
 * out_t, out_v: n - 1 (counters) or n (gauges) doubles; *count: how many were written.
 * Returns 0, or 1 when two kept samples share a step or go back in time, or a step number
 * is beyond int64 (NaN time): the caller runs the numpy twin then.
 */
#include <math.h>
#include <stdint.h>

#define EPSILON_S 1e-6
#define INDEX_MAX 9.0e18

/* ``_buckets``: ceil((t - first) / step - EPSILON_S); 0 when it is no int64. */
static inline int bucket(double t, double first, double step, int64_t *index) {
    double x = ceil((t - first) / step - EPSILON_S);
    if (!(x >= -INDEX_MAX && x <= INDEX_MAX)) return 0;
    *index = (int64_t)x;
    return 1;
}

int tb_counter_rates(const double *t, const double *v, int64_t n, double first, int64_t steps,
                     double step, double max_gap, double *out_t, double *out_v, int64_t *count) {
    int64_t m = 0, last = 0;
    *count = 0;
    for (int64_t i = 1; i < n; i++) {
        double dt = t[i] - t[i - 1];
        double dv = v[i] - v[i - 1];
        double increase = dv >= 0 ? dv : v[i]; /* a reset: the counter restarted from 0 */
        int64_t index;
        if (!bucket(t[i], first, step, &index)) return 1;
        if (!(dt > 0 && dt <= max_gap) || index < 0 || index > steps) continue;
        if (m > 0 && index <= last) return 1;
        last = index;
        out_t[m] = first + (double)index * step;
        out_v[m] = increase / dt;
        m++;
    }
    *count = m;
    return 0;
}

int tb_step_max(const double *t, const double *v, int64_t n, double first, int64_t steps,
                double step, double *out_t, double *out_v, int64_t *count) {
    int64_t m = 0, last = 0;
    *count = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t index;
        if (!bucket(t[i], first, step, &index)) return 1;
        if (index < 0 || index > steps) continue;
        if (m > 0 && index <= last) return 1;
        last = index;
        out_t[m] = first + (double)index * step;
        out_v[m] = v[i];
        m++;
    }
    *count = m;
    return 0;
}
