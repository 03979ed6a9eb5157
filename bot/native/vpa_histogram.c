/* VPA histograms replayed on a time grid, in one pass over a series: the C twin of
 * bot/recommend/vpa/aggregate.py (``replay_rows``, ``cpu_counters``, the bucket counts of
 * ``usage_from_counts``) and of histogram.py (``find_buckets``, ``percentiles``). Read their
 * docstrings for the model. Every floating-point sum is made in the order numpy makes it
 * (``np.bincount`` adds the samples in order, ``np.cumsum`` adds the rows in order), so both give
 * the same numbers to the bit (tests/native).
 *
 * Buckets: ``find_buckets`` is the comparison with the bucket starts (its logarithm is exact
 * wherever it decides, and it compares with the start itself where the logarithm could be off),
 * so a bucket here is the last b with starts[b] <= v, found from a table that only saves
 * comparisons: any table gives the same bucket.
 *
 * Every kernel checks the values it reads and returns -1 (the caller runs the twin) on a value
 * it does not take; no kernel reads or writes outside the arrays of the sizes it is given.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

/* ``takes``: a value the kernels take is finite and >= 0 with its sign bit clear (so no -0.0,
 * whose maximum with 0.0 numpy may give either way): its bit pattern is below +inf's,
 * TAKES_BELOW. Among such values the largest pattern is the largest value's, so a pass keeps
 * the largest pattern of its values and checks it once, at the end (the outputs of a pass that
 * returns -1 are not used). */
#define TAKES_BELOW 0x7ff0000000000000ULL

/* Inlined into each caller, so that the flags it is called with become constants. */
#if defined(__GNUC__)
#define ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE static inline
#endif

#define SUB_BITS 7
/* Sub-intervals per power of two in the guess table: 2^SUB_BITS. */

/* Where to start looking for the bucket of a value: a table over the powers of two from
 * 2^e0 on (`binades` of them), each cut in 2^SUB_BITS equal parts by the top mantissa bits,
 * holding the bucket of each part's lowest value (``bot/native/vpa.py``, ``guess_table``). */
typedef struct {
    const int32_t *table;
    int64_t e0;
    int64_t binades;
} Guess;

/* The bucket of v (finite, >= 0): the last b in [0, nb) with starts[b] <= v (starts[0] == 0).
 * The guess leaves at most one step up in the usual case (a part is narrower than a bucket);
 * the loops make any guess exact. */
static inline int64_t bucket_of(double v, const double *starts, int64_t nb, Guess g) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    int64_t j = (int64_t)((bits >> 52) & 0x7ff) - 1023 - g.e0;
    int64_t b;
    if (j < 0) {
        b = 0;
    } else if (j >= g.binades) {
        b = nb - 1;
    } else {
        b = g.table[(j << SUB_BITS) | (int64_t)((bits >> (52 - SUB_BITS)) & ((1 << SUB_BITS) - 1))];
        if (b < 0 || b >= nb) b = 0;
    }
    b += (int64_t)(b + 1 < nb) & (int64_t)(v >= starts[b + 1 < nb ? b + 1 : b]);
    while (b + 1 < nb && v >= starts[b + 1]) b++;
    while (b > 0 && v < starts[b]) b--;
    return b;
}

/* ``bucket_of`` in the usual case without a loop, for bucket starts that increase (the only
 * ones the kernels are given; with others the buckets mean nothing, but every read stays in the
 * arrays). The table index is the exponent and the top SUB_BITS mantissa bits of v (>= 0) read
 * as one number, less the table's first one (`base`). The guess g, kept in [0, nb - 3] so that
 * starts[g + 2] exists, leaves bucket g or g + 1 when starts[g] <= v < starts[g + 2], and it is
 * g + 1 exactly when v >= starts[g + 1]. Returns 0 for any other value (below or above the
 * table, NaN, negative, in the last bucket, or a guess that is off), which then takes
 * ``bucket_of``. Needs nb >= 3 and a table of binades >= 1. */
typedef struct {
    const int32_t *table;
    uint64_t base, size, gmax;
} Fast;

static inline Fast fast_of(Guess g, int64_t nb) {
    Fast f = {g.table, ((uint64_t)1023 + (uint64_t)g.e0) << SUB_BITS,
              (uint64_t)g.binades << SUB_BITS, (uint64_t)(nb - 3)};
    return f;
}

