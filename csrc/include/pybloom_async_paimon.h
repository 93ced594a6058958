/*
 * pybloom_async_paimon.h: Apache Paimon's `bloom-filter` file index, in C.
 *
 * Paimon (file-index type "bloom-filter") stores one BloomFilter64 per
 * column: a classic k-hash Bloom filter over a byte array, probed with
 * Kirsch-Mitzenmacher double hashing of a 64-bit value hash. The hash of a
 * value ("FastHash") is Thomas Wang's 64-bit integer mix for integer-like
 * types and XXH64 (seed 0) for strings and binary. Every rule below
 * (sizing quirks, bit order, sign handling) reproduces Paimon byte for byte;
 * the reference is the vector set described in testdata/paimon/README.md.
 *
 * A filter is `num_bytes` bytes (num_bits = 8 * num_bytes) and a hash-function
 * count k. Functions take the bitset, its size and k; the library keeps no
 * state. Every function validates its sizes (PBA_PAIMON_ERR_GEOMETRY) before
 * touching memory, so a k or a length read from a file cannot make it read or
 * write out of bounds or loop for longer than O(num_bits) per value.
 *
 * Serialized form (one column's index payload):
 *     [k : int32 big-endian][bitset : num_bytes bytes]
 *
 * Thread safety: as for the SBBF functions: concurrent tests on one bitset
 * are safe; an add must not overlap any other call on the same bitset.
 *
 * Plain C99; usable without Python.
 */
#ifndef PYBLOOM_ASYNC_PAIMON_H
#define PYBLOOM_ASYNC_PAIMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest bitset whose bit count still fits Java's int (2^31 - 1):
 * Paimon indexes bits with int arithmetic, so no valid filter is larger. */
#define PBA_PAIMON_MAX_BITSET_BYTES 268435455
/* Bytes before the bitset in a serialized filter (k, int32 big-endian). */
#define PBA_PAIMON_HEADER_BYTES 4

/* Status codes (0 is success; a distinct range from the SBBF codes). */
enum {
    PBA_PAIMON_OK = 0,
    PBA_PAIMON_ERR_ARG = -40,       /* null pointer, unknown kind, bad width */
    PBA_PAIMON_ERR_GEOMETRY = -41,  /* bit count or k outside what Paimon can hold */
    PBA_PAIMON_ERR_SIZE = -42,      /* Java would throw (bit count overflows int) */
    PBA_PAIMON_ERR_LENGTH = -43,    /* an array is shorter than its count says */
    PBA_PAIMON_ERR_OFFSETS = -44,   /* string offsets not monotonic / past the data */
    PBA_PAIMON_ERR_RANGE = -45,     /* a timestamp beyond Paimon's epoch-millis range */
    PBA_PAIMON_ERR_TRUNCATED = -46  /* serialized filter shorter than its header + 1 byte */
};

/* How the values of a batch are laid out, and which FastHash rule applies. */
enum {
    PBA_PAIMON_KIND_INT8 = 1,      /* int8, sign-extended to int64, wang64 */
    PBA_PAIMON_KIND_INT16 = 2,     /* int16, sign-extended, wang64 */
    PBA_PAIMON_KIND_INT32 = 3,     /* int32 (also DATE days, TIME millis), wang64 */
    PBA_PAIMON_KIND_INT64 = 4,     /* int64, wang64 */
    PBA_PAIMON_KIND_FLOAT32 = 5,   /* IEEE binary32: NaN -> 0x7fc00000, int32 bits sign-extended */
    PBA_PAIMON_KIND_FLOAT64 = 6,   /* IEEE binary64: NaN -> 0x7ff8000000000000 */
    PBA_PAIMON_KIND_TIMESTAMP = 7, /* int64 epoch count in `ts_unit`, hashed per `ts_precision` */
    PBA_PAIMON_KIND_BYTES = 8,     /* variable-length: offsets + data, XXH64 seed 0 */
    PBA_PAIMON_KIND_FIXED = 9      /* `width` bytes per value, XXH64 seed 0 */
};

/*
 * A batch of values, in Arrow's memory layout (numpy arrays fit it too).
 *
 * Fixed-width kinds read n values of their width (`width` for FIXED) from
 * `data`, which must hold at least that many bytes (`data_len`). BYTES reads
 * n+1 offsets (int32, or int64 when `offsets64` is set, `offsets_len` bytes
 * available) and the bytes they delimit in `data`; all offsets are checked
 * before any value is hashed. TIMESTAMP values are epoch counts of
 * 10^-ts_unit seconds (ts_unit 0, 3, 6 or 9) for a column of precision
 * ts_precision (0..9): precision <= 3 hashes epoch milliseconds, higher
 * precisions epoch microseconds, both floor-based as Paimon's Timestamp.
 * `validity`, when not NULL, is an LSB-first bitmap of `validity_len` bytes
 * starting at bit `validity_offset`; a cleared bit marks a null.
 */
