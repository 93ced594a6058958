/*
 * compact.h: a bounded reader of the thrift compact protocol, shared by the footer scanner
 * (footer.c) and the page header decoder (page_header.c). Not part of the API.
 *
 * It decodes as thrift's own compact decoder does (thrift >= 0.25): an integer varint is
 * at most 3, 5 or 10 bytes for i16, i32 and i64 and keeps the bits of its width, a
 * string or container claims no more elements than bytes are left, a non-empty list of a
 * wrong element type is malformed, nesting stops at depth 64. Every read checks the bytes
 * left; nothing is allocated. Statuses are the footer scanner's (PBA_FOOTER_*).
 */
#ifndef PBA_COMPACT_H
#define PBA_COMPACT_H

#include <stddef.h>
#include <stdint.h>

#include "pybloom_async_footer.h"

/* Thrift compact protocol type ids. */
enum {
    CT_STOP = 0,
    CT_TRUE = 1,
    CT_FALSE = 2,
    CT_BYTE = 3,
    CT_I16 = 4,
    CT_I32 = 5,
    CT_I64 = 6,
    CT_DOUBLE = 7,
    CT_BINARY = 8,
    CT_LIST = 9,
    CT_SET = 10,
    CT_MAP = 11,
    CT_STRUCT = 12,
    CT_UUID = 13 /* 16 bytes (thrift 0.25 reads and skips it) */
};

/* thrift's decoder stops at depth 64. */
#define MAX_DEPTH 64

typedef struct {
    const uint8_t *base;
    const uint8_t *p;
    const uint8_t *end;
} reader;

/* A varint of at most max_bytes bytes; bits past 64 are dropped (as thrift does). */
static inline int read_varint(reader *r, unsigned max_bytes, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < max_bytes; i++) {
        if (r->p >= r->end) {
            return PBA_FOOTER_ERR_TRUNCATED;
        }
        const uint8_t b = *r->p++;
        if (i < 10) {
            v |= (uint64_t)(b & 0x7f) << (7 * i);
        }
        if (!(b & 0x80)) {
            *out = v;
            return PBA_FOOTER_OK;
        }
    }
    return PBA_FOOTER_ERR_MALFORMED;
}

/* A zigzag integer of `bits` bits (16, 32 or 64) in at most max_bytes varint bytes. */
static inline int read_int(reader *r, unsigned max_bytes, unsigned bits, int64_t *out)
{
    uint64_t n;
    const int rc = read_varint(r, max_bytes, &n);
    if (rc != PBA_FOOTER_OK) {
        return rc;
    }
    if (bits < 64) {
        n &= ((uint64_t)1 << bits) - 1;
    }
    *out = (int64_t)(n >> 1) ^ -(int64_t)(n & 1);
    return PBA_FOOTER_OK;
}

static inline int read_i32(reader *r, int32_t *out)
{
    int64_t v = 0;
    const int rc = read_int(r, 5, 32, &v);
    *out = (int32_t)v; /* in range: 32 bits unzigzagged */
    return rc;
}

static inline int read_i64(reader *r, int64_t *out) { return read_int(r, 10, 64, out); }

/* A size (string length, element count): an i32 varint, not negative, and at most the
 * bytes left (every byte or element takes at least one byte). */
static inline int read_size(reader *r, uint64_t raw, int had_raw, uint64_t *out)
{
    uint64_t n = raw;
    if (!had_raw) {
        const int rc = read_varint(r, 5, &n);
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
    }
    n &= 0xffffffffu;
    if (n > (uint64_t)INT32_MAX) {
        return PBA_FOOTER_ERR_MALFORMED;
    }
    if (n > (uint64_t)(r->end - r->p)) {
        return PBA_FOOTER_ERR_TRUNCATED;
    }
    *out = n;
    return PBA_FOOTER_OK;
}

/* A binary value: its offset in the buffer and its length. */
static inline int read_binary(reader *r, uint64_t *off, uint64_t *len)
{
    uint64_t n;
    const int rc = read_size(r, 0, 0, &n);
    if (rc != PBA_FOOTER_OK) {
        return rc;
    }
    *off = (uint64_t)(r->p - r->base);
    *len = n;
    r->p += n;
    return PBA_FOOTER_OK;
}

/* A list header: element type and count. Booleans in a list are one byte each. */
static inline int read_list_header(reader *r, int *elem, uint64_t *count)
{
    if (r->p >= r->end) {
        return PBA_FOOTER_ERR_TRUNCATED;
    }
    const uint8_t b = *r->p++;
    *elem = b & 0x0f;
    if (*elem > CT_UUID) {
        return PBA_FOOTER_ERR_MALFORMED; /* thrift refuses the type, even of an empty list */
    }
    const uint64_t short_size = b >> 4;
    return read_size(r, short_size, short_size != 15, count);
}

