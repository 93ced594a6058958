/*
 * take.c: the values of a few rows of one data page, and the rows whose value is one of
 * a few (see pybloom_async_rows.h).
 *
 * One reader walks the RLE/bit-packed hybrid encoding (the definition levels, and the
 * dictionary indices): a run is decoded from its header as it is met, and values are
 * skipped a run at a time where they are not wanted.
 */
#include "pybloom_async_rows.h"
#include "le.h"

#include <string.h>

#define XXH_INLINE_ALL
#define XXH_STATIC_LINKING_ONLY
#include "xxhash.h"

/* A reader of the RLE/bit-packed hybrid encoding. */
typedef struct {
    const uint8_t *p;    /* the next run's header */
    const uint8_t *end;  /* the end of the encoded bytes */
    uint32_t width;      /* bits per value, at most 32 */
    uint64_t left;       /* values left in the current run */
    int packed;          /* the current run is bit-packed */
    uint32_t value;      /* an RLE run's value */
    const uint8_t *bits; /* a bit-packed run's bytes */
    uint64_t at;         /* the next value's place in the bit-packed run */
    uint64_t run_bytes;  /* a bit-packed run's byte length */
} hybrid;

static void hybrid_init(hybrid *r, const uint8_t *data, size_t len, uint32_t width) {
    memset(r, 0, sizeof *r);
    r->p = data;
    r->end = data + len;
    r->width = width;
}

/* Reads the next run's header. */
static int hybrid_run(hybrid *r) {
    uint64_t header = 0;
    int shift = 0;
    for (;;) {
        if (r->p >= r->end) return PBA_TAKE_ERR_TRUNCATED;
        uint8_t byte = *r->p++;
        header |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) break;
        shift += 7;
        if (shift > 28) return PBA_TAKE_ERR_MALFORMED; /* a uint32 varint: 5 bytes */
    }
    if (header > UINT32_MAX) return PBA_TAKE_ERR_MALFORMED;
    if (header & 1) {
        uint64_t groups = header >> 1;
        uint64_t bytes = groups * r->width;
        if (bytes > (uint64_t)(r->end - r->p)) return PBA_TAKE_ERR_TRUNCATED;
        r->packed = 1;
        r->bits = r->p;
        r->run_bytes = bytes;
        r->at = 0;
        r->left = groups * 8;
        r->p += bytes;
    } else {
        size_t bytes = (r->width + 7) / 8;
        if (bytes > (size_t)(r->end - r->p)) return PBA_TAKE_ERR_TRUNCATED;
        uint32_t value = 0;
        for (size_t i = 0; i < bytes; i++) value |= (uint32_t)r->p[i] << (8 * i);
        r->p += bytes;
        if (r->width < 32 && (value >> r->width) != 0) return PBA_TAKE_ERR_MALFORMED;
        r->packed = 0;
        r->value = value;
        r->left = header >> 1;
    }
    return PBA_TAKE_OK;
}

/* The bit-packed run's value at `i` (below its values: its bytes are all there). */
static uint32_t packed_value(const hybrid *r, uint64_t i) {
    uint64_t bit = i * r->width;
    uint64_t byte = bit >> 3;
    unsigned shift = (unsigned)(bit & 7);
    uint64_t word = 0;
    if (byte + 8 <= r->run_bytes) { /* shift + width <= 39 bits: one load holds them */
        word = pba_le64(r->bits + byte);
    } else {
        size_t need = (shift + r->width + 7) / 8;
        for (size_t j = 0; j < need && byte + j < r->run_bytes; j++)
            word |= (uint64_t)r->bits[byte + j] << (8 * j);
    }
    uint64_t mask = r->width == 32 ? 0xffffffffu : (((uint64_t)1 << r->width) - 1);
    return (uint32_t)((word >> shift) & mask);
}

/* Skips `k` values; `ones` (if not NULL) counts those equal to 1. */
static int hybrid_skip(hybrid *r, uint64_t k, uint64_t *ones) {
    while (k > 0) {
        if (r->left == 0) {
            int status = hybrid_run(r);
            if (status != PBA_TAKE_OK) return status;
            continue;
        }
        uint64_t step = k < r->left ? k : r->left;
        if (ones != NULL) {
            if (r->packed) {
                for (uint64_t i = 0; i < step; i++) *ones += packed_value(r, r->at + i) == 1;
            } else if (r->value == 1) {
                *ones += step;
            }
        }
        if (r->packed) r->at += step;
        r->left -= step;
        k -= step;
    }
    return PBA_TAKE_OK;
}