ALWAYS_INLINE int fast_bucket(double v, uint64_t bits, const double *starts, Fast f,
                              int64_t *bucket) {
    uint64_t k = (bits >> (52 - SUB_BITS)) - f.base;
    int64_t g = f.table[k < f.size ? k : 0];
    g = (uint64_t)g <= f.gmax ? g : 0;
    const double *s = starts + g;
    *bucket = g + (v >= s[1]);
    return (v >= s[0]) & (v < s[2]);
}

/* The step of a sample at step time t: floor((t - start_s) * inv_step) clipped to
 * [0, steps - 1] (``ReplayGrid.bins``): below 0 is step 0, from steps - 1 on the last step, and
 * in between floor is truncation. With inv_step > 0 and start_s finite it never decreases as t
 * grows (each operation is correctly rounded, hence monotonic): what ``run_end`` relies on. */
static inline int64_t step_of(double t, double start_s, double inv_step, int64_t steps) {
    double f = (t - start_s) * inv_step;
    return f >= 0.0 ? (f < (double)(steps - 1) ? (int64_t)f : steps - 1) : 0;
}

/* The end of the samples from i on in step s (step_of(t[i]) == s): the first e in (i, n] with
 * step_of(t[e]) != s. Exact for times that never decrease (step_of then never decreases, so the
 * samples of a step are one run): it tries the length of the run before (`guess`), then doubles
 * and halves. For times in another order it returns some e in (i, n] (the caller refuses such
 * a series). */
static int64_t run_end(const double *t, int64_t i, int64_t n, int64_t s, int64_t guess,
                       double start_s, double inv_step, int64_t steps) {
    if (s == steps - 1) return n;
    int64_t g = i + guess;
    if (guess > 0 && g < n && step_of(t[g - 1], start_s, inv_step, steps) == s &&
        step_of(t[g], start_s, inv_step, steps) != s)
        return g;
    int64_t lo = i, span = 1; /* step_of(t[lo]) == s */
    while (lo + span < n && step_of(t[lo + span], start_s, inv_step, steps) == s) {
        lo += span;
        span *= 2;
    }
    int64_t hi = lo + span < n ? lo + span : n; /* hi == n or step_of(t[hi]) != s */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (step_of(t[mid], start_s, inv_step, steps) == s)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}


/* Samples per block of one way of adding them (``add_block``), and the blocks added each
 * sample to memory between two blocks that try runs again (``add_step``). */
#define BLOCK 64
#define SPREAD_BLOCKS 8

/* One step's samples being added to its row, in sample order: the step's running sum, the
 * step time before (the order check), the largest value bit pattern, whether the order held,
 * and how many samples of the last block of runs stayed in the run's bucket. */
typedef struct {
    double sum, prev;
    uint64_t top;
    int ordered;
    int64_t same;
    double scale; /* every weight is w[j] × scale (the caller's base weight) */
} Adding;

/* Samples j.. (up to e, or to the first the fast bucket misses) into row and counts, each
 * cell's weights added in sample order. `runs`: a run of samples in one bucket keeps its cell,
 * its count and the bucket's bounds in registers, so a sample within the bounds costs two
 * comparisons and one addition, and the cell and count are stored when the run ends (the same
 * additions in the same order, and no store-to-load chain through memory when usage stays in
 * one bucket); else each sample adds to memory (no mispredicted branch when the bucket changes
 * at almost every sample). Returns where it stopped. `strict`: step times must increase, else
 * never decrease. */
