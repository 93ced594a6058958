/*
 * pybloom_async_footer.h: the footer scanner, what pruning reads of a Parquet footer.
 *
 * A Parquet file's FileMetaData is thrift compact bytes. Pruning needs of it, per row
 * group, the row count and, for the few columns a predicate names, each chunk's
 * statistics and where its Bloom filter lies. pba_footer_scan_run() reads exactly that in one
 * pass, with no allocation and no Python: what it reports is written into the caller's
 * arrays, and the statistics' bytes are given as offsets into the input buffer.
 *
 * Every column chunk of the footer, wanted or not, is checked as the package's footer
 * decoder checks it: it has meta_data and no crypto_metadata, its type, path_in_schema
 * and num_values are present, its type and path are those of the schema leaf at its
 * position, num_values is not negative, and each row group has one chunk per leaf. The
 * decoding follows thrift's own compact decoder (thrift >= 0.25): a field whose wire type
 * is not the spec's is skipped as unknown, an integer varint is at most 3, 5 or 10 bytes
 * for i16, i32 and i64 and keeps the bits of its width, a non-empty list of the wrong
 * element type is malformed, nesting stops at depth 64.
 *
 * The input is untrusted: every read is bounded by `len`, every length by the bytes
 * left, recursion by the depth limit; a malformed footer gives a negative status, never
 * a read outside the buffer, and nothing is allocated. A successful scan's values may
 * still be anything the file says (offsets past the file, for instance): the caller
 * checks them as it would the decoder's.
 *
 * Thread safety: no state; concurrent calls on different outputs are safe.
 */
#ifndef PYBLOOM_ASYNC_FOOTER_H
#define PYBLOOM_ASYNC_FOOTER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes of the footer scanner: 0 (PBA_OK) or one of these, from -60. */
enum {
    PBA_FOOTER_OK = 0,
    PBA_FOOTER_ERR_ARG = -60,       /* null pointer, a wanted leaf out of order or range */
    PBA_FOOTER_ERR_TRUNCATED = -61, /* the footer ends in the middle of a value */
    PBA_FOOTER_ERR_MALFORMED = -62, /* not valid thrift compact for a FileMetaData */
    PBA_FOOTER_ERR_DEPTH = -63,     /* structures nested deeper than 64 */
    PBA_FOOTER_ERR_CAPACITY = -64,  /* more row groups than the output arrays hold */
    PBA_FOOTER_ERR_MISSING = -65,   /* a required field is absent */
    PBA_FOOTER_ERR_ENCRYPTED = -66, /* the file or a column chunk is encrypted */
    PBA_FOOTER_ERR_SCHEMA = -67,    /* chunks do not match the schema's leaves */
    PBA_FOOTER_ERR_NEGATIVE = -68   /* num_values is negative */
};

/* Which fields of a chunk the footer holds (pba_footer_chunk.present). */
#define PBA_FC_TYPE 0x1u
#define PBA_FC_CODEC 0x2u
#define PBA_FC_NUM_VALUES 0x4u
#define PBA_FC_TOTAL_COMPRESSED_SIZE 0x8u
#define PBA_FC_DATA_PAGE_OFFSET 0x10u
#define PBA_FC_DICTIONARY_PAGE_OFFSET 0x20u
#define PBA_FC_BLOOM_FILTER_OFFSET 0x40u
#define PBA_FC_BLOOM_FILTER_LENGTH 0x80u
#define PBA_FC_OFFSET_INDEX_OFFSET 0x100u
#define PBA_FC_OFFSET_INDEX_LENGTH 0x200u
#define PBA_FC_COLUMN_INDEX_OFFSET 0x400u
#define PBA_FC_COLUMN_INDEX_LENGTH 0x800u
#define PBA_FC_STATISTICS 0x1000u
#define PBA_FC_MAX 0x2000u
#define PBA_FC_MIN 0x4000u
#define PBA_FC_NULL_COUNT 0x8000u
#define PBA_FC_DISTINCT_COUNT 0x10000u
#define PBA_FC_MAX_VALUE 0x20000u
#define PBA_FC_MIN_VALUE 0x40000u
#define PBA_FC_IS_MAX_VALUE_EXACT 0x80000u
#define PBA_FC_IS_MIN_VALUE_EXACT 0x100000u
#define PBA_FC_NAN_COUNT 0x200000u
#define PBA_FC_TOTAL_UNCOMPRESSED_SIZE 0x400000u
#define PBA_FC_ENCODINGS 0x800000u  /* ColumnMetaData.encodings: a list of i32 (not read) */
#define PBA_FC_FILE_PATH 0x1000000u /* ColumnChunk.file_path: a string (not read) */

