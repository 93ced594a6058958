/*
 * paimon.c: Apache Paimon's BloomFilter64 and FastHash, byte-compatible.
 *
 * Everything here mirrors Java semantics on purpose: 32-bit wrapping int
 * arithmetic for bit positions, arithmetic right shifts in the integer mix,
 * Java's (int) and Math.round conversions in the sizing. Each rule is stated
 * in testdata/paimon/README.md and checked against its vectors; comments say
 * which Java behaviour a line reproduces.
 */
#include "pybloom_async_paimon.h"

#include <limits.h>
#include <math.h>
#include <string.h>

/* XXH64 inlined from the vendored xxHash; static, so it cannot clash with the
 * copy the SBBF core inlines. */
#define XXH_INLINE_ALL
#define XXH_STATIC_LINKING_ONLY
#include "xxhash.h"

/* Values are hashed this many at a time into a stack buffer, then added or
 * tested: one pass per kind keeps the per-value switch out of the hot loop. */
#define CHUNK 256

const char *pba_paimon_strerror(int code)
{
    switch (code) {
    case PBA_PAIMON_OK: return "ok";
    case PBA_PAIMON_ERR_ARG: return "invalid argument";
    case PBA_PAIMON_ERR_GEOMETRY:
        return "bit count or hash-function count outside what a Paimon BloomFilter64 holds";
    case PBA_PAIMON_ERR_SIZE:
        return "Paimon cannot build this filter: its bit count overflows a Java int";
    case PBA_PAIMON_ERR_LENGTH: return "an array is shorter than its value count requires";
    case PBA_PAIMON_ERR_OFFSETS: return "string offsets are not monotonic or point past the data";
    case PBA_PAIMON_ERR_RANGE: return "timestamp outside Paimon's epoch-millisecond range";
    case PBA_PAIMON_ERR_TRUNCATED: return "serialized filter shorter than 5 bytes";
    default: return "unknown status";
    }
}

/* ---- Java conversions ---------------------------------------------------- */

/* Java's (int) of a double: truncate toward zero, NaN -> 0, saturate. */
static int32_t java_d2i(double x)
{
    if (x != x) return 0;
    if (x >= 2147483647.0) return INT32_MAX;
    if (x <= -2147483648.0) return INT32_MIN;
    return (int32_t)x;
}

/* Java's Math.round(double): floor(x + 1/2) computed exactly (JDK 7+ does not
 * round 0.49999999999999994 up), NaN -> 0, saturating to a long. x - floor(x)
 * is exact for every double, so no intermediate rounding creeps in. */
static int64_t java_round(double x)
{
    double r;
    if (x != x) return 0;
    r = floor(x);
    if (x - r >= 0.5) r += 1.0;
    if (r >= 9223372036854775808.0) return INT64_MAX;
    if (r < -9223372036854775808.0) return INT64_MIN;
    return (int64_t)r;
}

/* Java's (int) of a long keeps the low 32 bits (two's complement). */
static int32_t java_l2i(int64_t v)
{
    uint32_t u = (uint32_t)((uint64_t)v & 0xffffffffu);
    return u <= (uint32_t)INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) + INT32_MIN;
}

/* Wrapping int32 addition / negation, as Java's int arithmetic. */
static int32_t java_iadd(int32_t a, int32_t b)
{
    return java_l2i((int64_t)a + (int64_t)b);
}