ALWAYS_INLINE int64_t add_block(const double *step_t, const double *v, const double *w,
                                int64_t j, int64_t e, const double *starts, Fast fast,
                                double *row, int64_t *counts, Adding *a, int runs,
                                int strict) {
    double sum = a->sum, prev = a->prev, scale = a->scale;
    uint64_t top = a->top;
    int ordered = 1;
    int64_t same = 0, cur = 0, run = 0;
    double cell = row[0], lo = INFINITY, hi = -INFINITY; /* no value is in [lo, hi) yet */
    for (; j < e; j++) {
        double x = v[j], t = step_t[j], wj = w[j] * scale;
        uint64_t bits;
        memcpy(&bits, &x, sizeof bits);
        top = bits > top ? bits : top;
        if (runs && x >= lo && x < hi) {
            /* in the bucket of the run */
            ordered &= strict ? t > prev : t >= prev;
            prev = t;
            sum += wj;
            cell += wj;
            run++;
            same++;
            continue;
        }
        int64_t b;
        if (!fast_bucket(x, bits, starts, fast, &b)) break;
        ordered &= strict ? t > prev : t >= prev;
        prev = t;
        sum += wj;
        if (runs) {
            row[cur] = cell;
            counts[cur] += run;
            cur = b;
            cell = row[b] + wj;
            run = 1;
            lo = starts[b];
            hi = starts[b + 1]; /* b <= nb - 2 from the fast bucket */
        } else {
            row[b] += wj;
            counts[b] += 1;
        }
    }
    if (runs) {
        row[cur] = cell;
        counts[cur] += run;
    }
    a->sum = sum;
    a->prev = prev;
    a->top = top;
    a->ordered &= ordered;
    a->same = same;
    return j;
}

/* Sample j into row and counts as ``add_block`` adds it, its bucket from ``bucket_of``. */
static inline void add_searched(const double *step_t, const double *v, const double *w,
                                int64_t j, const double *starts, int64_t nb, Guess guess,
                                double *row, int64_t *counts, Adding *a, int strict) {
    double x = v[j], t = step_t[j];
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int64_t b = bucket_of(x, starts, nb, guess);
    a->top = bits > a->top ? bits : a->top;
    a->ordered &= strict ? t > a->prev : t >= a->prev;
    a->prev = t;
    double wj = w[j] * a->scale;
    a->sum += wj;
    row[b] += wj;
    counts[b] += 1;
}

/* Samples [i, e) of one step into its row (nb >= 3), block by block: a block of runs in
 * registers, and while most of its samples stay in the run's bucket the next one too; else
 * SPREAD_BLOCKS blocks that add each sample to memory, then runs are tried again (`*spread`:
 * the blocks left before that). A sample the fast bucket misses takes ``bucket_of`` on its
 * own. */
ALWAYS_INLINE void add_step(const double *step_t, const double *v, const double *w, int64_t i,
                            int64_t e, const double *starts, int64_t nb, Guess guess,
                            Fast fast, double *row, int64_t *counts, Adding *a, int *spread,
                            int strict) {
    int64_t j = i;
    while (j < e) {
        int64_t end = e - j < BLOCK ? e : j + BLOCK;
        int64_t from = j;
        if (*spread == 0)
            j = add_block(step_t, v, w, j, end, starts, fast, row, counts, a, 1, strict);
        else
            j = add_block(step_t, v, w, j, end, starts, fast, row, counts, a, 0, strict);
        if (j == end) {
            if (*spread == 0)
                *spread = 2 * a->same > end - from ? 0 : SPREAD_BLOCKS;
            else
                (*spread)--;
            continue;
        }
        add_searched(step_t, v, w, j, starts, nb, guess, row, counts, a, strict);
        j++;
    }
}

/* ``add_step`` for fewer than three buckets: every sample takes ``bucket_of``. */
static void add_step_few(const double *step_t, const double *v, const double *w, int64_t i,
                         int64_t e, const double *starts, int64_t nb, Guess guess, double *row,
                         int64_t *counts, Adding *a, int strict) {
    for (int64_t j = i; j < e; j++)
        add_searched(step_t, v, w, j, starts, nb, guess, row, counts, a, strict);
}

/* Samples in time order (the counters' case, inv_step > 0, start_s finite): step by step, the
 * step's samples found from its ends (``run_end``) instead of a step per sample, and the
 * counters set once per step. The order is checked as the samples go: a series out of order
 * gives -1 whatever steps were found (and the outputs are not used). */
