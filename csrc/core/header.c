/*
 * header.c: the thrift-compact BloomFilterHeader that precedes every bitset.
 *
 * parquet.thrift:
 *   struct BloomFilterHeader {
 *     1: required i32 numBytes;
 *     2: required BloomFilterAlgorithm algorithm;      union { 1: SplitBlockAlgorithm BLOCK }
 *     3: required BloomFilterHash hash;                union { 1: XXHash XXHASH }
 *     4: required BloomFilterCompression compression;  union { 1: Uncompressed UNCOMPRESSED }
 *   }
 * The header is a few bytes read from an untrusted file, so the decoder is a
 * strict, bounded reader: it never reads past `len`, never allocates, skips
 * unknown fields to a bounded depth, and reports why it refused.
 */
#include "internal.h"

/* Thrift compact protocol type ids (thrift's compact protocol spec). */
enum {
    CT_STOP = 0,
    CT_BOOL_TRUE = 1,
    CT_BOOL_FALSE = 2,
    CT_BYTE = 3,
    CT_I16 = 4,
    CT_I32 = 5,
    CT_I64 = 6,
    CT_DOUBLE = 7,
    CT_BINARY = 8,
    CT_LIST = 9,
    CT_SET = 10,
    CT_MAP = 11,
    CT_STRUCT = 12
};

#define MAX_DEPTH 16

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} reader;

static int read_byte(reader *r, uint8_t *out)
{
    if (r->p >= r->end) {
        return PBA_ERR_HDR_TRUNCATED;
    }
    *out = *r->p++;
    return PBA_OK;
}

static int read_varint(reader *r, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        uint8_t b;
        const int rc = read_byte(r, &b);
        if (rc != PBA_OK) {
            return rc;
        }
        if (shift == 63 && (b & 0x7e) != 0) {
            return PBA_ERR_HDR_MALFORMED; /* more than 64 bits */
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return PBA_OK;
        }
    }
    return PBA_ERR_HDR_MALFORMED;
}

static int64_t unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

static int skip(reader *r, int type, int depth);

/* Reads a field header. *type is CT_STOP at the end of a struct. */
static int read_field_header(reader *r, int16_t *last_id, int *type, int16_t *id)
{
    uint8_t b;
    int rc = read_byte(r, &b);
    if (rc != PBA_OK) {
        return rc;
    }
    *type = b & 0x0f;
    if (*type == CT_STOP) {
        return PBA_OK;
    }
    const unsigned delta = b >> 4;
    if (delta != 0) {
        *id = (int16_t)(*last_id + (int16_t)delta);
    } else {
        uint64_t raw;
        rc = read_varint(r, &raw);
        if (rc != PBA_OK) {
            return rc;
        }
        const int64_t v = unzigzag(raw);
        if (v < -32768 || v > 32767) {
            return PBA_ERR_HDR_MALFORMED;
        }
        *id = (int16_t)v;
    }
    *last_id = *id;
    return *type > CT_STRUCT ? PBA_ERR_HDR_MALFORMED : PBA_OK;
}

static int skip_struct(reader *r, int depth)
{
    if (depth > MAX_DEPTH) {
        return PBA_ERR_HDR_MALFORMED;
    }
    int16_t last = 0;
    for (;;) {
        int type;
        int16_t id = 0;
        int rc = read_field_header(r, &last, &type, &id);
        if (rc != PBA_OK) {
            return rc;
        }
        if (type == CT_STOP) {
            return PBA_OK;
        }
        rc = skip(r, type, depth + 1);
        if (rc != PBA_OK) {
            return rc;
        }
    }
}

/* Every element consumes at least one byte except booleans carried in a
 * field header, which never appear inside containers; so a container that
 * claims more elements than there are bytes runs out of input and stops. */
