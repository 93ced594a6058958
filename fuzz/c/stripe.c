/*
 * libFuzzer harness for the block-major stripe kernel of csrc/sbbf.c
 * (pba_sbbf_check_stripe, both backends) and the scatter/gather helpers,
 * built with ASan + UBSan.
 *
 * Input: u8 flags, u16 n (little-endian), u64 hash (little-endian), then the
 * stripe bytes, repeated to fill num_files = n % 300 blocks of 32 bytes. The
 * build lowers PBA_PREFETCH_MIN_BYTES to 1 KiB (fuzz/targets.py), so that
 * stripes from 32 files take the AVX2 loop that prefetches. With flag
 * bit 5 set, the hash is inserted into every block whose first byte is odd,
 * so that hits occur (random bytes rarely hold all eight bits). The stripe and
 * the output are allocated at exactly their size, so a read or write past
 * either is caught.
 *
 * Properties: scalar and AVX2 give the same output and count; each file's
 * answer is pba_sbbf_check_hash on its block alone (a one-block filter); the
 * output is ORed into, never cleared; a block the hash was inserted into
 * always answers 1; a wrong stripe length is refused and writes nothing;
 * gathering a file's blocks from the stripe seen as a one-block-per-file
 * index returns its block.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pybloom_async.h"

#include "check.h"

static uint64_t load_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

/* Output bytes from `pre`, then the stripe checked into them with `backend`. */
static int64_t run(const char *backend, const uint8_t *stripe, size_t num_files, uint64_t hash,
                   const uint8_t *pre, uint8_t *out)
{
    CHECK(pba_set_backend(backend) == PBA_OK);
    memcpy(out, pre, num_files);
    return pba_sbbf_check_stripe(stripe, num_files * PBA_BLOCK_BYTES, num_files, hash, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 11) {
        return 0;
    }
    const uint8_t flags = data[0];
    const size_t n = (size_t)load_le(data + 1, 2);
    const uint64_t hash = load_le(data + 3, 8);
    const uint8_t *body = data + 11;
    const size_t body_len = size - 11;
        const size_t num_files = n % 300;
    const size_t stripe_len = num_files * PBA_BLOCK_BYTES;

    uint8_t *stripe = (uint8_t *)malloc(stripe_len ? stripe_len : 1);
    uint8_t *pre = (uint8_t *)malloc(num_files ? num_files : 1);
    uint8_t *out_scalar = (uint8_t *)malloc(num_files ? num_files : 1);
    uint8_t *out_avx2 = (uint8_t *)malloc(num_files ? num_files : 1);
    CHECK(stripe && pre && out_scalar && out_avx2);
    if (body_len == 0) {
        memset(stripe, 0, stripe_len);
    }
    for (size_t at = 0; body_len && at < stripe_len; at += body_len) {
        memcpy(stripe + at, body, stripe_len - at < body_len ? stripe_len - at : body_len);
    }
    uint8_t *inserted = (uint8_t *)calloc(num_files ? num_files : 1, 1);
    CHECK(inserted != NULL);
    if (flags & 32) {
        for (size_t f = 0; f < num_files; f++) {
            if (stripe[f * PBA_BLOCK_BYTES] & 1) {
                pba_sbbf_insert_hash(stripe + f * PBA_BLOCK_BYTES, PBA_BLOCK_BYTES, hash);
                inserted[f] = 1;
            }
        }
    }
    /* With flag bit 6, some output bytes start at 1: they must stay 1. */
    for (size_t f = 0; f < num_files; f++) {
        pre[f] = (uint8_t)((flags & 64) && (f * 7 + n) % 5 == 0);
    }

    const char *before = pba_simd_backend();
    const int64_t hits = run("scalar", stripe, num_files, hash, pre, out_scalar);
    CHECK(hits >= 0 && (uint64_t)hits <= num_files);
    if (pba_avx2_available()) {
        CHECK(run("avx2", stripe, num_files, hash, pre, out_avx2) == hits);
        CHECK(memcmp(out_scalar, out_avx2, num_files) == 0);
    }

    size_t count = 0;
    for (size_t f = 0; f < num_files; f++) {
        const uint8_t *block = stripe + f * PBA_BLOCK_BYTES;
        const int may = pba_sbbf_check_hash(block, PBA_BLOCK_BYTES, hash);
        CHECK(may == 0 || may == 1);
        CHECK(!inserted[f] || may == 1);
        CHECK(out_scalar[f] == (pre[f] | may));
        count += (size_t)may;
    }
    CHECK((size_t)hits == count);

    /* A stripe one byte short (or one block long) is refused before any write. */
    if (num_files > 0) {
        memcpy(out_scalar, pre, num_files);
        CHECK(pba_sbbf_check_stripe(stripe, stripe_len - 1, num_files, hash, out_scalar) ==
              PBA_ERR_SIZE);
        CHECK(pba_sbbf_check_stripe(stripe, stripe_len, num_files + 1, hash, out_scalar) ==
              PBA_ERR_SIZE);
        CHECK(memcmp(out_scalar, pre, num_files) == 0);

        /* Seen as an index of one-block filters, file f's filter is its block. */
        const size_t f = n % num_files;
        uint8_t one[PBA_BLOCK_BYTES];
        CHECK(pba_sbbf_gather_blocks(stripe, PBA_BLOCK_BYTES, num_files, f, one) == PBA_OK);
        CHECK(memcmp(one, stripe + f * PBA_BLOCK_BYTES, PBA_BLOCK_BYTES) == 0);
        /* Scattered back to where it came from, the stripe is unchanged. */
        uint8_t *copy = (uint8_t *)malloc(stripe_len);
        CHECK(copy != NULL);
        memcpy(copy, stripe, stripe_len);
        CHECK(pba_sbbf_scatter_blocks(one, PBA_BLOCK_BYTES, copy, num_files, f) == PBA_OK);
        CHECK(memcmp(copy, stripe, stripe_len) == 0);
        free(copy);
    }

    CHECK(pba_set_backend(before) == PBA_OK);
    free(inserted);
    free(out_avx2);
    free(out_scalar);
    free(pre);
    free(stripe);
    return 0;
}
