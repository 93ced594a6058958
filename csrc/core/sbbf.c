/*
 * sbbf.c: the portable part of the core: scalar SBBF kernels, sizing,
 * memory, whole-filter operations and the hash + insert / hash + check loops
 * over columns. Built for the baseline target; see sbbf_avx2.c for AVX2.
 */
#if !defined(_POSIX_C_SOURCE) && !defined(_WIN32)
#define _POSIX_C_SOURCE 200112L
#endif
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(_WIN32)
#include <malloc.h>
#endif

#define XXH_INLINE_ALL
#define XXH_STATIC_LINKING_ONLY
#include "xxhash.h"

#include "internal.h"

/* ---- scalar kernels ----------------------------------------------------- */

static const uint32_t SALT[8] = {PBA_SALT0, PBA_SALT1, PBA_SALT2, PBA_SALT3,
                                 PBA_SALT4, PBA_SALT5, PBA_SALT6, PBA_SALT7};

/* The eight words a hash's block must hold: word i gets bit (key * SALT[i]) >> 27,
 * key being the low 32 bits of the hash. */
static inline void scalar_mask(uint64_t hash, uint32_t mask[8])
{
    const uint32_t key = (uint32_t)hash;
    for (int i = 0; i < 8; i++) {
        mask[i] = 1u << ((key * SALT[i]) >> 27);
    }
}

/* 1 when the 32-byte block holds every bit of the mask. Branch-free: every
 * word is tested, so the loop has no data-dependent exits and the compiler
 * can keep it in registers. */
static inline int scalar_block_holds(const uint8_t *block, const uint32_t mask[8])
{
    uint32_t missing = 0;
    for (int i = 0; i < 8; i++) {
        missing |= mask[i] & ~pba_load_le32(block + 4 * i);
    }
    return missing == 0;
}

static inline void scalar_insert_one(uint8_t *bitset, uint32_t num_blocks, uint64_t hash)
{
    uint8_t *block = bitset + (size_t)pba_block_index(hash, num_blocks) * PBA_BLOCK_BYTES;
    uint32_t mask[8];
    scalar_mask(hash, mask);
    for (int i = 0; i < 8; i++) {
        pba_store_le32(block + 4 * i, pba_load_le32(block + 4 * i) | mask[i]);
    }
}

static inline int scalar_check_one(const uint8_t *bitset, uint32_t num_blocks, uint64_t hash)
{
    uint32_t mask[8];
    scalar_mask(hash, mask);
    return scalar_block_holds(
        bitset + (size_t)pba_block_index(hash, num_blocks) * PBA_BLOCK_BYTES, mask);
}

static size_t scalar_check_stripe(const uint8_t *stripe, size_t num_files, uint64_t hash,
                                  uint8_t *out_may)
{
    uint32_t mask[8];
    scalar_mask(hash, mask);
    size_t hits = 0;
    for (size_t f = 0; f < num_files; f++) {
        const int hit = scalar_block_holds(stripe + f * PBA_BLOCK_BYTES, mask);
        out_may[f] |= (uint8_t)hit;
        hits += (size_t)hit;
    }
    return hits;
}

static void scalar_insert_hashes(uint8_t *bitset, uint32_t num_blocks, const uint64_t *hashes,
                                 size_t n)
{
    for (size_t i = 0; i < n; i++) {
        scalar_insert_one(bitset, num_blocks, hashes[i]);
    }
}

static void scalar_check_hashes(const uint8_t *bitset, uint32_t num_blocks,
                                const uint64_t *hashes, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < n; i++) {
        out[i] = (uint8_t)scalar_check_one(bitset, num_blocks, hashes[i]);
    }
}

static size_t scalar_count_hashes(const uint8_t *bitset, uint32_t num_blocks,
                                  const uint64_t *hashes, size_t n)
{
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        hits += (size_t)scalar_check_one(bitset, num_blocks, hashes[i]);
    }
    return hits;
}


/* ---- sizing ------------------------------------------------------------- */

static int is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

static uint64_t floor_pow2(uint64_t v)
{
    uint64_t p = 1;
    while (p <= v / 2) {
        p <<= 1;
    }
    return p;
}

int pba_sbbf_valid_num_bytes(uint64_t num_bytes, uint64_t max_bytes)
{
    return is_pow2(num_bytes) && num_bytes >= PBA_SBBF_MIN_BYTES && num_bytes <= max_bytes;
}

