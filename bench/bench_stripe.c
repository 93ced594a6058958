/*
 * bench_stripe.c: C-level benchmark of the block-major stripe kernel
 * (pba_sbbf_check_stripe), both backends.
 *
 * Reports ns per file for one hash checked against the stripe of N files,
 * N = 1,000 and 100,000, median of several repetitions, in two settings:
 *   hot:  the same stripe again and again (it stays in the caches: the
 *         kernel's own cost);
 *   cold: each hash's own stripe in a block-major index of about 256 MiB
 *         (larger than the caches), as a lookup against an index in memory.
 * Stripe bytes are random (the kernel is branch-free: content does not
 * change its speed). One output byte per file, zeroed once per repetition,
 * accumulates as it would over the keys of one lookup.
 *
 *   bench=stripe backend=avx2 files=1000 mode=hot ns_per_file=0.123
 *
 * Usage: bench_stripe [repetitions (default 5)]
 */
#include "bench_util.h" /* first: it sets _POSIX_C_SOURCE for clock_gettime */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pybloom_async.h"

static volatile int64_t sink;

/* ns per file of `probes` hashes; hot: every hash against stripe 0. */
static double run(const uint8_t *index, uint32_t num_blocks, size_t num_files,
                  const uint64_t *hashes, size_t probes, int hot, uint8_t *out)
{
    const size_t stripe_len = num_files * PBA_BLOCK_BYTES;
    memset(out, 0, num_files);
    int64_t total = 0;
    const double t0 = now_ns();
    for (size_t i = 0; i < probes; i++) {
        const size_t b = hot ? 0 : pba_sbbf_block_index(hashes[i], num_blocks);
        total += pba_sbbf_check_stripe(index + b * stripe_len, stripe_len, num_files, hashes[i],
                                       out);
    }
    const double t1 = now_ns();
    sink += total + out[num_files - 1];
    return (t1 - t0) / ((double)probes * (double)num_files);
}

int main(int argc, char **argv)
{
    const int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps <= 0 || reps > 101) {
        fprintf(stderr, "usage: %s [repetitions 1..101]\n", argv[0]);
        return 2;
    }
    const size_t index_bytes = (size_t)256 << 20;
    const size_t files_per_rep = (size_t)1 << 26; /* blocks checked per repetition */
    const size_t counts[] = {1000, 100000};
    const char *backends[] = {"scalar", "avx2"};
    printf("# pybloom-async stripe kernel, median of %d runs, avx2 available: %d\n", reps,
           pba_avx2_available());

    uint8_t *index = malloc(index_bytes);
    if (index == NULL) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (size_t i = 0; i + 8 <= index_bytes; i += 8) {
        const uint64_t v = next_u64();
        memcpy(index + i, &v, 8);
    }
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        const size_t num_files = counts[c];
        const uint32_t num_blocks = (uint32_t)(index_bytes / (num_files * PBA_BLOCK_BYTES));
        const size_t probes = files_per_rep / num_files;
        uint64_t *hashes = malloc(probes * sizeof *hashes);
        uint8_t *out = malloc(num_files);
        if (hashes == NULL || out == NULL) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        for (size_t i = 0; i < probes; i++) {
            hashes[i] = next_u64();
        }
        for (int hot = 1; hot >= 0; hot--) {
            for (size_t k = 0; k < 2; k++) {
                if (pba_set_backend(backends[k]) != PBA_OK) {
                    continue;
                }
                double times[101];
                (void)run(index, num_blocks, num_files, hashes, probes, hot, out); /* warm-up */
                for (int r = 0; r < reps; r++) {
                    times[r] = run(index, num_blocks, num_files, hashes, probes, hot, out);
                }
                printf("bench=stripe backend=%s files=%zu mode=%s ns_per_file=%.3f\n", backends[k],
                       num_files, hot ? "hot" : "cold", median(times, reps));
                fflush(stdout);
            }
        }
        free(out);
        free(hashes);
    }
    free(index);
    return 0;
}
