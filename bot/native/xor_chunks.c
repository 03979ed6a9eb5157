/* Prometheus' XOR chunks (tsdb/chunkenc/xor.go) decoded chunk after chunk: the C twin of
 * bot/metrics/xor_chunks.py's ``decode_xor`` (read its module doc for the encoding). Every
 * timestamp and value bit pattern is the one the numpy decoder gives.
 *
 * data, size:   the answer's bytes (untrusted: every read is checked against its chunk's end);
 * starts, ends: n chunk data spans in data (the 2-byte sample count, then the bit stream);
 * offsets:      n + 1 sample offsets (chunk i's samples go to out[offsets[i]..offsets[i+1]]),
 *               offsets[n] the length of out_t and out_v;
 * out_t:        times (ms, int64); out_v: value bits (uint64).
 * Returns 0, or the first error met (TB_XOR_* below; *where = the chunk that has it).
 */
#include <stdint.h>
#include <string.h>

#define TB_XOR_OK 0
#define TB_XOR_TABLE 1       /* spans or offsets inconsistent with the data */
#define TB_XOR_FEWER_BITS 2  /* more samples announced than the chunk's bits can hold */
#define TB_XOR_VARINT 3      /* a varint longer than 10 bytes */
#define TB_XOR_PAST_END 4    /* the chunk's samples run past its end */
#define TB_XOR_WINDOW 5      /* leading zeros + significant bits > 64 */

typedef struct {
    const uint8_t *p; /* the bit stream's first byte */
    int64_t len;      /* its bytes */
    uint64_t bit;     /* the next bit to read */
    uint64_t nbits;   /* len * 8 */
} reader;

/* The 64 bits at the reader's position, zeros past the chunk's end (callers check that the
 * bits they use lie inside). */
static inline uint64_t window(const reader *r) {
    uint64_t byte = r->bit >> 3;
    unsigned shift = (unsigned)(r->bit & 7);
    uint64_t w = 0;
    if (byte + 9 <= (uint64_t)r->len) {
        const uint8_t *q = r->p + byte;
        for (int i = 0; i < 8; i++) w = (w << 8) | q[i]; /* gcc: one load and a bswap */
        if (shift) w = (w << shift) | (q[8] >> (8 - shift));
        return w;
    }
    for (int i = 0; i < 9; i++) {
        uint64_t at = byte + (uint64_t)i;
        uint64_t octet = at < (uint64_t)r->len ? r->p[at] : 0;
        if (i < 8) w = (w << 8) | octet;
        else if (shift) w = (w << shift) | (octet >> (8 - shift));
    }
    return w;
}

/* Take n bits: 0 when they run past the end. */
static inline int take(reader *r, uint64_t n) {
    if (r->bit + n > r->nbits) return 0;
    r->bit += n;
    return 1;
}

/* Read n bits (0..64); 0 when they run past the end. */
static inline int bits(reader *r, unsigned n, uint64_t *out) {
    if (r->bit + n > r->nbits) return 0;
    *out = n ? window(r) >> (64 - n) : 0;
    r->bit += n;
    return 1;
}

/* A uvarint at the reader's (byte-aligned) position, as numpy reads it: 10 bytes at most. */
static int uvarint(reader *r, uint64_t *out) {
    uint64_t value = 0;
    int64_t at = (int64_t)(r->bit >> 3);
    for (int group = 0; group < 10; group++) {
        if (at >= r->len) return TB_XOR_PAST_END;
        uint64_t octet = r->p[at++];
        value |= (octet & 0x7F) << (7 * group);
        if (octet < 0x80) {
            *out = value;
            r->bit = (uint64_t)at * 8;
            return TB_XOR_OK;
        }
    }
    return TB_XOR_VARINT;
}