uint64_t pba_sbbf_optimal_num_bytes(uint64_t ndv, double fpp, uint64_t max_bytes)
{
    if (!(fpp > 0.0 && fpp < 1.0) || max_bytes < PBA_SBBF_MIN_BYTES) {
        return 0;
    }
    const uint64_t cap = floor_pow2(max_bytes);
    /* Parquet spec, "Sizing an SBBF": bits per value = -8 / ln(1 - fpp^(1/8)). */
    const double bits = -8.0 * (double)ndv / log(1.0 - pow(fpp, 1.0 / 8.0));
    const double bytes = ceil(bits / 8.0);
    if (!(bytes < (double)cap)) { /* also catches inf/nan */
        return cap;
    }
    uint64_t want = (uint64_t)bytes;
    uint64_t size = PBA_SBBF_MIN_BYTES;
    while (size < want) {
        size <<= 1;
    }
    return size < cap ? size : cap;
}

double pba_sbbf_expected_fpp(uint64_t num_bytes, double ndv)
{
    if (!is_pow2(num_bytes) || num_bytes < PBA_SBBF_MIN_BYTES || !(ndv >= 0.0)) {
        return 1.0;
    }
    if (ndv == 0.0) {
        return 0.0;
    }
    const double lambda = ndv / (double)(num_bytes / PBA_BLOCK_BYTES);
    /* Sum the Poisson(lambda) occupancy over +-(12 sigma + 20) around the
     * mean; the tails beyond hold < 1e-30 of the mass. */
    const double spread = 12.0 * sqrt(lambda) + 20.0;
    double lo = floor(lambda - spread);
    if (lo < 0.0) {
        lo = 0.0;
    }
    const double hi = ceil(lambda + spread);
    const double log_keep = log(31.0 / 32.0);
    double total = 0.0;
    for (double k = lo; k <= hi; k += 1.0) {
        const double log_pmf = -lambda + k * log(lambda) - lgamma(k + 1.0);
        const double word_set = -expm1(k * log_keep); /* 1 - (31/32)^k */
        total += exp(log_pmf) * pow(word_set, 8.0);
    }
    return total > 1.0 ? 1.0 : total;
}

/* ---- memory ------------------------------------------------------------- */

#define PBA_HUGE_PAGE (2u * 1024u * 1024u)

uint8_t *pba_sbbf_alloc(size_t num_bytes)
{
    if (!pba_sbbf_valid_num_bytes(num_bytes, (uint64_t)1 << 62)) {
        return NULL;
    }
    const size_t align = num_bytes >= PBA_HUGE_PAGE ? PBA_HUGE_PAGE : 64u;
    void *p = NULL;
#if defined(_WIN32)
    p = _aligned_malloc(num_bytes, align);
    if (p == NULL) {
        return NULL;
    }
#else
    if (posix_memalign(&p, align, num_bytes) != 0) {
        return NULL;
    }
#endif
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    /* Random probes into a large filter miss the TLB on nearly every lookup
     * with 4 KiB pages; 2 MiB pages cut those misses. Advice only: failure is
     * harmless. */
    if (num_bytes >= PBA_HUGE_PAGE) {
        (void)madvise(p, num_bytes, MADV_HUGEPAGE);
    }
#endif
    memset(p, 0, num_bytes);
    return (uint8_t *)p;
}

void pba_sbbf_free(uint8_t *bitset)
{
#if defined(_WIN32)
    _aligned_free(bitset);
#else
    free(bitset);
#endif
}

/* ---- hashes ------------------------------------------------------------- */

static uint32_t blocks_of(size_t num_bytes) { return (uint32_t)(num_bytes / PBA_BLOCK_BYTES); }

void pba_sbbf_insert_hash(uint8_t *bitset, size_t num_bytes, uint64_t hash)
{
    scalar_insert_one(bitset, blocks_of(num_bytes), hash);
}

int pba_sbbf_check_hash(const uint8_t *bitset, size_t num_bytes, uint64_t hash)
{
    return pba_active_kernels()->check_hash(bitset, blocks_of(num_bytes), hash);
}

void pba_sbbf_insert_hashes(uint8_t *bitset, size_t num_bytes, const uint64_t *hashes, size_t n)
{
    pba_active_kernels()->insert_hashes(bitset, blocks_of(num_bytes), hashes, n);
}