/* The next value. */
static int hybrid_next(hybrid *r, uint32_t *value) {
    while (r->left == 0) {
        int status = hybrid_run(r);
        if (status != PBA_TAKE_OK) return status;
    }
    if (r->packed) {
        *value = packed_value(r, r->at);
        r->at++;
    } else {
        *value = r->value;
    }
    r->left--;
    return PBA_TAKE_OK;
}

/* The end of the byte array whose length lies at `at`, or -1 past `len`. */
static int64_t byte_array_end(const uint8_t *data, size_t len, uint64_t at) {
    if (at > len || len - at < 4) return -1;
    uint64_t size = pba_le32(data + at);
    if (size > len - at - 4) return -1;
    return (int64_t)(at + 4 + size);
}

int pba_take_refs(const uint8_t *levels, size_t levels_len, const uint8_t *values,
                  size_t values_len, uint32_t num_values, uint32_t dictionary_count,
                  uint32_t width, const uint32_t *rows, size_t n, int64_t *refs) {
    if ((values == NULL && values_len) || (n && (rows == NULL || refs == NULL)))
        return PBA_TAKE_ERR_ARG;
    if (levels == NULL && levels_len) return PBA_TAKE_ERR_ARG;

    hybrid defs, indices;
    if (levels != NULL) hybrid_init(&defs, levels, levels_len, 1);
    int indices_read = 0; /* the indices' bit width is read when the first is wanted */
    uint64_t row_at = 0;   /* levels read */
    uint64_t present = 0;  /* values present before row_at */
    uint64_t value_at = 0; /* values read (indices, or PLAIN byte arrays) */
    uint64_t byte_at = 0;  /* the PLAIN byte array value_at's offset */
    int64_t last = -1;
    for (size_t i = 0; i < n; i++) {
        uint32_t row = rows[i];
        if ((int64_t)row <= last || row >= num_values) return PBA_TAKE_ERR_ARG;
        last = row;
        uint64_t k = row; /* the row's value among those present */
        if (levels != NULL) {
            int status = hybrid_skip(&defs, row - row_at, &present);
            uint32_t level = 0;
            if (status == PBA_TAKE_OK) status = hybrid_next(&defs, &level);
            if (status != PBA_TAKE_OK) return status;
            if (level > 1) return PBA_TAKE_ERR_MALFORMED;
            row_at = (uint64_t)row + 1;
            if (level == 0) {
                refs[i] = -1;
                continue;
            }
            k = present++;
        }
        if (dictionary_count) {
            if (!indices_read) {
                if (values_len < 1) return PBA_TAKE_ERR_TRUNCATED;
                if (values[0] > 32) return PBA_TAKE_ERR_MALFORMED;
                hybrid_init(&indices, values + 1, values_len - 1, values[0]);
                indices_read = 1;
            }
            uint32_t index = 0;
            int status = hybrid_skip(&indices, k - value_at, NULL);
            if (status == PBA_TAKE_OK) status = hybrid_next(&indices, &index);
            if (status != PBA_TAKE_OK) return status;
            if (index >= dictionary_count) return PBA_TAKE_ERR_MALFORMED;
            value_at = k + 1;
            refs[i] = index;
        } else if (width) {
            if (k >= values_len / width) return PBA_TAKE_ERR_TRUNCATED;
            refs[i] = (int64_t)(k * width);
        } else {
            for (; value_at < k; value_at++) {
                int64_t end = byte_array_end(values, values_len, byte_at);
                if (end < 0) return PBA_TAKE_ERR_TRUNCATED;
                byte_at = (uint64_t)end;
            }
            if (byte_array_end(values, values_len, byte_at) < 0) return PBA_TAKE_ERR_TRUNCATED;
            refs[i] = (int64_t)byte_at;
        }
    }
    return PBA_TAKE_OK;
}

