/*
 * pass.c: a local file's pruning in one call (pybloom_async_footer.h, "a local file
 * decided in one call").
 *
 * Each step is the one the package takes for the file in Python, in the same order and
 * with the same checks: the trailer as pybloom_async/parquet/tail.py reads it, the head's
 * required fields as parquet/decode.py requires them, the scan and the statistics as
 * footer.c and decide.c read them, round 1 and round 2 as pruning/native.py runs them.
 * What differs from that usual shape is handed back (ASIDE) rather than decided.
 */
#if defined(__unix__) || defined(__APPLE__)
#define _POSIX_C_SOURCE 200809L /* pread, O_CLOEXEC under -std=c99 */
#endif
#include <string.h>

#include "compact.h"
#include "pread.h"
#include "pybloom_async.h"
#include "pybloom_async_footer.h"

#ifdef PBA_HAVE_PREAD
#include <fcntl.h>
#include <sys/stat.h>
#endif

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

static const uint8_t MAGIC[4] = {'P', 'A', 'R', '1'};
#define TRAILER 8
#define MIN_FILE (4 + TRAILER) /* leading magic and trailer: a footer needs a byte more */

/* The steps form one outcome, with a bounded stack: checked once per call. */
static int steps_valid(const pba_pass_binding *b)
{
    if (b->n_steps == 0 || b->n_steps > PBA_PASS_MAX_STEPS || !b->steps) {
        return 0;
    }
    size_t depth = 0;
    for (size_t k = 0; k < b->n_steps; k++) {
        const pba_pass_step s = b->steps[k];
        if (s.op == PBA_PASS_LEAF || s.op == PBA_PASS_RANGE) {
            const size_t n = s.op == PBA_PASS_LEAF ? b->n_eq : b->n_ranges;
            if (s.arg < 0 || (size_t)s.arg >= n) {
                return 0;
            }
            depth++;
        } else if (s.op == PBA_PASS_KEEP) {
            depth++;
        } else if (s.op == PBA_PASS_AND || s.op == PBA_PASS_OR) {
            if (s.arg < 1 || (size_t)s.arg > depth) {
                return 0;
            }
            depth -= (size_t)s.arg - 1;
        } else {
            return 0;
        }
    }
    return depth == 1;
}

/* Whether the row group is excluded, its leaves' exclusions given (the equality leaves',
 * then the range leaves'; steps_valid held). */
static int excluded(const pba_pass_binding *b, const uint8_t *leaf_excluded)
{
    uint8_t stack[PBA_PASS_MAX_STEPS];
    size_t top = 0;
    stack[0] = 0;
    for (size_t k = 0; k < b->n_steps; k++) {
        const pba_pass_step s = b->steps[k];
        if (s.op == PBA_PASS_LEAF) {
            stack[top++] = leaf_excluded[s.arg];
        } else if (s.op == PBA_PASS_RANGE) {
            stack[top++] = leaf_excluded[b->n_eq + (size_t)s.arg];
        } else if (s.op == PBA_PASS_KEEP) {
            stack[top++] = 0;
        } else {
            const size_t n = (size_t)s.arg;
            uint8_t v = s.op == PBA_PASS_AND ? 0 : 1;
            for (size_t j = top - n; j < top; j++) {
                v = s.op == PBA_PASS_AND ? (uint8_t)(v | stack[j]) : (uint8_t)(v & stack[j]);
            }
            top -= n;
            stack[top++] = v;
        }
    }
    return stack[0];
}

/* Where the first schema field lies in the FileMetaData: 0 when not found or malformed
 * (the scan that follows says more; a later second schema field is caught there). */
static int first_schema(const uint8_t *buf, size_t len, uint64_t *off, uint64_t *n)
{
    reader r = {buf, buf, buf + len};
    int last = 0;
    for (;;) {
        int type, id = 0;
        if (read_field_header(&r, &last, &type, &id) != PBA_FOOTER_OK || type == CT_STOP) {
            return 0;
        }
        const uint8_t *start = r.p;
        if (skip(&r, type, 1) != PBA_FOOTER_OK) {
            return 0;
        }
        if (id == 2 && type == CT_LIST) {
            *off = (uint64_t)(start - buf);
            *n = (uint64_t)(r.p - start);
            return 1;
        }
    }
}