void pba_sbbf_check_hashes(const uint8_t *bitset, size_t num_bytes, const uint64_t *hashes,
                           size_t n, uint8_t *out)
{
    pba_active_kernels()->check_hashes(bitset, blocks_of(num_bytes), hashes, n, out);
}

size_t pba_sbbf_count_hashes(const uint8_t *bitset, size_t num_bytes, const uint64_t *hashes,
                             size_t n)
{
    return pba_active_kernels()->count_hashes(bitset, blocks_of(num_bytes), hashes, n);
}

/* ---- block-major stripes ------------------------------------------------ */

uint32_t pba_sbbf_block_index(uint64_t hash, uint32_t num_blocks)
{
    return pba_block_index(hash, num_blocks);
}

int64_t pba_sbbf_check_stripe(const uint8_t *stripe, size_t stripe_len, size_t num_files,
                              uint64_t hash, uint8_t *out_may)
{
    /* The product is checked before it is formed: num_files comes from an
     * index header, stripe_len from the read that fetched the stripe. */
    if (num_files > SIZE_MAX / PBA_BLOCK_BYTES || stripe_len != num_files * PBA_BLOCK_BYTES) {
        return PBA_ERR_SIZE;
    }
    if (num_files == 0) {
        return 0;
    }
    if (stripe == NULL || out_may == NULL) {
        return PBA_ERR_ARG;
    }
    return (int64_t)pba_active_kernels()->check_stripe(stripe, num_files, hash, out_may);
}

/* Checks the arguments shared by scatter and gather; the index is
 * num_bytes * num_files bytes. */
static int check_block_major(const void *a, const void *b, size_t num_bytes, size_t num_files,
                             size_t file_index)
{
    if (!pba_sbbf_valid_num_bytes(num_bytes, (uint64_t)1 << 62) ||
        (num_files != 0 && num_bytes > SIZE_MAX / num_files)) {
        return PBA_ERR_SIZE;
    }
    if (a == NULL || b == NULL || file_index >= num_files) {
        return PBA_ERR_ARG;
    }
    return PBA_OK;
}

int pba_sbbf_scatter_blocks(const uint8_t *bitset, size_t num_bytes, uint8_t *out,
                            size_t num_files, size_t file_index)
{
    const int rc = check_block_major(bitset, out, num_bytes, num_files, file_index);
    if (rc != PBA_OK) {
        return rc;
    }
    const size_t num_blocks = num_bytes / PBA_BLOCK_BYTES;
    for (size_t b = 0; b < num_blocks; b++) {
        memcpy(out + (b * num_files + file_index) * PBA_BLOCK_BYTES,
               bitset + b * PBA_BLOCK_BYTES, PBA_BLOCK_BYTES);
    }
    return PBA_OK;
}

int pba_sbbf_gather_blocks(const uint8_t *index, size_t num_bytes, size_t num_files,
                           size_t file_index, uint8_t *bitset)
{
    const int rc = check_block_major(index, bitset, num_bytes, num_files, file_index);
    if (rc != PBA_OK) {
        return rc;
    }
    const size_t num_blocks = num_bytes / PBA_BLOCK_BYTES;
    for (size_t b = 0; b < num_blocks; b++) {
        memcpy(bitset + b * PBA_BLOCK_BYTES,
               index + (b * num_files + file_index) * PBA_BLOCK_BYTES, PBA_BLOCK_BYTES);
    }
    return PBA_OK;
}

/* ---- hashing values ----------------------------------------------------- */

uint64_t pba_xxh64(const void *data, size_t len, uint64_t seed)
{
    return XXH64(data, len, (XXH64_hash_t)seed);
}

/* XXH64 (seed 0) of exactly 4, 8 or 12 bytes, written out from xxHash's own
 * primitives: the general XXH64 is not reliably inlined into the batch
 * loops, and these lengths are every fixed-width physical type. They equal
 * XXH64() bit for bit (tested against python-xxhash). */
static inline uint64_t xxh64_finish(uint64_t h64)
{
    return XXH64_avalanche(h64);
}

static inline uint64_t xxh64_4(const uint8_t *p)
{
    uint64_t h64 = XXH_PRIME64_5 + 4;
    h64 ^= (uint64_t)XXH_readLE32(p) * XXH_PRIME64_1;
    h64 = XXH_rotl64(h64, 23) * XXH_PRIME64_2 + XXH_PRIME64_3;
    return xxh64_finish(h64);
}

