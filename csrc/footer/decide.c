/*
 * decide.c: a file's equality leaves decided from its scanned chunks and its filters
 * (pybloom_async_footer.h, "the equality leaves decided in C").
 *
 * Each step is the Python evaluator's, read from pybloom_async/pruning/evaluate.py
 * (_before_filter, eval_leaf) and bounds.py (stats_bounds, key_span): a chunk whose null
 * count equals its value count holds no match (when the column is not repeated); min and
 * max are used only when both are the kind's width, neither is NaN and min <= max; a
 * byte-string maximum that may be truncated bounds the values by its prefix's successor,
 * exclusive; the keys left are a span of the sorted keys found by the same binary
 * searches as Python's bisect. Where the Python decoder would read the statistics
 * differently (another width) the answer is UNSURE, and the caller asks it.
 */
#if defined(__unix__) || defined(__APPLE__)
#define _POSIX_C_SOURCE 200809L /* pread under -std=c99 */
#endif
#include <stdlib.h>
#include <string.h>

#include "pread.h"
#include "pybloom_async.h"
#include "pybloom_async_footer.h"

/* ---- comparing keys and statistics in a kind's order ----------------------------------- */

typedef struct {
    const uint8_t *p;
    size_t len;
} bytes_ref;

typedef struct {
    int kind;
    int width;
    int64_t i;
    uint64_t u;
    double d;
    bytes_ref b;
} key_value;

static int64_t load_int(const uint8_t *p, int width)
{
    if (width == 4) {
        uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24;
        return (int64_t)(int32_t)v;
    }
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--) {
        v = v << 8 | p[k];
    }
    return (int64_t)v;
}

static uint64_t load_uint(const uint8_t *p, int width)
{
    uint64_t v = 0;
    for (int k = width - 1; k >= 0; k--) {
        v = v << 8 | p[k];
    }
    return v;
}

static double load_float(const uint8_t *p, int width)
{
    if (width == 4) {
        float f;
        memcpy(&f, p, 4);
        return (double)f;
    }
    double d;
    memcpy(&d, p, 8);
    return d;
}

/* Read a value of the kind; 0 when its length is not the kind's width. */
static int load(int kind, int width, const uint8_t *p, size_t len, key_value *out)
{
    out->kind = kind;
    out->width = width;
    if (kind == PBA_KEY_BYTES) {
        out->b.p = p;
        out->b.len = len;
        return 1;
    }
    if (len != (size_t)width) {
        return 0;
    }
    if (kind == PBA_KEY_INT) {
        out->i = load_int(p, width);
    } else if (kind == PBA_KEY_UINT) {
        out->u = load_uint(p, width);
    } else {
        out->d = load_float(p, width);
    }
    return 1;
}

static int cmp_bytes(bytes_ref a, bytes_ref b)
{
    const size_t n = a.len < b.len ? a.len : b.len;
    const int c = n ? memcmp(a.p, b.p, n) : 0;
    if (c) {
        return c < 0 ? -1 : 1;
    }
    return a.len < b.len ? -1 : (a.len > b.len ? 1 : 0);
}

/* a < b in the kind's order (floats as Python compares them: -0.0 equals 0.0). */
static int less(const key_value *a, const key_value *b)
{
    switch (a->kind) {
    case PBA_KEY_INT:
        return a->i < b->i;
    case PBA_KEY_UINT:
        return a->u < b->u;
    case PBA_KEY_FLOAT:
        return a->d < b->d;
    default:
        return cmp_bytes(a->b, b->b) < 0;
    }
}

/* key < successor(prefix), where successor(prefix) is prefix[0..m-1) followed by
 * prefix[m-1] + 1, m being prefix's length without its trailing 0xff bytes (m >= 1). */
static int less_than_successor(bytes_ref key, const uint8_t *prefix, size_t m)
{
    const size_t n = key.len < m ? key.len : m;
    for (size_t k = 0; k < n; k++) {
        const unsigned s = (unsigned)prefix[k] + (k == m - 1);
        if (key.p[k] != s) {
            return key.p[k] < s;
        }
    }
    return key.len < m;
}