int pba_paimon_geometry(int64_t items, double fpp, int32_t *num_bits,
                        int32_t *num_hash_functions)
{
    const double ln2 = log(2.0);
    int32_t nb, bits, rem;
    int64_t k;
    if (num_bits == NULL || num_hash_functions == NULL) return PBA_PAIMON_ERR_ARG;
    if (items < INT32_MIN || items > INT32_MAX) return PBA_PAIMON_ERR_ARG;
    /* `-items` is int negation in Java (wraps at INT_MIN); the product with
     * ln(fpp) is evaluated before the division, as the README records. */
    nb = java_d2i((double)java_l2i(-items) * log(fpp) / (ln2 * ln2));
    /* numBits = nb + (8 - nb % 8): C99's % truncates like Java's. */
    rem = nb % 8;
    bits = java_iadd(nb, 8 - rem);
    /* Java allocates the bit array here: a negative count throws
     * NegativeArraySizeException. A zero count is accepted by Java but the
     * first add divides by it, so no usable filter has it either. */
    if (bits <= 0) return PBA_PAIMON_ERR_SIZE;
    /* (double) numBits / items * ln 2, left to right; items = 0 gives +inf,
     * Math.round saturates, (int) keeps -1, and max(1, .) gives 1. */
    k = java_round((double)bits / (double)items * ln2);
    k = java_l2i(k);
    *num_bits = bits;
    *num_hash_functions = k < 1 ? 1 : (int32_t)k;
    return PBA_PAIMON_OK;
}

int pba_paimon_check_geometry(size_t num_bytes, int32_t k)
{
    if (num_bytes < 1 || num_bytes > (size_t)PBA_PAIMON_MAX_BITSET_BYTES) {
        return PBA_PAIMON_ERR_GEOMETRY;
    }
    /* Paimon's k is round(bits / items * ln 2) <= bits for items >= 1, and 1
     * for items = 0; a larger k only comes from damaged bytes, and bounding it
     * bounds the work per probe by the filter's own size. */
    if (k < 1 || (uint64_t)k > 8u * (uint64_t)num_bytes) return PBA_PAIMON_ERR_GEOMETRY;
    return PBA_PAIMON_OK;
}

/* ---- hashing --------------------------------------------------------------- */

/* Arithmetic right shift of a 64-bit pattern, portable (C99 leaves >> on a
 * negative signed value implementation-defined). 0 < s < 64. */
static inline uint64_t sar64(uint64_t x, unsigned s)
{
    return (x >> s) | ((0u - (x >> 63)) << (64u - s));
}

/* Thomas Wang's 64-bit integer mix; Paimon uses Java's `>>` (arithmetic). */
static inline uint64_t wang64(uint64_t key)
{
    key = ~key + (key << 21);
    key = key ^ sar64(key, 24);
    key = key + (key << 3) + (key << 8);
    key = key ^ sar64(key, 14);
    key = key + (key << 2) + (key << 4);
    key = key ^ sar64(key, 28);
    key = key + (key << 31);
    return key;
}

uint64_t pba_paimon_wang64(int64_t key)
{
    return wang64((uint64_t)key);
}

uint64_t pba_paimon_xxh64(const void *data, size_t len)
{
    return XXH64(data, len, 0);
}

/* Sign-extend an n-bit two's-complement pattern to 64 bits, without relying on
 * implementation-defined signed conversions. */
static inline uint64_t sext32(uint32_t u)
{
    return (uint64_t)u | ((0u - (uint64_t)(u >> 31)) << 32);
}
static inline uint64_t sext16(uint16_t u)
{
    return (uint64_t)u | ((0u - (uint64_t)(u >> 15)) << 16);
}
static inline uint64_t sext8(uint8_t u)
{
    return (uint64_t)u | ((0u - (uint64_t)(u >> 7)) << 8);
}

/* Unaligned little-/native-endian loads: numpy and Arrow buffers are native
 * order; memcpy keeps the access legal at any alignment. */
static inline uint16_t load16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline uint32_t load32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline uint64_t load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Java's Float.floatToIntBits / Double.doubleToLongBits collapse every NaN to
 * one canonical pattern; the hash sees the int32 sign-extended (the float
 * goes through FastHash's int path). */
static inline uint64_t float32_key(uint32_t bits)
{
    if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) bits = 0x7fc00000u;
    return sext32(bits);
}
static inline uint64_t float64_key(uint64_t bits)
{
    if ((bits & UINT64_C(0x7ff0000000000000)) == UINT64_C(0x7ff0000000000000)
        && (bits & UINT64_C(0x000fffffffffffff)) != 0) {
        bits = UINT64_C(0x7ff8000000000000);
    }
    return bits;
}

static inline int64_t floor_div(int64_t a, int64_t b) /* b > 0 */
{
    int64_t q = a / b;
    if (a % b != 0 && a < 0) q -= 1;
    return q;
}

