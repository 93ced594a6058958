/*
 * libFuzzer harness for the row takers and the key matcher (csrc/rows/take.c), built with
 * ASan + UBSan: pba_take_refs on fuzzed levels and values, then pba_byte_array_offsets and
 * pba_gather_byte_arrays on what it found; pba_match_rows on the whole page (see
 * check_match).
 *
 * Input: flags (bit 0: levels given, bit 1: dictionary indices, bit 2: byte arrays),
 * width (fixed-width values: 1 + width % 16), num_values (u16), the number of wanted
 * rows (u8), the levels' length (u16), the dictionary's size (u16, at least 1 with
 * bit 1), then the wanted rows (u16 each, sorted and made distinct here, kept below
 * num_values), the levels, and the values (the rest). Each buffer is copied into one of
 * exactly its size, so that a read past it is caught.
 *
 * Properties: on success each ref is what a plain reference decoder (below: every level
 * and index decoded one by one from the start) finds for its row: -1 for a NULL, the
 * dictionary index, the value's offset; the gather's offsets and bytes are the values'
 * own. A failure is allowed only where the reference fails too before the last wanted
 * row's value, or a row is past the page.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pybloom_async_rows.h"

#include "check.h"

static uint32_t u16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

/* The reference: the first `count` values of a hybrid stream, one by one; 0 on failure. */
static int reference(const uint8_t *p, size_t len, uint32_t width, uint32_t count,
                     uint32_t *out) {
    size_t at = 0;
    uint32_t done = 0;
    while (done < count) {
        uint64_t header = 0;
        int shift = 0;
        for (;;) {
            if (at >= len) return 0;
            uint8_t b = p[at++];
            header |= (uint64_t)(b & 0x7f) << shift;
            if (!(b & 0x80)) break;
            shift += 7;
            if (shift > 28) return 0;
        }
        if (header > UINT32_MAX) return 0;
        if (header & 1) {
            uint64_t values = (header >> 1) * 8;
            uint64_t bytes = (header >> 1) * width;
            if (bytes > len - at) return 0;
            for (uint64_t i = 0; i < values && done < count; i++) {
                uint32_t v = 0;
                for (uint32_t bit = 0; bit < width; bit++) {
                    uint64_t k = i * width + bit;
                    v |= (uint32_t)((p[at + k / 8] >> (k % 8)) & 1) << bit;
                }
                out[done++] = v;
            }
            at += bytes;
        } else {
            size_t bytes = (width + 7) / 8;
            if (bytes > len - at) return 0;
            uint32_t v = 0;
            for (size_t i = 0; i < bytes; i++) v |= (uint32_t)p[at + i] << (8 * i);
            at += bytes;
            if (width < 32 && (v >> width)) return 0;
            for (uint64_t i = 0; i < (header >> 1) && done < count; i++) out[done++] = v;
        }
    }
    return 1;
}

static uint8_t *copy(const uint8_t *data, size_t len) {
    uint8_t *out = (uint8_t *)malloc(len ? len : 1);
    CHECK(out != NULL);
    memcpy(out, data, len);
    return out;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The offsets of the first `count` PLAIN byte arrays of values; 0 when they do not fit. */
static int array_offsets(const uint8_t *values, size_t values_len, uint32_t count,
                         int64_t *offsets) {
    uint64_t byte = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (byte > values_len || values_len - byte < 4) return 0;
        uint64_t len = (uint32_t)values[byte] | (uint32_t)values[byte + 1] << 8 |
                       (uint32_t)values[byte + 2] << 16 | (uint32_t)values[byte + 3] << 24;
        if (len > values_len - byte - 4) return 0;
        offsets[i] = (int64_t)byte;
        byte += 4 + len;
    }
    return 1;
}