static void key_at(const pba_eq_leaf *leaf, size_t k, key_value *out)
{
    const uint64_t start = leaf->key_offsets[k];
    (void)load(leaf->kind, leaf->width, leaf->keys + start,
               (size_t)(leaf->key_offsets[k + 1] - start), out);
}

/* What a binary search asks of a key: whether it lies before the place sought. */
typedef struct {
    int how; /* BELOW, NOT_ABOVE or BELOW_SUCCESSOR */
    const key_value *v;
    const uint8_t *prefix;
    size_t m;
} place;

enum { BELOW, NOT_ABOVE, BELOW_SUCCESSOR };

static int before_place(const key_value *k, const place *at)
{
    switch (at->how) {
    case BELOW: /* k < v */
        return less(k, at->v);
    case NOT_ABOVE: /* k <= v */
        return !less(at->v, k);
    default: /* k < successor(prefix[0..m)) */
        return less_than_successor(k->b, at->prefix, at->m);
    }
}

/* The first key not before the place (the sorted keys lie before it, then not): BELOW is
 * Python's bisect_left of v, NOT_ABOVE its bisect_right. */
static size_t first_not_before(const pba_eq_leaf *leaf, const place *at)
{
    size_t lo = 0, hi = leaf->n_keys;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        key_value k;
        key_at(leaf, mid, &k);
        if (before_place(&k, at)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* ---- the statistics' step ------------------------------------------------------------- */

static int is_nan(const key_value *v)
{
    return v->kind == PBA_KEY_FLOAT && v->d != v->d;
}

/* A chunk's min/max as bounds in a kind's order (pruning/bounds.py, stats_bounds). */
typedef struct {
    int has_low, has_high;
    key_value low, high;
    /* A byte-string maximum that may be truncated bounds the values by its prefix's
     * successor, exclusive: prefix[0..m) (m = 0: no bound above). */
    int successor;
    const uint8_t *prefix;
    size_t m;
} stat_bounds;

enum { BOUNDS_UNSURE = -1, BOUNDS_NONE = 0, BOUNDS_SOME = 1 };

/* The chunk's statistics' bounds: BOUNDS_SOME, BOUNDS_NONE (no min/max, NaN bounds or
 * bounds out of order: not used) or BOUNDS_UNSURE (a value of another width, or bytes
 * outside buf: the Python evaluator decides). */
static int read_bounds(const uint8_t *buf, size_t len, const pba_footer_chunk *c, int kind,
                       int width, stat_bounds *b)
{
    memset(b, 0, sizeof *b);
    b->has_low = (c->present & PBA_FC_MIN_VALUE) != 0;
    b->has_high = (c->present & PBA_FC_MAX_VALUE) != 0;
    if (!b->has_low && !b->has_high) {
        return BOUNDS_NONE;
    }
    const uint8_t *high_p = NULL;
    size_t high_len = 0;
    if (b->has_low) {
        if (c->min_value_off > len || c->min_value_len > len - c->min_value_off) {
            return BOUNDS_UNSURE;
        }
        /* Python: an integer of another width is read as that width; a float of another
         * width is ignored. Neither is guessed here. */
        if (!load(kind, width, buf + c->min_value_off, (size_t)c->min_value_len, &b->low)) {
            return BOUNDS_UNSURE;
        }
    }
    if (b->has_high) {
        if (c->max_value_off > len || c->max_value_len > len - c->max_value_off) {
            return BOUNDS_UNSURE;
        }
        high_p = buf + c->max_value_off;
        high_len = (size_t)c->max_value_len;
        if (!load(kind, width, high_p, high_len, &b->high)) {
            return BOUNDS_UNSURE;
        }
    }
    if ((b->has_low && is_nan(&b->low)) || (b->has_high && is_nan(&b->high))) {
        return BOUNDS_NONE; /* NaN bounds are not used */
    }
    if (b->has_low && b->has_high && less(&b->high, &b->low)) {
        return BOUNDS_NONE; /* out of order: not trusted */
    }
    const int exact = !((c->present & PBA_FC_IS_MAX_VALUE_EXACT) && !c->is_max_value_exact);
    if (b->has_high && kind == PBA_KEY_BYTES && !exact) {
        size_t m = high_len;
        while (m > 0 && high_p[m - 1] == 0xff) {
            m--;
        }
        b->successor = 1;
        b->prefix = high_p;
        b->m = m;
        b->has_high = m > 0;
    }
    return BOUNDS_SOME;
}

/* Whether every value of the chunk is null (its column not repeated). */
static int all_null(const pba_footer_chunk *c, int nulls_exclude)
{
    return nulls_exclude && (c->present & PBA_FC_STATISTICS) &&
           (c->present & PBA_FC_NULL_COUNT) && c->num_values > 0 &&
           c->null_count == c->num_values;
}

static void decide_one(const uint8_t *buf, size_t len, const pba_footer_chunk *c,
                       const pba_eq_leaf *leaf, pba_eq_outcome *out)
{
    const uint32_t n = (uint32_t)leaf->n_keys;
    out->code = PBA_EQ_SPAN;
    out->lo = 0;
    out->hi = n;
    out->filter_offset = (c->present & PBA_FC_BLOOM_FILTER_OFFSET) ? c->bloom_filter_offset : -1;
    out->filter_length =
        (c->present & PBA_FC_BLOOM_FILTER_LENGTH) ? (int64_t)c->bloom_filter_length : -1;
    if (!(c->present & PBA_FC_NUM_VALUES)) {
        out->code = PBA_EQ_UNSURE; /* the scanner requires it: never seen */
        return;
    }
    if (!(c->present & PBA_FC_STATISTICS)) {
        return;
    }
    if (all_null(c, leaf->nulls_exclude)) {
        out->code = PBA_EQ_NULLS;
        return;
    }
    stat_bounds b;
    const int found = read_bounds(buf, len, c, leaf->kind, leaf->width, &b);
    if (found == BOUNDS_UNSURE) {
        out->code = PBA_EQ_UNSURE;
        return;
    }
    if (found == BOUNDS_NONE) {
        return;
    }
    size_t lo = 0;
    if (b.has_low) {
        const place at = {BELOW, &b.low, NULL, 0};
        lo = first_not_before(leaf, &at);
    }
    size_t hi = n;
    if (b.has_high) {
        const place at = b.successor ? (place){BELOW_SUCCESSOR, NULL, b.prefix, b.m}
                                     : (place){NOT_ABOVE, &b.high, NULL, 0};
        hi = first_not_before(leaf, &at);
    }
    if (lo >= hi) {
        out->code = PBA_EQ_STATS;
        return;
    }
    out->lo = (uint32_t)lo;
    out->hi = (uint32_t)hi;
}

/* A range end as a key_value of the kind (8-byte numbers); 0 when of the wrong length. */
static int load_end(int kind, const uint8_t *p, size_t n, key_value *out)
{
    return load(kind, kind == PBA_KEY_BYTES ? 0 : 8, p, n, out);
}

/* Whether the range and the chunk's bounds may share a value (bounds.py, _meets; the
 * range is not empty: an empty one the caller finds TYPED). */
static int range_meets(const pba_range_leaf *r, const stat_bounds *b)
{
    key_value low, high;
    if (r->has_high && b->has_low) {
        (void)load_end(r->kind, r->high, r->high_len, &high);
        /* out when b.low > high, or b.low == high with the range open above */
        if (less(&high, &b->low) || (r->high_open && !less(&b->low, &high))) {
            return 0;
        }
    }
    if (r->has_low && b->has_high) {
        (void)load_end(r->kind, r->low, r->low_len, &low);
        if (b->successor) {
            /* values < successor(prefix): out when successor <= low */
            return less_than_successor(low.b, b->prefix, b->m);
        }
        /* out when b.high < low, or b.high == low with the range open below */
        if (less(&b->high, &low) || (r->low_open && !less(&low, &b->high))) {
            return 0;
        }
    }
    return 1;
}

static int32_t decide_range(const uint8_t *buf, size_t len, const pba_footer_chunk *c,
                            const pba_range_leaf *r)
{
    if (!(c->present & PBA_FC_NUM_VALUES)) {
        return PBA_RANGE_UNSURE; /* the scanner requires it: never seen */
    }
    if (all_null(c, r->nulls_exclude)) {
        return PBA_RANGE_NULLS;
    }
    if (r->typed_excluded) {
        return PBA_RANGE_TYPED;
    }
    if (!(c->present & PBA_FC_STATISTICS)) {
        return PBA_RANGE_MAY;
    }
    stat_bounds b;
    const int found = read_bounds(buf, len, c, r->kind, r->width, &b);
    if (found == BOUNDS_UNSURE) {
        return PBA_RANGE_UNSURE;
    }
    if (found == BOUNDS_NONE) {
        return PBA_RANGE_MAY;
    }
    return range_meets(r, &b) ? PBA_RANGE_MAY : PBA_RANGE_STATS;
}

/* A leaf's slot, kind and width as the calls take them: bytes have width 0, numbers 4 or 8. */
static int valid_kind(int32_t slot, size_t n_wanted, int32_t kind, int32_t width)
{
    if (slot < 0 || (size_t)slot >= n_wanted) {
        return 0;
    }
    if (kind == PBA_KEY_BYTES) {
        return width == 0;
    }
    return kind >= PBA_KEY_INT && kind <= PBA_KEY_FLOAT && (width == 4 || width == 8);
}

/* The calls' common arguments: the records and outputs present when there is work. */
static int valid_args(const uint8_t *buf, size_t len, const void *chunks, size_t n_groups,
                      const void *leaves, size_t n_leaves, const void *out)
{
    return !((n_groups && n_leaves && (!chunks || !out)) || (n_leaves && !leaves) ||
             (len && !buf));
}

static int valid_range(const pba_range_leaf *r, size_t n_wanted)
{
    if (!valid_kind(r->slot, n_wanted, r->kind, r->width)) {
        return 0;
    }
    key_value v;
    return (!r->has_low || (r->low && load_end(r->kind, r->low, r->low_len, &v))) &&
           (!r->has_high || (r->high && load_end(r->kind, r->high, r->high_len, &v)));
}

int pba_decide_ranges(const uint8_t *buf, size_t len, const pba_footer_chunk *chunks,
                      size_t n_groups, size_t n_wanted, const pba_range_leaf *leaves,
                      size_t n_leaves, int32_t *out)
{
    if (!valid_args(buf, len, chunks, n_groups, leaves, n_leaves, out)) {
        return PBA_ERR_ARG;
    }
    for (size_t i = 0; i < n_leaves; i++) {
        if (!valid_range(&leaves[i], n_wanted)) {
            return PBA_ERR_ARG;
        }
    }
    for (size_t g = 0; g < n_groups; g++) {
        for (size_t i = 0; i < n_leaves; i++) {
            const pba_range_leaf *r = &leaves[i];
            out[g * n_leaves + i] =
                decide_range(buf, len, &chunks[g * n_wanted + (size_t)r->slot], r);
        }
    }
    return PBA_OK;
}

static int valid_leaf(const pba_eq_leaf *leaf, size_t n_wanted)
{
    if (!valid_kind(leaf->slot, n_wanted, leaf->kind, leaf->width) || leaf->n_keys == 0 ||
        leaf->n_keys > UINT32_MAX || !leaf->keys || !leaf->key_offsets) {
        return 0;
    }
    for (size_t k = 0; k < leaf->n_keys; k++) {
        const uint64_t a = leaf->key_offsets[k], b = leaf->key_offsets[k + 1];
        if (b < a || (leaf->kind != PBA_KEY_BYTES && b - a != (uint64_t)leaf->width)) {
            return 0;
        }
    }
    return 1;
}

int pba_decide_equalities(const uint8_t *buf, size_t len, const pba_footer_chunk *chunks,
                          size_t n_groups, size_t n_wanted, const pba_eq_leaf *leaves,
                          size_t n_leaves, pba_eq_outcome *out)
{
    if (!valid_args(buf, len, chunks, n_groups, leaves, n_leaves, out)) {
        return PBA_ERR_ARG;
    }
    for (size_t i = 0; i < n_leaves; i++) {
        if (!valid_leaf(&leaves[i], n_wanted)) {
            return PBA_ERR_ARG;
        }
    }
    for (size_t g = 0; g < n_groups; g++) {
        for (size_t i = 0; i < n_leaves; i++) {
            const pba_eq_leaf *leaf = &leaves[i];
            decide_one(buf, len, &chunks[g * n_wanted + (size_t)leaf->slot], leaf,
                       &out[g * n_leaves + i]);
        }
    }
    return PBA_OK;
}

/* ---- the filters' step ---------------------------------------------------------------- */

/* A filter's header may take at most this many bytes to be read here (the package's
 * limit is far below it); a longer one is UNSURE. */
#define HEADER_READ 256u
#define BLOCK 32u
/* A filter of at most this many bytes is read whole, in one read (above HEADER_READ). */
#define WHOLE_READ 16384u
/* A larger filter is read whole when it is asked one hash per this many bytes or more: a
 * 32-byte read from the page cache costs about what copying 8 KiB more in one read does
 * (0.6 us against 0.04 us a KiB, measured), and 100 keys asked of a 32 KiB filter made
 * 100 reads. */
#define WHOLE_PER_HASH 8192u

/* A bitset in memory asked about the probe's hashes (each one, when it wants `may`). */
static int32_t probe_bits(const uint8_t *bits, size_t num_bytes, const pba_probe *p)
{
    if (!p->may) {
        const size_t may =
            p->n_hashes ? pba_sbbf_count_hashes(bits, num_bytes, p->hashes, p->n_hashes) : 0;
        return may ? PBA_PROBE_MAY : PBA_PROBE_ABSENT;
    }
    int32_t found = PBA_PROBE_ABSENT;
    for (size_t k = 0; k < p->n_hashes; k++) {
        if (pba_sbbf_check_hash(bits, num_bytes, p->hashes[k])) {
            p->may[k] = 1;
            found = PBA_PROBE_MAY;
        }
    }
    return found;
}

/* Whether buf[0..len), the start of the probe's filter, holds a header the reader would
 * take: numBytes a power of two in [32, max_filter_bytes], the header at most
 * max_header_bytes, and the two together the filter's recorded length. */
static int header_agrees(const uint8_t *buf, size_t len, const pba_probe *p,
                         uint64_t max_filter_bytes, uint64_t max_header_bytes,
                         pba_bloom_header *h)
{
    return pba_bloom_header_decode(buf, len, max_filter_bytes, h) == PBA_OK &&
           h->header_len <= max_header_bytes && h->num_bytes >= (int64_t)BLOCK &&
           h->num_bytes % BLOCK == 0 && (int64_t)h->header_len + h->num_bytes == p->length;
}

/* The filter's `length` bytes in memory: its header checked, then its bitset probed. */
static int32_t probe_memory(const uint8_t *bytes, const pba_probe *p, uint64_t max_filter_bytes,
                            uint64_t max_header_bytes)
{
    pba_bloom_header h;
    if (!header_agrees(bytes, (size_t)p->length, p, max_filter_bytes, max_header_bytes, &h)) {
        return PBA_PROBE_UNSURE;
    }
    return probe_bits(bytes + h.header_len, (size_t)h.num_bytes, p);
}

#ifdef PBA_HAVE_PREAD
/* The whole filter (its `length` bytes: at most max_serialized, checked by the caller) in
 * one read, then probed in memory. */
static int32_t probe_whole(int fd, const pba_probe *p, uint64_t max_filter_bytes,
                           uint64_t max_header_bytes, uint64_t *requests, uint64_t *bytes_read,
                           int *nomem)
{
    uint8_t *whole = malloc((size_t)p->length);
    if (!whole) {
        *nomem = 1;
        return PBA_PROBE_UNSURE;
    }
    int32_t found = PBA_PROBE_UNSURE;
    if (pba_read_at(fd, whole, (size_t)p->length, p->offset, requests, bytes_read)) {
        found = probe_memory(whole, p, max_filter_bytes, max_header_bytes);
    }
    free(whole);
    return found;
}

static int32_t probe_one(int fd, const pba_probe *p, int64_t limit, uint64_t max_serialized,
                         uint64_t max_filter_bytes, uint64_t max_header_bytes,
                         uint64_t *requests, uint64_t *bytes_read, int *nomem)
{
    const int64_t min_filter = 15 + BLOCK; /* the smallest header, then one block */
    if (p->offset < 4 || p->length < min_filter || (uint64_t)p->length > max_serialized ||
        p->offset > limit || p->length > limit - p->offset) {
        return PBA_PROBE_UNSURE;
    }
    if (p->n_hashes && !p->hashes) {
        return PBA_PROBE_UNSURE;
    }
    if (p->held) {
        return probe_memory(p->held, p, max_filter_bytes, max_header_bytes);
    }
    if ((uint64_t)p->length <= WHOLE_READ) {
        /* A small filter: all of it in one read, no second one for a block. */
        return probe_whole(fd, p, max_filter_bytes, max_header_bytes, requests, bytes_read,
                           nomem);
    }
    /* A large filter: its header first (the filter is longer than this read). */
    pba_bloom_header h;
    uint8_t head[HEADER_READ];
    if (!pba_read_at(fd, head, HEADER_READ, p->offset, requests, bytes_read) ||
        !header_agrees(head, HEADER_READ, p, max_filter_bytes, max_header_bytes, &h)) {
        return PBA_PROBE_UNSURE;
    }
    const int64_t bits_at = p->offset + (int64_t)h.header_len;
    const size_t num_bytes = (size_t)h.num_bytes;
    const uint32_t blocks = (uint32_t)(num_bytes / BLOCK);
    /* How much of the bitset the header's read holds already. */
    const size_t held = HEADER_READ - h.header_len;
    if ((uint64_t)p->n_hashes * WHOLE_PER_HASH >= num_bytes) {
        /* Enough hashes (one per 256 blocks or more): one read of it all. */
        return probe_whole(fd, p, max_filter_bytes, max_header_bytes, requests, bytes_read,
                           nomem);
    }
    int32_t found = PBA_PROBE_ABSENT;
    for (size_t k = 0; k < p->n_hashes; k++) {
        const uint64_t hash = p->hashes[k];
        const uint32_t b = pba_sbbf_block_index(hash, blocks);
        uint8_t block[BLOCK];
        const size_t at = (size_t)b * BLOCK;
        if (at + BLOCK <= held) {
            memcpy(block, head + h.header_len + at, BLOCK);
        } else if (!pba_read_at(fd, block, BLOCK, bits_at + (int64_t)at, requests, bytes_read)) {
            return PBA_PROBE_UNSURE;
        }
        /* One block is a filter of one block: the hash's bits in it are the same. */
        if (pba_sbbf_check_hash(block, BLOCK, hash)) {
            found = PBA_PROBE_MAY;
            if (!p->may) {
                break;
            }
            p->may[k] = 1;
        }
    }
    return found;
}
#endif

int pba_probe_filters(int fd, const pba_probe *probes, size_t n, int64_t limit,
                      uint64_t max_serialized, uint64_t max_filter_bytes,
                      uint64_t max_header_bytes, int32_t *out, uint64_t *requests,
                      uint64_t *bytes_read)
{
    if ((n && (!probes || !out)) || !requests || !bytes_read) {
        return PBA_ERR_ARG;
    }
    *requests = 0;
    *bytes_read = 0;
#ifdef PBA_HAVE_PREAD
    int nomem = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = probe_one(fd, &probes[i], limit, max_serialized, max_filter_bytes,
                           max_header_bytes, requests, bytes_read, &nomem);
        if (nomem) {
            return PBA_ERR_NOMEM;
        }
    }
#else
    (void)probe_memory;
    (void)fd;
    (void)limit;
    (void)max_serialized;
    (void)max_filter_bytes;
    (void)max_header_bytes;
    for (size_t i = 0; i < n; i++) {
        out[i] = PBA_PROBE_UNSURE;
    }
#endif
    return PBA_OK;
}