#ifdef PBA_HAVE_PREAD
static int aside(pba_pass_result *res, int why, int err)
{
    res->status = PBA_PASS_ASIDE;
    res->why = why;
    res->err = err;
    return PBA_OK;
}

/* Rounds 1 and 2 over the scanned footer `meta` of the file open as fd. */
static int decide(int fd, const pba_pass_binding *b, const pba_pass_scratch *s,
                  const uint8_t *meta, size_t meta_len, int64_t meta_off, const uint8_t *tail,
                  int64_t tail_start, int64_t size, size_t n_groups, uint8_t *codes,
                  pba_pass_result *res)
{
    const size_t m = b->n_eq, nr = b->n_ranges, w = m + nr;
    const size_t n_wanted = b->scan.n_wanted;
    if (pba_decide_equalities(meta, meta_len, s->chunks, n_groups, n_wanted, b->leaves, m,
                              s->outcomes) != PBA_OK) {
        return aside(res, PBA_WHY_STATISTICS, 0);
    }
    for (size_t k = 0; k < n_groups * m; k++) {
        if (s->outcomes[k].code == PBA_EQ_UNSURE) {
            return aside(res, PBA_WHY_STATISTICS, 0);
        }
    }
    /* The ranges (decided by the statistics alone) into `answers`, free until round 2. */
    if (nr && pba_decide_ranges(meta, meta_len, s->chunks, n_groups, n_wanted, b->ranges, nr,
                                s->answers) != PBA_OK) {
        return aside(res, PBA_WHY_STATISTICS, 0);
    }
    for (size_t g = 0; g < n_groups; g++) {
        for (size_t j = 0; j < nr; j++) {
            const int32_t r = s->answers[g * nr + j];
            if (r == PBA_RANGE_UNSURE) {
                return aside(res, PBA_WHY_STATISTICS, 0);
            }
            codes[g * w + m + j] = (uint8_t)(PBA_PASS_RANGE_CODES + r);
        }
    }
    /* Round 1: the statistics. A leaf left to its filter is UNASKED for now. */
    uint8_t leaf_out[2 * PBA_PASS_MAX_STEPS];
    size_t n_probes = 0, recorded = 0, absent = 0;
    for (size_t g = 0; g < n_groups; g++) {
        const pba_eq_outcome *o = &s->outcomes[g * m];
        uint8_t *c = &codes[g * w];
        for (size_t i = 0; i < m; i++) {
            c[i] = o[i].code == PBA_EQ_NULLS   ? PBA_PASS_NULLS
                   : o[i].code == PBA_EQ_STATS ? PBA_PASS_STATS
                                               : PBA_PASS_UNASKED;
            leaf_out[i] = c[i] != PBA_PASS_UNASKED;
        }
        for (size_t j = 0; j < nr; j++) {
            leaf_out[m + j] = c[m + j] != PBA_PASS_RANGE_CODES + PBA_RANGE_MAY;
        }
        if (excluded(b, leaf_out)) {
            continue;
        }
        /* Round 2's filters, counted over every leaf as pruning/native.py counts them. */
        for (size_t i = 0; i < m; i++) {
            if (o[i].filter_offset <= 0) {
                absent++;
                if (o[i].code == PBA_EQ_SPAN) {
                    c[i] = PBA_PASS_NO_FILTER;
                }
                continue;
            }
            recorded++;
            if (o[i].code != PBA_EQ_SPAN) {
                continue;
            }
            pba_probe *p = &s->probes[n_probes++];
            p->offset = o[i].filter_offset;
            p->length = o[i].filter_length;
            p->hashes = b->hashes[i] + o[i].lo;
            p->n_hashes = o[i].hi - o[i].lo;
            p->may = NULL;
            p->held = NULL;
            if (tail_start <= p->offset && 0 < p->length && p->length <= size - p->offset) {
                p->held = tail + (p->offset - tail_start); /* in the bytes read already */
            }
            s->answers[n_probes - 1] = (int32_t)(g * w + i); /* where its answer goes */
        }
    }
    if (recorded && absent) {
        return aside(res, PBA_WHY_MIXED, 0);
    }
    if (n_probes) {
        /* The probes' answers overwrite the places they were saved in, so keep those. */
        uint32_t at[64];
        for (size_t start = 0; start < n_probes; start += 64) {
            const size_t n = n_probes - start < 64 ? n_probes - start : 64;
            for (size_t k = 0; k < n; k++) {
                at[k] = (uint32_t)s->answers[start + k];
            }
            uint64_t requests = 0, bytes = 0;
            const int rc = pba_probe_filters(fd, s->probes + start, n, meta_off,
                                             s->max_serialized, s->max_filter_bytes,
                                             s->max_header_bytes, s->answers + start,
                                             &requests, &bytes);
            res->requests += requests;
            res->bytes_read += bytes;
            if (rc != PBA_OK) {
                return aside(res, PBA_WHY_FILTER, 0);
            }
            for (size_t k = 0; k < n; k++) {
                const int32_t a = s->answers[start + k];
                if (a != PBA_PROBE_ABSENT && a != PBA_PROBE_MAY) {
                    return aside(res, PBA_WHY_FILTER, 0);
                }
                codes[at[k]] = a == PBA_PROBE_ABSENT ? PBA_PASS_ABSENT : PBA_PASS_MAY;
            }
        }
    }
    res->status = PBA_PASS_DECIDED;
    return PBA_OK;
}

