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

/* A stripe is read front to back, a stream the hardware prefetchers follow
 * on their own: bench/bench_stripe.c measures no gain from software prefetch
 * on stripes of 1,000 or 100,000 files, from the caches or from memory. From
 * PBA_PREFETCH_MIN_BYTES on (the size past which batch probes prefetch too)
 * the loop still asks for the blocks PBA_PREFETCH_DISTANCE files ahead, two
 * cache lines per four files, to keep a very long stream ahead of DRAM. */
static PBA_AVX2 inline size_t check_stripe_run(const uint8_t *stripe, size_t from, size_t to,
                                               __m256i mask, uint8_t *out_may, size_t ahead)
{
    size_t hits = 0;
    size_t f = from;
    for (; f + 4 <= to; f += 4) {
        const uint8_t *p = stripe + f * PBA_BLOCK_BYTES;
        if (ahead) {
            _mm_prefetch((const char *)(p + ahead * PBA_BLOCK_BYTES), _MM_HINT_T0);
            _mm_prefetch((const char *)(p + (ahead + 2) * PBA_BLOCK_BYTES), _MM_HINT_T0);
        }
        const int h0 = _mm256_testc_si256(_mm256_loadu_si256((const __m256i *)(const void *)p), mask);
        const int h1 = _mm256_testc_si256(
            _mm256_loadu_si256((const __m256i *)(const void *)(p + PBA_BLOCK_BYTES)), mask);
        const int h2 = _mm256_testc_si256(
            _mm256_loadu_si256((const __m256i *)(const void *)(p + 2 * PBA_BLOCK_BYTES)), mask);
        const int h3 = _mm256_testc_si256(
            _mm256_loadu_si256((const __m256i *)(const void *)(p + 3 * PBA_BLOCK_BYTES)), mask);
        out_may[f] |= (uint8_t)h0;
        out_may[f + 1] |= (uint8_t)h1;
        out_may[f + 2] |= (uint8_t)h2;
        out_may[f + 3] |= (uint8_t)h3;
        hits += (size_t)(h0 + h1 + h2 + h3);
    }
    for (; f < to; f++) {
        const int h = _mm256_testc_si256(
            _mm256_loadu_si256((const __m256i *)(const void *)(stripe + f * PBA_BLOCK_BYTES)),
            mask);
        out_may[f] |= (uint8_t)h;
        hits += (size_t)h;
    }
    return hits;
}

static PBA_AVX2 size_t avx2_check_stripe(const uint8_t *stripe, size_t num_files, uint64_t hash,
                                         uint8_t *out_may)
{
    const __m256i mask = block_mask((uint32_t)hash);
    size_t hits = 0;
    size_t f = 0;
    if (num_files * PBA_BLOCK_BYTES >= PBA_PREFETCH_MIN_BYTES &&
        num_files >= PBA_PREFETCH_DISTANCE + 4) {
        /* Stop early enough that every prefetched address lies in the stripe. */
        f = (num_files - PBA_PREFETCH_DISTANCE - 4) / 4 * 4;
        hits = check_stripe_run(stripe, 0, f, mask, out_may, PBA_PREFETCH_DISTANCE);
    }
    return hits + check_stripe_run(stripe, f, num_files, mask, out_may, 0);
}

/* ---- XXH64 of four 4- or 8-byte values at once --------------------------
 *
 * The same arithmetic as XXH64 (xxHash's XXH64_round, XXH64_avalanche and
 * its 4/8-byte finalisation, seed 0), one value per 64-bit lane. AVX2 has no
 * 64-bit multiply, so each product by a constant is built from three 32x32
 * multiplies (vpmuludq): lo*lo + ((hi*lo + lo*hi) << 32), exact mod 2^64. */

#define PBA_P1 0x9E3779B185EBCA87ull
#define PBA_P2 0xC2B2AE3D27D4EB4Full
#define PBA_P3 0x165667B19E3779F9ull
#define PBA_P4 0x85EBCA77C2B2AE63ull
#define PBA_P5 0x27D4EB2F165667C5ull

static PBA_AVX2 inline __m256i mul64c(__m256i a, uint64_t c)
{
    const __m256i c_lo = _mm256_set1_epi64x((long long)(c & 0xFFFFFFFFull));
    const __m256i c_hi = _mm256_set1_epi64x((long long)(c >> 32));
    const __m256i lo = _mm256_mul_epu32(a, c_lo);
    const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), c_lo),
                                           _mm256_mul_epu32(a, c_hi));
    return _mm256_add_epi64(lo, _mm256_slli_epi64(cross, 32));
}

#define ROTL64(x, r) _mm256_or_si256(_mm256_slli_epi64((x), (r)), _mm256_srli_epi64((x), 64 - (r)))

static PBA_AVX2 inline __m256i avalanche(__m256i h)
{
    h = _mm256_xor_si256(h, _mm256_srli_epi64(h, 33));
    h = mul64c(h, PBA_P2);
    h = _mm256_xor_si256(h, _mm256_srli_epi64(h, 29));
    h = mul64c(h, PBA_P3);
    return _mm256_xor_si256(h, _mm256_srli_epi64(h, 32));
}

static PBA_AVX2 void avx2_hash8(const uint8_t *data, size_t n, uint64_t *out)
{
    size_t i = 0;
    const __m256i seed = _mm256_set1_epi64x((long long)(PBA_P5 + 8));
    const __m256i p4 = _mm256_set1_epi64x((long long)PBA_P4);
    for (; i + 4 <= n; i += 4) {
        __m256i k1 = _mm256_loadu_si256((const __m256i *)(const void *)(data + 8 * i));
        k1 = mul64c(ROTL64(mul64c(k1, PBA_P2), 31), PBA_P1); /* XXH64_round(0, v) */
        __m256i h = _mm256_xor_si256(seed, k1);
        h = _mm256_add_epi64(mul64c(ROTL64(h, 27), PBA_P1), p4);
        _mm256_storeu_si256((__m256i *)(void *)(out + i), avalanche(h));
    }
    pba_scalar_hash8(data + 8 * i, n - i, out + i);
}

static PBA_AVX2 void avx2_hash4(const uint8_t *data, size_t n, uint64_t *out)
{
    size_t i = 0;
    const __m256i seed = _mm256_set1_epi64x((long long)(PBA_P5 + 4));
    const __m256i p3 = _mm256_set1_epi64x((long long)PBA_P3);
    for (; i + 4 <= n; i += 4) {
        const __m256i v = _mm256_cvtepu32_epi64(
            _mm_loadu_si128((const __m128i *)(const void *)(data + 4 * i)));
        __m256i h = _mm256_xor_si256(seed, mul64c(v, PBA_P1));
        h = _mm256_add_epi64(mul64c(ROTL64(h, 23), PBA_P2), p3);
        _mm256_storeu_si256((__m256i *)(void *)(out + i), avalanche(h));
    }
    pba_scalar_hash4(data + 4 * i, n - i, out + i);
}

const pba_kernels pba_avx2_kernels = {
    "avx2",          avx2_insert_hashes, avx2_check_hashes, avx2_count_hashes,
    avx2_check_hash, avx2_check_stripe,  avx2_hash4,        avx2_hash8,
};

#else
/* Not x86: nothing to build here; the scalar kernels serve. ISO C forbids an
 * empty translation unit. */
typedef int pba_avx2_unused;
#endif