/* Largest |seconds| whose milliseconds still fit a long. */
#define TS_MAX_SECONDS (INT64_MAX / 1000)

/* Paimon's Timestamp holds epoch millis (a long, floor-based) and the
 * nanoseconds within that milli. Precision <= 3 hashes the millis; higher
 * precisions hash millis * 1000 + nanoOfMilli / 1000 in wrapping long
 * arithmetic, exactly as Timestamp.toMicros. Seconds input must be checked
 * beforehand (ts_in_range) so the millis exist. */
static inline uint64_t timestamp_key(int64_t v, int32_t unit, int32_t precision)
{
    int64_t millis, nano_of_milli;
    switch (unit) {
    case 0: millis = v * 1000; nano_of_milli = 0; break;
    case 3: millis = v; nano_of_milli = 0; break;
    case 6:
        millis = floor_div(v, 1000);
        nano_of_milli = (v - millis * 1000) * 1000;
        break;
    default: /* 9 */
        millis = floor_div(v, 1000000);
        nano_of_milli = v - millis * 1000000;
        break;
    }
    if (precision <= 3) return (uint64_t)millis;
    return (uint64_t)millis * 1000u + (uint64_t)(nano_of_milli / 1000);
}

static inline int ts_in_range(int64_t v, int32_t unit)
{
    return unit != 0 || (v <= TS_MAX_SECONDS && v >= -TS_MAX_SECONDS);
}

static inline int is_valid(const pba_paimon_values *v, size_t i)
{
    uint64_t bit;
    if (v->validity == NULL) return 1;
    bit = (uint64_t)v->validity_offset + (uint64_t)i;
    return (v->validity[bit >> 3] >> (bit & 7u)) & 1u;
}

static inline uint64_t load_offset(const pba_paimon_values *v, size_t i)
{
    const uint8_t *p = (const uint8_t *)v->offsets;
    if (v->offsets64) return load64(p + 8 * i);
    return sext32(load32(p + 4 * i));
}

static size_t value_width(const pba_paimon_values *v)
{
    switch (v->kind) {
    case PBA_PAIMON_KIND_INT8: return 1;
    case PBA_PAIMON_KIND_INT16: return 2;
    case PBA_PAIMON_KIND_INT32: return 4;
    case PBA_PAIMON_KIND_FLOAT32: return 4;
    case PBA_PAIMON_KIND_INT64: return 8;
    case PBA_PAIMON_KIND_FLOAT64: return 8;
    case PBA_PAIMON_KIND_TIMESTAMP: return 8;
    case PBA_PAIMON_KIND_FIXED: return v->width > 0 ? (size_t)v->width : 0;
    default: return 0;
    }
}

/* Check every length, offset and range of a batch before any value is read,
 * so the loops below can trust it. */