static inline uint64_t xxh64_8_step(uint64_t h64, const uint8_t *p)
{
    h64 ^= XXH64_round(0, XXH_readLE64(p));
    return XXH_rotl64(h64, 27) * XXH_PRIME64_1 + XXH_PRIME64_4;
}

static inline uint64_t xxh64_8(const uint8_t *p)
{
    return xxh64_finish(xxh64_8_step(XXH_PRIME64_5 + 8, p));
}

static inline uint64_t xxh64_12(const uint8_t *p)
{
    uint64_t h64 = xxh64_8_step(XXH_PRIME64_5 + 12, p);
    h64 ^= (uint64_t)XXH_readLE32(p + 8) * XXH_PRIME64_1;
    h64 = XXH_rotl64(h64, 23) * XXH_PRIME64_2 + XXH_PRIME64_3;
    return xxh64_finish(h64);
}

void pba_scalar_hash4(const uint8_t *data, size_t n, uint64_t *out)
{
    for (size_t i = 0; i < n; i++) {
        out[i] = xxh64_4(data + 4 * i);
    }
}

void pba_scalar_hash8(const uint8_t *data, size_t n, uint64_t *out)
{
    for (size_t i = 0; i < n; i++) {
        out[i] = xxh64_8(data + 8 * i);
    }
}

const pba_kernels pba_scalar_kernels = {
    "scalar",         scalar_insert_hashes, scalar_check_hashes, scalar_count_hashes,
    scalar_check_one, scalar_check_stripe,  pba_scalar_hash4,    pba_scalar_hash8,
};

static size_t value_width(const pba_column *col)
{
    switch (col->physical_type) {
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
        return col->type_length > 0 ? (size_t)col->type_length : 0;
    default:
        return 0;
    }
}

static int is_valid(const pba_column *col, size_t i)
{
    if (col->validity == NULL) {
        return 1;
    }
    const uint64_t bit = (uint64_t)col->validity_offset + (uint64_t)i;
    return (col->validity[bit >> 3] >> (bit & 7)) & 1;
}

static int64_t offset_at(const pba_column *col, size_t i)
{
    if (col->offsets64) {
        int64_t v;
        memcpy(&v, (const uint8_t *)col->offsets + 8 * i, 8);
        return v;
    }
    int32_t v;
    memcpy(&v, (const uint8_t *)col->offsets + 4 * i, 4);
    return v;
}

/* Checks a column before any value is read: a known type, buffers present,
 * and for BYTE_ARRAY, offsets that never decrease and stay inside data. */
static int check_column(const pba_column *col)
{
    if (col == NULL || col->validity_offset < 0) {
        return PBA_ERR_ARG;
    }
    if (col->n == 0) {
        return PBA_OK;
    }
    if (col->physical_type == PBA_BYTE_ARRAY) {
        if (col->offsets == NULL || (col->data == NULL && col->data_len != 0)) {
            return PBA_ERR_ARG;
        }
        int64_t prev = offset_at(col, 0);
        if (prev < 0) {
            return PBA_ERR_OFFSETS;
        }
        for (size_t i = 1; i <= col->n; i++) {
            const int64_t cur = offset_at(col, i);
            if (cur < prev) {
                return PBA_ERR_OFFSETS;
            }
            prev = cur;
        }
        if ((uint64_t)prev > (uint64_t)col->data_len) {
            return PBA_ERR_OFFSETS;
        }
        return PBA_OK;
    }
    const size_t width = value_width(col);
    if (width == 0 || col->data == NULL) {
        return PBA_ERR_ARG;
    }
    /* n values of `width` bytes must fit in the buffer the caller described. */
    if (col->n > SIZE_MAX / width || col->n * width > col->data_len) {
        return PBA_ERR_ARG;
    }
    return PBA_OK;
}

/* Hash values [start, start + count) of a checked column into out[0..count).
 * The switch sits outside the loops so that each loop hashes a constant
 * length and XXH64 is specialised for it. Nulls are hashed too (as whatever
 * bytes their slots hold); callers drop or mask them. */