int pba_byte_array_offsets(const uint8_t *data, size_t len, uint32_t count, int64_t *offsets) {
    if ((data == NULL && len) || (count && offsets == NULL)) return PBA_TAKE_ERR_ARG;
    uint64_t at = 0;
    for (uint32_t i = 0; i < count; i++) {
        int64_t end = byte_array_end(data, len, at);
        if (end < 0) return PBA_TAKE_ERR_TRUNCATED;
        offsets[i] = (int64_t)at;
        at = (uint64_t)end;
    }
    return PBA_TAKE_OK;
}

int pba_gather_byte_arrays(const uint8_t *data, size_t len, const int64_t *refs, size_t n,
                           int64_t *offsets, uint8_t *out, size_t out_len) {
    if ((data == NULL && len) || offsets == NULL || (n && refs == NULL)) return PBA_TAKE_ERR_ARG;
    offsets[0] = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t ref = refs[i];
        if (ref >= 0) {
            int64_t end = byte_array_end(data, len, (uint64_t)ref);
            if (end < 0) return PBA_TAKE_ERR_TRUNCATED;
            uint64_t size = (uint64_t)end - (uint64_t)ref - 4;
            if (out != NULL) {
                if (size > out_len - total) return PBA_TAKE_ERR_CAPACITY;
                memcpy(out + total, data + ref + 4, size);
            }
            total += size;
        } else if (ref != -1) {
            return PBA_TAKE_ERR_ARG;
        }
        offsets[i + 1] = (int64_t)total;
    }
    return PBA_TAKE_OK;
}

/* A key's bit in a filter of 2^bits bits. */
static uint64_t int_bit(int64_t v, uint32_t bits) {
    return ((uint64_t)v * 0x9E3779B97F4A7C15ull) >> (64 - bits);
}

static uint64_t bytes_bit(const uint8_t *p, uint64_t len, uint32_t bits) {
    return XXH64(p, (size_t)len, 0) >> (64 - bits);
}

static int filter_has(const pba_keys *keys, uint64_t bit) {
    return (keys->filter[bit >> 6] >> (bit & 63)) & 1;
}

/* Whether the integer v is one of the keys (ascending). */
static int key_int(const pba_keys *keys, int64_t v) {
    if (keys->filter != NULL && !filter_has(keys, int_bit(v, keys->filter_bits))) return 0;
    const int64_t *k = keys->ints;
    size_t n = keys->n;
    if (n <= 8) {
        for (size_t i = 0; i < n; i++)
            if (k[i] == v) return 1;
        return 0;
    }
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k[mid] == v) return 1;
        if (k[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return 0;
}

/* Whether the byte array p[0 .. len) is one of the keys (ascending as memcmp orders). */
static int key_bytes(const pba_keys *keys, const uint8_t *p, uint64_t len) {
    if (keys->filter != NULL && !filter_has(keys, bytes_bit(p, len, keys->filter_bits)))
        return 0;
    size_t lo = 0, hi = keys->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const uint8_t *k = keys->bytes + keys->offsets[mid];
        uint64_t k_len = (uint64_t)(keys->offsets[mid + 1] - keys->offsets[mid]);
        uint64_t common = k_len < len ? k_len : len;
        int order = common ? memcmp(k, p, (size_t)common) : 0;
        if (order == 0) order = k_len < len ? -1 : (k_len > len ? 1 : 0);
        if (order == 0) return 1;
        if (order < 0) lo = mid + 1;
        else hi = mid;
    }
    return 0;
}

static int keys_valid(const pba_keys *keys) {
    if (keys->filter != NULL && (keys->filter_bits < 6 || keys->filter_bits > 24)) return 0;
    if (keys->width == 0) {
        if (keys->offsets == NULL || (keys->n && keys->bytes == NULL)) return 0;
        for (size_t i = 0; i < keys->n; i++)
            if (keys->offsets[i] < 0 || keys->offsets[i + 1] < keys->offsets[i]) return 0;
        return 1;
    }
    return (keys->width == 4 || keys->width == 8) && (keys->ints != NULL || !keys->n);
}

