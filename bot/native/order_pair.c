/* Two neighbouring order statistics of a series: the C twin of
 * bot/recommend/replay/figures.py's ``_order_pair`` (a percentile's two values around its
 * rank). Order statistics are values of the series, so any way of finding them gives the same
 * numbers to the bit; the twin's own test compares both (tests/native).
 *
 * v: n finite doubles (read only); k: 0 <= k and k + 1 < n; scratch: n doubles.
 * Out: out[0] the k-th smallest (0-based), out[1] the (k + 1)-th.
 * Returns 0, or -1 for what it does not take (a NaN or infinity; a negative zero: numpy may
 * place -0.0 and 0.0 either way round, so the twin decides; k out of range; a series that
 * defeats the search, select_kth).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#define STRIDE 16 /* the sample: every 16th value */

static inline void swap(double *a, double *b) {
    double t = *a;
    *a = *b;
    *b = t;
}

/* The median of a[i], a[j], a[l]. */
static inline double median3(const double *a, int64_t i, int64_t j, int64_t l) {
    double x = a[i], y = a[j], z = a[l];
    if (x > y) {
        double t = x;
        x = y;
        y = t;
    }
    if (y > z) y = z;
    return x > y ? x : y;
}

/* The k-th smallest of a[0..n) (reordered) into *kth, by three-way partitions around the
 * median of three values at pseudo-random places (a fixed sequence: no input order, sorted,
 * reversed or organ-pipe, makes it slow) and equal values (many zeros, say) ending a round at
 * once. Afterwards no value after position k is below it. Returns 0, or -1 after many more
 * rounds than a fair search takes (the caller's twin then). */
static int select_kth(double *a, int64_t n, int64_t k, double *kth) {
    int64_t lo = 0, hi = n - 1, rounds = 0, limit = 32;
    for (int64_t m = n; m > 1; m >>= 1) limit += 4;
    uint64_t state = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
    while (hi > lo) {
        if (++rounds > limit) return -1;
        uint64_t span = (uint64_t)(hi - lo + 1), pick[3];
        for (int p = 0; p < 3; p++) { /* xorshift64 */
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            pick[p] = state % span;
        }
        double pivot = median3(a, lo + (int64_t)pick[0], lo + (int64_t)pick[1],
                               lo + (int64_t)pick[2]);
        /* [lo, lt) < pivot, [lt, i) == pivot, (gt, hi] > pivot */
        int64_t lt = lo, i = lo, gt = hi;
        while (i <= gt) {
            if (a[i] < pivot)
                swap(&a[lt++], &a[i++]);
            else if (a[i] > pivot)
                swap(&a[i], &a[gt--]);
            else
                i++;
        }
        if (k < lt) {
            hi = lt - 1;
        } else if (k > gt) {
            lo = gt + 1;
        } else {
            *kth = pivot;
            return 0;
        }
    }
    *kth = a[k];
    return 0;
}

/* The smallest of a[0..n), n >= 1. */
static double least(const double *a, int64_t n) {
    double m = a[0];
    for (int64_t i = 1; i < n; i++) m = a[i] < m ? a[i] : m;
    return m;
}

/* The pair from a[0..n) (reordered): the k-th smallest and the least value after it;
 * 0, or -1 as select_kth. */
static int pair_of(double *a, int64_t n, int64_t k, double *out) {
    if (select_kth(a, n, k, &out[0]) != 0) return -1;
    out[1] = least(a + k + 1, n - k - 1);
    return 0;
}

/* Whether x is one the kernel does not take: not finite (all exponent bits set), or -0.0. */
static inline uint64_t refused(double x) {
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    return ((bits & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL) |
           (bits == 0x8000000000000000ULL);
}

int tb_order_pair(const double *v, int64_t n, int64_t k, double *scratch, double *out) {
    if (k < 0 || k + 1 >= n) return -1;
    uint64_t bad = 0;
    if (n >= 64 * STRIDE) {
        /* A threshold a few standard errors below the k/n quantile of the sample keeps the
         * values at or above it; when no more than k values lie below it, the pair is that of
         * ranks k - below and k - below + 1 among the kept ones (the values below are all
         * smaller). Else the whole series is searched. Every value is checked on the way. */
        int64_t m = 0;
        for (int64_t i = 0; i < n; i += STRIDE) scratch[m++] = v[i];
        double q = (double)k / (double)n;
        double slack = 4.0 * sqrt((double)m * q * (1.0 - q)) + 2.0;
        int64_t rank = (int64_t)floor((double)m * q - slack);
        double threshold;
        if (rank > 0 && select_kth(scratch, m, rank, &threshold) == 0) {
            int64_t kept = 0;
            for (int64_t i = 0; i < n; i++) {
                double x = v[i];
                bad |= refused(x);
                if (x >= threshold) scratch[kept++] = x; /* a few in a hundred */
            }
            if (bad) return -1;
            int64_t rest = k - (n - kept);
            if (rest >= 0) return pair_of(scratch, kept, rest, out);
        }
    }
    for (int64_t i = 0; i < n; i++) {
        bad |= refused(v[i]);
        scratch[i] = v[i];
    }
    if (bad) return -1;
    return pair_of(scratch, n, k, out);
}