static int64_t le(const uint8_t *p, uint32_t width) {
    uint64_t v = 0;
    for (uint32_t i = width; i-- > 0;) v = v << 8 | p[i];
    return width == 4 ? (int64_t)(int32_t)(uint32_t)v : (int64_t)v;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/*
 * pba_match_rows on the whole page against the reference: the keys are the page's first
 * values (integers of width 4 or 8, or byte arrays; each key once, as the header asks),
 * and a dictionary's wanted entries every third. Properties: on success the rows are
 * those the reference finds (every level and value decoded, every index checked); the
 * matcher fails only where the reference does, and says CAPACITY for a short output.
 */
static void check_match(const uint8_t *levels, size_t levels_len, const uint8_t *values,
                        size_t values_len, uint32_t num_values, uint32_t dict_count,
                        int arrays, uint32_t width) {
    uint32_t key_width = arrays ? 0 : (width & 1 ? 4 : 8);
    uint32_t *defs = (uint32_t *)malloc((num_values ? num_values : 1) * sizeof(uint32_t));
    CHECK(defs != NULL);
    int ok = 1;
    if (levels != NULL) ok = reference(levels, levels_len, 1, num_values, defs);
    else for (uint32_t i = 0; i < num_values; i++) defs[i] = 1;
    uint32_t present = 0;
    for (uint32_t i = 0; ok && i < num_values; i++) {
        if (defs[i] > 1) ok = 0;
        present += defs[i] == 1;
    }
    /* Each present value's place (a byte offset, or an index). */
    int64_t *at = (int64_t *)malloc((present ? present : 1) * sizeof(int64_t));
    uint32_t *indices = (uint32_t *)malloc((present ? present : 1) * sizeof(uint32_t));
    CHECK(at != NULL && indices != NULL);
    if (ok && dict_count && present) {
        ok = values_len >= 1 && values[0] <= 32 &&
             reference(values + 1, values_len - 1, values[0], present, indices);
        for (uint32_t i = 0; ok && i < present; i++) ok = indices[i] < dict_count;
    } else if (ok && !dict_count && arrays) {
        ok = array_offsets(values, values_len, present, at);
    } else if (ok && !dict_count) {
        ok = (uint64_t)present * key_width <= values_len;
    }
    /* The keys: the first (up to 5) values the page holds, as far as they read. */
    size_t n_keys = 0;
    int64_t ints[5];
    int64_t offsets[6] = {0};
    uint8_t bytes[5 * 64];
    uint8_t *wanted = (uint8_t *)malloc(dict_count ? dict_count : 1);
    CHECK(wanted != NULL);
    for (uint32_t i = 0; i < dict_count; i++) wanted[i] = i % 3 == 0;
    if (!dict_count && key_width) {
        for (size_t i = 0; i < 5 && (i + 1) * key_width <= values_len; i++)
            ints[n_keys++] = le(values + i * key_width, key_width);
        qsort(ints, n_keys, sizeof *ints, cmp_i64);
        size_t distinct = 0;
        for (size_t i = 0; i < n_keys; i++)
            if (!distinct || ints[distinct - 1] != ints[i]) ints[distinct++] = ints[i];
        n_keys = distinct;
    } else if (!dict_count) {
        /* Byte arrays of the first values, each cut to 64 bytes, then sorted by memcmp. */
        uint64_t byte = 0;
        const uint8_t *key[5];
        uint64_t key_len[5];
        while (n_keys < 5 && byte + 4 <= values_len) {
            uint64_t len = (uint32_t)values[byte] | (uint32_t)values[byte + 1] << 8 |
                           (uint32_t)values[byte + 2] << 16 | (uint32_t)values[byte + 3] << 24;
            if (len > values_len - byte - 4) break;
            key[n_keys] = values + byte + 4;
            key_len[n_keys++] = len < 64 ? len : 64;
            byte += 4 + len;
        }
        for (size_t i = 1; i < n_keys; i++) /* insertion sort: memcmp, then length */
            for (size_t j = i; j > 0; j--) {
                uint64_t common = key_len[j] < key_len[j - 1] ? key_len[j] : key_len[j - 1];
                int order = memcmp(key[j - 1], key[j], (size_t)common);
                if (order < 0 || (order == 0 && key_len[j - 1] <= key_len[j])) break;
                const uint8_t *tp = key[j];
                uint64_t tl = key_len[j];
                key[j] = key[j - 1], key_len[j] = key_len[j - 1];
                key[j - 1] = tp, key_len[j - 1] = tl;
            }
        size_t distinct = 0;
        for (size_t i = 0; i < n_keys; i++) {
            if (distinct && key_len[distinct - 1] == key_len[i] &&
                memcmp(key[distinct - 1], key[i], (size_t)key_len[i]) == 0)
                continue;
            key[distinct] = key[i], key_len[distinct++] = key_len[i];
        }
        n_keys = distinct;
        for (size_t i = 0; i < n_keys; i++) {
            memcpy(bytes + offsets[i], key[i], (size_t)key_len[i]);
            offsets[i + 1] = offsets[i] + (int64_t)key_len[i];
        }
    }
    pba_keys keys = {key_width, ints, bytes, offsets, n_keys, NULL, 0};
    uint64_t filter[1 << 4];
    if (n_keys && (values_len & 1)) { /* a filter of 2^10 bits, for half the inputs */
        CHECK(pba_keys_filter(&keys, filter, 10) == PBA_TAKE_OK);
        keys.filter = filter;
        keys.filter_bits = 10;
    }
    uint32_t *rows = (uint32_t *)malloc((num_values ? num_values : 1) * sizeof(uint32_t));
    CHECK(rows != NULL);
    size_t found = 0;
    int rc = pba_match_rows(levels, levels_len, values, values_len, num_values, dict_count,
                            wanted, &keys, rows, num_values, &found);
    if (rc == PBA_TAKE_OK) {
        CHECK(ok);
        size_t n = 0;
        uint32_t k = 0;
        for (uint32_t row = 0; row < num_values; row++) {
            if (defs[row] != 1) continue;
            int hit = 0;
            if (dict_count) {
                hit = wanted[indices[k]];
            } else if (key_width) {
                int64_t v = le(values + (uint64_t)k * key_width, key_width);
                for (size_t i = 0; i < n_keys; i++) hit |= ints[i] == v;
            } else {
                uint64_t len = (uint32_t)values[at[k]] | (uint32_t)values[at[k] + 1] << 8 |
                               (uint32_t)values[at[k] + 2] << 16 |
                               (uint32_t)values[at[k] + 3] << 24;
                for (size_t i = 0; i < n_keys; i++)
                    hit |= (uint64_t)(offsets[i + 1] - offsets[i]) == len &&
                           memcmp(bytes + offsets[i], values + at[k] + 4, (size_t)len) == 0;
            }
            k++;
            if (hit) {
                CHECK(n < found && rows[n] == row);
                n++;
            }
        }
        CHECK(n == found);
        if (found) {
            size_t again = 0;
            CHECK(pba_match_rows(levels, levels_len, values, values_len, num_values, dict_count,
                                 wanted, &keys, rows, found - 1, &again) ==
                  PBA_TAKE_ERR_CAPACITY);
            CHECK(again == found);
        }
    } else {
        CHECK(!ok);
    }
    free(rows);
    free(wanted);
    free(indices);
    free(at);
    free(defs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 10) return 0;
    const int has_levels = data[0] & 1, dictionary = data[0] & 2, arrays = data[0] & 4;
    const uint32_t width = arrays ? 0 : 1 + data[1] % 16;
    const uint32_t num_values = u16(data + 2);
    size_t n = data[4];
    const size_t levels_len = u16(data + 5);
    const uint32_t dict_count = dictionary ? 1 + u16(data + 7) : 0;
    size_t at = 9;
    if (size - at < 2 * n) n = (size - at) / 2;
    uint32_t *rows = (uint32_t *)malloc((n ? n : 1) * sizeof(uint32_t));
    CHECK(rows != NULL);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t row = u16(data + at + 2 * i);
        if (num_values) rows[kept++] = row % num_values;
    }
    at += 2 * n;
    qsort(rows, kept, sizeof *rows, cmp_u32);
    size_t distinct = 0;
    for (size_t i = 0; i < kept; i++)
        if (!distinct || rows[distinct - 1] != rows[i]) rows[distinct++] = rows[i];
    const size_t lv = levels_len < size - at ? levels_len : size - at;
    uint8_t *levels = has_levels ? copy(data + at, lv) : NULL;
    at += has_levels ? lv : 0;
    const size_t values_len = size - at;
    uint8_t *values = copy(data + at, values_len);
    int64_t *refs = (int64_t *)malloc((distinct ? distinct : 1) * sizeof(int64_t));
    CHECK(refs != NULL);

    int rc = pba_take_refs(levels, has_levels ? lv : 0, values, values_len, num_values,
                           dict_count, width, rows, distinct, refs);

    /* The reference: every level, then every value up to the last wanted row's. */
    const uint32_t last = distinct ? rows[distinct - 1] + 1 : 0;
    uint32_t *defs = (uint32_t *)malloc((last ? last : 1) * sizeof(uint32_t));
    CHECK(defs != NULL);
    int ok = 1;
    if (has_levels) {
        ok = reference(levels, lv, 1, last, defs);
    } else {
        for (uint32_t i = 0; i < last; i++) defs[i] = 1;
    }
    /* present: the values up to the last wanted row's that is not NULL (its too). */
    uint32_t present = 0;
    for (uint32_t i = 0; ok && i < last; i++) {
        if (defs[i] > 1) ok = 0;
    }
    for (size_t i = distinct; ok && i-- > 0;) {
        if (defs[rows[i]] == 1) {
            present = 0;
            for (uint32_t r = 0; r <= rows[i]; r++) present += defs[r] == 1;
            break;
        }
    }
    uint32_t *indices = (uint32_t *)malloc((present ? present : 1) * sizeof(uint32_t));
    int64_t *offsets = (int64_t *)malloc((present ? present : 1) * sizeof(int64_t));
    CHECK(indices != NULL && offsets != NULL);
    if (ok && dictionary && present) {
        ok = values_len >= 1 && values[0] <= 32 &&
             reference(values + 1, values_len - 1, values[0], present, indices);
        /* Only the wanted rows' indices are checked against the dictionary. */
        uint32_t k = 0, row = 0;
        for (size_t i = 0; ok && i < distinct; i++) {
            for (; row < rows[i]; row++) k += defs[row] == 1;
            if (defs[row] == 1) ok = indices[k] < dict_count;
        }
    } else if (ok && arrays) {
        ok = array_offsets(values, values_len, present, offsets);
    } else if (ok) {
        ok = (uint64_t)present * width <= values_len;
    }

    if (rc == PBA_TAKE_OK) {
        CHECK(ok);
        uint32_t k = 0, row = 0;
        for (size_t i = 0; i < distinct; i++) {
            for (; row < rows[i]; row++) k += defs[row] == 1;
            if (defs[row] == 0) {
                CHECK(refs[i] == -1);
            } else if (dictionary) {
                CHECK(refs[i] == (int64_t)indices[k]);
            } else if (arrays) {
                CHECK(refs[i] == offsets[k]);
            } else {
                CHECK(refs[i] == (int64_t)k * width);
            }
        }
        if (arrays && !dictionary) {
            int64_t *out_offsets = (int64_t *)malloc((distinct + 1) * sizeof(int64_t));
            CHECK(out_offsets != NULL);
            CHECK(pba_gather_byte_arrays(values, values_len, refs, distinct, out_offsets, NULL,
                                         0) == PBA_TAKE_OK);
            size_t total = (size_t)out_offsets[distinct];
            CHECK(total <= (size_t)distinct * values_len);
            uint8_t *out = (uint8_t *)malloc(total ? total : 1);
            CHECK(out != NULL);
            CHECK(pba_gather_byte_arrays(values, values_len, refs, distinct, out_offsets, out,
                                         total) == PBA_TAKE_OK);
            for (size_t i = 0; i < distinct; i++) {
                size_t from = (size_t)out_offsets[i], to = (size_t)out_offsets[i + 1];
                if (refs[i] >= 0) CHECK(memcmp(out + from, values + refs[i] + 4, to - from) == 0);
                else CHECK(from == to);
            }
            if (total)
                CHECK(pba_gather_byte_arrays(values, values_len, refs, distinct, out_offsets, out,
                                             total - 1) == PBA_TAKE_ERR_CAPACITY);
            free(out);
            free(out_offsets);
        }
    } else {
        CHECK(!ok || rc == PBA_TAKE_ERR_ARG);
    }
    check_match(levels, has_levels ? lv : 0, values, values_len, num_values, dict_count, arrays,
                width);
    /* The offsets of every byte array the values hold, as a dictionary page's. */
    if (arrays) {
        uint32_t count = values_len / 4;
        int64_t *all = (int64_t *)malloc((count ? count : 1) * sizeof(int64_t));
        CHECK(all != NULL);
        int status = pba_byte_array_offsets(values, values_len, count, all);
        CHECK(status == PBA_TAKE_OK || status == PBA_TAKE_ERR_TRUNCATED);
        free(all);
    }
    free(offsets);
    free(indices);
    free(defs);
    free(refs);
    free(values);
    free(levels);
    free(rows);
    return 0;
}
