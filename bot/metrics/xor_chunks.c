/* Prometheus' XOR chunks (tsdb/chunkenc/xor.go) decoded chunk after chunk, compiled beside
 * its numpy reference bot/metrics/xor_chunks.py (``decode_xor`` and ``_kept``; read its module doc for the
 * encoding). Every time and value bit pattern is the one the numpy decoder gives.
 *
 * tb_xor_samples:
 * data, size:   the answer's bytes (untrusted: every read is checked against its chunk's end);
 * starts, ends: n chunk data spans in data (the 2-byte sample count, then the bit stream);
 * offsets:      n + 1 sample offsets from 0 (chunk i holds offsets[i + 1] - offsets[i] samples,
 *               as its first two bytes say), offsets[n] the length of out_s and out_v;
 * start_ms, end_ms: the range asked for (samples out of it dropped, as ``_kept`` does);
 * scratch:      65,536 int64 (one chunk's times in ms);
 * out_s:        times (seconds: ms / 1000.0); out_v: value bits; kept: samples kept per chunk,
 *               written one chunk after the other (stale markers dropped).
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
#define STALE_NAN_BITS 0x7FF0000000000002ULL /* value.StaleNaN: dropped */

typedef struct {
    const uint8_t *p; /* the bit stream's first byte */
    int64_t len;      /* its bytes */
    uint64_t bit;     /* the next bit to read */
    uint64_t nbits;   /* len * 8 */
} reader;

/* A 64-bit word loaded from memory, read as big-endian. */
static inline uint64_t big_endian(uint64_t w) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return w;
#elif defined(__GNUC__)
    return __builtin_bswap64(w);
#else
    const uint8_t *b = (const uint8_t *)&w;
    uint64_t out = 0;
    for (int i = 0; i < 8; i++) out = (out << 8) | b[i];
    return out;
#endif
}

/* The 64 bits at the reader's position, zeros past the chunk's end (callers check that the
 * bits they use lie inside). */
