/*
 * libFuzzer harness for the footer scanner (pba_footer_scan_run, csrc/footer/footer.c),
 * built with ASan + UBSan so a read outside the footer or undefined arithmetic crashes.
 *
 * Input: u8 leaf count n (taken mod 16), u8 mask of the wanted leaves, then per leaf its
 * physical type (u8), its name count (u8, mod 8) and each name (u8 length, bytes), then
 * the FileMetaData bytes. The
 * seeds (fuzz/seeds.py) describe each parquet-testing footer's own leaves, so the
 * scanner gets past the chunk checks. The footer is copied into a buffer of exactly its
 * length, so a read one byte past its end is caught.
 *
 * Properties: the status is OK or one of the scanner's errors; pba_footer_schema_span
 * gives one of its statuses and a span inside the footer, the scanner's own span where
 * the scanner reads the footer whole; an accepted footer's
 * statistics lie inside the footer, every group holds one chunk per leaf, the schema
 * holds at least the leaves counted; the same input scans the same again; a scan with
 * room for no group reports the count that a scan with room accepts; no output is
 * written past the room given (the arrays are allocated at exactly their size).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pybloom_async_footer.h"

#include "check.h"

#define MAX_LEAVES 16
#define MAX_GROUPS 64
#define MAX_NAMES 8

static int inside(uint64_t off, uint64_t len, size_t size)
{
    return off <= size && len <= size - off;
}

static void check_chunk(const pba_footer_chunk *c, size_t size)
{
    if (c->present & PBA_FC_MIN) {
        CHECK(inside(c->min_off, c->min_len, size));
    }
    if (c->present & PBA_FC_MAX) {
        CHECK(inside(c->max_off, c->max_len, size));
    }
    if (c->present & PBA_FC_MIN_VALUE) {
        CHECK(inside(c->min_value_off, c->min_value_len, size));
    }
    if (c->present & PBA_FC_MAX_VALUE) {
        CHECK(inside(c->max_value_off, c->max_value_len, size));
    }
    CHECK((c->present & PBA_FC_TYPE) && (c->present & PBA_FC_NUM_VALUES));
    CHECK(c->num_values >= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return 0;
    }
    const size_t n = data[0] % MAX_LEAVES;
    const unsigned mask = data[1];
    size_t at = 2;
    int32_t types[MAX_LEAVES];
    static uint8_t paths[MAX_LEAVES * MAX_NAMES * 260];
    uint64_t offsets[MAX_LEAVES + 1];
    uint32_t wanted[MAX_LEAVES];
    size_t n_wanted = 0;
    size_t o = 0;
    offsets[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (size - at < 2) {
            return 0;
        }
        types[i] = data[at];
        const size_t names = data[at + 1] % MAX_NAMES;
        at += 2;
        for (size_t j = 0; j < names; j++) {
            if (size - at < 1 || (size_t)data[at] > size - at - 1) {
                return 0;
            }
            const size_t name_len = data[at];
            paths[o] = (uint8_t)name_len;
            paths[o + 1] = paths[o + 2] = paths[o + 3] = 0;
            memcpy(paths + o + 4, data + at + 1, name_len);
            o += 4 + name_len;
            at += 1 + name_len;
        }
        offsets[i + 1] = o;
        if (mask & (1u << (i % 8))) {
            wanted[n_wanted++] = (uint32_t)i;
        }
    }
    const size_t len = size - at;
    uint8_t *footer = (uint8_t *)malloc(len ? len : 1);
    CHECK(footer != NULL);
    memcpy(footer, data + at, len);

    pba_footer_scan s;
    memset(&s, 0, sizeof s);
    s.leaf_types = types;
    s.leaf_paths = paths;
    s.leaf_paths_len = (size_t)offsets[n];
    s.leaf_path_offsets = offsets;
    s.n_leaves = n;
    s.wanted = wanted;
    s.n_wanted = n_wanted;
    /* The schema's span, on any input: a status of the scanner's, a span inside the footer. */
    uint64_t span_off = 1, span_len = 1;
    const int span = pba_footer_schema_span(footer, len, &span_off, &span_len);
    CHECK(span == PBA_FOOTER_OK || span == PBA_FOOTER_ERR_TRUNCATED ||
          span == PBA_FOOTER_ERR_MALFORMED || span == PBA_FOOTER_ERR_DEPTH);
    CHECK(inside(span_off, span_len, len));
    /* First call: no room; it reports the count when all else is well. */
    const int first = pba_footer_scan_run(footer, len, &s);
    CHECK(first <= 0 && (first == PBA_FOOTER_OK || (first <= PBA_FOOTER_ERR_TRUNCATED &&
                                                     first >= PBA_FOOTER_ERR_NEGATIVE)));
    /* A footer the scanner reads whole has its schema where the span says. */
    if (first == PBA_FOOTER_OK || first == PBA_FOOTER_ERR_CAPACITY) {
        CHECK(span == PBA_FOOTER_OK && span_off == s.schema_off && span_len == s.schema_len);
    }
    if (first != PBA_FOOTER_OK && first != PBA_FOOTER_ERR_CAPACITY) {
        free(footer);
        return 0;
    }
    const size_t groups = s.n_groups;
    CHECK(first == PBA_FOOTER_OK ? groups == 0 : groups > 0);
    if (groups > MAX_GROUPS) {
        free(footer);
        return 0;
    }
    const size_t cap = groups ? groups : 1;
    pba_footer_group *out_groups = (pba_footer_group *)malloc(cap * sizeof *out_groups);
    pba_footer_chunk *out_chunks =
        (pba_footer_chunk *)malloc(cap * (n_wanted ? n_wanted : 1) * sizeof *out_chunks);
    CHECK(out_groups != NULL && out_chunks != NULL);
    s.groups = out_groups;
    s.chunks = out_chunks;
    s.groups_cap = cap;
    const int rc = pba_footer_scan_run(footer, len, &s);
    CHECK(rc == PBA_FOOTER_OK && s.n_groups == groups);
    CHECK(s.schema_leaves <= s.schema_elements);
    for (size_t g = 0; g < groups; g++) {
        CHECK(out_groups[g].num_columns == (int32_t)n);
        for (size_t k = 0; k < n_wanted; k++) {
            const pba_footer_chunk *c = &out_chunks[g * n_wanted + k];
            check_chunk(c, len);
            CHECK(c->physical_type == types[wanted[k]]);
        }
    }
    /* The same again: nothing depends on what the outputs held. */
    if (groups > 0 && n_wanted > 0) {
        pba_footer_chunk keep = out_chunks[0];
        memset(out_chunks, 0xa5, cap * n_wanted * sizeof *out_chunks);
        CHECK(pba_footer_scan_run(footer, len, &s) == PBA_FOOTER_OK);
        CHECK(memcmp(&keep, &out_chunks[0], sizeof keep) == 0);
    }
    free(out_chunks);
    free(out_groups);
    free(footer);
    return 0;
}