static int skip(reader *r, int type, int depth)
{
    uint8_t b;
    uint64_t n;
    int rc;
    if (depth > MAX_DEPTH) {
        return PBA_ERR_HDR_MALFORMED;
    }
    switch (type) {
    case CT_BOOL_TRUE:
    case CT_BOOL_FALSE:
        return PBA_OK; /* value lives in the field header */
    case CT_BYTE:
        return read_byte(r, &b);
    case CT_I16:
    case CT_I32:
    case CT_I64:
        return read_varint(r, &n);
    case CT_DOUBLE:
        if ((size_t)(r->end - r->p) < 8) {
            return PBA_ERR_HDR_TRUNCATED;
        }
        r->p += 8;
        return PBA_OK;
    case CT_BINARY:
        rc = read_varint(r, &n);
        if (rc != PBA_OK) {
            return rc;
        }
        if (n > (uint64_t)(r->end - r->p)) {
            return PBA_ERR_HDR_TRUNCATED;
        }
        r->p += n;
        return PBA_OK;
    case CT_LIST:
    case CT_SET: {
        rc = read_byte(r, &b);
        if (rc != PBA_OK) {
            return rc;
        }
        int elem = b & 0x0f;
        n = b >> 4;
        if (n == 15) {
            rc = read_varint(r, &n);
            if (rc != PBA_OK) {
                return rc;
            }
        }
        if (elem == CT_BOOL_FALSE) {
            elem = CT_BYTE; /* booleans in containers take one byte each */
        } else if (elem == CT_BOOL_TRUE) {
            elem = CT_BYTE;
        }
        /* An element type outside thrift's is malformed even in an empty list, as
         * thrift's own decoders say (found by fuzzing against thrift's Python
         * decoder); STOP, which no writer uses, can only head an empty one. */
        if (elem > CT_STRUCT || (elem == CT_STOP && n != 0)) {
            return PBA_ERR_HDR_MALFORMED;
        }
        if (elem == CT_STOP) {
            return PBA_OK;
        }
        for (uint64_t i = 0; i < n; i++) {
            rc = skip(r, elem, depth + 1);
            if (rc != PBA_OK) {
                return rc;
            }
        }
        return PBA_OK;
    }
    case CT_MAP: {
        rc = read_varint(r, &n);
        if (rc != PBA_OK || n == 0) {
            return rc;
        }
        rc = read_byte(r, &b);
        if (rc != PBA_OK) {
            return rc;
        }
        int kt = b >> 4, vt = b & 0x0f;
        kt = (kt == CT_BOOL_TRUE || kt == CT_BOOL_FALSE) ? CT_BYTE : kt;
        vt = (vt == CT_BOOL_TRUE || vt == CT_BOOL_FALSE) ? CT_BYTE : vt;
        if (kt == CT_STOP || kt > CT_STRUCT || vt == CT_STOP || vt > CT_STRUCT) {
            return PBA_ERR_HDR_MALFORMED;
        }
        for (uint64_t i = 0; i < n; i++) {
            rc = skip(r, kt, depth + 1);
            if (rc == PBA_OK) {
                rc = skip(r, vt, depth + 1);
            }
            if (rc != PBA_OK) {
                return rc;
            }
        }
        return PBA_OK;
    }
    case CT_STRUCT:
        return skip_struct(r, depth + 1);
    default:
        return PBA_ERR_HDR_MALFORMED;
    }
}

/* Reads one of the header's unions. *member is the id of the field that is
 * set (0 when none is); the member's content (an empty struct in every
 * member the spec defines) is skipped. */
static int read_union(reader *r, int16_t *member, int *member_type)
{
    int16_t last = 0;
    *member = 0;
    *member_type = CT_STOP;
    for (;;) {
        int type;
        int16_t id = 0;
        int rc = read_field_header(r, &last, &type, &id);
        if (rc != PBA_OK) {
            return rc;
        }
        if (type == CT_STOP) {
            return PBA_OK;
        }
        if (*member != 0 && *member != id) {
            return PBA_ERR_HDR_MALFORMED; /* a union with two members set */
        }
        *member = id;
        *member_type = type;
        rc = skip(r, type, 2);
        if (rc != PBA_OK) {
            return rc;
        }
    }
}