static int replay_in_order(const double *step_t, const double *v, const double *w, int64_t n,
                           double start_s, double inv_step, int64_t steps, const double *starts,
                           int64_t nb, Guess guess, double *cum, double *totals,
                           int64_t *counts, double *step_counts, double *last_s,
                           uint64_t *top, int strict, double scale) {
    if (n == 0) return 0;
    /* in order from a finite first to a finite last time: all finite (NaN fails every
     * comparison of the order) */
    if (!isfinite(step_t[0]) || !isfinite(step_t[n - 1])) return -1;
    Adding a = {0.0, -INFINITY, 0, 1, 0, scale};
    Fast fast = fast_of(guess, nb);
    int spread = 0;
    int64_t i = 0, len = 0;
    while (i < n) {
        int64_t s = step_of(step_t[i], start_s, inv_step, steps);
        int64_t e = run_end(step_t, i, n, s, len, start_s, inv_step, steps);
        double *row = cum + s * nb;
        a.sum = totals[s];
        if (nb < 3 || guess.binades < 1)
            add_step_few(step_t, v, w, i, e, starts, nb, guess, row, counts, &a, strict);
        else if (strict)
            add_step(step_t, v, w, i, e, starts, nb, guess, fast, row, counts, &a, &spread, 1);
        else
            add_step(step_t, v, w, i, e, starts, nb, guess, fast, row, counts, &a, &spread, 0);
        totals[s] = a.sum;
        step_counts[s] = (double)e; /* in order: the samples up to the step's last */
        last_s[s] = step_t[e - 1];
        len = e - i;
        i = e;
    }
    *top = a.top;
    return a.ordered ? 0 : -1;
}

/* Whether column b of the (steps x nb) grid holds a non-zero sum; only a bucket some sample
 * reached can. */
static int column_used(const double *cum, int64_t steps, int64_t nb, const int64_t *counts,
                       int64_t b) {
    if (counts[b] == 0) return 0;
    for (int64_t s = 0; s < steps; s++)
        if (cum[s * nb + b] != 0.0) return 1;
    return 0;
}

/* One series into a grid of `steps` replay steps and `nb` buckets (starts increasing).
 *
 * step_t[i]: the time that gives sample i its step (``step_of``); v[i] its value (``takes``);
 * w[i] × scale its weight (numpy's product: the twin multiplies the weights by the base weight
 * first). Out: cum (steps x nb): the weights of each (step, bucket) summed in sample
 * order, then summed over the steps (row s holds steps 0..s) in the columns [lohi[0], lohi[1])
 * of the buckets some sample reached with a non-zero sum (the others are left 0); totals
 * (steps): the weights per step, summed the same way; counts (nb): samples per bucket; vmax:
 * the largest v. With step_counts and last_s (both or neither; the step times must then never
 * decrease, and with `strict` always increase): samples in steps 0..s, and the step time of the
 * last of them (-inf when none).
 * Returns 0, or -1 for a value it does not take (``takes``), a step time that is not
 * finite (or decreases, when asked for the counters), or an empty grid; after -1 the outputs
 * hold nothing to use.
 */