static int pass_open(int fd, const pba_pass_binding *bindings,
                     size_t n_bindings, const pba_pass_scratch *s, int64_t *num_rows,
                     uint8_t *codes, pba_pass_result *res)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        return aside(res, PBA_WHY_OPEN, errno);
    }
    if (!S_ISREG(st.st_mode)) {
        return aside(res, PBA_WHY_OPEN, 0);
    }
    const int64_t size = (int64_t)st.st_size;
    res->file_size = size;
    res->dev = (uint64_t)st.st_dev;
    res->ino = (uint64_t)st.st_ino;
#if defined(__APPLE__)
    res->mtime_ns = (int64_t)st.st_mtimespec.tv_sec * 1000000000 + st.st_mtimespec.tv_nsec;
    res->ctime_ns = (int64_t)st.st_ctimespec.tv_sec * 1000000000 + st.st_ctimespec.tv_nsec;
#else
    res->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    res->ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
#endif
    if (size <= MIN_FILE) {
        return aside(res, PBA_WHY_TRAILER, 0);
    }
    const int64_t want = size <= s->whole || size < s->suffix ? size : s->suffix;
    int64_t tail_start = size - want;
    /* The suffix is read to the buffer's end, so that a second read before it makes one
     * run of bytes (the reader's `head + tail`). */
    uint8_t *const end = s->tail + s->tail_cap;
    uint8_t *tail = end - want;
    if (!pba_read_at(fd, tail, (size_t)want, tail_start, &res->requests, &res->bytes_read)) {
        return aside(res, PBA_WHY_READ, errno);
    }
    if (memcmp(end - 4, MAGIC, 4) != 0) {
        return aside(res, PBA_WHY_TRAILER, 0); /* PARE or not Parquet: the reader says */
    }
    const uint32_t length = (uint32_t)end[-8] | (uint32_t)end[-7] << 8 |
                            (uint32_t)end[-6] << 16 | (uint32_t)end[-5] << 24;
    if (length == 0 || (int64_t)length > size - MIN_FILE) {
        return aside(res, PBA_WHY_TRAILER, 0);
    }
    if (want == size && memcmp(tail, MAGIC, 4) != 0) {
        return aside(res, PBA_WHY_TRAILER, 0);
    }
    const int64_t meta_off = size - TRAILER - (int64_t)length;
    if (meta_off < tail_start) {
        /* The footer's start in a second read, as the reader makes it. */
        res->need = size - meta_off;
        if ((uint64_t)length > s->max_footer_bytes || (uint64_t)res->need > s->tail_cap) {
            return aside(res, PBA_WHY_LONG_FOOTER, 0);
        }
        const int64_t more = tail_start - meta_off;
        tail -= more;
        if (!pba_read_at(fd, tail, (size_t)more, meta_off, &res->requests, &res->bytes_read)) {
            return aside(res, PBA_WHY_READ, errno);
        }
        tail_start = meta_off;
    }
    const uint8_t *meta = tail + (meta_off - tail_start);
    const size_t meta_len = length;

    uint64_t schema_off = 0, schema_len = 0;
    if (!first_schema(meta, meta_len, &schema_off, &schema_len)) {
        return aside(res, PBA_WHY_SCAN, 0);
    }
    const pba_pass_binding *b = NULL;
    for (size_t k = 0; k < n_bindings; k++) {
        if (bindings[k].schema_len == schema_len &&
            memcmp(bindings[k].schema, meta + schema_off, (size_t)schema_len) == 0) {
            b = &bindings[k];
            res->binding = (int32_t)k;
            break;
        }
    }
    if (!b) {
        res->status = PBA_PASS_UNBOUND;
        return PBA_OK;
    }
    pba_footer_scan scan = b->scan; /* the binding's inputs; the outputs are this call's */
    scan.groups = s->groups;
    scan.chunks = s->chunks;
    scan.groups_cap = s->groups_cap;
    const int rc = pba_footer_scan_run(meta, meta_len, &scan);
    if (rc == PBA_FOOTER_ERR_CAPACITY) {
        res->binding = -1;
        return aside(res, PBA_WHY_CAPACITY, 0);
    }
    if (rc != PBA_FOOTER_OK || !scan.head_complete || scan.schema_leaves != b->scan.n_leaves ||
        scan.schema_off != schema_off || scan.schema_len != schema_len) {
        res->binding = -1;
        return aside(res, PBA_WHY_SCAN, 0);
    }
    res->n_groups = scan.n_groups;
    res->key_values_same = scan.key_values_len == b->key_values_len &&
                           (b->key_values_len == 0 ||
                            memcmp(meta + scan.key_values_off, b->key_values,
                                   (size_t)b->key_values_len) == 0);
    res->metadata_offset = meta_off;
    res->metadata_length = (int64_t)meta_len;
    res->tail_start = tail_start;
    for (size_t g = 0; g < scan.n_groups; g++) {
        num_rows[g] = s->groups[g].num_rows;
    }
    const int found = decide(fd, b, s, meta, meta_len, meta_off, tail, tail_start, size,
                             scan.n_groups, codes, res);
    if (res->status != PBA_PASS_DECIDED) {
        res->binding = -1;
        res->n_groups = 0;
    }
    return found;
}
#endif

