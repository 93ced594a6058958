/*
 * footer.c: the footer scanner (pybloom_async_footer.h).
 *
 * A recursive-descent reader of the thrift compact protocol over parquet.thrift's
 * FileMetaData, keeping only what pruning reads. It decodes as thrift's own compact
 * decoder does, so that where it accepts a footer it reads the values the package's
 * Python decoder reads (tests/unit/parquet/test_scan.py compares them on every file of
 * the corpus); where it refuses one, the caller asks that decoder, which says why.
 *
 * Bounds (compact.h): every read checks the bytes left; a string or list that claims more
 * elements than there are bytes left is refused before anything is read (every element
 * takes at least one byte); recursion stops at MAX_DEPTH; nothing is allocated.
 */
#include <string.h>

#include "compact.h"
#include "pybloom_async_footer.h"

/* ---- the structures read ------------------------------------------------------------ */

/* A list of structs: its count, after checking its element type (thrift refuses a
 * non-empty list whose elements are not the spec's type). */
static int read_struct_list(reader *r, int depth, uint64_t *count)
{
    int elem;
    const int rc = read_list_header(r, &elem, count);
    if (rc != PBA_FOOTER_OK) {
        return rc;
    }
    if (*count != 0 && elem != CT_STRUCT) {
        return PBA_FOOTER_ERR_MALFORMED;
    }
    return depth + 1 > MAX_DEPTH ? PBA_FOOTER_ERR_DEPTH : PBA_FOOTER_OK;
}

static int read_statistics(reader *r, int depth, pba_footer_chunk *c)
{
    if (depth > MAX_DEPTH) {
        return PBA_FOOTER_ERR_DEPTH;
    }
    /* A second statistics field replaces the first. */
    c->present &= ~(PBA_FC_MAX | PBA_FC_MIN | PBA_FC_NULL_COUNT | PBA_FC_DISTINCT_COUNT |
                    PBA_FC_MAX_VALUE | PBA_FC_MIN_VALUE | PBA_FC_IS_MAX_VALUE_EXACT |
                    PBA_FC_IS_MIN_VALUE_EXACT | PBA_FC_NAN_COUNT);
    c->present |= PBA_FC_STATISTICS;
    static const int spec[10] = {0, CT_BINARY, CT_BINARY, CT_I64, CT_I64, CT_BINARY,
                                 CT_BINARY, CT_TRUE, CT_TRUE, CT_I64};
    int last = 0;
    for (;;) {
        int type, id = 0, rc = read_field_header(r, &last, &type, &id);
        if (rc != PBA_FOOTER_OK || type == CT_STOP) {
            return rc;
        }
        if (id < 1 || id > 9 || !wire_type_is(type, spec[id])) {
            rc = skip(r, type, depth);
        } else {
            switch (id) {
            case 1:
                rc = read_binary(r, &c->max_off, &c->max_len);
                c->present |= PBA_FC_MAX;
                break;
            case 2:
                rc = read_binary(r, &c->min_off, &c->min_len);
                c->present |= PBA_FC_MIN;
                break;
            case 3:
                rc = read_i64(r, &c->null_count);
                c->present |= PBA_FC_NULL_COUNT;
                break;
            case 4:
                rc = read_i64(r, &c->distinct_count);
                c->present |= PBA_FC_DISTINCT_COUNT;
                break;
            case 5:
                rc = read_binary(r, &c->max_value_off, &c->max_value_len);
                c->present |= PBA_FC_MAX_VALUE;
                break;
            case 6:
                rc = read_binary(r, &c->min_value_off, &c->min_value_len);
                c->present |= PBA_FC_MIN_VALUE;
                break;
            case 7:
                c->is_max_value_exact = type == CT_TRUE;
                c->present |= PBA_FC_IS_MAX_VALUE_EXACT;
                break;
            case 8:
                c->is_min_value_exact = type == CT_TRUE;
                c->present |= PBA_FC_IS_MIN_VALUE_EXACT;
                break;
            default: /* 9 */
                rc = read_i64(r, &c->nan_count);
                c->present |= PBA_FC_NAN_COUNT;
                break;
            }
        }
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
    }
}

