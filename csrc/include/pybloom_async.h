/*
 * pybloom_async.h: the public C API of the pybloom-async core.
 *
 * Parquet Split Block Bloom Filters (SBBF) exactly as the Parquet spec
 * defines them (parquet-format BloomFilter.md), XXH64 of the PLAIN encoding of
 * every physical type, and the thrift-compact BloomFilterHeader that precedes
 * a bitset in a Parquet file. Plain C99; usable without Python.
 *
 * A filter is a bitset of `num_bytes` bytes (a power of two, 32 B .. the
 * caller's limit, 128 MiB by default) seen as num_bytes/32 blocks of eight
 * little-endian uint32 words. Functions take the bitset and its size; the
 * library keeps no state but the backend chosen at load time.
 *
 * Thread safety: every function may run concurrently with any other on
 * *different* bitsets. On one bitset, concurrent checks are safe; an insert,
 * fold or union must not overlap any other call on that bitset.
 * pba_set_backend() is for tests and benchmarks and is not thread-safe.
 */
#ifndef PYBLOOM_ASYNC_H
#define PYBLOOM_ASYNC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sizes, from the spec: a block is 256 bits; filters are powers of two. */
#define PBA_BLOCK_BYTES 32u
#define PBA_SBBF_MIN_BYTES 32u
#define PBA_SBBF_DEFAULT_MAX_BYTES (128u * 1024u * 1024u)
/* The largest BloomFilterHeader we write is 19 bytes: 15 B for numBytes <= 63,
 * one more per 7 bits of zigzag varint, 18 B below 2^27 and 19 B from 2^27 (the
 * default limit itself) to 2^30 (found by fuzzing: the encoder was said to stop
 * at 18). The buffer is larger so that callers need not track this. */
#define PBA_HEADER_MAX_ENCODED 32u

/* Status codes. 0 is success; every error is negative. */
enum {
    PBA_OK = 0,
    PBA_ERR_ARG = -1,              /* invalid argument (null pointer, bad type) */
    PBA_ERR_NOMEM = -2,            /* allocation failed */
    PBA_ERR_SIZE = -3,             /* size not a power of two in [32, max] */
    PBA_ERR_SIZE_MISMATCH = -4,    /* two filters of different sizes */
    PBA_ERR_OFFSETS = -5,          /* BYTE_ARRAY offsets not monotonic / out of data */
    PBA_ERR_HDR_TRUNCATED = -10,   /* header ends before its stop field */
    PBA_ERR_HDR_MALFORMED = -11,   /* not valid thrift compact for the header */
    PBA_ERR_HDR_MISSING = -12,     /* a required header field is absent */
    PBA_ERR_HDR_ALGORITHM = -13,   /* algorithm is not BLOCK */
    PBA_ERR_HDR_HASH = -14,        /* hash is not XXHASH */
    PBA_ERR_HDR_COMPRESSION = -15, /* compression is not UNCOMPRESSED */
    PBA_ERR_HDR_NUMBYTES = -16     /* numBytes not a power of two in [32, max] */
};

/* Parquet physical types, numbered as parquet.thrift's `Type`. */
typedef enum {
    PBA_BOOLEAN = 0,
    PBA_INT32 = 1,
    PBA_INT64 = 2,
    PBA_INT96 = 3,
    PBA_FLOAT = 4,
    PBA_DOUBLE = 5,
    PBA_BYTE_ARRAY = 6,
    PBA_FIXED_LEN_BYTE_ARRAY = 7
} pba_physical_type;

/*
 * A column of values to hash, in Arrow's memory layout.
 *
 * Fixed-width types (BOOLEAN: 1 byte 0/1, INT32, INT64, INT96: 12 bytes,
 * FLOAT, DOUBLE, FIXED_LEN_BYTE_ARRAY: `type_length` bytes) read
 * `n * width` bytes from `data`. BYTE_ARRAY reads n+1 offsets (int32, or
 * int64 when `offsets64` is set) and the bytes they point at in `data`, which
 * holds `data_len` bytes; offsets are checked before any byte is read.
 * `validity`, when not NULL, is an LSB-first bitmap starting at bit
 * `validity_offset`; a cleared bit marks a null, which is skipped.
 */
typedef struct {
    int32_t physical_type;
    int32_t type_length;
    size_t n;
    const void *data;
    size_t data_len;
    const void *offsets;
    int32_t offsets64;
    const uint8_t *validity;
    int64_t validity_offset;
} pba_column;

/* Decoded BloomFilterHeader (parquet.thrift). */
typedef struct {
    int64_t num_bytes;   /* the bitset size the header announces */
    size_t header_len;   /* bytes the header occupies before the bitset */
} pba_bloom_header;