int pba_bloom_header_decode(const uint8_t *buf, size_t len, uint64_t max_bytes,
                            pba_bloom_header *out)
{
    if (buf == NULL || out == NULL) {
        return PBA_ERR_ARG;
    }
    reader r = {buf, buf + len};
    int16_t last = 0;
    int have_num_bytes = 0;
    int64_t num_bytes = 0;
    int16_t members[3] = {0, 0, 0};
    int member_types[3] = {CT_STOP, CT_STOP, CT_STOP};
    int seen[3] = {0, 0, 0};
    for (;;) {
        int type;
        int16_t id = 0;
        int rc = read_field_header(&r, &last, &type, &id);
        if (rc != PBA_OK) {
            return rc;
        }
        if (type == CT_STOP) {
            break;
        }
        if (id == 1) {
            if (type != CT_I32) {
                return PBA_ERR_HDR_MALFORMED;
            }
            uint64_t raw;
            rc = read_varint(&r, &raw);
            if (rc != PBA_OK) {
                return rc;
            }
            num_bytes = unzigzag(raw);
            if (num_bytes < INT32_MIN || num_bytes > INT32_MAX) {
                return PBA_ERR_HDR_MALFORMED; /* an i32 varint carrying more */
            }
            have_num_bytes = 1;
        } else if (id >= 2 && id <= 4) {
            if (type != CT_STRUCT) {
                return PBA_ERR_HDR_MALFORMED;
            }
            rc = read_union(&r, &members[id - 2], &member_types[id - 2]);
            if (rc != PBA_OK) {
                return rc;
            }
            seen[id - 2] = 1;
        } else {
            rc = skip(&r, type, 1); /* a field a later spec may add */
            if (rc != PBA_OK) {
                return rc;
            }
        }
    }
    if (!have_num_bytes || !seen[0] || !seen[1] || !seen[2]) {
        return PBA_ERR_HDR_MISSING;
    }
    /* Member 1 of each union is the only one the spec defines: BLOCK,
     * XXHASH, UNCOMPRESSED; each is an (empty) struct. */
    if (members[0] != 1 || member_types[0] != CT_STRUCT) {
        return PBA_ERR_HDR_ALGORITHM;
    }
    if (members[1] != 1 || member_types[1] != CT_STRUCT) {
        return PBA_ERR_HDR_HASH;
    }
    if (members[2] != 1 || member_types[2] != CT_STRUCT) {
        return PBA_ERR_HDR_COMPRESSION;
    }
    out->num_bytes = num_bytes;
    out->header_len = (size_t)(r.p - buf);
    if (num_bytes <= 0 || !pba_sbbf_valid_num_bytes((uint64_t)num_bytes, max_bytes)) {
        return PBA_ERR_HDR_NUMBYTES;
    }
    return PBA_OK;
}

static size_t put_varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

int pba_bloom_header_encode(uint32_t num_bytes, uint8_t out[PBA_HEADER_MAX_ENCODED])
{
    if (out == NULL || num_bytes > (uint32_t)INT32_MAX ||
        !pba_sbbf_valid_num_bytes(num_bytes, (uint64_t)INT32_MAX)) {
        return PBA_ERR_SIZE;
    }
    size_t n = 0;
    out[n++] = 0x15; /* field 1, delta 1, i32 */
    n += put_varint(out + n, (uint64_t)num_bytes << 1); /* zigzag of a positive int */
    /* Fields 2, 3 and 4 (delta 1, struct), each a union whose member 1
     * (delta 1, struct) is an empty struct: 1c 1c 00 00. */
    for (int f = 0; f < 3; f++) {
        out[n++] = 0x1c;
        out[n++] = 0x1c;
        out[n++] = 0x00;
        out[n++] = 0x00;
    }
    out[n++] = 0x00; /* end of BloomFilterHeader */
    return (int)n;
}