/* Compares a path_in_schema list with the expected names (4-byte LE length + bytes each);
 * *same is 1 when every name and the count agree. */
static int read_path(reader *r, int depth, const uint8_t *want, size_t want_len, int *same)
{
    int elem;
    uint64_t n;
    int rc = read_list_header(r, &elem, &n);
    if (rc != PBA_FOOTER_OK) {
        return rc;
    }
    if (n != 0 && elem != CT_BINARY) {
        return PBA_FOOTER_ERR_MALFORMED;
    }
    if (depth + 1 > MAX_DEPTH) {
        return PBA_FOOTER_ERR_DEPTH;
    }
    size_t at = 0;
    int ok = want != NULL;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t off, len;
        rc = read_binary(r, &off, &len);
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
        if (!ok) {
            continue;
        }
        if (want_len - at < 4) {
            ok = 0;
            continue;
        }
        const uint64_t name_len = (uint64_t)want[at] | (uint64_t)want[at + 1] << 8 |
                                  (uint64_t)want[at + 2] << 16 | (uint64_t)want[at + 3] << 24;
        at += 4;
        if (name_len != len || name_len > want_len - at ||
            (len != 0 && memcmp(want + at, r->base + off, (size_t)len) != 0)) {
            ok = 0;
            continue;
        }
        at += (size_t)len;
    }
    *same = ok && at == want_len;
    return PBA_FOOTER_OK;
}

#define MD_FIELDS                                                                            \
    (PBA_FC_TYPE | PBA_FC_CODEC | PBA_FC_NUM_VALUES | PBA_FC_TOTAL_COMPRESSED_SIZE |         \
     PBA_FC_DATA_PAGE_OFFSET | PBA_FC_DICTIONARY_PAGE_OFFSET | PBA_FC_BLOOM_FILTER_OFFSET |   \
     PBA_FC_BLOOM_FILTER_LENGTH | PBA_FC_STATISTICS | PBA_FC_MAX | PBA_FC_MIN |                \
     PBA_FC_NULL_COUNT | PBA_FC_DISTINCT_COUNT | PBA_FC_MAX_VALUE | PBA_FC_MIN_VALUE |         \
     PBA_FC_IS_MAX_VALUE_EXACT | PBA_FC_IS_MIN_VALUE_EXACT | PBA_FC_NAN_COUNT |               \
     PBA_FC_TOTAL_UNCOMPRESSED_SIZE | PBA_FC_ENCODINGS)

/* What a chunk's reading learns besides its fields. */
typedef struct {
    int has_meta_data;
    int has_path;
    int path_same;
    int encrypted;
} chunk_state;

/* Skips ColumnMetaData.encodings, noting it present when it is a list of i32 (or empty),
 * as the decoder reads it. */
static int skip_encodings(reader *r, int depth, uint32_t *present)
{
    const uint8_t *const at = r->p;
    int elem;
    uint64_t n;
    int rc = read_list_header(r, &elem, &n);
    if (rc != PBA_FOOTER_OK) {
        return rc;
    }
    if (n == 0 || elem == CT_I32) {
        *present |= PBA_FC_ENCODINGS;
    }
    r->p = at;
    return skip(r, CT_LIST, depth);
}