/* What pba_match_rows walks: the values (indices, or PLAIN values) and the rows found. */
typedef struct {
    hybrid indices;
    int indices_read; /* the indices' reader is set up (at the first present value) */
    uint32_t dictionary_count;
    const uint8_t *wanted;
    const pba_keys *keys;
    const uint8_t *values;
    size_t values_len;
    uint64_t count;   /* PLAIN fixed-width values in the page */
    uint64_t k;       /* PLAIN values read */
    uint64_t byte_at; /* the next PLAIN byte array's offset */
    uint32_t *rows;
    size_t capacity;
    size_t n;
} matcher;

static void found_row(matcher *m, uint64_t row) {
    if (m->n < m->capacity) m->rows[m->n] = (uint32_t)row;
    m->n++;
}

/* The first values of the next `step` of a bit-packed run of indices (rows row, row + 1,
 * ...) matched whose 8 bytes from their first lie within the run: how many (the caller
 * reads the rest), or UINT64_MAX at an index past the dictionary. What the loop reads is
 * held in locals: written through m->rows, the struct fields would be read again for
 * each value. */
static uint64_t match_packed(matcher *m, uint64_t step, uint64_t row) {
    const hybrid *r = &m->indices;
    uint64_t width = r->width;
    if (width == 0 || r->run_bytes < 8) return 0;
    uint64_t loadable = (r->run_bytes - 8) * 8 / width + 1; /* values from the run's first */
    uint64_t at = r->at;
    uint64_t fast = loadable > at ? loadable - at : 0;
    if (fast > step) fast = step;
    const uint8_t *bits = r->bits;
    const uint8_t *wanted = m->wanted;
    uint64_t mask = width == 32 ? 0xffffffffu : (((uint64_t)1 << width) - 1);
    uint32_t count = m->dictionary_count;
    uint32_t *rows = m->rows;
    size_t capacity = m->capacity, n = m->n;
    for (uint64_t i = 0; i < fast; i++) {
        uint64_t bit = (at + i) * width;
        uint32_t index = (uint32_t)((pba_le64(bits + (bit >> 3)) >> (bit & 7)) & mask);
        if (index >= count) {
            m->n = n;
            return UINT64_MAX;
        }
        if (wanted[index]) {
            if (n < capacity) rows[n] = (uint32_t)(row + i);
            n++;
        }
    }
    m->n = n;
    return fast;
}

/* Matches the next `count` values, present and in rows row, row + 1, ... */
static int match_values(matcher *m, uint64_t count, uint64_t row) {
    if (m->dictionary_count) {
        hybrid *r = &m->indices;
        if (!m->indices_read) { /* the bit width is read when the first index is */
            if (m->values_len < 1) return PBA_TAKE_ERR_TRUNCATED;
            if (m->values[0] > 32) return PBA_TAKE_ERR_MALFORMED;
            hybrid_init(r, m->values + 1, m->values_len - 1, m->values[0]);
            m->indices_read = 1;
        }
        while (count) {
            if (r->left == 0) {
                int status = hybrid_run(r);
                if (status != PBA_TAKE_OK) return status;
                continue;
            }
            uint64_t step = count < r->left ? count : r->left;
            if (r->packed) {
                uint64_t i = match_packed(m, step, row);
                if (i == UINT64_MAX) return PBA_TAKE_ERR_MALFORMED;
                for (; i < step; i++) {
                    uint32_t index = packed_value(r, r->at + i);
                    if (index >= m->dictionary_count) return PBA_TAKE_ERR_MALFORMED;
                    if (m->wanted[index]) found_row(m, row + i);
                }
                r->at += step;
            } else {
                if (r->value >= m->dictionary_count) return PBA_TAKE_ERR_MALFORMED;
                if (m->wanted[r->value])
                    for (uint64_t i = 0; i < step; i++) found_row(m, row + i);
            }
            r->left -= step;
            count -= step;
            row += step;
        }
        return PBA_TAKE_OK;
    }
    uint32_t width = m->keys->width;
    if (width) {
        if (count > m->count - m->k) return PBA_TAKE_ERR_TRUNCATED;
        const uint8_t *p = m->values + m->k * width;
        /* in locals, as in match_packed: the keys' fields stay in registers */
        const pba_keys keys = *m->keys;
        uint32_t *rows = m->rows;
        size_t capacity = m->capacity, n = m->n;
        uint64_t i = 0;
        if (width == 8 && keys.filter != NULL) {
            /* the usual case (a dictionary of 64-bit values) with its filter test inlined */
            for (; i < count; i++, p += 8) {
                int64_t v = (int64_t)pba_le64(p);
                if (!filter_has(&keys, int_bit(v, keys.filter_bits))) continue;
                if (key_int(&keys, v)) {
                    if (n < capacity) rows[n] = (uint32_t)(row + i);
                    n++;
                }
            }
        }
        for (; i < count; i++, p += width) {
            int64_t v = width == 8 ? (int64_t)pba_le64(p) : (int64_t)(int32_t)pba_le32(p);
            if (key_int(&keys, v)) {
                if (n < capacity) rows[n] = (uint32_t)(row + i);
                n++;
            }
        }
        m->n = n;
        m->k += count;
        return PBA_TAKE_OK;
    }
    for (uint64_t i = 0; i < count; i++) {
        int64_t end = byte_array_end(m->values, m->values_len, m->byte_at);
        if (end < 0) return PBA_TAKE_ERR_TRUNCATED;
        if (key_bytes(m->keys, m->values + m->byte_at + 4, (uint64_t)end - m->byte_at - 4))
            found_row(m, row + i);
        m->byte_at = (uint64_t)end;
    }
    return PBA_TAKE_OK;
}

