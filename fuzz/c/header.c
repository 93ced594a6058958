/*
 * libFuzzer harness for pba_bloom_header_decode (csrc/core/header.c), built with
 * ASan + UBSan so an out-of-bounds read or undefined arithmetic is a crash.
 *
 * Input: one byte choosing the numBytes limit, then the header bytes. The
 * header bytes are copied into a buffer of exactly their length, so a read
 * one byte past the end is caught. Properties checked on every accepted
 * header: it lies inside the buffer, announces a power of two within the
 * limit, decodes the same from exactly its own bytes (nothing after it was
 * read) and from a longer buffer, and the encoder's header for the same size
 * decodes back to it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pybloom_async.h"

#include "check.h"

static const uint64_t LIMITS[] = {
    PBA_SBBF_DEFAULT_MAX_BYTES, 1024, 32, 65536, 31, 0, 1000, 1ull << 31, UINT64_MAX,
};

static int decode_copy(const uint8_t *src, size_t len, uint64_t max, pba_bloom_header *out)
{
    /* malloc(0) may return NULL; the decoder must still not read. */
    uint8_t *copy = (uint8_t *)malloc(len ? len : 1);
    CHECK(copy != NULL);
    memcpy(copy, src, len);
    const int rc = pba_bloom_header_decode(copy, len, max, out);
    free(copy);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    const uint64_t max = LIMITS[data[0] % (sizeof LIMITS / sizeof LIMITS[0])];
    const uint8_t *buf = data + 1;
    const size_t len = size - 1;
    pba_bloom_header h = {-1, (size_t)-1};
    const int rc = decode_copy(buf, len, max, &h);
    CHECK(rc <= 0);
    if (rc != PBA_OK) {
        CHECK(rc == PBA_ERR_HDR_TRUNCATED || rc == PBA_ERR_HDR_MALFORMED ||
              rc == PBA_ERR_HDR_MISSING || rc == PBA_ERR_HDR_ALGORITHM ||
              rc == PBA_ERR_HDR_HASH || rc == PBA_ERR_HDR_COMPRESSION ||
              rc == PBA_ERR_HDR_NUMBYTES);
        if (rc == PBA_ERR_HDR_NUMBYTES) {
            /* The size that was refused is reported, with the header's extent. */
            CHECK(h.header_len > 0 && h.header_len <= len);
            CHECK(!pba_sbbf_valid_num_bytes((uint64_t)(h.num_bytes < 0 ? 0 : h.num_bytes), max) ||
                  h.num_bytes <= 0);
        }
        return 0;
    }
    CHECK(h.header_len > 0 && h.header_len <= len);
    CHECK(h.num_bytes >= 32 && (uint64_t)h.num_bytes <= max);
    CHECK((h.num_bytes & (h.num_bytes - 1)) == 0);

    pba_bloom_header again = {0, 0};
    CHECK(decode_copy(buf, h.header_len, max, &again) == PBA_OK);
    CHECK(again.header_len == h.header_len && again.num_bytes == h.num_bytes);

    uint8_t longer[512];
    if (h.header_len + 16 <= sizeof longer) {
        memcpy(longer, buf, h.header_len);
        memset(longer + h.header_len, 0xff, 16);
        CHECK(pba_bloom_header_decode(longer, h.header_len + 16, max, &again) == PBA_OK);
        CHECK(again.header_len == h.header_len && again.num_bytes == h.num_bytes);
    }

    if (h.num_bytes <= INT32_MAX) {
        uint8_t enc[PBA_HEADER_MAX_ENCODED];
        const int n = pba_bloom_header_encode((uint32_t)h.num_bytes, enc);
        /* 15 B up to 63, 19 B from 2^27 (5 varint bytes for zigzag 2^28). */
        CHECK(n >= 15 && n <= 19);
        CHECK(n == 14 + (h.num_bytes < (1 << 6) ? 1 : h.num_bytes < (1 << 13) ? 2
                         : h.num_bytes < (1 << 20) ? 3 : h.num_bytes < (1 << 27) ? 4 : 5));
        CHECK(pba_bloom_header_decode(enc, (size_t)n, max, &again) == PBA_OK);
        CHECK(again.header_len == (size_t)n && again.num_bytes == h.num_bytes);
    }
    return 0;
}
