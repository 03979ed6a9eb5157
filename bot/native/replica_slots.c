/* Tortoise's replica slots replayed from a replica history: the C twin of
 * bot/recommend/tortoise/replicas.py (``replica_slots``, read its module doc for the model), for
 * times in order at one UTC offset. Runs are the samples of one local slot window (local hour
 * // width, counted from the epoch); a run's candidates are those of its largest replica count
 * (ceil is monotone); a run of a slot seen before first decays the slot's values
 * (trunc(v x factor)) when it starts at least decay_age seconds after that slot's previous run
 * ended; the values are the running maxima. The same integers as the numpy twin (tests/native).
 */
#include <math.h>
#include <stdint.h>

static inline int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static inline int64_t floor_mod(int64_t a, int64_t b) {
    return a - floor_div(a, b) * b;
}

/* t, r: n samples (t finite and never decreasing, r finite and >= 0). offset_s: the zone's UTC
 * offset; width: hours per slot (1..24); daily: slots are hours of the day, else of the week
 * (Sunday first); n_slots the slots of that layout. Out per slot: lo, hi (minReplicas and
 * maxReplicas it asks for), seen (0 or 1) and last_end (scratch). Returns 0, or -1 for a time
 * out of order or not finite, a replica count that is not finite and >= 0 or whose candidates
 * are out of range (multipliers >= 0), a bad width or a slot out of range. */
int tb_replica_slots(const double *t, const double *r, int64_t n, double offset_s, int64_t width,
                     int64_t daily, int64_t n_slots, double min_mult, double max_mult,
                     int64_t floor_replicas, int64_t max_floor, double decay_age,
                     double decay_factor, int64_t *lo, int64_t *hi, int64_t *seen,
                     double *last_end) {
    if (width < 1 || width > 24 || n_slots < 1) return -1;
    for (int64_t s = 0; s < n_slots; s++) {
        lo[s] = 0;
        hi[s] = 0;
        seen[s] = 0;
        last_end[s] = 0.0;
    }
    int64_t i = 0;
    while (i < n) {
        /* one run: the samples of one local slot window */
        double first = t[i];
        if (!isfinite(first) || (i > 0 && first < t[i - 1])) return -1;
        double hf = floor((first + offset_s) / 3600.0);
        if (!(hf > -9.0e15 && hf < 9.0e15)) return -1;
        int64_t window = floor_div((int64_t)hf, width);
        /* Below `guard` (the window's end less a billionth of the magnitudes, far above any
         * rounding) a later time is in this window: the formula runs only near the end. */
        double edge = (double)((window + 1) * width) * 3600.0 - offset_s;
        double guard = edge - 1e-9 * (fabs(edge) + fabs(offset_s) + 3600.0);
        double top = -1.0, end = first;
        int64_t j = i;
        for (; j < n; j++) {
            double tj = t[j], rj = r[j];
            if (!isfinite(tj) || (j > i && tj < t[j - 1]) || !(rj >= 0.0) || !isfinite(rj))
                return -1;
            if (!(tj < guard)) {
                double h = floor((tj + offset_s) / 3600.0);
                if (!(h > -9.0e15 && h < 9.0e15)) return -1;
                if (floor_div((int64_t)h, width) != window) break;
            }
            if (rj > top) top = rj;
            end = tj;
        }
        if (j == i) return -1; /* cannot happen: the first sample is in its own window */
        int64_t hours = window * width;
        int64_t slot = floor_div(floor_mod(hours, 24), width);
        if (!daily) slot += floor_mod(floor_div(hours, 24) + 4, 7) * (24 / width);
        if (slot < 0 || slot >= n_slots) return -1;
        double min_f = ceil(top * min_mult), max_f = ceil(top * max_mult);
        if (!(min_f >= 0.0 && min_f < 9.0e18 && max_f >= 0.0 && max_f < 9.0e18)) return -1;
        int64_t min_c = (int64_t)min_f, max_c = (int64_t)max_f;
        if (min_c < floor_replicas) min_c = floor_replicas;
        if (max_c < floor_replicas) max_c = max_floor;
        if (seen[slot] && first - last_end[slot] >= decay_age) {
            lo[slot] = (int64_t)trunc((double)lo[slot] * decay_factor);
            hi[slot] = (int64_t)trunc((double)hi[slot] * decay_factor);
        }
        if (min_c > lo[slot]) lo[slot] = min_c;
        if (max_c > hi[slot]) hi[slot] = max_c;
        seen[slot] = 1;
        last_end[slot] = end;
        i = j;
    }
    return 0;
}