static int validate(const pba_paimon_values *v)
{
    size_t i;
    if (v == NULL) return PBA_PAIMON_ERR_ARG;
    if (v->validity != NULL && v->n != 0) {
        uint64_t end_bit;
        if (v->validity_offset < 0) return PBA_PAIMON_ERR_ARG;
        if ((uint64_t)v->n > (uint64_t)INT64_MAX) return PBA_PAIMON_ERR_LENGTH;
        /* Both terms are below 2^63, so the sum cannot wrap. */
        end_bit = (uint64_t)v->validity_offset + (uint64_t)v->n;
        if (end_bit / 8u + (end_bit % 8u != 0) > (uint64_t)v->validity_len) {
            return PBA_PAIMON_ERR_LENGTH;
        }
    }
    if (v->kind == PBA_PAIMON_KIND_BYTES) {
        size_t ow = v->offsets64 ? 8u : 4u;
        uint64_t prev;
        if (v->n > SIZE_MAX / ow - 1u) return PBA_PAIMON_ERR_LENGTH;
        if (v->offsets == NULL || v->offsets_len < (v->n + 1u) * ow) return PBA_PAIMON_ERR_LENGTH;
        if (v->data == NULL && v->data_len != 0) return PBA_PAIMON_ERR_ARG;
        /* Offsets are signed in Arrow; a negative one reads as a huge
         * unsigned value and fails the monotonic/bounds test. */
        prev = load_offset(v, 0);
        if (prev > (uint64_t)v->data_len || (prev >> 63) != 0) return PBA_PAIMON_ERR_OFFSETS;
        for (i = 1; i <= v->n; i++) {
            uint64_t cur = load_offset(v, i);
            if (cur < prev || cur > (uint64_t)v->data_len) return PBA_PAIMON_ERR_OFFSETS;
            prev = cur;
        }
        return PBA_PAIMON_OK;
    }
    {
        size_t w = value_width(v);
        if (w == 0) return PBA_PAIMON_ERR_ARG;
        if (v->n != 0 && (v->data == NULL || v->n > SIZE_MAX / w || v->n * w > v->data_len)) {
            return PBA_PAIMON_ERR_LENGTH;
        }
    }
    if (v->kind == PBA_PAIMON_KIND_TIMESTAMP) {
        const uint8_t *p = (const uint8_t *)v->data;
        if (v->ts_unit != 0 && v->ts_unit != 3 && v->ts_unit != 6 && v->ts_unit != 9) {
            return PBA_PAIMON_ERR_ARG;
        }
        if (v->ts_precision < 0 || v->ts_precision > 9) return PBA_PAIMON_ERR_ARG;
        if (v->ts_unit == 0) {
            for (i = 0; i < v->n; i++) {
                if (is_valid(v, i) && !ts_in_range((int64_t)load64(p + 8 * i), 0)) {
                    return PBA_PAIMON_ERR_RANGE;
                }
            }
        }
    }
    return PBA_PAIMON_OK;
}

/* Hashes of rows [start, start + count) into out, nulls included (their
 * slots hold whatever their bytes hash to; callers skip them). The batch has
 * been validated. */
static void hash_chunk(const pba_paimon_values *v, size_t start, size_t count, uint64_t *out)
{
    const uint8_t *p = (const uint8_t *)v->data;
    size_t i;
    switch (v->kind) {
    case PBA_PAIMON_KIND_INT8:
        for (i = 0; i < count; i++) out[i] = wang64(sext8(p[start + i]));
        break;
    case PBA_PAIMON_KIND_INT16:
        for (i = 0; i < count; i++) out[i] = wang64(sext16(load16(p + 2 * (start + i))));
        break;
    case PBA_PAIMON_KIND_INT32:
        for (i = 0; i < count; i++) out[i] = wang64(sext32(load32(p + 4 * (start + i))));
        break;
    case PBA_PAIMON_KIND_INT64:
        for (i = 0; i < count; i++) out[i] = wang64(load64(p + 8 * (start + i)));
        break;
    case PBA_PAIMON_KIND_FLOAT32:
        for (i = 0; i < count; i++) out[i] = wang64(float32_key(load32(p + 4 * (start + i))));
        break;
    case PBA_PAIMON_KIND_FLOAT64:
        for (i = 0; i < count; i++) out[i] = wang64(float64_key(load64(p + 8 * (start + i))));
        break;
    case PBA_PAIMON_KIND_TIMESTAMP:
        for (i = 0; i < count; i++) {
            int64_t t = (int64_t)load64(p + 8 * (start + i));
            /* A null slot may hold any bits: hash 0 rather than convert it. */
            if (v->ts_unit == 0 && !ts_in_range(t, 0)) t = 0;
            out[i] = wang64(timestamp_key(t, v->ts_unit, v->ts_precision));
        }
        break;
    case PBA_PAIMON_KIND_FIXED: {
        size_t w = (size_t)v->width;
        for (i = 0; i < count; i++) out[i] = XXH64(p + w * (start + i), w, 0);
        break;
    }
    default: /* PBA_PAIMON_KIND_BYTES */
        for (i = 0; i < count; i++) {
            uint64_t a = load_offset(v, start + i);
            uint64_t b = load_offset(v, start + i + 1);
            out[i] = XXH64(p == NULL ? NULL : p + a, (size_t)(b - a), 0);
        }
        break;
    }
}