static int read_meta_data(reader *r, int depth, const pba_footer_scan *s, size_t column,
                          pba_footer_chunk *c, chunk_state *st)
{
    if (depth > MAX_DEPTH) {
        return PBA_FOOTER_ERR_DEPTH;
    }
    /* A second meta_data field replaces the first. */
    c->present &= ~MD_FIELDS;
    st->has_meta_data = 1;
    st->has_path = 0;
    st->path_same = 0;
    static const int spec[16] = {0,      CT_I32, CT_LIST, CT_LIST,   CT_I32, CT_I64,
                                 CT_I64, CT_I64, 0,       CT_I64,    0,      CT_I64,
                                 CT_STRUCT, 0,   CT_I64,  CT_I32};
    int last = 0;
    for (;;) {
        int type, id = 0, rc = read_field_header(r, &last, &type, &id);
        if (rc != PBA_FOOTER_OK || type == CT_STOP) {
            return rc;
        }
        if (id < 1 || id > 15 || spec[id] == 0 || !wire_type_is(type, spec[id])) {
            rc = skip(r, type, depth);
        } else {
            switch (id) {
            case 1:
                rc = read_i32(r, &c->physical_type);
                c->present |= PBA_FC_TYPE;
                break;
            case 2:
                rc = skip_encodings(r, depth, &c->present);
                break;
            case 3: {
                const uint8_t *want = NULL;
                size_t want_len = 0;
                if (column < s->n_leaves) {
                    want = s->leaf_paths + s->leaf_path_offsets[column];
                    want_len = (size_t)(s->leaf_path_offsets[column + 1] -
                                        s->leaf_path_offsets[column]);
                }
                rc = read_path(r, depth, want, want_len, &st->path_same);
                st->has_path = 1;
                break;
            }
            case 4:
                rc = read_i32(r, &c->codec);
                c->present |= PBA_FC_CODEC;
                break;
            case 5:
                rc = read_i64(r, &c->num_values);
                c->present |= PBA_FC_NUM_VALUES;
                break;
            case 6:
                rc = read_i64(r, &c->total_uncompressed_size);
                c->present |= PBA_FC_TOTAL_UNCOMPRESSED_SIZE;
                break;
            case 7:
                rc = read_i64(r, &c->total_compressed_size);
                c->present |= PBA_FC_TOTAL_COMPRESSED_SIZE;
                break;
            case 9:
                rc = read_i64(r, &c->data_page_offset);
                c->present |= PBA_FC_DATA_PAGE_OFFSET;
                break;
            case 11:
                rc = read_i64(r, &c->dictionary_page_offset);
                c->present |= PBA_FC_DICTIONARY_PAGE_OFFSET;
                break;
            case 12:
                rc = read_statistics(r, depth + 1, c);
                break;
            case 14:
                rc = read_i64(r, &c->bloom_filter_offset);
                c->present |= PBA_FC_BLOOM_FILTER_OFFSET;
                break;
            default: /* 15 */
                rc = read_i32(r, &c->bloom_filter_length);
                c->present |= PBA_FC_BLOOM_FILTER_LENGTH;
                break;
            }
        }
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
    }
}

static int read_chunk(reader *r, int depth, const pba_footer_scan *s, size_t column,
                      pba_footer_chunk *c, chunk_state *st)
{
    if (depth > MAX_DEPTH) {
        return PBA_FOOTER_ERR_DEPTH;
    }
    static const int spec[9] = {0, CT_BINARY, 0, CT_STRUCT, CT_I64, CT_I32, CT_I64, CT_I32,
                                CT_STRUCT};
    int last = 0;
    for (;;) {
        int type, id = 0, rc = read_field_header(r, &last, &type, &id);
        if (rc != PBA_FOOTER_OK || type == CT_STOP) {
            return rc;
        }
        if (id < 1 || id > 8 || spec[id] == 0 || !wire_type_is(type, spec[id])) {
            rc = skip(r, type, depth);
        } else {
            switch (id) {
            case 1: /* file_path: its presence (a chunk in another file is read otherwise) */
                rc = skip(r, type, depth);
                c->present |= PBA_FC_FILE_PATH;
                break;
            case 3:
                rc = read_meta_data(r, depth + 1, s, column, c, st);
                break;
            case 4:
                rc = read_i64(r, &c->offset_index_offset);
                c->present |= PBA_FC_OFFSET_INDEX_OFFSET;
                break;
            case 5:
                rc = read_i32(r, &c->offset_index_length);
                c->present |= PBA_FC_OFFSET_INDEX_LENGTH;
                break;
            case 6:
                rc = read_i64(r, &c->column_index_offset);
                c->present |= PBA_FC_COLUMN_INDEX_OFFSET;
                break;
            case 7:
                rc = read_i32(r, &c->column_index_length);
                c->present |= PBA_FC_COLUMN_INDEX_LENGTH;
                break;
            default: /* 8: crypto_metadata */
                st->encrypted = 1;
                rc = skip(r, type, depth);
                break;
            }
        }
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
    }
}

