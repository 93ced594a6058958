/*
 * page_header.c: a Parquet page header decoded (pybloom_async_pages.h).
 *
 * The structures of parquet.thrift read here, with the wire type of each field read (a
 * field of another wire type, or unknown, is skipped as thrift skips it; a structure
 * field found twice replaces the first, as thrift's decoder makes a new object):
 *   PageHeader:           1 type, 2 uncompressed_page_size, 3 compressed_page_size, 4 crc
 *                         (i32); 5 data_page_header, 7 dictionary_page_header,
 *                         8 data_page_header_v2 (structs); 6 index_page_header skipped.
 *   DataPageHeader:       1 num_values, 2 encoding, 3 definition_level_encoding (i32);
 *                         4 and 5 (statistics) skipped.
 *   DictionaryPageHeader: 1 num_values, 2 encoding (i32); 3 is_sorted skipped.
 *   DataPageHeaderV2:     1-6 (i32), 7 is_compressed (bool); 8 statistics skipped.
 */
#include <string.h>

#include "compact.h"
#include "pybloom_async_pages.h"

/* What the v1 data page and dictionary page headers say, kept apart until the end. */
typedef struct {
    int present;      /* the structure was found */
    uint32_t fields;  /* PBA_PH_NUM_VALUES, PBA_PH_ENCODING, PBA_PH_DEFINITION_LEVEL_ENCODING */
    int32_t num_values;
    int32_t encoding;
    int32_t definition_level_encoding;
} small_header;

static int read_small(reader *r, int depth, int max_id, small_header *h)
{
    if (depth > MAX_DEPTH) {
        return PBA_FOOTER_ERR_DEPTH;
    }
    memset(h, 0, sizeof *h); /* a second one replaces the first */
    h->present = 1;
    int last = 0;
    for (;;) {
        int type, id = 0, rc = read_field_header(r, &last, &type, &id);
        if (rc != PBA_FOOTER_OK || type == CT_STOP) {
            return rc;
        }
        if (id < 1 || id > max_id || type != CT_I32) {
            rc = skip(r, type, depth);
        } else if (id == 1) {
            rc = read_i32(r, &h->num_values);
            h->fields |= PBA_PH_NUM_VALUES;
        } else if (id == 2) {
            rc = read_i32(r, &h->encoding);
            h->fields |= PBA_PH_ENCODING;
        } else {
            rc = read_i32(r, &h->definition_level_encoding);
            h->fields |= PBA_PH_DEFINITION_LEVEL_ENCODING;
        }
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
    }
}

#define V2_FIELDS                                                                            \
    (PBA_PH_V2 | PBA_PH_V2_NUM_VALUES | PBA_PH_V2_NUM_NULLS | PBA_PH_V2_NUM_ROWS |             \
     PBA_PH_V2_ENCODING | PBA_PH_V2_DEFINITION_LEVELS_BYTE_LENGTH |                           \
     PBA_PH_V2_REPETITION_LEVELS_BYTE_LENGTH)

static int read_v2(reader *r, int depth, pba_page_header *out)
{
    if (depth > MAX_DEPTH) {
        return PBA_FOOTER_ERR_DEPTH;
    }
    out->present = (out->present & ~V2_FIELDS) | PBA_PH_V2; /* a second one replaces it */
    out->v2_is_compressed = 1;
    static const uint32_t bit[7] = {
        PBA_PH_V2_NUM_VALUES, PBA_PH_V2_NUM_NULLS, PBA_PH_V2_NUM_ROWS, PBA_PH_V2_ENCODING,
        PBA_PH_V2_DEFINITION_LEVELS_BYTE_LENGTH, PBA_PH_V2_REPETITION_LEVELS_BYTE_LENGTH, 0};
    int32_t *const field[7] = {&out->v2_num_values,
                               &out->v2_num_nulls,
                               &out->v2_num_rows,
                               &out->v2_encoding,
                               &out->v2_definition_levels_byte_length,
                               &out->v2_repetition_levels_byte_length,
                               NULL};
    int last = 0;
    for (;;) {
        int type, id = 0, rc = read_field_header(r, &last, &type, &id);
        if (rc != PBA_FOOTER_OK || type == CT_STOP) {
            return rc;
        }
        if (id == 7 && wire_type_is(type, CT_TRUE)) {
            out->v2_is_compressed = type == CT_TRUE;
        } else if (id >= 1 && id <= 6 && type == CT_I32) {
            rc = read_i32(r, field[id - 1]);
            out->present |= bit[id - 1];
        } else {
            rc = skip(r, type, depth);
        }
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
    }
}

int pba_page_header_read(const uint8_t *data, size_t len, pba_page_header *out)
{
    if (data == NULL || out == NULL) {
        return PBA_FOOTER_ERR_ARG;
    }
    memset(out, 0, sizeof *out);
    reader r = {data, data, data + len};
    small_header v1 = {0}, dictionary = {0};
    static const uint32_t bit[4] = {PBA_PH_TYPE, PBA_PH_UNCOMPRESSED_PAGE_SIZE,
                                    PBA_PH_COMPRESSED_PAGE_SIZE, PBA_PH_CRC};
    int32_t *const field[4] = {&out->type, &out->uncompressed_page_size,
                               &out->compressed_page_size, &out->crc};
    int last = 0;
    for (;;) {
        int type, id = 0, rc = read_field_header(&r, &last, &type, &id);
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
        if (type == CT_STOP) {
            break;
        }
        if (id >= 1 && id <= 4 && type == CT_I32) {
            rc = read_i32(&r, field[id - 1]);
            out->present |= bit[id - 1];
        } else if (id == 5 && type == CT_STRUCT) {
            rc = read_small(&r, 2, 3, &v1);
        } else if (id == 7 && type == CT_STRUCT) {
            rc = read_small(&r, 2, 2, &dictionary);
        } else if (id == 8 && type == CT_STRUCT) {
            rc = read_v2(&r, 2, out);
        } else {
            rc = skip(&r, type, 1); /* the header is at depth 1, as a footer is */
        }
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
    }
    /* The Python decoder reads num_values and encoding of the v1 data page header when
     * there is one, else of the dictionary page header. */
    const small_header *h = v1.present ? &v1 : dictionary.present ? &dictionary : NULL;
    if (h != NULL) {
        out->present |= h->fields & (PBA_PH_NUM_VALUES | PBA_PH_ENCODING);
        out->num_values = h->num_values;
        out->encoding = h->encoding;
    }
    if (v1.present) {
        out->present |= v1.fields & PBA_PH_DEFINITION_LEVEL_ENCODING;
        out->definition_level_encoding = v1.definition_level_encoding;
    }
    out->header_length = (uint64_t)(r.p - r.base);
    return PBA_FOOTER_OK;
}