int pba_paimon_count_valid(const pba_paimon_values *values, size_t *n_valid)
{
    size_t i, count = 0;
    int rc;
    if (n_valid == NULL) return PBA_PAIMON_ERR_ARG;
    rc = validate(values);
    if (rc != PBA_PAIMON_OK) return rc;
    for (i = 0; i < values->n; i++) count += (size_t)is_valid(values, i);
    *n_valid = count;
    return PBA_PAIMON_OK;
}

int pba_paimon_hash_values(const pba_paimon_values *values, uint64_t *out,
                           size_t out_cap, size_t *n_out)
{
    uint64_t buf[CHUNK];
    size_t start, i, m = 0;
    int rc;
    if (n_out == NULL) return PBA_PAIMON_ERR_ARG;
    rc = validate(values);
    if (rc != PBA_PAIMON_OK) return rc;
    for (start = 0; start < values->n; start += CHUNK) {
        size_t count = values->n - start < CHUNK ? values->n - start : CHUNK;
        hash_chunk(values, start, count, buf);
        for (i = 0; i < count; i++) {
            if (!is_valid(values, start + i)) continue;
            if (m >= out_cap || out == NULL) return PBA_PAIMON_ERR_LENGTH;
            out[m++] = buf[i];
        }
    }
    *n_out = m;
    return PBA_PAIMON_OK;
}

/* ---- bit positions --------------------------------------------------------- */

/*
 * c % num_bits without a division instruction. Bit positions are the hot
 * loop (k per value) and a 32-bit divide is several times slower than a
 * multiply; the dividend is always below 2^31 (a non-negative Java int).
 * Granlund & Montgomery, "Division by invariant integers using
 * multiplication" (PLDI 1994), Theorem 4.2 with N = 31: for l = ceil(log2 d)
 * and m = ceil(2^(31+l) / d), floor(a / d) = floor(a * m / 2^(31+l)) for
 * every 0 <= a < 2^31. m <= 2^32 + 1, so a * m stays below 2^64.
 */
typedef struct {
    uint64_t m;
    unsigned shift;
    uint32_t d;
} fastmod31;

static fastmod31 fastmod31_init(uint32_t d) /* 1 <= d < 2^31 */
{
    fastmod31 f;
    unsigned l = 0;
    uint64_t pow;
    while (((uint64_t)1 << l) < d) l++;
    f.shift = 31u + l;
    pow = (uint64_t)1 << f.shift;
    f.m = pow / d + (pow % d != 0);
    f.d = d;
    return f;
}

static inline uint32_t fastmod31_mod(uint32_t a, fastmod31 f)
{
    uint32_t q = (uint32_t)(((uint64_t)a * f.m) >> f.shift);
    return a - q * f.d;
}

/*
 * Kirsch-Mitzenmacher double hashing exactly as Paimon's BloomFilter64:
 * h1 = low int32, h2 = high int32, c_i = h1 + i*h2 (i = 1..k) in wrapping int
 * arithmetic; a negative c becomes ~c (not -c); the position is c % numBits.
 * Unsigned 32-bit arithmetic gives the same bit patterns portably: the top
 * bit is the sign, and ~ is the same operation on both. XOR with the
 * broadcast sign bit complements negatives without a (50% mispredicted)
 * branch.
 */
#define FOR_EACH_POSITION(hash, k, fm, pos, body)                    \
    do {                                                             \
        uint32_t h1_ = (uint32_t)(hash);                             \
        uint32_t h2_ = (uint32_t)((hash) >> 32);                     \
        uint32_t c_ = h1_;                                           \
        int32_t i_;                                                  \
        for (i_ = 1; i_ <= (k); i_++) {                              \
            uint32_t pos;                                            \
            c_ += h2_;                                               \
            pos = fastmod31_mod(c_ ^ (0u - (c_ >> 31)), (fm));       \
            body                                                     \
        }                                                            \
    } while (0)

static inline void add_one(uint8_t *bitset, fastmod31 fm, int32_t k, uint64_t hash)
{
    FOR_EACH_POSITION(hash, k, fm, pos, {
        bitset[pos >> 3] |= (uint8_t)(1u << (pos & 7u));
    });
}