int tb_vpa_replay(const double *step_t, const double *v, const double *w, int64_t n,
                  double start_s, double inv_step, int64_t steps, const double *starts,
                  int64_t nb, const int32_t *table, int64_t e0, int64_t binades, double *cum,
                  double *totals,
                  int64_t *counts, double *step_counts, double *last_s, int64_t *lohi,
                  double *vmax, int64_t strict, double scale) {
    if (n < 0 || steps < 1 || nb < 1 || binades < 0) return -1;
    Guess guess = {table, e0, binades};
    int counters = step_counts != NULL && last_s != NULL;
    for (int64_t k = 0; k < steps * nb; k++) cum[k] = 0.0;
    for (int64_t s = 0; s < steps; s++) totals[s] = 0.0;
    for (int64_t b = 0; b < nb; b++) counts[b] = 0;
    if (counters) {
        for (int64_t s = 0; s < steps; s++) {
            step_counts[s] = 0.0;
            last_s[s] = -INFINITY;
        }
    }
    uint64_t top = 0;
    if (counters && inv_step > 0.0 && isfinite(inv_step) && isfinite(start_s)) {
        if (replay_in_order(step_t, v, w, n, start_s, inv_step, steps, starts, nb, guess, cum,
                            totals, counts, step_counts, last_s, &top, strict != 0,
                            scale) != 0)
            return -1;
    } else {
        /* A run of samples in one step is summed in a register and stored when the run ends:
         * the same additions in the same order as adding each to memory. */
        int64_t cur_step = -1;
        double step_sum = 0.0;
        for (int64_t i = 0; i < n; i++) {
            double t = step_t[i], x = v[i];
            if (!isfinite(t)) return -1;
            if (counters && i > 0 && (strict ? !(t > step_t[i - 1]) : t < step_t[i - 1]))
                return -1;
            int64_t s = step_of(t, start_s, inv_step, steps);
            int64_t b = bucket_of(x, starts, nb, guess);
            if (s != cur_step) {
                if (cur_step >= 0) totals[cur_step] = step_sum;
                cur_step = s;
                step_sum = totals[s];
            }
            double wi = w[i] * scale;
            step_sum += wi;
            cum[s * nb + b] += wi;
            counts[b] += 1;
            uint64_t bits;
            memcpy(&bits, &x, sizeof bits);
            top = bits > top ? bits : top;
            if (counters) {
                step_counts[s] = (double)(i + 1); /* in order: the samples up to this one */
                last_s[s] = t;
            }
        }
        if (cur_step >= 0) totals[cur_step] = step_sum;
    }
    if (top >= TAKES_BELOW) return -1; /* some value not taken */
    if (n > 0)
        memcpy(vmax, &top, sizeof *vmax);
    else
        *vmax = -INFINITY;
    int64_t lo = 0, hi = nb;
    while (lo < nb && !column_used(cum, steps, nb, counts, lo)) lo++;
    while (hi > lo && !column_used(cum, steps, nb, counts, hi - 1)) hi--;
    if (lo == nb) lo = hi = 0;
    lohi[0] = lo;
    lohi[1] = hi;
    for (int64_t s = 1; s < steps; s++) {
        double *row = cum + s * nb, *above = cum + (s - 1) * nb;
        for (int64_t b = lo; b < hi; b++) row[b] = above[b] + row[b];
        totals[s] = totals[s - 1] + totals[s];
    }
    if (counters) {
        for (int64_t s = 1; s < steps; s++) {
            if (step_counts[s] < step_counts[s - 1]) step_counts[s] = step_counts[s - 1];
            if (last_s[s] == -INFINITY) last_s[s] = last_s[s - 1];
        }
    }
    return 0;
}

/* The first and last column of a row with weight >= epsilon (-1, -1 when none); 0, or -1 for
 * a NaN or negative weight. */
static int row_span(const double *row, int64_t cols, double epsilon, int64_t *first,
                    int64_t *last) {
    *first = -1;
    *last = -1;
    for (int64_t c = 0; c < cols; c++) {
        if (!(row[c] >= 0.0)) return -1; /* NaN or negative */
        if (row[c] >= epsilon) {
            if (*first < 0) *first = c;
            *last = c;
        }
    }
    return 0;
}

/* The column ``percentiles`` lands in for a row with columns [first, last] >= epsilon: from
 * first, the first column whose running sum reaches wanted (wanted <= 0: first), else last. */
static int64_t percentile_column(const double *row, int64_t first, int64_t last, double wanted) {
    if (!(wanted > 0.0)) return first;
    double sum = 0.0;
    for (int64_t c = first; c <= last; c++) {
        sum += row[c];
        if (sum >= wanted) return c;
    }
    return last;
}

/* For each row of w (rows x cols, rows `stride` doubles apart) and each p: the bucket
 * ``percentiles`` lands in, counted from the row's first column. From the first column with
 * weight >= epsilon, the first column whose running sum reaches p x total (p x total <= 0: that
 * first column), never past the last column >= epsilon. has[r] is 0 for a row without such a
 * column (its hits are 0). hit is p-major: hit[k * rows + r].
 * Returns 0, or -1 for a NaN or negative weight or a NaN total.
 */
int tb_percentile_rows(const double *w, int64_t rows, int64_t cols, int64_t stride,
                       const double *totals, const double *ps, int64_t nps, double epsilon,
                       int64_t *hit, int64_t *has) {
    if (rows < 0 || cols < 0 || nps < 0 || stride < cols) return -1;
    for (int64_t r = 0; r < rows; r++) {
        const double *row = w + r * stride;
        int64_t first, last;
        if (isnan(totals[r]) || row_span(row, cols, epsilon, &first, &last) != 0) return -1;
        has[r] = first >= 0;
        for (int64_t k = 0; k < nps; k++)
            hit[k * rows + r] =
                first < 0 ? 0 : percentile_column(row, first, last, ps[k] * totals[r]);
    }
    return 0;
}

/* Values counted per bucket in runs: the current run's bucket (-1 before the first), its
 * length and its bucket's bounds [lo, hi) kept in registers, so a value in the bucket of the one
 * before (the usual case for a working set) costs two comparisons. */
