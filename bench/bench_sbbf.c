/*
 * bench_sbbf.c: C-level benchmark of the pybloom-async core.
 *
 * Reports ns per element for insert and probe of precomputed hashes, and for
 * fused hash + probe / hash + insert of int64 values and short strings, on
 * both backends, at filter sizes 32 KiB, 1 MiB and 128 MiB. Each figure is the
 * median of several repetitions. The workload is the peers' (bench/peers/):
 * inserts go into an empty filter; probes run against a filter loaded to its
 * design occupancy (ndv = 8 * size / 10 keys, 10 bits per key), half of them
 * present and half absent. Output lines have the same shape as the peer
 * harnesses in bench/peers/, so one script can put them side by side:
 *
 *   peer=pybloom backend=avx2 op=probe size=1048576 ns_per_elem=1.93
 *
 * Usage: bench_sbbf [elements (default 4194304)] [repetitions (default 7)]
 */
#include "bench_util.h" /* first: it sets _POSIX_C_SOURCE for clock_gettime */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pybloom_async.h"

static void report(const char *backend, const char *op, size_t size, double ns)
{
    printf("peer=pybloom backend=%s op=%s size=%zu ns_per_elem=%.3f\n", backend, op, size, ns);
    fflush(stdout);
}

static volatile size_t sink;