/* One wanted column chunk. A field is meaningful only when its PBA_FC_* bit is set in
 * `present`. Byte strings (the statistics' min/max) are `*_off`, `*_len` in the input
 * buffer. */
typedef struct {
    uint32_t present;
    int32_t physical_type;       /* ColumnMetaData.type */
    int32_t codec;               /* ColumnMetaData.codec */
    int32_t bloom_filter_length; /* ColumnMetaData.bloom_filter_length */
    int32_t offset_index_length; /* ColumnChunk.offset_index_length */
    int32_t column_index_length; /* ColumnChunk.column_index_length */
    int64_t num_values;
    int64_t total_compressed_size;
    int64_t data_page_offset;
    int64_t dictionary_page_offset;
    int64_t bloom_filter_offset;
    int64_t offset_index_offset; /* ColumnChunk.offset_index_offset */
    int64_t column_index_offset; /* ColumnChunk.column_index_offset */
    int64_t null_count;          /* Statistics.* from here on */
    int64_t distinct_count;
    int64_t nan_count;
    uint64_t max_off, max_len;             /* the deprecated max and min */
    uint64_t min_off, min_len;
    uint64_t max_value_off, max_value_len; /* max_value and min_value */
    uint64_t min_value_off, min_value_len;
    int32_t is_max_value_exact; /* 0 or 1 */
    int32_t is_min_value_exact;
    int64_t total_uncompressed_size; /* ColumnMetaData.total_uncompressed_size */
} pba_footer_chunk;

/* One row group. */
typedef struct {
    int64_t num_rows;     /* RowGroup.num_rows */
    int32_t has_num_rows; /* 1 when the footer holds it */
    int32_t num_columns;  /* chunks in RowGroup.columns */
} pba_footer_group;

/*
 * The inputs and outputs of one scan.
 *
 * In: the schema's leaves (n_leaves of them, from the caller's decode of the schema):
 * `leaf_types[i]` is leaf i's physical type, and leaf_paths[leaf_path_offsets[i] ..
 * leaf_path_offsets[i + 1]) its path, each name as a 4-byte little-endian length then
 * its bytes (leaf_path_offsets has n_leaves + 1 entries, ascending, within
 * leaf_paths_len). The leaves wanted: n_wanted distinct leaf indexes in ascending order.
 * The outputs: `groups` has room for groups_cap row groups and `chunks` for
 * groups_cap * n_wanted chunks; row group g's k-th wanted chunk is
 * chunks[g * n_wanted + k].
 *
 * Out: n_groups, the row groups the footer holds (also on PBA_FOOTER_ERR_CAPACITY, so a
 * first call with groups_cap 0 tells how many), schema_elements and schema_leaves (typed
 * elements past the root without children: the schema's leaf count, for the caller to
 * compare with its own), and on a chunk error fail_group / fail_column, the chunk's place
 * (-1 when the error is not a chunk's). Where the schema's and the key/value metadata's
 * bytes lie in buf (the last of each field, as thrift keeps the last), and whether the
 * head holds every field the package's decoder requires (head_complete): what lets a
 * caller that decoded one footer know another of the same schema without decoding it.
 */
typedef struct {
    const int32_t *leaf_types;
    const uint8_t *leaf_paths;
    size_t leaf_paths_len;
    const uint64_t *leaf_path_offsets;
    size_t n_leaves;
    const uint32_t *wanted;
    size_t n_wanted;
    pba_footer_group *groups;
    pba_footer_chunk *chunks;
    size_t groups_cap;
    size_t n_groups;
    size_t schema_elements;
    size_t schema_leaves;
    int64_t fail_group;
    int64_t fail_column;
    uint64_t schema_off, schema_len;         /* FileMetaData.schema's bytes (its list) */
    uint64_t key_values_off, key_values_len; /* key_value_metadata's list; 0, 0: none */
    int32_t head_complete; /* 1: version, num_rows >= 0 and every row group's num_rows >= 0
                              and total_byte_size are present, and a schema */
} pba_footer_scan;

/* Scan the FileMetaData in buf[0..len) (bytes after its end are ignored). Returns
 * PBA_FOOTER_OK or a negative PBA_FOOTER_ERR_*. Reads nothing outside buf, writes only
 * the outputs, allocates nothing. */
