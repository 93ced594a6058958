/*
 * take.c: the values of a few rows of one data page (see pybloom_async_rows.h).
 *
 * One reader walks the RLE/bit-packed hybrid encoding (the definition levels, and the
 * dictionary indices): a run is decoded from its header as it is met, and values are
 * skipped a run at a time where they are not wanted.
 */
#include "pybloom_async_rows.h"

#include <string.h>

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
    size_t need = (shift + r->width + 7) / 8;
    for (size_t j = 0; j < need && byte + j < r->run_bytes; j++)
        word |= (uint64_t)r->bits[byte + j] << (8 * j);
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

static uint32_t read_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The end of the byte array whose length lies at `at`, or -1 past `len`. */
static int64_t byte_array_end(const uint8_t *data, size_t len, uint64_t at) {
    if (at > len || len - at < 4) return -1;
    uint64_t size = read_u32(data + at);
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