int pba_match_rows(const uint8_t *levels, size_t levels_len, const uint8_t *values,
                   size_t values_len, uint32_t num_values, uint32_t dictionary_count,
                   const uint8_t *wanted, const pba_keys *keys, uint32_t *rows,
                   size_t capacity, size_t *found) {
    if ((values == NULL && values_len) || (levels == NULL && levels_len) || found == NULL ||
        (capacity && rows == NULL))
        return PBA_TAKE_ERR_ARG;
    if (dictionary_count ? wanted == NULL : (keys == NULL || !keys_valid(keys)))
        return PBA_TAKE_ERR_ARG;
    *found = 0;
    matcher m;
    memset(&m, 0, sizeof m);
    m.dictionary_count = dictionary_count;
    m.wanted = wanted;
    m.keys = keys;
    m.values = values;
    m.values_len = values_len;
    m.rows = rows;
    m.capacity = capacity;
    if (!dictionary_count && keys->width) {
        m.count = values_len / keys->width;
    }
    hybrid defs;
    if (levels != NULL) hybrid_init(&defs, levels, levels_len, 1);
    uint64_t row = 0;
    while (row < num_values) {
        uint64_t run = num_values - row; /* rows of one level, or every row left */
        uint32_t level = 1;
        if (levels != NULL) {
            if (defs.left == 0) {
                int status = hybrid_run(&defs);
                if (status != PBA_TAKE_OK) return status;
                continue;
            }
            if (defs.packed) {
                run = 1;
                level = packed_value(&defs, defs.at);
                defs.at++;
            } else {
                run = run < defs.left ? run : defs.left;
                level = defs.value;
            }
            defs.left -= run;
            if (level > 1) return PBA_TAKE_ERR_MALFORMED;
        }
        if (level) {
            int status = match_values(&m, run, row);
            if (status != PBA_TAKE_OK) return status;
        }
        row += run;
    }
    *found = m.n;
    return m.n > capacity ? PBA_TAKE_ERR_CAPACITY : PBA_TAKE_OK;
}

int pba_keys_filter(const pba_keys *keys, uint64_t *filter, uint32_t bits) {
    if (keys == NULL || filter == NULL || bits < 6 || bits > 24) return PBA_TAKE_ERR_ARG;
    pba_keys plain = *keys;
    plain.filter = NULL;
    if (!keys_valid(&plain)) return PBA_TAKE_ERR_ARG;
    memset(filter, 0, ((size_t)1 << bits) / 8);
    for (size_t i = 0; i < keys->n; i++) {
        uint64_t bit;
        if (keys->width) {
            bit = int_bit(keys->ints[i], bits);
        } else {
            const uint8_t *p = keys->bytes + keys->offsets[i];
            bit = bytes_bit(p, (uint64_t)(keys->offsets[i + 1] - keys->offsets[i]), bits);
        }
        filter[bit >> 6] |= (uint64_t)1 << (bit & 63);
    }
    return PBA_TAKE_OK;
}