/* Reads all k bits and ANDs them instead of returning at the first clear one:
 * for an absent value the first clear bit sits at a random probe, so the
 * early exit costs a mispredicted branch per value (measured here: about 50%
 * slower on absent keys, which are what pruning mostly probes). */
static inline int test_one(const uint8_t *bitset, fastmod31 fm, int32_t k, uint64_t hash)
{
    unsigned all = 1u;
    FOR_EACH_POSITION(hash, k, fm, pos, {
        all &= (unsigned)(bitset[pos >> 3] >> (pos & 7u));
    });
    return (int)(all & 1u);
}

int pba_paimon_positions(uint64_t hash, size_t num_bytes, int32_t k, int32_t *out)
{
    int rc = pba_paimon_check_geometry(num_bytes, k);
    size_t j = 0;
    if (rc != PBA_PAIMON_OK) return rc;
    if (out == NULL) return PBA_PAIMON_ERR_ARG;
    FOR_EACH_POSITION(hash, k, fastmod31_init((uint32_t)(num_bytes * 8u)), pos, {
        out[j++] = (int32_t)pos;
    });
    return PBA_PAIMON_OK;
}

int pba_paimon_add_hash(uint8_t *bitset, size_t num_bytes, int32_t k, uint64_t hash)
{
    int rc = pba_paimon_check_geometry(num_bytes, k);
    if (rc != PBA_PAIMON_OK) return rc;
    if (bitset == NULL) return PBA_PAIMON_ERR_ARG;
    add_one(bitset, fastmod31_init((uint32_t)(num_bytes * 8u)), k, hash);
    return PBA_PAIMON_OK;
}

int pba_paimon_test_hash(const uint8_t *bitset, size_t num_bytes, int32_t k, uint64_t hash)
{
    int rc = pba_paimon_check_geometry(num_bytes, k);
    if (rc != PBA_PAIMON_OK) return rc;
    if (bitset == NULL) return PBA_PAIMON_ERR_ARG;
    return test_one(bitset, fastmod31_init((uint32_t)(num_bytes * 8u)), k, hash);
}

int pba_paimon_add_hashes(uint8_t *bitset, size_t num_bytes, int32_t k,
                          const uint64_t *hashes, size_t n)
{
    fastmod31 fm;
    size_t i;
    int rc = pba_paimon_check_geometry(num_bytes, k);
    if (rc != PBA_PAIMON_OK) return rc;
    if (bitset == NULL || (hashes == NULL && n != 0)) return PBA_PAIMON_ERR_ARG;
    fm = fastmod31_init((uint32_t)(num_bytes * 8u));
    for (i = 0; i < n; i++) add_one(bitset, fm, k, hashes[i]);
    return PBA_PAIMON_OK;
}

int pba_paimon_test_hashes(const uint8_t *bitset, size_t num_bytes, int32_t k,
                           const uint64_t *hashes, size_t n, uint8_t *out)
{
    fastmod31 fm;
    size_t i;
    int rc = pba_paimon_check_geometry(num_bytes, k);
    if (rc != PBA_PAIMON_OK) return rc;
    if (bitset == NULL || ((hashes == NULL || out == NULL) && n != 0)) return PBA_PAIMON_ERR_ARG;
    fm = fastmod31_init((uint32_t)(num_bytes * 8u));
    for (i = 0; i < n; i++) out[i] = (uint8_t)test_one(bitset, fm, k, hashes[i]);
    return PBA_PAIMON_OK;
}