/* The arguments pba_file_pass checks: 1 when they are usable. */
static int args_valid(const pba_pass_binding *bindings, size_t n_bindings,
                      const pba_pass_scratch *s, const int64_t *num_rows, const uint8_t *codes,
                      const pba_pass_result *res)
{
    if (!s || !num_rows || !codes || !res || (n_bindings && !bindings) ||
        s->suffix < TRAILER || s->tail_cap < (uint64_t)s->suffix || s->whole < 0 ||
        s->tail_cap < (uint64_t)s->whole || !s->tail || !s->groups ||
        !s->chunks || !s->outcomes || !s->probes || !s->answers) {
        return 0;
    }
    for (size_t k = 0; k < n_bindings; k++) {
        const pba_pass_binding *b = &bindings[k];
        if (!b->schema || (b->key_values_len && !b->key_values) || b->scan.n_wanted > s->width ||
            b->n_eq == 0 || b->n_eq > PBA_PASS_MAX_STEPS || b->n_ranges > PBA_PASS_MAX_STEPS ||
            b->n_eq + b->n_ranges > s->width || !b->leaves || !b->hashes || !b->n_hashes ||
            (b->n_ranges && !b->ranges) || !steps_valid(b)) {
            return 0;
        }
        for (size_t i = 0; i < b->n_eq; i++) {
            if (b->leaves[i].n_keys != b->n_hashes[i] || (b->n_hashes[i] && !b->hashes[i])) {
                return 0;
            }
        }
    }
    return 1;
}