/* ---- backend ------------------------------------------------------------ */

/* "avx2" or "scalar": the kernels in use. Chosen once, at load time, from
 * CPUID leaf 7 (AVX2) and XGETBV (the OS saves YMM state); the environment
 * variable PYBLOOM_ASYNC_SIMD=scalar forces the portable path. */
const char *pba_simd_backend(void);
/* 1 when this CPU and OS can run the AVX2 kernels. */
int pba_avx2_available(void);
/* Switch kernels ("avx2" or "scalar"); for tests and benchmarks only.
 * Returns PBA_ERR_ARG for an unknown name or AVX2 on a CPU without it. */
int pba_set_backend(const char *name);

/* Human-readable text for a status code. */
const char *pba_strerror(int code);

/* ---- sizing ------------------------------------------------------------- */

/* 1 when num_bytes is a power of two in [32, max_bytes]. */
int pba_sbbf_valid_num_bytes(uint64_t num_bytes, uint64_t max_bytes);
/* Spec sizing: bits per value = -8 / ln(1 - fpp^(1/8)); bytes rounded up to a
 * power of two and clamped to [32, max_bytes] (max_bytes itself is rounded
 * down to a power of two). fpp must lie in (0, 1); ndv 0 gives 32 bytes. */
uint64_t pba_sbbf_optimal_num_bytes(uint64_t ndv, double fpp, uint64_t max_bytes);
/* Expected false-positive rate of a filter of num_bytes holding ndv distinct
 * values: the number of values per block is Poisson(ndv / blocks); a block
 * holding k values answers a foreign probe "yes" with (1 - (31/32)^k)^8. */
double pba_sbbf_expected_fpp(uint64_t num_bytes, double ndv);

/* ---- memory ------------------------------------------------------------- */

/* A zeroed, 64-byte aligned bitset; filters of 2 MiB or more are aligned to
 * 2 MiB and advised to use transparent huge pages where the OS has them.
 * Returns NULL for an invalid size or when out of memory. */
uint8_t *pba_sbbf_alloc(size_t num_bytes);
void pba_sbbf_free(uint8_t *bitset);

/* ---- hashes ------------------------------------------------------------- */

void pba_sbbf_insert_hash(uint8_t *bitset, size_t num_bytes, uint64_t hash);
int pba_sbbf_check_hash(const uint8_t *bitset, size_t num_bytes, uint64_t hash);
void pba_sbbf_insert_hashes(uint8_t *bitset, size_t num_bytes,
                            const uint64_t *hashes, size_t n);
/* out[i] = 1 when hashes[i] may be in the filter, else 0. */
void pba_sbbf_check_hashes(const uint8_t *bitset, size_t num_bytes,
                           const uint64_t *hashes, size_t n, uint8_t *out);
/* Number of hashes that may be in the filter (no output array). */
size_t pba_sbbf_count_hashes(const uint8_t *bitset, size_t num_bytes,
                             const uint64_t *hashes, size_t n);

/* ---- hashing values ----------------------------------------------------- */

/* XXH64 (vendored xxHash), as the spec uses it with seed 0. */
uint64_t pba_xxh64(const void *data, size_t len, uint64_t seed);
/* Number of values in `col` that are not null. */
size_t pba_column_count_valid(const pba_column *col);
/* Hashes of the non-null values of `col`, in order, into `out` (room for
 * pba_column_count_valid(col) values); *n_out receives that count. */
int pba_hash_column(const pba_column *col, uint64_t *out, size_t *n_out);
/* Hashes of the values of a PLAIN-encoded BYTE_ARRAY run (a dictionary page's
 * body: each value a 4-byte little-endian length, then that many bytes), in
 * order, as a writer hashes them into its filter: XXH64 of each value's bytes.
 * Reads the `len` bytes of `data`; `out` has room for `max_out` hashes and
 * *n_out receives their count (a run of `len` bytes holds at most len / 4).
 * Every length is checked before its bytes are read: PBA_ERR_OFFSETS when a
 * length or its value runs past the data, PBA_ERR_SIZE when more than
 * `max_out` values are found. */
int pba_hash_plain_byte_array(const uint8_t *data, size_t len, uint64_t *out, size_t max_out,
                              size_t *n_out);
/* Hash every non-null value and insert it. */
int pba_sbbf_insert_column(uint8_t *bitset, size_t num_bytes, const pba_column *col);
/* out[i] = 1 when value i may be in the filter; 0 for nulls. */
int pba_sbbf_check_column(const uint8_t *bitset, size_t num_bytes,
                          const pba_column *col, uint8_t *out);

