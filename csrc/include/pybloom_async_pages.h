/*
 * pybloom_async_pages.h: a Parquet page header decoded in one C call.
 *
 * A column chunk is a run of pages, each a thrift compact PageHeader followed by its
 * bytes. pba_page_header_read() decodes the header at the start of a buffer into a fixed
 * record: the fields of PageHeader, of its v1 data page or dictionary page header, and of
 * its v2 data page header (statistics and index page headers are skipped). It decodes as
 * the package's Python decoder (pybloom_async/parquet/pages.py) does with thrift's own
 * compact decoder, so that where it accepts a header its values are that decoder's
 * (tests/unit/parquet/test_page_header.py and the page_header fuzz target compare them);
 * where it refuses one, the caller asks that decoder, which says why.
 *
 * The input is untrusted: every read is bounded by `len`, nesting by depth 64; nothing is
 * allocated. The values are what the header says (sizes may be negative or past the
 * chunk): the caller checks them.
 *
 * Thread safety: no state; concurrent calls on different outputs are safe.
 */
#ifndef PYBLOOM_ASYNC_PAGES_H
#define PYBLOOM_ASYNC_PAGES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which fields a header holds (pba_page_header.present). NUM_VALUES and ENCODING are the
 * v1 data page header's when it has one, else the dictionary page header's. */
#define PBA_PH_TYPE 0x1u
#define PBA_PH_UNCOMPRESSED_PAGE_SIZE 0x2u
#define PBA_PH_COMPRESSED_PAGE_SIZE 0x4u
#define PBA_PH_CRC 0x8u
#define PBA_PH_NUM_VALUES 0x10u
#define PBA_PH_ENCODING 0x20u
#define PBA_PH_DEFINITION_LEVEL_ENCODING 0x40u
#define PBA_PH_V2 0x80u
#define PBA_PH_V2_NUM_VALUES 0x100u
#define PBA_PH_V2_NUM_NULLS 0x200u
#define PBA_PH_V2_NUM_ROWS 0x400u
#define PBA_PH_V2_ENCODING 0x800u
#define PBA_PH_V2_DEFINITION_LEVELS_BYTE_LENGTH 0x1000u
#define PBA_PH_V2_REPETITION_LEVELS_BYTE_LENGTH 0x2000u

/* One decoded PageHeader: a field is meaningful when its bit of `present` is set. */
typedef struct {
    uint32_t present;
    int32_t type;
    int32_t uncompressed_page_size;
    int32_t compressed_page_size;
    int32_t crc;
    int32_t num_values;
    int32_t encoding;
    int32_t definition_level_encoding;
    int32_t v2_num_values;
    int32_t v2_num_nulls;
    int32_t v2_num_rows;
    int32_t v2_encoding;
    int32_t v2_definition_levels_byte_length;
    int32_t v2_repetition_levels_byte_length;
    int32_t v2_is_compressed; /* 1 unless the v2 header says false */
    uint64_t header_length;   /* the bytes the header took */
} pba_page_header;

/* Decodes the PageHeader at the start of data[0, len). Returns PBA_FOOTER_OK (0), or
 * a negative PBA_FOOTER_ERR_* status of pybloom_async_footer.h (ARG, TRUNCATED,
 * MALFORMED, DEPTH): out is then unspecified. */
int pba_page_header_read(const uint8_t *data, size_t len, pba_page_header *out);

#ifdef __cplusplus
}
#endif

#endif /* PYBLOOM_ASYNC_PAGES_H */