int pba_paimon_add_values(uint8_t *bitset, size_t num_bytes, int32_t k,
                          const pba_paimon_values *values, size_t *n_added)
{
    uint64_t buf[CHUNK];
    fastmod31 fm;
    size_t start, i, added = 0;
    int rc = pba_paimon_check_geometry(num_bytes, k);
    if (rc != PBA_PAIMON_OK) return rc;
    if (bitset == NULL) return PBA_PAIMON_ERR_ARG;
    rc = validate(values);
    if (rc != PBA_PAIMON_OK) return rc;
    fm = fastmod31_init((uint32_t)(num_bytes * 8u));
    for (start = 0; start < values->n; start += CHUNK) {
        size_t count = values->n - start < CHUNK ? values->n - start : CHUNK;
        hash_chunk(values, start, count, buf);
        if (values->validity == NULL) {
            for (i = 0; i < count; i++) add_one(bitset, fm, k, buf[i]);
            added += count;
        } else {
            for (i = 0; i < count; i++) {
                if (!is_valid(values, start + i)) continue;
                add_one(bitset, fm, k, buf[i]);
                added++;
            }
        }
    }
    if (n_added != NULL) *n_added = added;
    return PBA_PAIMON_OK;
}

int pba_paimon_test_values(const uint8_t *bitset, size_t num_bytes, int32_t k,
                           const pba_paimon_values *values, uint8_t *out, size_t out_len)
{
    uint64_t buf[CHUNK];
    fastmod31 fm;
    size_t start, i;
    int rc = pba_paimon_check_geometry(num_bytes, k);
    if (rc != PBA_PAIMON_OK) return rc;
    if (bitset == NULL) return PBA_PAIMON_ERR_ARG;
    rc = validate(values);
    if (rc != PBA_PAIMON_OK) return rc;
    if (out_len < values->n || (out == NULL && values->n != 0)) return PBA_PAIMON_ERR_LENGTH;
    fm = fastmod31_init((uint32_t)(num_bytes * 8u));
    for (start = 0; start < values->n; start += CHUNK) {
        size_t count = values->n - start < CHUNK ? values->n - start : CHUNK;
        hash_chunk(values, start, count, buf);
        for (i = 0; i < count; i++) {
            out[start + i] = is_valid(values, start + i)
                                 ? (uint8_t)test_one(bitset, fm, k, buf[i])
                                 : 1u;
        }
    }
    return PBA_PAIMON_OK;
}

/* ---- serialized form -------------------------------------------------------- */

int pba_paimon_parse_header(const uint8_t *buf, size_t len, int32_t *k, size_t *num_bytes)
{
    uint32_t raw;
    int32_t kk;
    size_t nbytes;
    int rc;
    if (buf == NULL || k == NULL || num_bytes == NULL) return PBA_PAIMON_ERR_ARG;
    if (len < PBA_PAIMON_HEADER_BYTES + 1u) return PBA_PAIMON_ERR_TRUNCATED;
    raw = ((uint32_t)buf[0] << 24) | ((uint32_t)buf[1] << 16) | ((uint32_t)buf[2] << 8)
          | (uint32_t)buf[3];
    /* k is stored as a big-endian int. Paimon's own reader reassembles it from
     * signed bytes, which turns any k >= 128 negative and makes it keep every
     * file; the writer used the true k, so reading it unsigned is exact. */
    if (raw > (uint32_t)INT32_MAX) return PBA_PAIMON_ERR_GEOMETRY;
    kk = (int32_t)raw;
    nbytes = len - PBA_PAIMON_HEADER_BYTES;
    rc = pba_paimon_check_geometry(nbytes, kk);
    if (rc != PBA_PAIMON_OK) return rc;
    *k = kk;
    *num_bytes = nbytes;
    return PBA_PAIMON_OK;
}

int pba_paimon_serialize(const uint8_t *bitset, size_t num_bytes, int32_t k,
                         uint8_t *out, size_t out_len)
{
    int rc = pba_paimon_check_geometry(num_bytes, k);
    uint32_t u;
    if (rc != PBA_PAIMON_OK) return rc;
    if (bitset == NULL || out == NULL) return PBA_PAIMON_ERR_ARG;
    if (out_len < num_bytes + PBA_PAIMON_HEADER_BYTES) return PBA_PAIMON_ERR_LENGTH;
    u = (uint32_t)k;
    out[0] = (uint8_t)(u >> 24);
    out[1] = (uint8_t)(u >> 16);
    out[2] = (uint8_t)(u >> 8);
    out[3] = (uint8_t)u;
    memcpy(out + PBA_PAIMON_HEADER_BYTES, bitset, num_bytes);
    return PBA_PAIMON_OK;
}