static void hash_range(const pba_column *col, size_t start, size_t count, uint64_t *out)
{
    const uint8_t *data = (const uint8_t *)col->data;
    switch (col->physical_type) {
    case PBA_BOOLEAN:
        for (size_t i = 0; i < count; i++) {
            /* PLAIN-encoded booleans are bits; the filter hashes one byte 0/1. */
            const uint8_t b = data[start + i] != 0;
            out[i] = XXH64(&b, 1, 0);
        }
        break;
    case PBA_INT32:
    case PBA_FLOAT:
        pba_active_kernels()->hash4(data + 4 * start, count, out);
        break;
    case PBA_INT64:
    case PBA_DOUBLE:
        pba_active_kernels()->hash8(data + 8 * start, count, out);
        break;
    case PBA_INT96:
        for (size_t i = 0; i < count; i++) {
            out[i] = xxh64_12(data + 12 * (start + i));
        }
        break;
    case PBA_FIXED_LEN_BYTE_ARRAY: {
        const size_t w = (size_t)col->type_length;
        for (size_t i = 0; i < count; i++) {
            out[i] = XXH64(data + w * (start + i), w, 0);
        }
        break;
    }
    case PBA_BYTE_ARRAY:
        for (size_t i = 0; i < count; i++) {
            const int64_t a = offset_at(col, start + i);
            const int64_t b = offset_at(col, start + i + 1);
            out[i] = XXH64(data == NULL ? (const uint8_t *)"" : data + a, (size_t)(b - a), 0);
        }
        break;
    default:
        break;
    }
}

int pba_hash_plain_byte_array(const uint8_t *data, size_t len, uint64_t *out, size_t max_out,
                              size_t *n_out)
{
    if (n_out == NULL || (data == NULL && len != 0) || (out == NULL && max_out != 0)) {
        return PBA_ERR_ARG;
    }
    size_t at = 0;
    size_t count = 0;
    while (at < len) {
        if (len - at < 4) {
            return PBA_ERR_OFFSETS;
        }
        const uint32_t n = (uint32_t)data[at] | (uint32_t)data[at + 1] << 8 |
                           (uint32_t)data[at + 2] << 16 | (uint32_t)data[at + 3] << 24;
        at += 4;
        if (n > len - at) {
            return PBA_ERR_OFFSETS;
        }
        if (count == max_out) {
            return PBA_ERR_SIZE;
        }
        out[count++] = XXH64(data + at, n, 0);
        at += n;
    }
    *n_out = count;
    return PBA_OK;
}

size_t pba_column_count_valid(const pba_column *col)
{
    if (col == NULL) {
        return 0;
    }
    if (col->validity == NULL) {
        return col->n;
    }
    size_t count = 0;
    for (size_t i = 0; i < col->n; i++) {
        count += (size_t)is_valid(col, i);
    }
    return count;
}

/* Values are hashed a chunk at a time into a buffer on the stack, then the
 * chunk is probed or inserted in one kernel call: hashing stays in
 * registers, and the probe loop sees a run of independent lookups it can
 * overlap (and prefetch, for large filters). */
#define PBA_CHUNK 512u

int pba_hash_column(const pba_column *col, uint64_t *out, size_t *n_out)
{
    const int rc = check_column(col);
    if (rc != PBA_OK) {
        return rc;
    }
    if (n_out == NULL || (out == NULL && col->n != 0)) {
        return PBA_ERR_ARG;
    }
    if (col->validity == NULL) {
        hash_range(col, 0, col->n, out);
        *n_out = col->n;
        return PBA_OK;
    }
    uint64_t buf[PBA_CHUNK];
    size_t written = 0;
    for (size_t start = 0; start < col->n; start += PBA_CHUNK) {
        const size_t count = col->n - start < PBA_CHUNK ? col->n - start : PBA_CHUNK;
        hash_range(col, start, count, buf);
        for (size_t i = 0; i < count; i++) {
            if (is_valid(col, start + i)) {
                out[written++] = buf[i];
            }
        }
    }
    *n_out = written;
    return PBA_OK;
}