/* The checks the Python decoder makes of every chunk (parquet/metadata.py, ChunkTable). */
static int check_chunk(const pba_footer_scan *s, size_t column, const pba_footer_chunk *c,
                       const chunk_state *st)
{
    const uint32_t required = PBA_FC_TYPE | PBA_FC_NUM_VALUES;
    if (st->encrypted) {
        return PBA_FOOTER_ERR_ENCRYPTED;
    }
    if (!st->has_meta_data || !st->has_path || (c->present & required) != required) {
        return PBA_FOOTER_ERR_MISSING;
    }
    if (column >= s->n_leaves || !st->path_same || c->physical_type != s->leaf_types[column]) {
        return PBA_FOOTER_ERR_SCHEMA;
    }
    return c->num_values < 0 ? PBA_FOOTER_ERR_NEGATIVE : PBA_FOOTER_OK;
}

/* The columns of row group g: every chunk checked, the wanted ones written out. */
static int read_columns(reader *r, int depth, pba_footer_scan *s, size_t g, int32_t *num)
{
    uint64_t n;
    int rc = read_struct_list(r, depth, &n);
    if (rc != PBA_FOOTER_OK) {
        return rc;
    }
    size_t k = 0;
    for (uint64_t j = 0; j < n; j++) {
        pba_footer_chunk c;
        chunk_state st = {0, 0, 0, 0};
        memset(&c, 0, sizeof c);
        s->fail_group = (int64_t)g;
        s->fail_column = (int64_t)j;
        rc = read_chunk(r, depth + 2, s, (size_t)j, &c, &st);
        if (rc == PBA_FOOTER_OK) {
            rc = check_chunk(s, (size_t)j, &c, &st);
        }
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
        while (k < s->n_wanted && s->wanted[k] < j) {
            k++;
        }
        if (k < s->n_wanted && s->wanted[k] == j && g < s->groups_cap) {
            s->chunks[g * s->n_wanted + k] = c;
        }
    }
    s->fail_group = s->fail_column = -1;
    *num = (int32_t)n; /* n <= INT32_MAX: read_size */
    return n == s->n_leaves ? PBA_FOOTER_OK : PBA_FOOTER_ERR_SCHEMA;
}

static int read_row_group(reader *r, int depth, pba_footer_scan *s, size_t g)
{
    if (depth > MAX_DEPTH) {
        return PBA_FOOTER_ERR_DEPTH;
    }
    pba_footer_group group = {0, 0, 0};
    int has_columns = 0, has_total = 0;
    int last = 0;
    for (;;) {
        int type, id = 0, rc = read_field_header(r, &last, &type, &id);
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
        if (type == CT_STOP) {
            break;
        }
        if (id == 1 && type == CT_LIST) {
            rc = read_columns(r, depth, s, g, &group.num_columns);
            has_columns = 1;
        } else if (id == 3 && type == CT_I64) {
            rc = read_i64(r, &group.num_rows);
            group.has_num_rows = 1;
        } else if (id == 2 && type == CT_I64) {
            int64_t total;
            rc = read_i64(r, &total);
            has_total = 1;
        } else {
            rc = skip(r, type, depth);
        }
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
    }
    if (!has_columns) {
        s->fail_group = (int64_t)g;
        return PBA_FOOTER_ERR_MISSING;
    }
    if (!has_total || !group.has_num_rows || group.num_rows < 0) {
        s->head_complete = 0;
    }
    if (g < s->groups_cap) {
        s->groups[g] = group;
    }
    return PBA_FOOTER_OK;
}