/* Reads a field header; *type is CT_STOP at the struct's end. */
static inline int read_field_header(reader *r, int *last_id, int *type, int *id)
{
    if (r->p >= r->end) {
        return PBA_FOOTER_ERR_TRUNCATED;
    }
    const uint8_t b = *r->p++;
    *type = b & 0x0f;
    if (*type == CT_STOP) {
        return PBA_FOOTER_OK;
    }
    const int delta = b >> 4;
    if (delta != 0) {
        *id = *last_id + delta;
    } else {
        int64_t v;
        const int rc = read_int(r, 3, 16, &v);
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
        *id = (int)v;
    }
    *last_id = *id;
    return *type > CT_UUID ? PBA_FOOTER_ERR_MALFORMED : PBA_FOOTER_OK;
}

static inline int skip(reader *r, int type, int depth);

static inline int skip_struct(reader *r, int depth)
{
    if (depth > MAX_DEPTH) {
        return PBA_FOOTER_ERR_DEPTH;
    }
    int last = 0;
    for (;;) {
        int type, id = 0;
        int rc = read_field_header(r, &last, &type, &id);
        if (rc != PBA_FOOTER_OK || type == CT_STOP) {
            return rc;
        }
        rc = skip(r, type, depth);
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
    }
}

/* Skip one value of wire type `type`; `depth` counts the structures and containers open. */
static inline int skip(reader *r, int type, int depth)
{
    uint64_t n;
    int64_t v;
    int rc;
    if (depth + 1 > MAX_DEPTH) {
        return PBA_FOOTER_ERR_DEPTH; /* thrift counts every value it enters, scalars too */
    }
    switch (type) {
    case CT_TRUE:
    case CT_FALSE:
        return PBA_FOOTER_OK; /* in the field header */
    case CT_BYTE:
        if (r->p >= r->end) {
            return PBA_FOOTER_ERR_TRUNCATED;
        }
        r->p++;
        return PBA_FOOTER_OK;
    case CT_I16:
        return read_int(r, 3, 16, &v);
    case CT_I32:
        return read_int(r, 5, 32, &v);
    case CT_I64:
        return read_int(r, 10, 64, &v);
    case CT_DOUBLE:
    case CT_UUID: {
        const size_t width = type == CT_DOUBLE ? 8 : 16;
        if ((size_t)(r->end - r->p) < width) {
            return PBA_FOOTER_ERR_TRUNCATED;
        }
        r->p += width;
        return PBA_FOOTER_OK;
    }
    case CT_BINARY: {
        uint64_t off, len;
        return read_binary(r, &off, &len);
    }
    case CT_LIST:
    case CT_SET: {
        int elem;
        rc = read_list_header(r, &elem, &n);
        if (rc != PBA_FOOTER_OK) {
            return rc;
        }
        if (n == 0) {
            return PBA_FOOTER_OK;
        }
        if (elem == CT_STOP || elem > CT_UUID) {
            return PBA_FOOTER_ERR_MALFORMED;
        }
        if (elem == CT_TRUE || elem == CT_FALSE) {
            elem = CT_BYTE;
        }
        for (uint64_t i = 0; i < n; i++) {
            rc = skip(r, elem, depth + 1);
            if (rc != PBA_FOOTER_OK) {
                return rc;
            }
        }
        return PBA_FOOTER_OK;
    }
    case CT_MAP: {
        rc = read_size(r, 0, 0, &n);
        if (rc != PBA_FOOTER_OK || n == 0) {
            return rc; /* an empty map is one byte, checked for depth above */
        }
        if (r->p >= r->end) {
            return PBA_FOOTER_ERR_TRUNCATED;
        }
        const uint8_t b = *r->p++;
        int kt = b >> 4, vt = b & 0x0f;
        if (kt == CT_STOP || kt > CT_UUID || vt == CT_STOP || vt > CT_UUID) {
            return PBA_FOOTER_ERR_MALFORMED;
        }
        kt = (kt == CT_TRUE || kt == CT_FALSE) ? CT_BYTE : kt;
        vt = (vt == CT_TRUE || vt == CT_FALSE) ? CT_BYTE : vt;
        for (uint64_t i = 0; i < n; i++) {
            rc = skip(r, kt, depth + 1);
            if (rc == PBA_FOOTER_OK) {
                rc = skip(r, vt, depth + 1);
            }
            if (rc != PBA_FOOTER_OK) {
                return rc;
            }
        }
        return PBA_FOOTER_OK;
    }
    case CT_STRUCT:
        return skip_struct(r, depth + 1);
    default:
        return PBA_FOOTER_ERR_MALFORMED;
    }
}

/* Which of its known fields a structure reads: the spec's wire type of each, by id. A
 * field found with another wire type is skipped, as thrift skips it. */
static inline int wire_type_is(int found, int spec)
{
    if (spec == CT_TRUE) {
        return found == CT_TRUE || found == CT_FALSE;
    }
    return found == spec;
}

#endif /* PBA_COMPACT_H */