static inline uint64_t window(const reader *r) {
    uint64_t byte = r->bit >> 3;
    unsigned shift = (unsigned)(r->bit & 7);
    uint64_t w = 0;
    if (byte + 9 <= (uint64_t)r->len) {
        const uint8_t *q = r->p + byte;
        memcpy(&w, q, 8);
        w = big_endian(w);
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

int tb_xor_samples(const uint8_t *data, int64_t size, const int64_t *starts,
                   const int64_t *ends, int64_t n, const int64_t *offsets, int64_t start_ms,
                   int64_t end_ms, int64_t *scratch, double *out_s, uint64_t *out_v,
                   int64_t *kept, int64_t *where) {
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
    int64_t w = 0; /* samples kept so far: never past offsets[i], so inside out_s and out_v */
    for (int64_t i = 0; i < n; i++) {
        int64_t count = offsets[i + 1] - offsets[i];
        kept[i] = 0;
        if (count == 0) continue;
        *where = i;
        reader r = {data + starts[i] + 2, ends[i] - starts[i] - 2, 0, 0};
        r.nbits = (uint64_t)r.len * 8;
        uint64_t *v = out_v + w;
        int status = chunk(&r, count, scratch, v);
        if (status != TB_XOR_OK) return status;
        /* as _kept: the range checked only in chunks whose first or last sample is out of it */
        int crossing = scratch[0] < start_ms || scratch[count - 1] > end_ms;
        int64_t m = 0;
        for (int64_t k = 0; k < count; k++) {
            int64_t t = scratch[k];
            if (v[k] == STALE_NAN_BITS || (crossing && (t < start_ms || t > end_ms))) continue;
            out_s[w + m] = (double)t / 1000.0;
            v[m] = v[k];
            m++;
        }
        kept[i] = m;
        w += m;
    }
    return TB_XOR_OK;
}

/* ------------------------------------------------------------------ the chunk table
 * The compiled counterpart of bot/metrics/xor_frames.py's ``chunk_table`` and of
 * bot/metrics/xor_chunks.py's ``_chunk_data``: every
 * ChunkedSeries message of the ChunkedReadResponse messages at spans (n_spans start/end
 * pairs) of data, with the spans of its labels' names and values and of its XOR chunks' data.
 *
 * series: 2 per series message (start, end); labels: 5 per label (series, name start, name end,
 * value start, value end; -1 -1 for an absent name or value); chunks: 3 per chunk (series, data
 * start, data end). Each holds at most its *_cap rows; found[0..2] = series, labels, chunks
 * met. Returns 0; TB_TABLE_SPACE when a table was too small (found says how large it must be:
 * call again); or an error (TB_TABLE_* below), *detail its number (wire type, encoding).
 */
#define TB_TABLE_SPACE 10
#define TB_TABLE_TRUNCATED 11  /* "truncated varint" */
#define TB_TABLE_LONG 12       /* "varint longer than 10 bytes" */
#define TB_TABLE_WIRE 13       /* "unsupported wire type {detail}" */
#define TB_TABLE_SERIES 14     /* "series runs past its frame" */
#define TB_TABLE_FIELD 15      /* "series field runs past its message" */
#define TB_TABLE_LABEL 16      /* "label runs past its message" */
#define TB_TABLE_CHUNK 17      /* "chunk field runs past its message" */
#define TB_TABLE_NOT_XOR 18    /* "chunk encoding {detail} is not XOR (float samples)" */
#define TB_TABLE_NO_COUNT 19   /* "chunk without its sample count" */

/* The varint at *pos (read up to end), as read_varint: 10 bytes at most. */
static int varint(const uint8_t *data, int64_t *pos, int64_t end, uint64_t *out) {
    uint64_t value = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (*pos >= end) return TB_TABLE_TRUNCATED;
        uint64_t byte = data[(*pos)++];
        value |= (byte & 0x7F) << shift;
        if (byte < 0x80) {
            *out = value;
            return TB_XOR_OK;
        }
        if (shift + 7 > 63) return TB_TABLE_LONG;
    }
}

/* Skip a field of wire type wire whose value starts at *pos, as skip_field (which does not
 * check fixed-width fields against end: the caller's end check does). */
static int skip(const uint8_t *data, int64_t *pos, uint64_t wire, int64_t end, int64_t *detail) {
    uint64_t value;
    int status;
    switch (wire) {
    case 0:
        return varint(data, pos, end, &value);
    case 1:
        *pos += 8;
        return TB_XOR_OK;
    case 2:
        if ((status = varint(data, pos, end, &value)) != TB_XOR_OK) return status;
        if (value > (uint64_t)(INT64_MAX - *pos)) return TB_TABLE_FIELD;
        *pos += (int64_t)value;
        return TB_XOR_OK;
    case 5:
        *pos += 4;
        return TB_XOR_OK;
    default:
        *detail = (int64_t)wire;
        return TB_TABLE_WIRE;
    }
}

/* A length-delimited value at *pos: its end (read up to end); never past data's size. */
static int span(const uint8_t *data, int64_t *pos, int64_t end, int64_t size, int64_t *stop) {
    uint64_t length;
    int status = varint(data, pos, end, &length);
    if (status != TB_XOR_OK) return status;
    if (length > (uint64_t)(size - *pos)) length = (uint64_t)(size - *pos) + 1; /* past it */
    *stop = *pos + (int64_t)length;
    return TB_XOR_OK;
}

/* The label message data[pos:end]: name and value spans, as read_label (the last wins). */
static int label(const uint8_t *data, int64_t pos, int64_t end, int64_t size, int64_t *row,
                 int64_t *detail) {
    row[1] = row[2] = row[3] = row[4] = -1;
    while (pos < end) {
        uint64_t key;
        int status = varint(data, &pos, end, &key);
        if (status != TB_XOR_OK) return status;
        if (key == 0x0A || key == 0x12) {
            int64_t stop;
            if ((status = span(data, &pos, end, size, &stop)) != TB_XOR_OK) return status;
            if (stop > end) return TB_TABLE_LABEL;
            int at = key == 0x0A ? 1 : 3;
            row[at] = pos;
            row[at + 1] = stop;
            pos = stop;
        } else if ((status = skip(data, &pos, key & 7, end, detail)) != TB_XOR_OK) {
            return status;
        }
    }
    return TB_XOR_OK;
}

/* The Chunk message data[pos:end]: its data span, as _chunk (any field order). */
static int chunk_data(const uint8_t *data, int64_t pos, int64_t end, int64_t size, int64_t *first,
                      int64_t *last, int64_t *detail) {
    uint64_t encoding = 0;
    *first = *last = 0;
    while (pos < end) {
        uint64_t key;
        int status = varint(data, &pos, end, &key);
        if (status != TB_XOR_OK) return status;
        if (key == 0x22) {
            int64_t stop;
            if ((status = span(data, &pos, end, size, &stop)) != TB_XOR_OK) return status;
            *first = pos;
            *last = stop;
            pos = stop;
        } else if (key == 0x18) {
            if ((status = varint(data, &pos, end, &encoding)) != TB_XOR_OK) return status;
        } else if ((status = skip(data, &pos, key & 7, end, detail)) != TB_XOR_OK) {
            return status;
        }
    }
    if (pos != end) return TB_TABLE_CHUNK;
    if (encoding != 1) {
        *detail = (int64_t)encoding;
        return TB_TABLE_NOT_XOR;
    }
    if (*last - *first < 2) return TB_TABLE_NO_COUNT;
    return TB_XOR_OK;
}

int tb_xor_table(const uint8_t *data, int64_t size, const int64_t *spans, int64_t n_spans,
                 int64_t *series, int64_t series_cap, int64_t *labels, int64_t labels_cap,
                 int64_t *chunks, int64_t chunks_cap, int64_t *found, int64_t *detail) {
    int64_t n_series = 0, n_labels = 0, n_chunks = 0;
    int status;
    for (int64_t f = 0; f < n_spans; f++) {
        int64_t pos = spans[2 * f], end = spans[2 * f + 1];
        if (pos < 0 || end > size || pos > end) return TB_XOR_TABLE;
        while (pos < end) {
            uint64_t key;
            if ((status = varint(data, &pos, end, &key)) != TB_XOR_OK) return status;
            if (key != 0x0A) { /* query_index and anything else */
                if ((status = skip(data, &pos, key & 7, end, detail)) != TB_XOR_OK) return status;
                continue;
            }
            int64_t stop;
            if ((status = span(data, &pos, end, size, &stop)) != TB_XOR_OK) return status;
            if (stop > end) return TB_TABLE_SERIES;
            if (n_series < series_cap) {
                series[2 * n_series] = pos;
                series[2 * n_series + 1] = stop;
            }
            while (pos < stop) {
                if ((status = varint(data, &pos, stop, &key)) != TB_XOR_OK) return status;
                if ((key & 7) != 2) {
                    if ((status = skip(data, &pos, key & 7, stop, detail)) != TB_XOR_OK)
                        return status;
                    continue;
                }
                int64_t next;
                if ((status = span(data, &pos, stop, size, &next)) != TB_XOR_OK) return status;
                if (key == 0x0A || key == 0x12) {
                    if (next > stop) return TB_TABLE_FIELD;
                }
                if (key == 0x0A) {
                    int64_t row[5];
                    if ((status = label(data, pos, next, size, row, detail)) != TB_XOR_OK)
                        return status;
                    if (n_labels < labels_cap) {
                        row[0] = n_series;
                        memcpy(labels + 5 * n_labels, row, sizeof row);
                    }
                    n_labels++;
                } else if (key == 0x12) {
                    int64_t first, last;
                    status = chunk_data(data, pos, next, size, &first, &last, detail);
                    if (status != TB_XOR_OK) return status;
                    if (n_chunks < chunks_cap) {
                        chunks[3 * n_chunks] = n_series;
                        chunks[3 * n_chunks + 1] = first;
                        chunks[3 * n_chunks + 2] = last;
                    }
                    n_chunks++;
                }
                pos = next;
            }
            if (pos != stop) return TB_TABLE_FIELD;
            n_series++;
        }
    }
    found[0] = n_series;
    found[1] = n_labels;
    found[2] = n_chunks;
    if (n_series > series_cap || n_labels > labels_cap || n_chunks > chunks_cap)
        return TB_TABLE_SPACE;
    return TB_XOR_OK;
}