typedef struct {
    int64_t cur, run;
    double lo, hi;
} Span;

ALWAYS_INLINE void count_span(double x, uint64_t bits, const double *starts, int64_t nb,
                              Guess guess, Fast fast, int use_fast, int64_t *counts, Span *r) {
    if (x >= r->lo && x < r->hi) {
        r->run++;
        return;
    }
    if (r->cur >= 0) counts[r->cur] += r->run;
    int64_t b;
    if (!use_fast || !fast_bucket(x, bits, starts, fast, &b)) b = bucket_of(x, starts, nb, guess);
    r->cur = b;
    r->run = 1;
    r->lo = starts[b];
    r->hi = b + 1 < nb ? starts[b + 1] : INFINITY;
}

/* Samples per bucket of v and the largest value: the bucket counts of ``usage_from_counts``.
 * Returns 0, or -1 for a value it does not take (``takes``). */
int tb_bucket_counts(const double *v, int64_t n, const double *starts, int64_t nb,
                     const int32_t *table, int64_t e0, int64_t binades, int64_t *counts,
                     double *vmax) {
    if (n < 0 || nb < 1 || binades < 0) return -1;
    Guess guess = {table, e0, binades};
    Fast fast = {0, 0, 0, 0};
    int use_fast = nb >= 3 && binades >= 1;
    if (use_fast) fast = fast_of(guess, nb);
    for (int64_t b = 0; b < nb; b++) counts[b] = 0;
    Span span = {-1, 0, INFINITY, -INFINITY}; /* no value is in it */
    uint64_t top = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = v[i];
        uint64_t bits;
        memcpy(&bits, &x, sizeof bits);
        top = bits > top ? bits : top;
        count_span(x, bits, starts, nb, guess, fast, use_fast, counts, &span);
    }
    if (top >= TAKES_BELOW) return -1; /* some value not taken */
    if (span.cur >= 0) counts[span.cur] += span.run;
    if (n > 0)
        memcpy(vmax, &top, sizeof *vmax);
    else
        *vmax = -INFINITY;
    return 0;
}

/* The loop of ``tb_memory_peaks`` with its flags as constants: `wide` (int64 pods, else
 * int32), `counting` (bucket counts asked for), `use_fast` (``fast_bucket`` fits the layout).
 * The peak of the current entry is kept in a register and stored when the entry ends. */
ALWAYS_INLINE int peaks_loop(const double *t, const void *p, const double *v, int64_t n,
                             double interval, double *peak, int64_t *pod_of,
                             int64_t *window_of, double *t0_of, int64_t *entries,
                             const double *starts, int64_t nb, Guess guess, int64_t *counts,
                             double *vmax, double *tmax, int wide, int counting,
                             int use_fast) {
    const int32_t *p32 = (const int32_t *)p;
    const int64_t *p64 = (const int64_t *)p;
    Fast fast = {0, 0, 0, 0};
    if (use_fast) fast = fast_of(guess, nb);
    int64_t m = -1, pod = 0, k = 0;
    Span span = {-1, 0, INFINITY, -INFINITY}; /* no value is in it */
    uint64_t top = 0;
    double t0 = 0.0, guard = 0.0, prev = 0.0, latest = -INFINITY, high = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double ti = t[i], x = v[i];
        int64_t b = wide ? p64[i] : p32[i];
        uint64_t bits;
        memcpy(&bits, &x, sizeof bits);
        top = bits > top ? bits : top; /* ``takes`` every value when below TAKES_BELOW */
        if (!isfinite(ti)) return -1;
        latest = ti > latest ? ti : latest;
        if (counting) count_span(x, bits, starts, nb, guess, fast, use_fast, counts, &span);
        if (m < 0 || b != pod) {
            if (b < 0 || (m >= 0 && b < pod)) return -1;
            pod = b;
            t0 = ti;
            k = 0;
        } else {
            if (ti < prev) return -1;
            if (ti >= guard) {
                double f = floor((ti - t0) / interval);
                if (!(f >= 0.0 && f < 9.0e15)) return -1;
                if ((int64_t)f != k) {
                    k = (int64_t)f;
                    goto entry;
                }
                /* still in window k: no guard for it (check each sample to its end) */
            }
            prev = ti;
            high = x > high ? x : high;
            continue;
        }
    entry:
        /* a new (pod, window) entry */
        if (m >= 0) peak[m] = high;
        m++;
        high = x;
        pod_of[m] = pod;
        window_of[m] = k;
        t0_of[m] = t0;
        double edge = t0 + (double)(k + 1) * interval;
        guard = edge - 1e-9 * (fabs(edge) + fabs(t0) + interval);
        prev = ti;
    }
    if (top >= TAKES_BELOW) return -1;
    if (m >= 0) peak[m] = high;
    if (counting) {
        if (span.cur >= 0) counts[span.cur] += span.run;
        if (n > 0)
            memcpy(vmax, &top, sizeof *vmax);
        else
            *vmax = -INFINITY;
    }
    *tmax = latest;
    *entries = m + 1;
    return 0;
}