int pba_sbbf_insert_column(uint8_t *bitset, size_t num_bytes, const pba_column *col)
{
    const int rc = check_column(col);
    if (rc != PBA_OK) {
        return rc;
    }
    if (bitset == NULL || !pba_sbbf_valid_num_bytes(num_bytes, (uint64_t)1 << 62)) {
        return PBA_ERR_SIZE;
    }
    const pba_kernels *k = pba_active_kernels();
    const uint32_t num_blocks = blocks_of(num_bytes);
    uint64_t buf[PBA_CHUNK];
    for (size_t start = 0; start < col->n; start += PBA_CHUNK) {
        size_t count = col->n - start < PBA_CHUNK ? col->n - start : PBA_CHUNK;
        hash_range(col, start, count, buf);
        if (col->validity != NULL) {
            size_t kept = 0;
            for (size_t i = 0; i < count; i++) {
                if (is_valid(col, start + i)) {
                    buf[kept++] = buf[i];
                }
            }
            count = kept;
        }
        k->insert_hashes(bitset, num_blocks, buf, count);
    }
    return PBA_OK;
}

int pba_sbbf_check_column(const uint8_t *bitset, size_t num_bytes, const pba_column *col,
                          uint8_t *out)
{
    const int rc = check_column(col);
    if (rc != PBA_OK) {
        return rc;
    }
    if (bitset == NULL || !pba_sbbf_valid_num_bytes(num_bytes, (uint64_t)1 << 62) ||
        (out == NULL && col->n != 0)) {
        return bitset == NULL || out == NULL ? PBA_ERR_ARG : PBA_ERR_SIZE;
    }
    const pba_kernels *k = pba_active_kernels();
    const uint32_t num_blocks = blocks_of(num_bytes);
    uint64_t buf[PBA_CHUNK];
    for (size_t start = 0; start < col->n; start += PBA_CHUNK) {
        const size_t count = col->n - start < PBA_CHUNK ? col->n - start : PBA_CHUNK;
        hash_range(col, start, count, buf);
        k->check_hashes(bitset, num_blocks, buf, count, out + start);
        if (col->validity != NULL) {
            for (size_t i = 0; i < count; i++) {
                /* A null is never in a filter: writers skip nulls. */
                out[start + i] &= (uint8_t)is_valid(col, start + i);
            }
        }
    }
    return PBA_OK;
}

/* ---- whole-filter operations ------------------------------------------- */

static unsigned popcount32(uint32_t v)
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_popcount(v);
#else
    v = v - ((v >> 1) & 0x55555555u);
    v = (v & 0x33333333u) + ((v >> 2) & 0x33333333u);
    return (unsigned)((((v + (v >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24);
#endif
}

uint64_t pba_sbbf_popcount(const uint8_t *bitset, size_t num_bytes)
{
    uint64_t total = 0;
    for (size_t i = 0; i + 4 <= num_bytes; i += 4) {
        total += popcount32(pba_load_le32(bitset + i));
    }
    return total;
}

void pba_sbbf_clear(uint8_t *bitset, size_t num_bytes) { memset(bitset, 0, num_bytes); }

void pba_sbbf_union(uint8_t *dst, const uint8_t *src, size_t num_bytes)
{
    for (size_t i = 0; i < num_bytes; i++) {
        dst[i] |= src[i];
    }
}

size_t pba_sbbf_fold(uint8_t *bitset, size_t num_bytes, unsigned times)
{
    size_t size = num_bytes;
    for (unsigned t = 0; t < times; t++) {
        if (size / 2 < PBA_SBBF_MIN_BYTES) {
            return 0;
        }
        const size_t half_blocks = size / PBA_BLOCK_BYTES / 2;
        for (size_t j = 0; j < half_blocks; j++) {
            /* Block j <- block 2j | block 2j+1. The source blocks are never
             * behind the destination, so the in-place walk reads before it
             * overwrites. */
            uint8_t tmp[PBA_BLOCK_BYTES];
            const uint8_t *a = bitset + 2 * j * PBA_BLOCK_BYTES;
            const uint8_t *b = a + PBA_BLOCK_BYTES;
            for (size_t x = 0; x < PBA_BLOCK_BYTES; x++) {
                tmp[x] = a[x] | b[x];
            }
            memcpy(bitset + j * PBA_BLOCK_BYTES, tmp, PBA_BLOCK_BYTES);
        }
        size /= 2;
    }
    return size;
}

unsigned pba_sbbf_fold_steps(size_t num_bytes, double ndv, double fpp)
{
    unsigned steps = 0;
    size_t size = num_bytes;
    while (size / 2 >= PBA_SBBF_MIN_BYTES && pba_sbbf_expected_fpp(size / 2, ndv) <= fpp) {
        size /= 2;
        steps++;
    }
    return steps;
}