static int read_schema(reader *r, int depth, pba_footer_scan *s)
{
    uint64_t n;
    int rc = read_struct_list(r, depth, &n);
    if (rc != PBA_FOOTER_OK) {
        return rc;
    }
    s->schema_elements = 0;
    s->schema_leaves = 0;
    for (uint64_t i = 0; i < n; i++) {
        int32_t num_children = 0;
        int has_type = 0, has_children = 0;
        int last = 0;
        if (depth + 2 > MAX_DEPTH) {
            return PBA_FOOTER_ERR_DEPTH;
        }
        for (;;) {
            int type, id = 0;
            rc = read_field_header(r, &last, &type, &id);
            if (rc != PBA_FOOTER_OK) {
                return rc;
            }
            if (type == CT_STOP) {
                break;
            }
            if (id == 1 && type == CT_I32) {
                int32_t t;
                rc = read_i32(r, &t);
                has_type = 1;
            } else if (id == 5 && type == CT_I32) {
                rc = read_i32(r, &num_children);
                has_children = 1;
            } else {
                rc = skip(r, type, depth + 2);
            }
            if (rc != PBA_FOOTER_OK) {
                return rc;
            }
        }
        s->schema_elements++;
        /* A leaf: typed, and no children (some writers put num_children 0 on leaves). */
        if (i > 0 && has_type && (!has_children || num_children <= 0)) {
            s->schema_leaves++;
        }
    }
    return PBA_FOOTER_OK;
}

int pba_footer_scan_run(const uint8_t *buf, size_t len, pba_footer_scan *s)
{
    if (s == NULL || (buf == NULL && len > 0) ||
        (s->n_leaves > 0 && (s->leaf_types == NULL || s->leaf_path_offsets == NULL)) ||
        (s->n_wanted > 0 && s->wanted == NULL) ||
        (s->groups_cap > 0 && (s->groups == NULL || (s->n_wanted > 0 && s->chunks == NULL)))) {
        return PBA_FOOTER_ERR_ARG;
    }
    for (size_t k = 0; k < s->n_wanted; k++) {
        if (s->wanted[k] >= s->n_leaves || (k > 0 && s->wanted[k] <= s->wanted[k - 1])) {
            return PBA_FOOTER_ERR_ARG;
        }
    }
    for (size_t i = 0; i < s->n_leaves; i++) {
        const uint64_t a = s->leaf_path_offsets[i], b = s->leaf_path_offsets[i + 1];
        if (a > b || b > s->leaf_paths_len || (b > 0 && s->leaf_paths == NULL)) {
            return PBA_FOOTER_ERR_ARG;
        }
    }
    if (s->groups_cap > 0 && s->n_wanted > SIZE_MAX / sizeof(pba_footer_chunk) / s->groups_cap) {
        return PBA_FOOTER_ERR_ARG;
    }
    s->n_groups = 0;
    s->schema_elements = 0;
    s->schema_leaves = 0;
    s->fail_group = s->fail_column = -1;
    s->schema_off = s->schema_len = 0;
    s->key_values_off = s->key_values_len = 0;
    s->head_complete = 1; /* row groups clear it */
    reader r = {buf, buf, buf + len};
    int has_groups = 0, encrypted = 0, has_version = 0, has_rows = 0;
    int64_t num_rows = 0;
    int last = 0;
    for (;;) {
        int type, id = 0, rc = read_field_header(&r, &last, &type, &id);
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
        if (type == CT_STOP) {
            break;
        }
        const uint8_t *start = r.p;
        if (id == 2 && type == CT_LIST) {
            rc = read_schema(&r, 1, s);
            s->schema_off = (uint64_t)(start - buf);
            s->schema_len = (uint64_t)(r.p - start);
        } else if (id == 1 && type == CT_I32) {
            int32_t version;
            rc = read_i32(&r, &version);
            has_version = 1;
        } else if (id == 3 && type == CT_I64) {
            rc = read_i64(&r, &num_rows);
            has_rows = 1;
        } else if (id == 5 && type == CT_LIST) {
            rc = skip(&r, type, 1);
            s->key_values_off = (uint64_t)(start - buf);
            s->key_values_len = (uint64_t)(r.p - start);
        } else if (id == 4 && type == CT_LIST) {
            uint64_t n;
            rc = read_struct_list(&r, 1, &n);
            /* A second row_groups field replaces the first (and its checks). */
            s->head_complete = 1;
            for (uint64_t g = 0; rc == PBA_FOOTER_OK && g < n; g++) {
                rc = read_row_group(&r, 3, s, (size_t)g);
            }
            s->n_groups = (size_t)n;
            has_groups = 1;
        } else if (id == 8 && type == CT_STRUCT) {
            encrypted = 1;
            rc = skip(&r, type, 1);
        } else {
            rc = skip(&r, type, 1);
        }
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
    }
    if (encrypted) {
        return PBA_FOOTER_ERR_ENCRYPTED;
    }
    if (!has_groups) {
        return PBA_FOOTER_ERR_MISSING;
    }
    if (!has_version || !has_rows || num_rows < 0 || s->schema_len == 0) {
        s->head_complete = 0;
    }
    return s->n_groups > s->groups_cap ? PBA_FOOTER_ERR_CAPACITY : PBA_FOOTER_OK;
}