/* The memory window peaks of ``_peaks_in_order``: samples grouped by pod (pods never
 * decrease), each pod's times never decreasing, values as ``takes``. A pod's windows start at
 * its first time t0; sample i is in window k = floor((t - t0) / interval). Out, one entry per
 * (pod, window) with samples, pod by pod and window by window: peak (the largest value),
 * pod and window (k), and t0 of the pod; *entries their number (at most n).
 *
 * The division runs only near a window's end: below edge - margin (edge = t0 + (k + 1) x
 * interval, margin a billionth of the magnitudes, far above any rounding) the formula is k.
 * With counts (else NULL): also the usage buckets of every value (``tb_bucket_counts``: counts
 * of the nb buckets of starts, *vmax the largest value). *tmax: the latest time.
 * Returns 0, or -1 for a value it does not take, a time that is not finite or goes back
 * within a pod, a negative pod or pods out of order, an unknown pod width or an interval that
 * is not finite and > 0. */
int tb_memory_peaks(const double *t, const void *p, int64_t pod_bytes, const double *v, int64_t n,
                    double interval, double *peak, int64_t *pod_of, int64_t *window_of,
                    double *t0_of, int64_t *entries, const double *starts, int64_t nb,
                    const int32_t *table, int64_t e0, int64_t binades, int64_t *counts,
                    double *vmax, double *tmax) {
    if ((pod_bytes != 4 && pod_bytes != 8) || !(interval > 0.0) || !isfinite(interval)) return -1;
    if (counts != NULL && (nb < 1 || binades < 0)) return -1;
    Guess guess = {table, e0, binades};
    if (counts != NULL)
        for (int64_t c = 0; c < nb; c++) counts[c] = 0;
    int fits = counts != NULL && nb >= 3 && binades >= 1;
#define PEAKS(wide, counting, use_fast)                                                        \
    peaks_loop(t, p, v, n, interval, peak, pod_of, window_of, t0_of, entries, starts, nb, guess, \
               counts, vmax, tmax, wide, counting, use_fast)
    if (counts == NULL) return pod_bytes == 8 ? PEAKS(1, 0, 0) : PEAKS(0, 0, 0);
    if (!fits) return pod_bytes == 8 ? PEAKS(1, 1, 0) : PEAKS(0, 1, 0);
    return pod_bytes == 8 ? PEAKS(1, 1, 1) : PEAKS(0, 1, 1);
#undef PEAKS
}

/* ``resourceAmountFromFloat``: clamp to [0, 1e14] (NaN is 0) and truncate (``amounts.py``). */
static inline double amount_from_float(double x) {
    return trunc(fmin(fmax(x, 0.0), 1e14));
}

/* The estimator chain of one resource at the end of each replay step (``estimator.estimate``):
 * percentiles (target, lower, upper: ps) of the replayed rows (w: steps x cols, rows `stride`
 * apart, column c is bucket first_bucket + c; upper_edges: the value of each bucket), to amounts
 * (x 1000 when `cpu`), margin, confidence factors (upper_factor, lower_factor per step), the
 * per-pod minimum, then capping (min_amount when has_min, max_amount when has_max); values back
 * (/ 1000 when `cpu`). Out per step: target, lower, upper (capped), uncapped target, unfloored
 * target; *capped_by 0, 1 (minAllowed raised the last target) or 2 (maxAllowed lowered it);
 * sticky[0], sticky[1]: Tortoise's sticky maximum of the target and of the unfloored target.
 * Returns 0, or -1 for a NaN or negative weight, a NaN total or an unknown column. */