int pba_footer_scan_run(const uint8_t *buf, size_t len, pba_footer_scan *scan);

/* Where the FileMetaData in buf[0..len) holds its schema: *off and *span are the bytes of
 * its last `schema` field of the list type (as thrift keeps the last), 0 and 0 when it has
 * none. Nothing else is read, but every field is walked to the struct's end, bounded as
 * the scanner is, and a non-empty schema list whose elements are not structs is
 * malformed, as thrift's decoder has it. Two footers whose schema bytes are equal have
 * equal schemas: what lets a caller that decoded one footer's schema know another's
 * without decoding it. Returns PBA_FOOTER_OK or a negative PBA_FOOTER_ERR_*; reads
 * nothing outside buf, allocates nothing. */
int pba_footer_schema_span(const uint8_t *buf, size_t len, uint64_t *off, uint64_t *span);

/* Human-readable text for a PBA_FOOTER_* status. */
const char *pba_footer_strerror(int code);

/* ---- the equality leaves decided in C ----------------------------------------------
 *
 * Pruning's leaf ladder (pybloom_async/pruning/evaluate.py) decides a plain equality
 * (`=`, `<=>`, `IN`) in a row group in two steps: the chunk's null count and min/max
 * statistics first, then its Bloom filter for the keys the statistics leave. These two
 * calls take exactly those steps for every row group of a file at once:
 *
 *   pba_decide_equalities(): per (row group, leaf), from the scanned chunk records, an
 *   all-null chunk, keys outside the min/max, or the span [lo, hi) of the sorted keys
 *   left to the filter, with where the chunk's filter lies;
 *
 *   pba_probe_filters(): per probe, whether a filter may hold any of its hashes, reading
 *   from an open file only the filter's header and the 32-byte blocks the hashes
 *   select (the whole bitset when that is fewer reads).
 *
 * Anything outside the usual shape (statistics of another width, a header that does not
 * agree with the filter's recorded length, a short read) is answered UNSURE, never
 * guessed: the caller then decides the whole file with the Python evaluator, which names
 * the reason. Inputs are untrusted: every statistics offset is checked against the footer
 * buffer, every filter read against the filter's recorded length, every allocation
 * bounded by max_filter_bytes.
 */

/* How a leaf's keys and its column's statistics compare (pruning/literals.sort_kind). */
#define PBA_KEY_INT 1   /* little-endian two's complement of `width` bytes (4 or 8) */
#define PBA_KEY_UINT 2  /* little-endian unsigned of `width` bytes (4 or 8) */
#define PBA_KEY_FLOAT 3 /* IEEE 754 binary32 (width 4) or binary64 (width 8) */
#define PBA_KEY_BYTES 4 /* unsigned lexicographic bytes, any length */

/* One equality leaf bound to a file's column. */
typedef struct {
    int32_t slot;          /* the leaf's chunk among a row group's wanted chunks */
    int32_t kind;          /* PBA_KEY_* */
    int32_t width;         /* 4 or 8 for numbers, 0 for bytes */
    int32_t nulls_exclude; /* 1: an all-null chunk holds no match (no repetition) */
    size_t n_keys;         /* at least 1 */
    const uint8_t *keys;   /* the keys, PLAIN-encoded, sorted in the kind's order */
    const uint64_t *key_offsets; /* n_keys + 1 ascending offsets into keys */
} pba_eq_leaf;

/* What decides a (row group, leaf) before its filter. */
#define PBA_EQ_SPAN 0   /* the filter decides keys [lo, hi) (all keys: no statistics) */
#define PBA_EQ_NULLS 1  /* excluded: every value of the chunk is null */
#define PBA_EQ_STATS 2  /* excluded: no key lies inside the min/max statistics */
#define PBA_EQ_UNSURE 3 /* statistics of an unusual shape: the Python evaluator decides */

/* One (row group, leaf) decided from the statistics. filter_offset and filter_length are
 * the chunk's Bloom filter's, -1 when the footer does not record them. */
typedef struct {
    int32_t code; /* PBA_EQ_* */
    uint32_t lo, hi;
    int64_t filter_offset;
    int64_t filter_length;
} pba_eq_outcome;

/* Decide every leaf in every row group: out[g * n_leaves + i] for row group g and leaf i.
 * chunks are the scanner's records over buf[0..len) (n_groups * n_wanted of them).
 * Returns PBA_OK, or PBA_ERR_ARG (a null pointer, a slot or kind out of range, key
 * offsets out of order). Reads nothing outside buf, allocates nothing. */
