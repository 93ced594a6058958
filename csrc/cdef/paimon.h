/* cffi declarations for csrc/include/pybloom_async_paimon.h (Apache Paimon's
 * bloom-filter file index). Keep in step with that header; cffi checks every
 * constant and signature against it when the module is built. */

#define PBA_PAIMON_MAX_BITSET_BYTES 268435455
#define PBA_PAIMON_HEADER_BYTES 4

enum {
    PBA_PAIMON_OK = 0,
    PBA_PAIMON_ERR_ARG = -40,
    PBA_PAIMON_ERR_GEOMETRY = -41,
    PBA_PAIMON_ERR_SIZE = -42,
    PBA_PAIMON_ERR_LENGTH = -43,
    PBA_PAIMON_ERR_OFFSETS = -44,
    PBA_PAIMON_ERR_RANGE = -45,
    PBA_PAIMON_ERR_TRUNCATED = -46
};

enum {
    PBA_PAIMON_KIND_INT8 = 1,
    PBA_PAIMON_KIND_INT16 = 2,
    PBA_PAIMON_KIND_INT32 = 3,
    PBA_PAIMON_KIND_INT64 = 4,
    PBA_PAIMON_KIND_FLOAT32 = 5,
    PBA_PAIMON_KIND_FLOAT64 = 6,
    PBA_PAIMON_KIND_TIMESTAMP = 7,
    PBA_PAIMON_KIND_BYTES = 8,
    PBA_PAIMON_KIND_FIXED = 9
};

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

const char *pba_paimon_strerror(int code);

int pba_paimon_geometry(int64_t items, double fpp, int32_t *num_bits,
                        int32_t *num_hash_functions);
int pba_paimon_check_geometry(size_t num_bytes, int32_t k);

uint64_t pba_paimon_wang64(int64_t key);
uint64_t pba_paimon_xxh64(const void *data, size_t len);
int pba_paimon_count_valid(const pba_paimon_values *values, size_t *n_valid);
int pba_paimon_hash_values(const pba_paimon_values *values, uint64_t *out,
                           size_t out_cap, size_t *n_out);

int pba_paimon_positions(uint64_t hash, size_t num_bytes, int32_t k, int32_t *out);
int pba_paimon_add_hash(uint8_t *bitset, size_t num_bytes, int32_t k, uint64_t hash);
int pba_paimon_test_hash(const uint8_t *bitset, size_t num_bytes, int32_t k, uint64_t hash);
int pba_paimon_add_hashes(uint8_t *bitset, size_t num_bytes, int32_t k,
                          const uint64_t *hashes, size_t n);
int pba_paimon_test_hashes(const uint8_t *bitset, size_t num_bytes, int32_t k,
                           const uint64_t *hashes, size_t n, uint8_t *out);

int pba_paimon_add_values(uint8_t *bitset, size_t num_bytes, int32_t k,
                          const pba_paimon_values *values, size_t *n_added);
int pba_paimon_test_values(const uint8_t *bitset, size_t num_bytes, int32_t k,
                           const pba_paimon_values *values, uint8_t *out, size_t out_len);

int pba_paimon_parse_header(const uint8_t *buf, size_t len, int32_t *k, size_t *num_bytes);
int pba_paimon_serialize(const uint8_t *bitset, size_t num_bytes, int32_t k,
                         uint8_t *out, size_t out_len);