typedef struct {
    int32_t kind;
    int32_t width;
    int32_t ts_unit;
    int32_t ts_precision;
    size_t n;
    const void *data;
    size_t data_len;
    const void *offsets;
    size_t offsets_len;
    int32_t offsets64;
    const uint8_t *validity;
    size_t validity_len;
    int64_t validity_offset;
} pba_paimon_values;

/* Text for a PBA_PAIMON_* status code. */
const char *pba_paimon_strerror(int code);

/* ---- sizing -------------------------------------------------------------- */

/* Paimon's BloomFilter64(items, fpp) geometry, including its rounding quirks:
 * nb = (int)(-items * ln fpp / ln(2)^2), num_bits = nb + (8 - nb % 8) with
 * Java int semantics, k = max(1, (int)Math.round(num_bits / items * ln 2)).
 * `items` must fit a Java int. Returns PBA_PAIMON_ERR_SIZE where Java throws
 * (the bit count overflows or is negative) or would divide by a zero bit
 * count on the first add. */
int pba_paimon_geometry(int64_t items, double fpp, int32_t *num_bits,
                        int32_t *num_hash_functions);
/* 0 when a bitset of num_bytes with k hash functions is one Paimon can hold:
 * 1 <= num_bytes <= PBA_PAIMON_MAX_BITSET_BYTES and 1 <= k <= 8 * num_bytes
 * (Paimon's k never exceeds its bit count). Else PBA_PAIMON_ERR_GEOMETRY. */
int pba_paimon_check_geometry(size_t num_bytes, int32_t k);

/* ---- hashing ------------------------------------------------------------- */

/* Thomas Wang's 64-bit mix as Paimon applies it (arithmetic shifts). */
uint64_t pba_paimon_wang64(int64_t key);
/* XXH64 with seed 0, Paimon's hash of string and binary values. */
uint64_t pba_paimon_xxh64(const void *data, size_t len);
/* Number of non-null values; PBA_PAIMON_ERR_* when the batch is malformed
 * (the full validation: lengths, offsets, timestamp ranges). */
int pba_paimon_count_valid(const pba_paimon_values *values, size_t *n_valid);
/* FastHash of every non-null value, in order, into out[0..out_cap);
 * *n_out receives the count. Validates the whole batch first. */
int pba_paimon_hash_values(const pba_paimon_values *values, uint64_t *out,
                           size_t out_cap, size_t *n_out);

/* ---- filter operations on hashes --------------------------------------- */

/* The k bit positions of `hash` (i = 1..k order) into out[0..k). */
int pba_paimon_positions(uint64_t hash, size_t num_bytes, int32_t k, int32_t *out);
int pba_paimon_add_hash(uint8_t *bitset, size_t num_bytes, int32_t k, uint64_t hash);
/* 1 when every position of `hash` is set, 0 otherwise, or a negative status. */
int pba_paimon_test_hash(const uint8_t *bitset, size_t num_bytes, int32_t k, uint64_t hash);
int pba_paimon_add_hashes(uint8_t *bitset, size_t num_bytes, int32_t k,
                          const uint64_t *hashes, size_t n);
/* out[i] = 1 when hashes[i] may be in the filter, else 0. */
int pba_paimon_test_hashes(const uint8_t *bitset, size_t num_bytes, int32_t k,
                           const uint64_t *hashes, size_t n, uint8_t *out);

/* ---- filter operations on values ---------------------------------------- */

/* Hash and add every non-null value. The batch is validated before the first
 * bit is set, so a malformed batch leaves the filter unchanged.
 * *n_added (may be NULL) receives the number of values added. */
int pba_paimon_add_values(uint8_t *bitset, size_t num_bytes, int32_t k,
                          const pba_paimon_values *values, size_t *n_added);
/* out[i] for i < values->n: 1 when value i may be in the filter, 0 when it is
 * certainly not. A null answers 1, as Paimon's reader keeps a file for an
 * equality with a null literal. `out_len` must be at least values->n. */
int pba_paimon_test_values(const uint8_t *bitset, size_t num_bytes, int32_t k,
                           const pba_paimon_values *values, uint8_t *out, size_t out_len);

/* ---- serialized form ------------------------------------------------------ */

/* Parse a serialized filter: k (int32 big-endian, read as the unsigned bytes
 * they are) and the bitset that follows, which is buf + 4 for *num_bytes.
 * Returns PBA_PAIMON_ERR_TRUNCATED for fewer than 5 bytes and
 * PBA_PAIMON_ERR_GEOMETRY for k <= 0, k > num_bits, or a bitset too large
 * for Paimon's int bit count. Reads only buf[0..4). */
int pba_paimon_parse_header(const uint8_t *buf, size_t len, int32_t *k, size_t *num_bytes);
/* Write k big-endian and the bitset into out (out_len >= 4 + num_bytes). */
int pba_paimon_serialize(const uint8_t *bitset, size_t num_bytes, int32_t k,
                         uint8_t *out, size_t out_len);

#ifdef __cplusplus
}
#endif

#endif /* PYBLOOM_ASYNC_PAIMON_H */