int pba_decide_equalities(const uint8_t *buf, size_t len, const pba_footer_chunk *chunks,
                          size_t n_groups, size_t n_wanted, const pba_eq_leaf *leaves,
                          size_t n_leaves, pba_eq_outcome *out);

/* One range leaf (`<`, `<=`, `>`, `>=`, BETWEEN) bound to a file's column, decided from the
 * statistics as pruning/bounds.py decides it: NULLS when every value of the chunk is null
 * (and nulls_exclude), else TYPED when the caller found that the column's type holds no
 * value of the range (typed_excluded), else STATS when the min/max statistics leave no
 * value in it, else MAY. The ends are the range's, in the kind's order: a little-endian
 * int64, uint64 or binary64 (8 bytes, whatever the column's width) or the bytes. */
typedef struct {
    int32_t slot;          /* the leaf's chunk among a row group's wanted chunks */
    int32_t kind;          /* PBA_KEY_* */
    int32_t width;         /* the column's width: 4 or 8 for numbers, 0 for bytes */
    int32_t nulls_exclude; /* 1: an all-null chunk holds no match (no repetition) */
    int32_t typed_excluded;
    int32_t has_low, low_open, has_high, high_open;
    const uint8_t *low, *high;
    size_t low_len, high_len;
} pba_range_leaf;

#define PBA_RANGE_MAY 0
#define PBA_RANGE_NULLS 1
#define PBA_RANGE_STATS 2
#define PBA_RANGE_TYPED 3
#define PBA_RANGE_UNSURE 4 /* statistics of an unusual shape (another width) */

/* Decide every range leaf in every row group: out[g * n_leaves + i], a PBA_RANGE_* code.
 * As pba_decide_equalities: chunks are the scanner's records over buf[0..len). Returns
 * PBA_OK or PBA_ERR_ARG (a null pointer, a slot, kind or width out of range, an end of the
 * wrong length). Reads nothing outside buf, allocates nothing. */
int pba_decide_ranges(const uint8_t *buf, size_t len, const pba_footer_chunk *chunks,
                      size_t n_groups, size_t n_wanted, const pba_range_leaf *leaves,
                      size_t n_leaves, int32_t *out);

/* One filter asked about some hashes. */
typedef struct {
    int64_t offset; /* where the serialized filter (header, then bitset) starts */
    int64_t length; /* its recorded length, header included */
    const uint64_t *hashes;
    size_t n_hashes;
    const uint8_t *held; /* NULL, or the `length` bytes at offset, read already: no read */
    uint8_t *may; /* NULL, or n_hashes bytes: may[k] set to 1 when hash k may be in the
                     filter (every hash is then checked; the others are left as they are) */
} pba_probe;

/* What a probe found. */
#define PBA_PROBE_ABSENT 0  /* no hash may be in the filter */
#define PBA_PROBE_MAY 1     /* some hash may be in it */
#define PBA_PROBE_UNSURE 2  /* the header or the reads were not as recorded: ask Python */

/* Probe filters of the file open as fd, reading with pread: out[i] for probes[i]. A
 * filter is used only when it lies in [4, limit) (limit: where the footer starts), its
 * length is within [47, max_serialized], its header decodes (numBytes a power of two in
 * [32, max_filter_bytes]), takes at most max_header_bytes and announces exactly the
 * recorded length; else UNSURE. A probe whose bytes are `held` reads nothing (fd is not
 * used for it). *requests and *bytes_read count the reads made.
 * Returns PBA_OK, PBA_ERR_ARG (a null pointer) or PBA_ERR_NOMEM; a failed read is an
 * UNSURE probe, not an error. Unsupported where the system has no pread: every probe
 * is UNSURE. */
int pba_probe_filters(int fd, const pba_probe *probes, size_t n, int64_t limit,
                      uint64_t max_serialized, uint64_t max_filter_bytes,
                      uint64_t max_header_bytes, int32_t *out, uint64_t *requests,
                      uint64_t *bytes_read);