int pba_footer_schema_span(const uint8_t *buf, size_t len, uint64_t *off, uint64_t *span)
{
    if ((buf == NULL && len > 0) || off == NULL || span == NULL) {
        return PBA_FOOTER_ERR_ARG;
    }
    *off = *span = 0;
    reader r = {buf, buf, buf + len};
    int last = 0;
    for (;;) {
        int type, id = 0, rc = read_field_header(&r, &last, &type, &id);
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
        if (type == CT_STOP) {
            return PBA_FOOTER_OK;
        }
        const uint8_t *start = r.p;
        if (id == 2 && type == CT_LIST) {
            uint64_t n;
            rc = read_struct_list(&r, 1, &n);
            for (uint64_t i = 0; rc == PBA_FOOTER_OK && i < n; i++) {
                rc = skip(&r, CT_STRUCT, 2); /* as skip() walks a list's elements */
            }
            *off = (uint64_t)(start - buf);
            *span = (uint64_t)(r.p - start);
        } else {
            rc = skip(&r, type, 1);
        }
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
    }
}

const char *pba_footer_strerror(int code)
{
    switch (code) {
    case PBA_FOOTER_OK: return "ok";
    case PBA_FOOTER_ERR_ARG: return "invalid argument";
    case PBA_FOOTER_ERR_TRUNCATED: return "it ends in the middle of a value (truncated?)";
    case PBA_FOOTER_ERR_MALFORMED: return "not valid thrift compact for a FileMetaData";
    case PBA_FOOTER_ERR_DEPTH: return "structures are nested too deeply";
    case PBA_FOOTER_ERR_CAPACITY: return "more row groups than the output arrays hold";
    case PBA_FOOTER_ERR_MISSING: return "a required field is missing";
    case PBA_FOOTER_ERR_ENCRYPTED: return "the file or a column chunk is encrypted";
    case PBA_FOOTER_ERR_SCHEMA: return "column chunks do not match the schema's leaves";
    case PBA_FOOTER_ERR_NEGATIVE: return "ColumnMetaData.num_values is negative";
    default: return "unknown status";
    }
}