/* ---- whole-filter operations ------------------------------------------- */

/* Clear every bit. */
void pba_sbbf_clear(uint8_t *bitset, size_t num_bytes);
/* Number of bits set. */
uint64_t pba_sbbf_popcount(const uint8_t *bitset, size_t num_bytes);
/* dst |= src; both of num_bytes. */
void pba_sbbf_union(uint8_t *dst, const uint8_t *src, size_t num_bytes);
/* Halve the filter `times` times in place: block j of the result is the OR of
 * blocks 2j and 2j+1, which is where the spec's block index
 * floor(((h >> 32) * blocks) / 2^32) sends every hash after halving, so every
 * inserted value is kept. The first num_bytes >> times bytes hold the result.
 * Returns the new size, or 0 if it would fall below 32 bytes. */
size_t pba_sbbf_fold(uint8_t *bitset, size_t num_bytes, unsigned times);
/* How many halvings keep the expected fpp for ndv values at or below fpp. */
unsigned pba_sbbf_fold_steps(size_t num_bytes, double ndv, double fpp);

/* ---- block-major stripes ------------------------------------------------ */
/*
 * A probe touches one block, and which one depends only on the hash and the
 * block count. So when N filters of one column share a block count B, a hash
 * touches block b of every one of them. A block-major index stores, for
 * b = 0 .. B-1, block b of filter 0, of filter 1, ..., of filter N-1: the
 * N * 32 bytes of block b (the "stripe" of b) are contiguous, and one read of
 * one stripe answers a point lookup for all N files.
 */

/* The block a hash selects in a filter of num_blocks blocks (the spec's
 * ((hash >> 32) * num_blocks) >> 32); a hash probes stripe
 * pba_sbbf_block_index(hash, B) of a block-major index. num_blocks 0 gives 0. */
uint32_t pba_sbbf_block_index(uint64_t hash, uint32_t num_blocks);
/* Check one hash against the stripe of its block: stripe holds num_files
 * blocks of 32 bytes (stripe_len must be num_files * 32). For every file i
 * whose block holds all eight bits of the hash, out_may[i] is set to 1; the
 * other bytes of out_may are left as they are, so calls for several hashes
 * into one zeroed out_may leave 1 for the files that may hold any of them.
 * Returns how many files may hold this hash, or PBA_ERR_ARG (a NULL pointer
 * with num_files > 0) or PBA_ERR_SIZE (stripe_len is not num_files * 32).
 * Dispatched to the AVX2 or scalar kernels, which agree bit for bit. */
int64_t pba_sbbf_check_stripe(const uint8_t *stripe, size_t stripe_len, size_t num_files,
                              uint64_t hash, uint8_t *out_may);
/* Copy each block b of one filter (bitset of num_bytes, a valid filter size)
 * to block b * num_files + file_index of the block-major out, which holds
 * num_bytes * num_files bytes; the other files' blocks are untouched. Calling
 * it for file_index 0 .. num_files-1 builds the index of a column.
 * Returns PBA_OK, PBA_ERR_ARG (NULL pointer, file_index >= num_files) or
 * PBA_ERR_SIZE (num_bytes not a power of two >= 32, or the index size
 * overflows size_t). */
int pba_sbbf_scatter_blocks(const uint8_t *bitset, size_t num_bytes, uint8_t *out,
                            size_t num_files, size_t file_index);
/* The inverse: copy file file_index's blocks out of the block-major index
 * (num_bytes * num_files bytes) into bitset (num_bytes). Same errors. */
int pba_sbbf_gather_blocks(const uint8_t *index, size_t num_bytes, size_t num_files,
                           size_t file_index, uint8_t *bitset);

/* ---- the thrift-compact BloomFilterHeader ------------------------------- */

/* Write the header for a BLOCK / XXHASH / UNCOMPRESSED filter of num_bytes;
 * returns its length (15..19 for valid sizes), or a negative status. */
int pba_bloom_header_encode(uint32_t num_bytes, uint8_t out[PBA_HEADER_MAX_ENCODED]);
/* Decode and validate a header at the start of buf[0..len). Unknown fields are
 * skipped (nesting is bounded); numBytes must be a power of two in
 * [32, max_bytes]. Reads at most `len` bytes; allocates nothing. */
int pba_bloom_header_decode(const uint8_t *buf, size_t len, uint64_t max_bytes,
                            pba_bloom_header *out);

#ifdef __cplusplus
}
#endif

#endif /* PYBLOOM_ASYNC_H */