/* ---- a local file decided in one call ------------------------------------------------
 *
 * pba_file_pass() takes a local file's whole pruning in one call when its footer's schema
 * is one the caller has bound already (from an earlier file of the same schema, decoded
 * the usual way): it opens the file, reads its last `suffix` bytes in one read, checks
 * the trailer as the package's reader does, scans the footer, decides every equality leaf
 * from the statistics (pba_decide_equalities), the AND and OR above them, probes the
 * filters of the row groups still undecided (pba_probe_filters), and closes the file.
 * That is the Python evaluator's round 1 and round 2 (pybloom_async/pruning/native.py),
 * step for step; the caller turns the codes into its verdicts and their reasons.
 *
 * Whatever is not that usual shape is not decided here: the file does not open or is not
 * a regular file, its footer is not wholly within the suffix, its head lacks a field the
 * decoder requires, the scanner refuses it, a statistic or a filter is UNSURE, some row
 * groups' filters are recorded and others not. The answer is then ASIDE (UNBOUND when
 * only the schema is unknown), and the caller decides the file the usual way, which
 * names the reason. The file is untrusted as everywhere: reads are bounded by the suffix
 * and the filters' checked lengths, the outputs by the caller's capacities.
 */

/* The predicate above the leaves, in postfix: each step pushes or combines. */
#define PBA_PASS_LEAF 1 /* push equality leaf `arg`'s outcome */
#define PBA_PASS_KEEP 2 /* push "may match" (a leaf the file's columns decide: never excludes) */
#define PBA_PASS_AND 3  /* pop `arg` (>= 1) outcomes, push: excluded when any is */
#define PBA_PASS_OR 4   /* pop `arg` (>= 1) outcomes, push: excluded when all are */
#define PBA_PASS_RANGE 5 /* push range leaf `arg`'s outcome */

typedef struct {
    int32_t op;
    int32_t arg;
} pba_pass_step;

/* What files of one schema are decided with. */
typedef struct {
    const uint8_t *schema; /* FileMetaData.schema's bytes (pba_footer_scan.schema_off/len) */
    size_t schema_len;
    const uint8_t *key_values; /* and key_value_metadata's: compared, not required */
    size_t key_values_len;
    pba_footer_scan scan;      /* its inputs: the schema's leaves and the wanted chunks */
    const pba_eq_leaf *leaves; /* the equality leaves (slots into scan.wanted) */
    size_t n_eq;
    const uint64_t *const *hashes; /* per equality leaf, its keys' hashes */
    const size_t *n_hashes;
    const pba_range_leaf *ranges; /* the range leaves (slots into scan.wanted) */
    size_t n_ranges;
    const pba_pass_step *steps; /* the predicate, postfix, at most PBA_PASS_MAX_STEPS */
    size_t n_steps;
    /* For pba_file_pass_files: per leaf (the equalities', then the ranges'), per code
     * (PBA_PASS_CODES of them), 1 where that code excludes the leaf, else 0; NULL: no
     * file of this binding is pruned whole there (each is left to the caller). */
    const uint8_t *code_excluded;
} pba_pass_binding;

#define PBA_PASS_MAX_STEPS 256

/* The reads' limits (the reader's configuration) and the caller's arrays, reused from
 * file to file. The file's last `suffix` bytes are read first (all of a file of at most
 * `whole` bytes, whole: at most tail_cap, 0 for none); a footer that begins
 * before them is read in a second read when the file's end from the footer on fits in
 * `tail` (tail_cap bytes, at least suffix) and the footer is at most max_footer_bytes.
 * groups and num_rows hold groups_cap row groups; chunks, outcomes, probes and answers
 * groups_cap * width records, where width is at least every binding's scan.n_wanted and
 * n_eq + n_ranges. */
typedef struct {
    int64_t suffix, whole;
    uint64_t tail_cap, max_footer_bytes;
    uint64_t max_serialized, max_filter_bytes, max_header_bytes;
    size_t groups_cap, width;
    uint8_t *tail;
    pba_footer_group *groups;
    pba_footer_chunk *chunks;
    pba_eq_outcome *outcomes;
    pba_probe *probes;
    int32_t *answers;
} pba_pass_scratch;

/* What decides a (row group, leaf), pba_file_pass's codes[g * (n_eq + n_ranges) + i]:
 * the equality leaves' first, then the range leaves', PBA_PASS_RANGE_CODES + a
 * PBA_RANGE_* code (never UNSURE). */
#define PBA_PASS_UNASKED 0   /* left to its filter, but the row group was excluded before */
#define PBA_PASS_NULLS 1     /* excluded: every value of the chunk is null */
#define PBA_PASS_STATS 2     /* excluded: no key within the min/max statistics */
#define PBA_PASS_NO_FILTER 3 /* left to a filter the footer does not record */
#define PBA_PASS_ABSENT 4    /* excluded by the filter */
#define PBA_PASS_MAY 5       /* the filter may hold a key */
#define PBA_PASS_RANGE_CODES 6
#define PBA_PASS_CODES 16 /* codes are below this */