int tb_vpa_estimate(const double *w, int64_t steps, int64_t cols, int64_t stride,
                    const double *totals, int64_t first_bucket, const double *upper_edges,
                    int64_t nb, double epsilon, const double *ps, int64_t cpu, double margin,
                    const double *upper_factor, const double *lower_factor, double pod_min,
                    int64_t has_min, double min_amount, int64_t has_max, double max_amount,
                    double *target, double *lower, double *upper, double *uncapped,
                    double *unfloored, int64_t *capped_by, double *sticky) {
    if (steps < 1 || cols < 0 || stride < cols || first_bucket < 0 || first_bucket + cols > nb)
        return -1;
    double last_target = 0.0, last_capped = 0.0;
    for (int64_t r = 0; r < steps; r++) {
        const double *row = w + r * stride;
        int64_t first, last;
        if (isnan(totals[r]) || row_span(row, cols, epsilon, &first, &last) != 0) return -1;
        double amount[3];
        for (int k = 0; k < 3; k++) {
            double value = 0.0;
            if (first >= 0)
                value = upper_edges[first_bucket +
                                    percentile_column(row, first, last, ps[k] * totals[r])];
            double a = amount_from_float(cpu ? value * 1000.0 : value);
            amount[k] = a + amount_from_float(a * margin);
        }
        amount[2] = amount_from_float(amount[2] * upper_factor[r]);
        amount[1] = amount_from_float(amount[1] * lower_factor[r]);
        double raw = amount[0];
        double capped[3];
        for (int k = 0; k < 3; k++) {
            double a = amount[k] > pod_min ? amount[k] : pod_min;
            amount[k] = a;
            if (has_min && !(a >= min_amount)) a = min_amount;
            if (has_max && !(a <= max_amount)) a = max_amount;
            capped[k] = a;
        }
        /* ``value_from_amount``: millicores / 1000, bytes as they are */
        target[r] = cpu ? capped[0] / 1000.0 : capped[0];
        lower[r] = cpu ? capped[1] / 1000.0 : capped[1];
        upper[r] = cpu ? capped[2] / 1000.0 : capped[2];
        uncapped[r] = cpu ? amount[0] / 1000.0 : amount[0];
        unfloored[r] = cpu ? raw / 1000.0 : raw;
        last_target = amount[0];
        last_capped = capped[0];
    }
    *capped_by = last_capped > last_target ? 1 : (last_capped < last_target ? 2 : 0);
    /* Tortoise's maxRecommendation over the steps (``tortoise/requests.py``, ``sticky_max``):
     * kept while target < it < upper, else the target; of the target and of the unfloored one */
    double kept = 0.0, kept_unfloored = 0.0;
    for (int64_t r = 0; r < steps; r++) {
        if (!(target[r] < kept && kept < upper[r])) kept = target[r];
        if (!(unfloored[r] < kept_unfloored && kept_unfloored < upper[r]))
            kept_unfloored = unfloored[r];
    }
    sticky[0] = kept;
    sticky[1] = kept_unfloored;
    return 0;
}

/* The bucket each percentile of the counted samples lands in (``aggregate._usage_of_counts``):
 * for each p in ps, the first bucket whose running count reaches p × n (n the samples counted),
 * never past the last counted bucket. out[0..nps): the buckets; out[nps]: n. Returns 0, or -1
 * for a negative count, a total beyond 2^53 (the running counts must compare exactly as
 * doubles) or no sample (the twin then). */
int tb_usage_buckets(const int64_t *counts, int64_t nb, const double *ps, int64_t nps,
                     int64_t *out) {
    int64_t n = 0, last = -1;
    for (int64_t b = 0; b < nb; b++) {
        if (counts[b] < 0 || counts[b] > ((int64_t)1 << 53) - n) return -1;
        if (counts[b] > 0) last = b;
        n += counts[b];
    }
    if (n == 0) return -1;
    for (int64_t k = 0; k < nps; k++) {
        double wanted = ps[k] * (double)n;
        int64_t running = 0, b = 0;
        for (; b < last; b++) {
            running += counts[b];
            if ((double)running >= wanted) break;
        }
        out[k] = b;
    }
    out[nps] = n;
    return 0;
}
