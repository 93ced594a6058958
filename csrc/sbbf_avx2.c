/*
 * sbbf_avx2.c: the AVX2 SBBF kernels, and the only code in the core built
 * for AVX2. Each function carries target("avx2") instead of the file being
 * compiled with -mavx2, so the build needs no per-file flags and nothing
 * outside this file can be auto-vectorised with AVX2 by accident. They run
 * only after dispatch.c has checked CPUID and XGETBV.
 *
 * One block is one __m256i: the eight salted bit positions are computed in
 * parallel (vpmulld, vpsrld, vpsllvd), an insert is one OR, and a check is one
 * vptest (testc: every mask bit is set in the block).
 */
#include "internal.h"

#if defined(PBA_HAVE_AVX2_KERNELS)

#include <immintrin.h>

#if defined(__GNUC__) || defined(__clang__)
#define PBA_AVX2 __attribute__((target("avx2")))
#else
#define PBA_AVX2
#endif

static PBA_AVX2 inline __m256i block_mask(uint32_t key)
{
    const __m256i salt = _mm256_setr_epi32((int)PBA_SALT0, (int)PBA_SALT1, (int)PBA_SALT2,
                                           (int)PBA_SALT3, (int)PBA_SALT4, (int)PBA_SALT5,
                                           (int)PBA_SALT6, (int)PBA_SALT7);
    __m256i bits = _mm256_mullo_epi32(_mm256_set1_epi32((int)key), salt);
    bits = _mm256_srli_epi32(bits, 27);
    return _mm256_sllv_epi32(_mm256_set1_epi32(1), bits);
}

static PBA_AVX2 inline const __m256i *block_at(const uint8_t *bitset, uint32_t num_blocks,
                                               uint64_t hash)
{
    return (const __m256i *)(const void *)(bitset + (size_t)pba_block_index(hash, num_blocks) *
                                                        PBA_BLOCK_BYTES);
}

static PBA_AVX2 inline int check_one(const uint8_t *bitset, uint32_t num_blocks, uint64_t hash)
{
    const __m256i block = _mm256_loadu_si256(block_at(bitset, num_blocks, hash));
    return _mm256_testc_si256(block, block_mask((uint32_t)hash));
}

static PBA_AVX2 inline void prefetch_block(const uint8_t *bitset, uint32_t num_blocks,
                                           uint64_t hash)
{
    _mm_prefetch((const char *)block_at(bitset, num_blocks, hash), _MM_HINT_T0);
}

static PBA_AVX2 void avx2_insert_hashes(uint8_t *bitset, uint32_t num_blocks,
                                        const uint64_t *hashes, size_t n)
{
    size_t i = 0;
    if ((size_t)num_blocks * PBA_BLOCK_BYTES >= PBA_PREFETCH_MIN_BYTES) {
        for (; i + PBA_PREFETCH_DISTANCE < n; i++) {
            prefetch_block(bitset, num_blocks, hashes[i + PBA_PREFETCH_DISTANCE]);
            __m256i *p = (__m256i *)(void *)(bitset + (size_t)pba_block_index(hashes[i], num_blocks) *
                                                          PBA_BLOCK_BYTES);
            _mm256_storeu_si256(p, _mm256_or_si256(_mm256_loadu_si256(p),
                                                   block_mask((uint32_t)hashes[i])));
        }
    }
    for (; i < n; i++) {
        __m256i *p = (__m256i *)(void *)(bitset + (size_t)pba_block_index(hashes[i], num_blocks) *
                                                      PBA_BLOCK_BYTES);
        _mm256_storeu_si256(p, _mm256_or_si256(_mm256_loadu_si256(p),
                                               block_mask((uint32_t)hashes[i])));
    }
}

/* Probes [from, to) of hashes; with `ahead` set, also prefetches the block
 * of the hash `ahead` places later. Unrolled by four so that four independent
 * lookups are in flight per iteration; `ahead` is a compile-time constant at
 * each call site, so the prefetch-free loop carries no prefetch code. */
static PBA_AVX2 inline void check_run(const uint8_t *bitset, uint32_t num_blocks,
                                      const uint64_t *hashes, size_t from, size_t to,
                                      uint8_t *out, size_t ahead)
{
    size_t i = from;
    for (; i + 4 <= to; i += 4) {
        if (ahead) {
            prefetch_block(bitset, num_blocks, hashes[i + ahead]);
            prefetch_block(bitset, num_blocks, hashes[i + ahead + 1]);
            prefetch_block(bitset, num_blocks, hashes[i + ahead + 2]);
            prefetch_block(bitset, num_blocks, hashes[i + ahead + 3]);
        }
        out[i] = (uint8_t)check_one(bitset, num_blocks, hashes[i]);
        out[i + 1] = (uint8_t)check_one(bitset, num_blocks, hashes[i + 1]);
        out[i + 2] = (uint8_t)check_one(bitset, num_blocks, hashes[i + 2]);
        out[i + 3] = (uint8_t)check_one(bitset, num_blocks, hashes[i + 3]);
    }
    for (; i < to; i++) {
        if (ahead) {
            prefetch_block(bitset, num_blocks, hashes[i + ahead]);
        }
        out[i] = (uint8_t)check_one(bitset, num_blocks, hashes[i]);
    }
}

static PBA_AVX2 void avx2_check_hashes(const uint8_t *bitset, uint32_t num_blocks,
                                       const uint64_t *hashes, size_t n, uint8_t *out)
{
    size_t i = 0;
    if ((size_t)num_blocks * PBA_BLOCK_BYTES >= PBA_PREFETCH_MIN_BYTES &&
        n > PBA_PREFETCH_DISTANCE + 4) {
        for (size_t j = 0; j < PBA_PREFETCH_DISTANCE; j++) {
            prefetch_block(bitset, num_blocks, hashes[j]);
        }
        /* Stop early enough that hashes[i + ahead + 3] stays in bounds. */
        const size_t stop = n - PBA_PREFETCH_DISTANCE - 3;
        check_run(bitset, num_blocks, hashes, 0, stop, out, PBA_PREFETCH_DISTANCE);
        i = stop;
    }
    check_run(bitset, num_blocks, hashes, i, n, out, 0);
}

static PBA_AVX2 size_t avx2_count_hashes(const uint8_t *bitset, uint32_t num_blocks,
                                         const uint64_t *hashes, size_t n)
{
    size_t hits = 0;
    size_t i = 0;
    if ((size_t)num_blocks * PBA_BLOCK_BYTES >= PBA_PREFETCH_MIN_BYTES) {
        for (; i + PBA_PREFETCH_DISTANCE < n; i++) {
            prefetch_block(bitset, num_blocks, hashes[i + PBA_PREFETCH_DISTANCE]);
            hits += (size_t)check_one(bitset, num_blocks, hashes[i]);
        }
    }
    for (; i < n; i++) {
        hits += (size_t)check_one(bitset, num_blocks, hashes[i]);
    }
    return hits;
}

static PBA_AVX2 int avx2_check_hash(const uint8_t *bitset, uint32_t num_blocks, uint64_t hash)
{
    return check_one(bitset, num_blocks, hash);
}

const pba_kernels pba_avx2_kernels = {
    "avx2", avx2_insert_hashes, avx2_check_hashes, avx2_count_hashes, avx2_check_hash,
};

#else
/* Not x86: nothing to build here; the scalar kernels serve. ISO C forbids an
 * empty translation unit. */
typedef int pba_avx2_unused;
#endif