/* pba_pass_result.status */
#define PBA_PASS_DECIDED 0
#define PBA_PASS_UNBOUND 1 /* no binding has the footer's schema */
#define PBA_PASS_ASIDE 2   /* decide it the usual way; `why` says what was unusual */

/* pba_pass_result.why */
enum {
    PBA_WHY_NONE = 0,
    PBA_WHY_OPEN,         /* open or fstat failed (`err`), or not a regular file */
    PBA_WHY_READ,         /* the suffix read failed or was short (`err`) */
    PBA_WHY_TRAILER,      /* too small, a magic or the footer length is not usual */
    PBA_WHY_LONG_FOOTER,  /* the file's end from the footer on is above tail_cap (`need`
                             says how long it is) or the footer above max_footer_bytes */
    PBA_WHY_SCAN,         /* the scanner refused the footer, or its head is incomplete */
    PBA_WHY_CAPACITY,     /* more row groups than groups_cap */
    PBA_WHY_STATISTICS,   /* a statistic the C side does not read (UNSURE) */
    PBA_WHY_MIXED,        /* some filters recorded, others not */
    PBA_WHY_FILTER,       /* a filter not where or as recorded (UNSURE), or no memory */
    PBA_WHY_UNSUPPORTED   /* no pread on this system */
};

typedef struct {
    int32_t status;  /* PBA_PASS_* */
    int32_t why;     /* PBA_WHY_*, for ASIDE */
    int32_t err;     /* errno of a failed open, fstat or read; 0 otherwise */
    int32_t binding; /* the binding used (DECIDED), else -1 */
    int32_t key_values_same; /* DECIDED: the footer's key/value metadata is the binding's */
    int64_t file_size;
    int64_t need; /* LONG_FOOTER: the bytes from the footer's start to the file's end */
    size_t n_groups;
    uint64_t requests, bytes_read; /* the reads made (opening is not counted) */
    /* DECIDED: the footer's place, and the bytes read from tail_start on, which end the
     * scratch's tail (at tail + tail_cap - (file_size - tail_start)) */
    int64_t metadata_offset, metadata_length, tail_start;
    /* the file's fstat: device, inode, modification and status change times */
    uint64_t dev, ino;
    int64_t mtime_ns, ctime_ns;
} pba_pass_result;

/* Decide the local file `path` against the first binding whose schema bytes are the
 * footer's: num_rows[g] and codes[g * (n_eq + n_ranges) + i] (groups_cap and
 * groups_cap * width entries) for every row group g and leaf i. Returns PBA_OK with *res filled
 * (status DECIDED, UNBOUND or ASIDE), or PBA_ERR_ARG (a null pointer, a binding wider
 * than the scratch, steps that do not form one outcome). Holds no state between calls;
 * concurrent calls need their own scratch. */
int pba_file_pass(const char *path, const pba_pass_binding *bindings, size_t n_bindings,
                  const pba_pass_scratch *scratch, int64_t *num_rows, uint8_t *codes,
                  pba_pass_result *res);

/* One file pba_file_pass_files pruned whole: what its plan needs of the call. */
typedef struct {
    int64_t file_size;
    int64_t metadata_offset, metadata_length, tail_start;
    uint64_t dev, ino;
    int64_t mtime_ns, ctime_ns;
    uint64_t requests, bytes_read;
    int32_t binding;
    int32_t reserved;
} pba_pass_pruned;

/* pba_file_pass over n_paths files in turn, their paths NUL-terminated one after another
 * in names[0..names_len), while each is pruned whole: DECIDED, with its key/value metadata
 * its binding's, and every row group excluded (by the binding's code_excluded and steps).
 * pruned[i] describes file i for i < *done; when *done < n_paths, file *done is the first
 * not pruned whole, left in res, num_rows, codes and the scratch as pba_file_pass leaves
 * it. Returns PBA_OK, or PBA_ERR_ARG (pba_file_pass's, or names that do not hold n_paths
 * terminated paths). The interpreter is released around it as around every call. */
int pba_file_pass_files(const char *names, size_t names_len, size_t n_paths,
                        const pba_pass_binding *bindings, size_t n_bindings,
                        const pba_pass_scratch *scratch, int64_t *num_rows, uint8_t *codes,
                        pba_pass_result *res, pba_pass_pruned *pruned, size_t *done);

#ifdef __cplusplus
}
#endif

#endif /* PYBLOOM_ASYNC_FOOTER_H */
