/*
 * internal.h: what the core's C files share and do not export.
 */
#ifndef PBA_INTERNAL_H
#define PBA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pybloom_async.h"

/* The eight odd constants of the Split Block Bloom Filter, from the Parquet
 * spec (parquet-format BloomFilter.md, "Technical Approach"): word i of a
 * block gets bit (key * SALT[i]) >> 27, a multiply-shift hash in the manner
 * of Dietzfelbinger et al. */
#define PBA_SALT0 0x47b6137bu
#define PBA_SALT1 0x44974d91u
#define PBA_SALT2 0x8824ad5bu
#define PBA_SALT3 0xa2b7289du
#define PBA_SALT4 0x705495c7u
#define PBA_SALT5 0x2df1424bu
#define PBA_SALT6 0x9efc4947u
#define PBA_SALT7 0x5c6bfb31u

/* Batch probes prefetch this many hashes ahead once a filter is larger than
 * PBA_PREFETCH_MIN_BYTES: below that the filter sits in the caches, and a
 * prefetch is an instruction that buys nothing. A dozen-plus blocks in flight
 * covers DRAM latency (~100 ns) at a few ns per probe. */
#ifndef PBA_PREFETCH_DISTANCE
#define PBA_PREFETCH_DISTANCE 16u
#endif
#ifndef PBA_PREFETCH_MIN_BYTES
#define PBA_PREFETCH_MIN_BYTES (4u * 1024u * 1024u)
#endif

/* Block index from the spec: the upper 32 bits of the hash times the number
 * of blocks, upper 32 bits of the product (Lemire's fast range reduction). */
static inline uint32_t pba_block_index(uint64_t hash, uint32_t num_blocks)
{
    return (uint32_t)(((hash >> 32) * (uint64_t)num_blocks) >> 32);
}

/* Bitset words are little-endian uint32 in the file format. */
static inline uint32_t pba_load_le32(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
#else
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
#endif
}

static inline void pba_store_le32(uint8_t *p, uint32_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
#else
    memcpy(p, &v, 4);
#endif
}

/* One set of SBBF kernels; the dispatcher picks one at load time. The
 * bitset pointer may have any alignment. */
typedef struct {
    const char *name;
    void (*insert_hashes)(uint8_t *bitset, uint32_t num_blocks, const uint64_t *hashes, size_t n);
    void (*check_hashes)(const uint8_t *bitset, uint32_t num_blocks, const uint64_t *hashes,
                         size_t n, uint8_t *out);
    size_t (*count_hashes)(const uint8_t *bitset, uint32_t num_blocks, const uint64_t *hashes,
                           size_t n);
    int (*check_hash)(const uint8_t *bitset, uint32_t num_blocks, uint64_t hash);
    /* One hash against num_files consecutive blocks (a block-major stripe):
     * out_may[i] |= 1 for each block holding it; returns how many do. */
    size_t (*check_stripe)(const uint8_t *stripe, size_t num_files, uint64_t hash,
                           uint8_t *out_may);
    /* XXH64 (seed 0) of n consecutive 4- or 8-byte values: INT32/FLOAT and
     * INT64/DOUBLE, the types probed most. */
    void (*hash4)(const uint8_t *data, size_t n, uint64_t *out);
    void (*hash8)(const uint8_t *data, size_t n, uint64_t *out);
} pba_kernels;

/* The portable fixed-width hashers (sbbf.c); the AVX2 ones finish their
 * tails with these. */
void pba_scalar_hash4(const uint8_t *data, size_t n, uint64_t *out);
void pba_scalar_hash8(const uint8_t *data, size_t n, uint64_t *out);

extern const pba_kernels pba_scalar_kernels;
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#define PBA_HAVE_AVX2_KERNELS 1
extern const pba_kernels pba_avx2_kernels;
#endif

/* The kernels in use (never NULL). */
const pba_kernels *pba_active_kernels(void);

#endif /* PBA_INTERNAL_H */
