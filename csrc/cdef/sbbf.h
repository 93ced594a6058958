/* cffi declarations of csrc/include/pybloom_async.h (cdef syntax). */
#define PBA_BLOCK_BYTES 32
#define PBA_SBBF_MIN_BYTES 32
#define PBA_SBBF_DEFAULT_MAX_BYTES 134217728
#define PBA_HEADER_MAX_ENCODED 32

#define PBA_OK 0
#define PBA_ERR_ARG -1
#define PBA_ERR_NOMEM -2
#define PBA_ERR_SIZE -3
#define PBA_ERR_SIZE_MISMATCH -4
#define PBA_ERR_OFFSETS -5
#define PBA_ERR_HDR_TRUNCATED -10
#define PBA_ERR_HDR_MALFORMED -11
#define PBA_ERR_HDR_MISSING -12
#define PBA_ERR_HDR_ALGORITHM -13
#define PBA_ERR_HDR_HASH -14
#define PBA_ERR_HDR_COMPRESSION -15
#define PBA_ERR_HDR_NUMBYTES -16

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

typedef struct {
    int64_t num_bytes;
    size_t header_len;
} pba_bloom_header;

const char *pba_simd_backend(void);
int pba_avx2_available(void);
int pba_set_backend(const char *name);
const char *pba_strerror(int code);

int pba_sbbf_valid_num_bytes(uint64_t num_bytes, uint64_t max_bytes);
uint64_t pba_sbbf_optimal_num_bytes(uint64_t ndv, double fpp, uint64_t max_bytes);
double pba_sbbf_expected_fpp(uint64_t num_bytes, double ndv);

uint8_t *pba_sbbf_alloc(size_t num_bytes);
void pba_sbbf_free(uint8_t *bitset);

void pba_sbbf_insert_hash(uint8_t *bitset, size_t num_bytes, uint64_t hash);
int pba_sbbf_check_hash(const uint8_t *bitset, size_t num_bytes, uint64_t hash);
void pba_sbbf_insert_hashes(uint8_t *bitset, size_t num_bytes, const uint64_t *hashes, size_t n);
void pba_sbbf_check_hashes(const uint8_t *bitset, size_t num_bytes, const uint64_t *hashes,
                           size_t n, uint8_t *out);
size_t pba_sbbf_count_hashes(const uint8_t *bitset, size_t num_bytes, const uint64_t *hashes,
                             size_t n);

uint64_t pba_xxh64(const void *data, size_t len, uint64_t seed);
size_t pba_column_count_valid(const pba_column *col);
int pba_hash_column(const pba_column *col, uint64_t *out, size_t *n_out);
int pba_sbbf_insert_column(uint8_t *bitset, size_t num_bytes, const pba_column *col);
int pba_sbbf_check_column(const uint8_t *bitset, size_t num_bytes, const pba_column *col,
                          uint8_t *out);

void pba_sbbf_clear(uint8_t *bitset, size_t num_bytes);
uint64_t pba_sbbf_popcount(const uint8_t *bitset, size_t num_bytes);
void pba_sbbf_union(uint8_t *dst, const uint8_t *src, size_t num_bytes);
size_t pba_sbbf_fold(uint8_t *bitset, size_t num_bytes, unsigned times);
unsigned pba_sbbf_fold_steps(size_t num_bytes, double ndv, double fpp);

uint32_t pba_sbbf_block_index(uint64_t hash, uint32_t num_blocks);
int64_t pba_sbbf_check_stripe(const uint8_t *stripe, size_t stripe_len, size_t num_files,
                              uint64_t hash, uint8_t *out_may);
int pba_sbbf_scatter_blocks(const uint8_t *bitset, size_t num_bytes, uint8_t *out,
                            size_t num_files, size_t file_index);
int pba_sbbf_gather_blocks(const uint8_t *index, size_t num_bytes, size_t num_files,
                           size_t file_index, uint8_t *bitset);

int pba_bloom_header_encode(uint32_t num_bytes, uint8_t out[32]);
int pba_bloom_header_decode(const uint8_t *buf, size_t len, uint64_t max_bytes,
                            pba_bloom_header *out);
