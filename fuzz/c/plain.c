/*
 * libFuzzer harness for pba_hash_plain_byte_array (csrc/core/sbbf.c), built
 * with ASan + UBSan: the hashes of a PLAIN-encoded BYTE_ARRAY run, as a
 * dictionary page's body holds it.
 *
 * Input: u8 limit (the room given for hashes: the byte itself, or len / 4 when
 * it is 255), then the run (the rest), copied into a buffer of exactly its
 * size so that a read past it is caught.
 *
 * Properties: success exactly when every length fits the run and the values
 * fit the room; then each hash is XXH64 of its value's bytes, found again by
 * walking the run here, and the count is at most len / 4; on failure nothing
 * is promised of the output but the harness's buffers are not overrun.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pybloom_async.h"

#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    const size_t len = size - 1;
    uint8_t *run = (uint8_t *)malloc(len ? len : 1);
    CHECK(run != NULL);
    memcpy(run, data + 1, len);
    const size_t room = data[0] == 255 ? len / 4 : data[0];
    uint64_t *out = (uint64_t *)malloc((room ? room : 1) * sizeof(uint64_t));
    CHECK(out != NULL);
    size_t count = 0;
    const int rc = pba_hash_plain_byte_array(len ? run : NULL, len, room ? out : NULL, room, &count);

    /* The reference walk: how many values, and whether every length fits. */
    size_t at = 0;
    size_t values = 0;
    int fits = 1;
    while (at < len) {
        if (len - at < 4) {
            fits = 0;
            break;
        }
        const uint32_t n = (uint32_t)run[at] | (uint32_t)run[at + 1] << 8 |
                           (uint32_t)run[at + 2] << 16 | (uint32_t)run[at + 3] << 24;
        at += 4;
        if (n > len - at) {
            fits = 0;
            break;
        }
        at += n;
        values++;
    }
    if (!fits) {
        CHECK(rc == PBA_ERR_OFFSETS || (rc == PBA_ERR_SIZE && values >= room));
    } else if (values > room) {
        CHECK(rc == PBA_ERR_SIZE);
    } else {
        CHECK(rc == PBA_OK && count == values && count <= len / 4);
        at = 0;
        for (size_t i = 0; i < count; i++) {
            const uint32_t n = (uint32_t)run[at] | (uint32_t)run[at + 1] << 8 |
                               (uint32_t)run[at + 2] << 16 | (uint32_t)run[at + 3] << 24;
            at += 4;
            CHECK(out[i] == pba_xxh64(run + at, n, 0));
            at += n;
        }
    }
    CHECK(pba_hash_plain_byte_array(NULL, 1, out, room, &count) == PBA_ERR_ARG);
    free(out);
    free(run);
    return 0;
}