int main(int argc, char **argv)
{
    const size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : ((size_t)1 << 22);
    const int reps = argc > 2 ? atoi(argv[2]) : 7;
    if (n == 0 || reps <= 0 || reps > 101) {
        fprintf(stderr, "usage: %s [elements > 0] [repetitions 1..101]\n", argv[0]);
        return 2;
    }
    const size_t sizes[] = {32u << 10, 1u << 20, 128u << 20};
    const char *backends[] = {"scalar", "avx2"};

    uint64_t *hashes = malloc(n * sizeof *hashes);
    uint64_t *probes = malloc(n * sizeof *probes);
    int64_t *ints = malloc(n * sizeof *ints);
    int64_t *int_probes = malloc(n * sizeof *int_probes);
    uint8_t *out = malloc(n);
    /* Short strings, 8..24 bytes, in Arrow layout (int32 offsets + data). */
    int32_t *str_offsets = malloc((n + 1) * sizeof *str_offsets);
    char *str_data = malloc(n * 24);
    double *times = malloc((size_t)reps * sizeof *times);
    if (!hashes || !probes || !ints || !int_probes || !out || !str_offsets || !str_data || !times) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        hashes[i] = next_u64();
        ints[i] = (int64_t)(next_u64() >> 1);
    }
    str_offsets[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const int len = 8 + (int)(next_u64() % 17);
        for (int j = 0; j < len; j++) {
            str_data[str_offsets[i] + j] = (char)('a' + next_u64() % 26);
        }
        str_offsets[i + 1] = str_offsets[i] + len;
    }
    pba_column int_col = {PBA_INT64, 0, n, ints, n * 8, NULL, 0, NULL, 0};
    pba_column int_probe_col = {PBA_INT64, 0, n, int_probes, n * 8, NULL, 0, NULL, 0};
    uint8_t *loaded = pba_sbbf_alloc(sizes[2]);
    if (loaded == NULL) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    pba_column str_col = {PBA_BYTE_ARRAY, 0, n, str_data, (size_t)str_offsets[n], str_offsets,
                          0, NULL, 0};

    printf("# pybloom-async C core, %zu elements, median of %d runs, avx2 available: %d\n", n,
           reps, pba_avx2_available());
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const size_t size = sizes[s];
        /* The loaded filter: ndv keys, the first ones being ints[0..pool). */
        const size_t ndv = size * 8 / 10;
        const size_t pool = ndv < n ? ndv : n;
        memset(loaded, 0, size);
        pba_column pool_col = {PBA_INT64, 0, pool, ints, pool * 8, NULL, 0, NULL, 0};
        pba_sbbf_insert_column(loaded, size, &pool_col);
        for (size_t done = pool; done < ndv; done++) {
            pba_sbbf_insert_hash(loaded, size, next_u64());
        }
        /* Half the probes present (keys of the pool), half absent. */
        for (size_t i = 0; i < n; i++) {
            const uint64_t r = next_u64();
            int_probes[i] = (r & 1) ? ints[(r >> 1) % pool] : -(int64_t)(next_u64() >> 2) - 1;
        }
        size_t n_hashed = 0;
        pba_hash_column(&int_probe_col, probes, &n_hashed);
        uint8_t *bits = pba_sbbf_alloc(size);
        if (bits == NULL) {
            fprintf(stderr, "cannot allocate %zu bytes\n", size);
            return 1;
        }
        for (int b = 0; b < 2; b++) {
            if (pba_set_backend(backends[b]) != PBA_OK) {
                continue; /* no AVX2 here */
            }
            /* insert: into an empty filter each time */
            for (int r = 0; r < reps; r++) {
                memset(bits, 0, size);
                const double t0 = now_ns();
                pba_sbbf_insert_hashes(bits, size, hashes, n);
                times[r] = (now_ns() - t0) / (double)n;
            }
            report(backends[b], "insert", size, median(times, reps));
            /* probe: precomputed hashes against the loaded filter */
            for (int r = 0; r < reps; r++) {
                const double t0 = now_ns();
                pba_sbbf_check_hashes(loaded, size, probes, n, out);
                times[r] = (now_ns() - t0) / (double)n;
                sink += out[r];
            }
            report(backends[b], "probe", size, median(times, reps));
            for (int r = 0; r < reps; r++) {
                const double t0 = now_ns();
                sink += pba_sbbf_count_hashes(loaded, size, probes, n);
                times[r] = (now_ns() - t0) / (double)n;
            }
            report(backends[b], "probe_count", size, median(times, reps));
            /* fused hash + insert / hash + probe of int64 values */
            for (int r = 0; r < reps; r++) {
                memset(bits, 0, size);
                const double t0 = now_ns();
                if (pba_sbbf_insert_column(bits, size, &int_col) != PBA_OK) {
                    return 1;
                }
                times[r] = (now_ns() - t0) / (double)n;
            }
            report(backends[b], "hash_insert_int64", size, median(times, reps));
            for (int r = 0; r < reps; r++) {
                const double t0 = now_ns();
                if (pba_sbbf_check_column(loaded, size, &int_probe_col, out) != PBA_OK) {
                    return 1;
                }
                times[r] = (now_ns() - t0) / (double)n;
                sink += out[r];
            }
            report(backends[b], "hash_probe_int64", size, median(times, reps));
            /* fused hash + probe of short strings: the first half of the
             * strings are loaded (as many as fit the design load), all probed */
            memset(bits, 0, size);
            const size_t str_pool = n / 2 < ndv ? n / 2 : ndv;
            pba_column str_pool_col = {PBA_BYTE_ARRAY, 0, str_pool, str_data,
                                       (size_t)str_offsets[str_pool], str_offsets, 0, NULL, 0};
            if (pba_sbbf_insert_column(bits, size, &str_pool_col) != PBA_OK) {
                return 1;
            }
            for (int r = 0; r < reps; r++) {
                const double t0 = now_ns();
                if (pba_sbbf_check_column(bits, size, &str_col, out) != PBA_OK) {
                    return 1;
                }
                times[r] = (now_ns() - t0) / (double)n;
                sink += out[r];
            }
            report(backends[b], "hash_probe_str", size, median(times, reps));
        }
        pba_sbbf_free(bits);
    }
    pba_sbbf_free(loaded);
    free(hashes);
    free(probes);
    free(ints);
    free(int_probes);
    free(out);
    free(str_offsets);
    free(str_data);
    free(times);
    return 0;
}
