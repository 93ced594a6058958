/*
 * libFuzzer harness for the column hashing entry points of csrc/core/sbbf.c
 * (pba_column_count_valid, pba_hash_column, pba_sbbf_insert_column,
 * pba_sbbf_check_column), built with ASan + UBSan.
 *
 * The C API trusts the caller for buffer extents it is told (n + 1 offsets,
 * a validity bitmap covering validity_offset + n bits, data_len bytes of
 * data) and must check everything else: BYTE_ARRAY offsets that decrease or
 * point outside data, fixed-width columns longer than data_len, unknown
 * types, bad type lengths. The harness allocates every buffer at exactly the
 * size the contract names, so a read outside it is caught.
 *
 * Input: u8 type (mod 9: the eight physical types and one unknown), u8 flags
 * (bit 0: 64-bit offsets, bit 1: validity bitmap, bits 2-7: validity
 * offset), i8 type_length, u16 n (little-endian, mod 512), then the offsets
 * (BYTE_ARRAY), the validity bitmap, and the data (the rest).
 *
 * Properties: the three entry points agree on success; the hashes are XXH64
 * of each valid value's PLAIN bytes; after inserting the column, every valid
 * value checks positive (no false negative) and nulls check 0.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pybloom_async.h"

#include "check.h"

typedef struct {
    const uint8_t *p;
    size_t left;
} cursor;

/* A malloc'd buffer of exactly `len` bytes filled from the input (zeros past its end). */
static uint8_t *take(cursor *c, size_t len)
{
    uint8_t *out = (uint8_t *)malloc(len ? len : 1);
    CHECK(out != NULL);
    const size_t n = len < c->left ? len : c->left;
    memcpy(out, c->p, n);
    memset(out + n, 0, len - n);
    c->p += n;
    c->left -= n;
    return out;
}

static size_t width_of(int32_t type, int32_t type_length)
{
    switch (type) {
    case PBA_BOOLEAN:
        return 1;
    case PBA_INT32:
    case PBA_FLOAT:
        return 4;
    case PBA_INT64:
    case PBA_DOUBLE:
        return 8;
    case PBA_INT96:
        return 12;
    case PBA_FIXED_LEN_BYTE_ARRAY:
        return type_length > 0 ? (size_t)type_length : 0;
    default:
        return 0;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5) {
        return 0;
    }
    pba_column col;
    memset(&col, 0, sizeof col);
    col.physical_type = data[0] % 9;
    const int flags = data[1];
    col.offsets64 = flags & 1;
    col.type_length = (int8_t)data[2];
    col.n = (size_t)(data[3] | (data[4] << 8)) % 512;
    col.validity_offset = (flags >> 2) & 63;
    cursor c = {data + 5, size - 5};

    uint8_t *offsets = NULL;
    if (col.physical_type == PBA_BYTE_ARRAY) {
        offsets = take(&c, (col.n + 1) * (col.offsets64 ? 8u : 4u));
        col.offsets = offsets;
    }
    uint8_t *validity = NULL;
    if (flags & 2) {
        validity = take(&c, ((size_t)col.validity_offset + col.n + 7) / 8);
        col.validity = validity;
    }
    const size_t data_len = c.left; /* the rest of the input */
    uint8_t *values = take(&c, data_len);
    col.data = values;
    col.data_len = data_len;

    const size_t valid = pba_column_count_valid(&col);
    CHECK(valid <= col.n);
    uint64_t *hashes = (uint64_t *)malloc((valid ? valid : 1) * sizeof(uint64_t));
    CHECK(hashes != NULL);
    size_t n_out = (size_t)-1;
    const int rc_hash = pba_hash_column(&col, hashes, &n_out);

    uint8_t *bits = pba_sbbf_alloc(256);
    CHECK(bits != NULL);
    const int rc_insert = pba_sbbf_insert_column(bits, 256, &col);
    uint8_t *answers = (uint8_t *)malloc(col.n ? col.n : 1);
    CHECK(answers != NULL);
    const int rc_check = pba_sbbf_check_column(bits, 256, &col, answers);
    CHECK(rc_hash <= 0 && rc_insert == rc_hash && rc_check == rc_hash);

    if (rc_hash == PBA_OK) {
        CHECK(n_out == valid);
        const size_t width = width_of(col.physical_type, col.type_length);
        size_t k = 0;
        for (size_t i = 0; i < col.n; i++) {
            int is_valid = 1;
            if (col.validity != NULL) {
                const size_t bit = (size_t)col.validity_offset + i;
                is_valid = (col.validity[bit >> 3] >> (bit & 7)) & 1;
            }
            if (!is_valid) {
                CHECK(answers[i] == 0);
                continue;
            }
            CHECK(answers[i] == 1); /* inserted, so never a false negative */
            uint64_t expected;
            if (col.physical_type == PBA_BYTE_ARRAY) {
                int64_t a, b;
                if (col.offsets64) {
                    memcpy(&a, offsets + 8 * i, 8);
                    memcpy(&b, offsets + 8 * (i + 1), 8);
                } else {
                    int32_t a32, b32;
                    memcpy(&a32, offsets + 4 * i, 4);
                    memcpy(&b32, offsets + 4 * (i + 1), 4);
                    a = a32;
                    b = b32;
                }
                CHECK(0 <= a && a <= b && (uint64_t)b <= col.data_len);
                expected = pba_xxh64(values + a, (size_t)(b - a), 0);
            } else if (col.physical_type == PBA_BOOLEAN) {
                const uint8_t one = values[i] != 0;
                expected = pba_xxh64(&one, 1, 0);
            } else {
                CHECK(width > 0 && (i + 1) * width <= col.data_len);
                expected = pba_xxh64(values + i * width, width, 0);
            }
            CHECK(k < n_out && hashes[k] == expected);
            k++;
        }
        CHECK(k == n_out);
    } else {
        CHECK(rc_hash == PBA_ERR_ARG || rc_hash == PBA_ERR_OFFSETS);
    }
    free(answers);
    pba_sbbf_free(bits);
    free(hashes);
    free(values);
    free(validity);
    free(offsets);
    return 0;
}