static int chunk(reader *r, int64_t count, int64_t *out_t, uint64_t *out_v) {
    uint64_t zigzag, first, v, x = 0, dod_bits;
    int status = uvarint(r, &zigzag);
    if (status != TB_XOR_OK) return status;
    if (!bits(r, 64, &v)) return TB_XOR_PAST_END;
    uint64_t t = (zigzag >> 1) ^ (uint64_t)(-(int64_t)(zigzag & 1));
    out_t[0] = (int64_t)t;
    out_v[0] = v;
    uint64_t delta = 0;
    unsigned trailing = 0, significant = 0;
    for (int64_t k = 1; k < count; k++) {
        if (k == 1) {
            status = uvarint(r, &first);
            if (status != TB_XOR_OK) return status;
            delta = first;
        } else {
            /* '0' | '10' + 14 | '110' + 17 | '1110' + 20 | '1111' + 64 */
            uint64_t w = window(r);
            if (w >> 63) {
                static const unsigned widths[5] = {0, 14, 17, 20, 64};
                unsigned ones = 1;
                while (ones < 4 && (w << ones) >> 63) ones++;
                unsigned width = widths[ones], prefix = ones < 4 ? ones + 1 : 4;
                if (width == 64) {
                    if (!take(r, 4) || !bits(r, 64, &dod_bits)) return TB_XOR_PAST_END;
                } else {
                    if (!take(r, prefix + width)) return TB_XOR_PAST_END;
                    dod_bits = (w << prefix) >> (64 - width);
                    if (dod_bits > ((uint64_t)1 << (width - 1))) dod_bits -= (uint64_t)1 << width;
                }
                delta += dod_bits; /* two's complement: wraps as numpy's int64 */
            } else if (!take(r, 1)) {
                return TB_XOR_PAST_END;
            }
        }
        t += delta;
        /* value: '0' same, '10' + bits in the previous window, '11' + new window + bits */
        uint64_t w = window(r);
        if (w >> 63) {
            if ((w >> 62) & 1) {
                uint64_t lead = (w >> 57) & 31, sig = (w >> 51) & 63;
                if (!take(r, 13)) return TB_XOR_PAST_END;
                if (sig == 0) sig = 64;
                if (lead + sig > 64) return TB_XOR_WINDOW;
                significant = (unsigned)sig;
                trailing = (unsigned)(64 - lead - sig);
            } else if (!take(r, 2)) {
                return TB_XOR_PAST_END;
            }
            if (!bits(r, significant, &x)) return TB_XOR_PAST_END;
            v ^= x << trailing; /* trailing <= 63 */
        } else if (!take(r, 1)) {
            return TB_XOR_PAST_END;
        }
        out_t[k] = (int64_t)t;
        out_v[k] = v;
    }
    return TB_XOR_OK;
}

int tb_xor_decode(const uint8_t *data, int64_t size, const int64_t *starts, const int64_t *ends,
                  int64_t n, const int64_t *offsets, int64_t *out_t, uint64_t *out_v,
                  int64_t *where) {
    int64_t total = offsets[n];
    if (offsets[0] != 0 || total < 0) return TB_XOR_TABLE;
    for (int64_t i = 0; i < n; i++) { /* the whole table first, as numpy checks counts first */
        *where = i;
        int64_t s = starts[i], e = ends[i];
        if (s < 0 || e > size || e - s < 2) return TB_XOR_TABLE;
        int64_t count = ((int64_t)data[s] << 8) | data[s + 1];
        if (offsets[i + 1] - offsets[i] != count || offsets[i + 1] > total) return TB_XOR_TABLE;
        if (count > 1 + (e - s - 2) * 4) return TB_XOR_FEWER_BITS;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t count = offsets[i + 1] - offsets[i];
        if (count == 0) continue;
        *where = i;
        reader r = {data + starts[i] + 2, ends[i] - starts[i] - 2, 0, 0};
        r.nbits = (uint64_t)r.len * 8;
        int status = chunk(&r, count, out_t + offsets[i], out_v + offsets[i]);
        if (status != TB_XOR_OK) return status;
    }
    return TB_XOR_OK;
}
