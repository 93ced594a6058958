/*
 * libFuzzer harness for the chunk reader and the snappy decoder (csrc/rows/chunk.c,
 * csrc/rows/codec.c), built with ASan + UBSan. This build links no codec library: the
 * chunks are stored UNCOMPRESSED or SNAPPY (any other codec must be refused).
 *
 * Input: a 10-byte head, then keys, wanted rows, and the chunk's bytes (the rest):
 *   flags (u8): bit 0 optional (definition levels), bits 1-2 the width (0, 4, 8, 0),
 *       bit 3: the rest is one snappy block only (no chunk);
 *   codec (u8), num_rows (u16), limit (u32), wanted rows (u8), keys (u8, at most 8);
 *   each key: 8 bytes (an integer) for a fixed width, else a length byte and its bytes;
 *   each wanted row: a u16 (sorted and made distinct here, kept below num_rows).
 * Each buffer is copied into one of exactly its size, so a read past it is caught.
 *
 * Properties: a codec not built in is refused at open; rows taken by a reader whose
 * dictionary was read whole (by the match) equal those of a fresh reader, which reads it
 * only as far as they need; every row pba_chunk_match gives
 * is ascending, below num_rows, and taken has a present value equal to one of the keys;
 * pba_chunk_take's offsets ascend from 0 and pba_chunk_gather fills exactly their total;
 * the same rows taken of the chunk twice in one pba_chunks_take are the single take's, twice,
 * and the chunk matched twice in one pba_chunks_match gives the single match's rows twice;
 * a snappy block decompresses to exactly the size it declares, or is refused, and a part
 * of it read as a stream is the whole's first bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pybloom_async_rows.h"

#include "../../csrc/rows/stream.h"
#include "check.h"

static uint32_t u16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

typedef struct {
    const uint8_t *p;
    uint8_t len;
} bytes_key;

static int cmp_bytes(const void *a, const void *b) {
    const bytes_key *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int order = n ? memcmp(x->p, y->p, n) : 0;
    return order ? order : (x->len > y->len) - (x->len < y->len);
}

static void snappy_only(const uint8_t *data, size_t size) {
    uint64_t declared = 0;
    size_t i = 0;
    for (unsigned shift = 0; i < size && shift <= 28; shift += 7) {
        uint8_t b = data[i++];
        declared |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
    }
    if (declared > (1u << 20)) return;
    uint8_t *src = malloc(size ? size : 1);
    uint8_t *dst = malloc(declared ? declared : 1);
    memcpy(src, data, size);
    int status = pba_decompress(PBA_CODEC_SNAPPY, src, size, dst, declared);
    CHECK(status == PBA_CHUNK_OK || status == PBA_CHUNK_ERR_CORRUPT);
    if (declared) CHECK(pba_decompress(PBA_CODEC_SNAPPY, src, size, dst, declared - 1) != 0);
    /* A third of it as a stream: the same bytes as the whole (where the whole reads). */
    uint8_t *part = malloc(declared ? declared : 1);
    pba_stream s;
    if (status == PBA_CHUNK_OK &&
        pba_stream_init(&s, PBA_CODEC_SNAPPY, src, size, part, declared) == PBA_CHUNK_OK &&
        pba_stream_until(&s, declared / 3) == PBA_CHUNK_OK) {
        CHECK(s.done >= declared / 3 && s.done <= declared);
        CHECK(s.done == 0 || memcmp(part, dst, s.done) == 0);
        CHECK(pba_stream_until(&s, declared) == PBA_CHUNK_OK && memcmp(part, dst, declared) == 0);
    }
    free(part);
    free(src);
    free(dst);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint32_t flags = data[0];
    if (flags & 8) {
        snappy_only(data + 1, size - 1);
        return 0;
    }
    if (size < 10) return 0;
    static const uint32_t widths[4] = {0, 4, 8, 0};
    pba_chunk spec;
    memset(&spec, 0, sizeof spec);
    spec.optional = flags & 1;
    spec.width = widths[(flags >> 1) & 3];
    spec.codec = data[1];
    spec.num_rows = u16(data + 2);
    spec.limit = (uint64_t)u16(data + 4) | (uint64_t)u16(data + 6) << 16;
    size_t n_rows = data[8], n_keys = data[9] % 9;
    size_t at = 10;

    int64_t ints[8];
    bytes_key keys_bytes[8];
    size_t n = 0;
    for (size_t k = 0; k < n_keys; k++) {
        if (spec.width) {
            if (size - at < 8) return 0;
            int64_t v;
            memcpy(&v, data + at, 8);
            if (spec.width == 4) v = (int32_t)v;
            ints[n++] = v;
            at += 8;
        } else {
            if (size - at < 1 || size - at - 1 < data[at]) return 0;
            keys_bytes[n].len = data[at];
            keys_bytes[n].p = data + at + 1;
            n++;
            at += 1 + (size_t)data[at];
        }
    }
    /* Some of a chunk's pages, as an offset index chose them: each page's rows given. */
    uint32_t page_rows[4];
    if (flags & 16) {
        if (size - at < 8) return 0;
        for (size_t k = 0; k < 4; k++) page_rows[k] = u16(data + at + 2 * k);
        at += 8;
        spec.page_rows = page_rows;
        spec.n_page_rows = 1 + (flags >> 5) % 4;
    }
    if ((size - at) / 2 < n_rows) return 0;
    uint32_t wanted32[256];
    for (size_t k = 0; k < n_rows; k++) wanted32[k] = u16(data + at + 2 * k);
    at += 2 * n_rows;
    qsort(wanted32, n_rows, sizeof *wanted32, cmp_u32);
    int64_t wanted[256];
    size_t m = 0;
    for (size_t k = 0; k < n_rows; k++)
        if (wanted32[k] < spec.num_rows && (m == 0 || wanted[m - 1] != wanted32[k]))
            wanted[m++] = wanted32[k];

    /* The keys, ascending and distinct, as pba_keys holds them. */
    pba_keys keys;
    memset(&keys, 0, sizeof keys);
    keys.width = spec.width;
    uint8_t key_data[8 * 256 + 1];
    int64_t key_offsets[9] = {0};
    size_t distinct = 0;
    if (spec.width) {
        qsort(ints, n, sizeof *ints, cmp_i64);
        for (size_t k = 0; k < n; k++)
            if (distinct == 0 || ints[distinct - 1] != ints[k]) ints[distinct++] = ints[k];
        keys.ints = ints;
    } else {
        qsort(keys_bytes, n, sizeof *keys_bytes, cmp_bytes);
        size_t total = 0;
        for (size_t k = 0; k < n; k++) {
            if (distinct && cmp_bytes(&keys_bytes[distinct - 1], &keys_bytes[k]) == 0) continue;
            keys_bytes[distinct] = keys_bytes[k];
            memcpy(key_data + total, keys_bytes[k].p, keys_bytes[k].len);
            total += keys_bytes[k].len;
            key_offsets[++distinct] = (int64_t)total;
        }
        keys.bytes = key_data;
        keys.offsets = key_offsets;
    }
    keys.n = distinct;

    size_t len = size - at;
    uint8_t *chunk = malloc(len ? len : 1);
    memcpy(chunk, data + at, len);
    spec.data = chunk;
    spec.len = len;
    pba_chunk_reader *reader = NULL;
    int status = pba_chunk_open(&spec, &reader);
    if (spec.codec != PBA_CODEC_UNCOMPRESSED && spec.codec != PBA_CODEC_SNAPPY)
        CHECK(status == PBA_CHUNK_ERR_CODEC || status == PBA_CHUNK_ERR_ARG);
    if (status != PBA_CHUNK_OK) {
        CHECK(reader == NULL);
        free(chunk);
        return 0;
    }

    /* Matches: ascending, below num_rows, each a present key when taken. */
    uint32_t *found = malloc(((size_t)spec.num_rows + 1) * sizeof *found);
    size_t n_found = 0;
    if (pba_chunk_match(reader, &keys, found, spec.num_rows, &n_found) == PBA_CHUNK_OK) {
        CHECK(n_found <= spec.num_rows);
        int64_t *rows = malloc((n_found + 1) * sizeof *rows);
        for (size_t k = 0; k < n_found; k++) {
            CHECK(found[k] < spec.num_rows && (k == 0 || found[k] > found[k - 1]));
            rows[k] = found[k];
        }
        uint8_t *valid = malloc(n_found + 1);
        uint8_t *values = malloc(n_found * 8 + 1);
        int64_t *offsets = malloc((n_found + 1) * sizeof *offsets);
        if (pba_chunk_take(reader, rows, n_found, valid, values, offsets) == PBA_CHUNK_OK) {
            uint8_t *bytes = NULL;
            if (!spec.width) {
                bytes = malloc(offsets[n_found] ? (size_t)offsets[n_found] : 1);
                CHECK(pba_chunk_gather(reader, bytes, (size_t)offsets[n_found]) == 0);
            }
            for (size_t k = 0; k < n_found; k++) {
                CHECK(valid[k] == 1);
                int hit = 0;
                if (spec.width) {
                    int64_t v = 0;
                    if (spec.width == 4) {
                        int32_t v32;
                        memcpy(&v32, values + 4 * k, 4);
                        v = v32;
                    } else {
                        memcpy(&v, values + 8 * k, 8);
                    }
                    for (size_t j = 0; j < distinct; j++) hit |= ints[j] == v;
                } else {
                    size_t vlen = (size_t)(offsets[k + 1] - offsets[k]);
                    for (size_t j = 0; j < distinct; j++)
                        hit |= keys_bytes[j].len == vlen &&
                               (vlen == 0 || !memcmp(keys_bytes[j].p, bytes + offsets[k], vlen));
                }
                CHECK(hit);
            }
            free(bytes);
        }
        free(rows);
        free(valid);
        free(values);
        free(offsets);
    }
    /* The chunk matched twice in one pba_chunks_match: the single match's rows twice,
     * and taken through the readers it opened, present values. */
    if (pba_chunk_match(reader, &keys, found, spec.num_rows, &n_found) == PBA_CHUNK_OK) {
        pba_chunk spec2[2] = {spec, spec};
        uint32_t *both = malloc((2 * (size_t)spec.num_rows + 1) * sizeof *both);
        uint64_t counts[2] = {0, 0};
        pba_chunk_reader *readers[2] = {NULL, NULL};
        size_t failed = 0;
        int status2 = pba_chunks_match(spec2, 2, &keys, both, 2 * (size_t)spec.num_rows, counts,
                                       readers, &failed);
        CHECK(status2 == PBA_CHUNK_OK || failed < 2);
        if (status2 == PBA_CHUNK_OK) {
            CHECK(counts[0] == n_found && counts[1] == n_found);
            CHECK(n_found == 0 || (memcmp(both, found, n_found * sizeof *found) == 0 &&
                                   memcmp(both + n_found, found, n_found * sizeof *found) == 0));
            int64_t *rows2 = malloc((2 * n_found + 1) * sizeof *rows2);
            uint8_t *valid2 = malloc(2 * n_found + 1);
            uint8_t *values2 = malloc(2 * n_found * 8 + 1);
            int64_t *offsets2 = malloc((2 * n_found + 1) * sizeof *offsets2);
            for (size_t k = 0; k < 2 * n_found; k++) rows2[k] = both[k];
            if (pba_chunks_take(spec2, 2, rows2, counts, valid2, values2, offsets2, readers,
                                &failed) == PBA_CHUNK_OK)
                for (size_t k = 0; k < 2 * n_found; k++) CHECK(valid2[k] == 1);
            free(rows2);
            free(valid2);
            free(values2);
            free(offsets2);
        }
        pba_chunks_close(readers, 2);
        free(both);
    }
    free(found);

    /* The wanted rows taken: offsets ascending from 0, the gather exactly their total; and
     * by a fresh reader, whose dictionary is read only as far as they need, the same. */
    uint8_t valid[256];
    uint8_t values[256 * 8];
    int64_t offsets[257];
    pba_chunk_reader *fresh = NULL;
    uint8_t fresh_valid[256];
    uint8_t fresh_values[256 * 8];
    int64_t fresh_offsets[257];
    int fresh_ok = pba_chunk_open(&spec, &fresh) == PBA_CHUNK_OK &&
                   pba_chunk_take(fresh, wanted, m, fresh_valid, fresh_values, fresh_offsets) ==
                       PBA_CHUNK_OK;
    if (pba_chunk_take(reader, wanted, m, valid, values, offsets) == PBA_CHUNK_OK) {
        if (fresh_ok) {
            CHECK(memcmp(valid, fresh_valid, m) == 0);
            if (spec.width) {
                for (size_t k = 0; k < m; k++)
                    if (valid[k]) CHECK(!memcmp(values + k * spec.width, fresh_values + k * spec.width, spec.width));
            } else {
                CHECK(memcmp(offsets, fresh_offsets, (m + 1) * sizeof *offsets) == 0);
                uint8_t *a = malloc(offsets[m] ? (size_t)offsets[m] : 1);
                uint8_t *b = malloc(offsets[m] ? (size_t)offsets[m] : 1);
                CHECK(pba_chunk_gather(reader, a, (size_t)offsets[m]) == 0);
                CHECK(pba_chunk_gather(fresh, b, (size_t)offsets[m]) == 0);
                CHECK(offsets[m] == 0 || memcmp(a, b, (size_t)offsets[m]) == 0);
                free(a);
                free(b);
            }
        }
        for (size_t k = 0; k < m; k++) CHECK(valid[k] <= 1);
        if (!spec.width) {
            CHECK(offsets[0] == 0);
            for (size_t k = 0; k < m; k++) {
                CHECK(offsets[k + 1] >= offsets[k]);
                if (!valid[k]) CHECK(offsets[k + 1] == offsets[k]);
            }
            uint8_t *bytes = malloc(offsets[m] ? (size_t)offsets[m] : 1);
            CHECK(pba_chunk_gather(reader, bytes, (size_t)offsets[m]) == 0);
            if (offsets[m]) CHECK(pba_chunk_gather(reader, bytes, (size_t)offsets[m] - 1) != 0);
            free(bytes);
        }
    }
    /* The chunk given twice to one pba_chunks_take, the wanted rows each time: the single
     * take's values twice, byte arrays' offsets going on from the first's end. */
    if (pba_chunk_take(reader, wanted, m, valid, values, offsets) == PBA_CHUNK_OK) {
        pba_chunk spec2[2] = {spec, spec};
        int64_t rows2[512];
        uint64_t counts[2] = {m, m};
        uint8_t valid2[512];
        uint8_t *values2 = malloc(2 * m * 8 + 1);
        int64_t offsets2[513];
        pba_chunk_reader *readers[2] = {NULL, NULL};
        size_t failed = 0;
        memcpy(rows2, wanted, m * sizeof *wanted);
        memcpy(rows2 + m, wanted, m * sizeof *wanted);
        int status2 = pba_chunks_take(spec2, 2, rows2, counts, valid2, values2, offsets2, readers,
                                      &failed);
        CHECK(status2 == PBA_CHUNK_OK || failed < 2);
        if (status2 == PBA_CHUNK_OK) {
            CHECK(memcmp(valid2, valid, m) == 0 && memcmp(valid2 + m, valid, m) == 0);
            if (spec.width) {
                for (size_t k = 0; k < m; k++)
                    if (valid[k])
                        CHECK(!memcmp(values2 + k * spec.width, values + k * spec.width, spec.width) &&
                              !memcmp(values2 + (m + k) * spec.width, values + k * spec.width,
                                      spec.width));
            } else {
                size_t total = (size_t)offsets[m];
                for (size_t k = 0; k <= m; k++) {
                    CHECK(offsets2[k] == offsets[k]);
                    CHECK(offsets2[m + k] == offsets[k] + (int64_t)total);
                }
                uint8_t *one = malloc(total + 1);
                uint8_t *two = malloc(2 * total + 1);
                CHECK(pba_chunk_gather(reader, one, total) == 0);
                CHECK(pba_chunks_gather(readers, 2, two, 2 * total) == 0);
                CHECK(pba_chunks_gather(readers, 2, two, 2 * total + 1) != 0);
                CHECK(total == 0 || (memcmp(two, one, total) == 0 &&
                                     memcmp(two + total, one, total) == 0));
                free(one);
                free(two);
            }
        }
        pba_chunks_close(readers, 2);
        CHECK(readers[0] == NULL && readers[1] == NULL);
        free(values2);
    }
    pba_chunk_close(fresh);
    pba_chunk_close(reader);
    free(chunk);
    return 0;
}