/* pba_file_pass with its arguments checked. */
static int pass_path(const char *path, const pba_pass_binding *bindings, size_t n_bindings,
                     const pba_pass_scratch *s, int64_t *num_rows, uint8_t *codes,
                     pba_pass_result *res)
{
    memset(res, 0, sizeof *res);
    res->binding = -1;
#ifdef PBA_HAVE_PREAD
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return aside(res, PBA_WHY_OPEN, errno);
    }
    const int rc = pass_open(fd, bindings, n_bindings, s, num_rows, codes, res);
    close(fd);
    return rc;
#else
    (void)path;
    (void)bindings;
    (void)n_bindings;
    (void)s;
    (void)num_rows;
    (void)codes;
    (void)excluded;
    (void)first_schema;
    res->status = PBA_PASS_ASIDE;
    res->why = PBA_WHY_UNSUPPORTED;
    return PBA_OK;
#endif
}

int pba_file_pass(const char *path, const pba_pass_binding *bindings, size_t n_bindings,
                  const pba_pass_scratch *s, int64_t *num_rows, uint8_t *codes,
                  pba_pass_result *res)
{
    if (!path || !args_valid(bindings, n_bindings, s, num_rows, codes, res)) {
        return PBA_ERR_ARG;
    }
    return pass_path(path, bindings, n_bindings, s, num_rows, codes, res);
}

/* Whether every row group of a file decided by `b` is excluded by its codes. */
static int pruned_whole(const pba_pass_binding *b, const uint8_t *codes, size_t n_groups)
{
    const size_t w = b->n_eq + b->n_ranges;
    uint8_t leaf_out[2 * PBA_PASS_MAX_STEPS];
    for (size_t g = 0; g < n_groups; g++) {
        for (size_t i = 0; i < w; i++) {
            const uint8_t code = codes[g * w + i];
            if (code >= PBA_PASS_CODES) {
                return 0;
            }
            leaf_out[i] = b->code_excluded[i * PBA_PASS_CODES + code];
        }
        if (!excluded(b, leaf_out)) {
            return 0;
        }
    }
    return 1;
}

int pba_file_pass_files(const char *names, size_t names_len, size_t n_paths,
                        const pba_pass_binding *bindings, size_t n_bindings,
                        const pba_pass_scratch *s, int64_t *num_rows, uint8_t *codes,
                        pba_pass_result *res, pba_pass_pruned *pruned, size_t *done)
{
    if (!names || !pruned || !done || !args_valid(bindings, n_bindings, s, num_rows, codes, res)) {
        return PBA_ERR_ARG;
    }
    *done = 0;
    size_t at = 0;
    for (size_t i = 0; i < n_paths; i++) { /* n_paths terminated paths, checked first */
        const char *end = at < names_len ? memchr(names + at, 0, names_len - at) : NULL;
        if (!end) {
            return PBA_ERR_ARG;
        }
        at = (size_t)(end - names) + 1;
    }
    at = 0;
    for (size_t i = 0; i < n_paths; i++) {
        const char *path = names + at;
        at += strlen(path) + 1;
        const int rc = pass_path(path, bindings, n_bindings, s, num_rows, codes, res);
        if (rc != PBA_OK) {
            return rc;
        }
        const pba_pass_binding *b = res->binding >= 0 ? &bindings[res->binding] : NULL;
        if (res->status != PBA_PASS_DECIDED || !res->key_values_same || !b ||
            !b->code_excluded || !pruned_whole(b, codes, res->n_groups)) {
            return PBA_OK; /* *done is this file: the caller's now */
        }
        pba_pass_pruned *p = &pruned[i];
        p->file_size = res->file_size;
        p->metadata_offset = res->metadata_offset;
        p->metadata_length = res->metadata_length;
        p->tail_start = res->tail_start;
        p->dev = res->dev;
        p->ino = res->ino;
        p->mtime_ns = res->mtime_ns;
        p->ctime_ns = res->ctime_ns;
        p->requests = res->requests;
        p->bytes_read = res->bytes_read;
        p->binding = res->binding;
        p->reserved = 0;
        *done = i + 1;
    }
    return PBA_OK;
}
