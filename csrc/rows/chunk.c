/*
 * chunk.c: a flat column chunk's pages, read by the chunk (pybloom_async_rows.h,
 * "Whole chunks").
 *
 * pba_chunk_open walks the page headers once and records each data page's first row,
 * values and stored bytes. A page is decompressed the first time a call needs it and kept
 * until the reader is closed, so the key column's pages matched by pba_chunk_match serve
 * the pba_chunk_take of the same rows.
 */
#include <stdlib.h>
#include <string.h>

#include "pybloom_async_pages.h"
#include "pybloom_async_rows.h"
#include "le.h"
#include "pool.h"
#include "stream.h"

/* Parquet's PageType and Encoding values read here. */
enum { DATA_PAGE = 0, INDEX_PAGE = 1, DICTIONARY_PAGE = 2, DATA_PAGE_V2 = 3 };
enum { PLAIN = 0, PLAIN_DICTIONARY = 2, RLE = 3, RLE_DICTIONARY = 8 };

typedef struct {
    uint64_t row;         /* its first row in the row group */
    uint32_t values;      /* its values, NULLs included (its rows: the column is flat) */
    int32_t encoding;     /* of its values */
    const uint8_t *stored; /* its bytes as stored, after the header */
    size_t stored_len;
    uint32_t raw;          /* its uncompressed size, as its header says */
    int v2;
    uint32_t v2_levels;    /* v2: the bytes of its definition levels */
    int v2_compressed;
    /* After page_read: 1 once read, or the negative status it failed with (a page is
     * read at most once). */
    int read;
    uint8_t *owned; /* the decompressed bytes, or NULL when read in place */
    const uint8_t *levels;
    size_t levels_len;
    const uint8_t *body;
    size_t body_len;
} page;

struct pba_chunk_reader {
    pba_chunk chunk;
    page *pages;
    size_t n_pages;
    int has_dictionary;
    page dictionary;
    /* The dictionary is decompressed only as far as the entries read need (a take of a
     * row or two reads a part of it; a match reads it whole). */
    int dictionary_open;    /* 1 once set up, or the negative status it failed with */
    pba_stream stream;      /* its bytes, decompressed so far */
    uint32_t entries;       /* its entries, as its header says */
    int64_t *entry_at;      /* byte arrays: the offset of each entry's length */
    uint32_t entries_known; /* byte arrays: the entries whose offsets are known */
    uint64_t scan_at;       /* byte arrays: where entry entries_known's length lies */
    uint8_t *wanted;        /* pba_chunk_match: which entries are keys */
    int any_wanted;
    uint64_t decompressed;  /* bytes decompressed so far (at most chunk.limit) */
    size_t pages_read;      /* data pages read so far */
    /* The last pba_chunk_take's byte arrays, for pba_chunk_gather. */
    const uint8_t **taken;
    uint32_t *taken_len;
    size_t n_taken;
    uint64_t taken_bytes;
    /* Scratch of the size of the largest call's rows. */
    uint32_t *scratch_rows;
    int64_t *scratch_refs;
    size_t scratch_n;
};

static int has(const pba_page_header *h, uint32_t bits) { return (h->present & bits) == bits; }

/* Records one data page (its values checked against the rows left). */
static int add_page(pba_chunk_reader *r, const pba_page_header *h, const uint8_t *body,
                    size_t size, uint64_t row, size_t *cap) {
    page p;
    memset(&p, 0, sizeof p);
    int64_t values;
    if (h->type == DATA_PAGE_V2) {
        uint32_t need = PBA_PH_V2 | PBA_PH_V2_NUM_VALUES | PBA_PH_V2_NUM_ROWS |
                        PBA_PH_V2_ENCODING | PBA_PH_V2_DEFINITION_LEVELS_BYTE_LENGTH;
        if (!has(h, need) || h->v2_num_rows != h->v2_num_values) return PBA_CHUNK_ERR_PAGES;
        if (has(h, PBA_PH_V2_REPETITION_LEVELS_BYTE_LENGTH) &&
            h->v2_repetition_levels_byte_length != 0)
            return PBA_CHUNK_ERR_PAGES;
        int32_t levels = h->v2_definition_levels_byte_length;
        if (levels < 0 || (size_t)levels > size || (levels && !r->chunk.optional))
            return PBA_CHUNK_ERR_PAGES;
        values = h->v2_num_values;
        p.encoding = h->v2_encoding;
        p.v2 = 1;
        p.v2_levels = (uint32_t)levels;
        p.v2_compressed = h->v2_is_compressed;
    } else {
        if (!has(h, PBA_PH_NUM_VALUES | PBA_PH_ENCODING)) return PBA_CHUNK_ERR_PAGES;
        if (r->chunk.optional) {
            if (!has(h, PBA_PH_DEFINITION_LEVEL_ENCODING)) return PBA_CHUNK_ERR_PAGES;
            if (h->definition_level_encoding != RLE) return PBA_CHUNK_ERR_PAGES;
        }
        values = h->num_values;
        p.encoding = h->encoding;
    }
    if (values <= 0 || (uint64_t)values > r->chunk.num_rows - row) return PBA_CHUNK_ERR_PAGES;
    if (r->chunk.page_rows != NULL && (r->n_pages >= r->chunk.n_page_rows ||
                                       (uint64_t)values != r->chunk.page_rows[r->n_pages]))
        return PBA_CHUNK_ERR_PAGES; /* not the rows its offset index gives it */
    if (p.encoding == PLAIN_DICTIONARY || p.encoding == RLE_DICTIONARY) {
        if (!r->has_dictionary) return PBA_CHUNK_ERR_PAGES;
    } else if (p.encoding != PLAIN) {
        return PBA_CHUNK_ERR_PAGES;
    }
    p.row = row;
    p.values = (uint32_t)values;
    p.stored = body;
    p.stored_len = size;
    p.raw = (uint32_t)h->uncompressed_page_size;
    if (r->n_pages == *cap) {
        size_t more = *cap ? *cap * 2 : 8;
        page *grown = realloc(r->pages, more * sizeof *grown);
        if (grown == NULL) return PBA_CHUNK_ERR_MEMORY;
        r->pages = grown;
        *cap = more;
    }
    r->pages[r->n_pages++] = p;
    return PBA_CHUNK_OK;
}

static int walk(pba_chunk_reader *r) {
    const pba_chunk *c = &r->chunk;
    size_t at = 0, cap = 0;
    uint64_t row = 0;
    while (row < c->num_rows) {
        if (at >= c->len) return PBA_CHUNK_ERR_PAGES;
        pba_page_header h;
        if (pba_page_header_read(c->data + at, c->len - at, &h) != 0) return PBA_CHUNK_ERR_PAGES;
        uint32_t need = PBA_PH_TYPE | PBA_PH_COMPRESSED_PAGE_SIZE | PBA_PH_UNCOMPRESSED_PAGE_SIZE;
        if (!has(&h, need) || h.compressed_page_size < 0 || h.uncompressed_page_size < 0)
            return PBA_CHUNK_ERR_PAGES;
        size_t body = at + (size_t)h.header_length;
        size_t size = (size_t)h.compressed_page_size;
        if (h.header_length > c->len - at || size > c->len - body) return PBA_CHUNK_ERR_PAGES;
        at = body + size;
        if (h.type == INDEX_PAGE) continue;
        if (h.type == DICTIONARY_PAGE) {
            if (r->has_dictionary || row || !has(&h, PBA_PH_NUM_VALUES | PBA_PH_ENCODING))
                return PBA_CHUNK_ERR_PAGES;
            if (h.num_values <= 0 || (h.encoding != PLAIN && h.encoding != PLAIN_DICTIONARY))
                return PBA_CHUNK_ERR_PAGES;
            r->has_dictionary = 1;
            page *d = &r->dictionary;
            d->values = (uint32_t)h.num_values;
            d->stored = c->data + body;
            d->stored_len = size;
            d->raw = (uint32_t)h.uncompressed_page_size;
            continue;
        }
        if (h.type != DATA_PAGE && h.type != DATA_PAGE_V2) return PBA_CHUNK_ERR_PAGES;
        int status = add_page(r, &h, c->data + body, size, row, &cap);
        if (status != PBA_CHUNK_OK) return status;
        row += r->pages[r->n_pages - 1].values;
    }
    return PBA_CHUNK_OK;
}

int pba_chunk_open(const pba_chunk *chunk, pba_chunk_reader **out) {
    if (chunk == NULL || out == NULL || (chunk->data == NULL && chunk->len)) return PBA_CHUNK_ERR_ARG;
    *out = NULL;
    if ((chunk->width != 0 && chunk->width != 4 && chunk->width != 8) || chunk->optional > 1 ||
        chunk->num_rows >= ((uint64_t)1 << 31))
        return PBA_CHUNK_ERR_ARG;
    if (!pba_codec_available(chunk->codec)) return PBA_CHUNK_ERR_CODEC;
    pba_chunk_reader *r = calloc(1, sizeof *r);
    if (r == NULL) return PBA_CHUNK_ERR_MEMORY;
    r->chunk = *chunk;
    int status = walk(r);
    if (status != PBA_CHUNK_OK) {
        pba_chunk_close(r);
        return status;
    }
    *out = r;
    return PBA_CHUNK_OK;
}

void pba_chunk_close(pba_chunk_reader *r) {
    if (r == NULL) return;
    for (size_t i = 0; i < r->n_pages; i++) pba_pool_put(r->pages[i].owned);
    free(r->pages);
    pba_pool_put(r->dictionary.owned);
    pba_stream_free(&r->stream);
    pba_pool_put(r->entry_at);
    free(r->wanted);
    free(r->taken);
    free(r->taken_len);
    free(r->scratch_rows);
    free(r->scratch_refs);
    free(r);
}

/* A buffer for a page of `len` bytes decompressed: within PBA_CHUNK_MAX_PAGE and what the
 * chunk's footer says is left of its uncompressed size (the caller counts it when used). */
static int page_buffer(const pba_chunk_reader *r, size_t len, uint8_t **out) {
    if (len > PBA_CHUNK_MAX_PAGE || len > r->chunk.limit - r->decompressed)
        return PBA_CHUNK_ERR_TOO_LARGE;
    *out = pba_pool_get(len);
    return *out == NULL ? PBA_CHUNK_ERR_MEMORY : PBA_CHUNK_OK;
}

/* `len` decompressed bytes of `src` into a buffer of the reader's (in place when stored
 * uncompressed). */
static int inflate_into(pba_chunk_reader *r, const uint8_t *src, size_t src_len, size_t len,
                        int compressed, uint8_t **owned, const uint8_t **data) {
    if (!compressed || r->chunk.codec == PBA_CODEC_UNCOMPRESSED) {
        if (src_len != len) return PBA_CHUNK_ERR_CORRUPT;
        *data = src;
        return PBA_CHUNK_OK;
    }
    uint8_t *buf = NULL;
    int status = page_buffer(r, len, &buf);
    if (status != PBA_CHUNK_OK) return status;
    status = pba_decompress(r->chunk.codec, src, src_len, buf, len);
    if (status != PBA_CHUNK_OK) {
        pba_pool_put(buf);
        return status;
    }
    r->decompressed += len;
    *owned = buf;
    *data = buf;
    return PBA_CHUNK_OK;
}

/* The page decompressed, its levels and values apart. */
static int page_read_once(pba_chunk_reader *r, page *p);

static int page_read(pba_chunk_reader *r, page *p) {
    if (p->read == 0) {
        int status = page_read_once(r, p);
        p->read = status == PBA_CHUNK_OK ? 1 : status;
        if (status == PBA_CHUNK_OK) r->pages_read++;
    }
    return p->read == 1 ? PBA_CHUNK_OK : p->read;
}

static int page_read_once(pba_chunk_reader *r, page *p) {
    const uint8_t *data = NULL;
    int status;
    if (p->v2) {
        if (p->raw < p->v2_levels) return PBA_CHUNK_ERR_PAGES;
        p->levels = r->chunk.optional ? p->stored : NULL;
        p->levels_len = r->chunk.optional ? p->v2_levels : 0;
        size_t len = p->raw - p->v2_levels;
        status = inflate_into(r, p->stored + p->v2_levels, p->stored_len - p->v2_levels, len,
                              p->v2_compressed, &p->owned, &data);
        if (status != PBA_CHUNK_OK) return status;
        p->body = data;
        p->body_len = len;
    } else {
        status = inflate_into(r, p->stored, p->stored_len, p->raw, 1, &p->owned, &data);
        if (status != PBA_CHUNK_OK) return status;
        p->body = data;
        p->body_len = p->raw;
        if (r->chunk.optional) {
            if (p->body_len < 4) return PBA_CHUNK_ERR_PAGES;
            uint32_t size = pba_le32(p->body);
            if (size > p->body_len - 4) return PBA_CHUNK_ERR_PAGES;
            p->levels = p->body + 4;
            p->levels_len = size;
            p->body += 4 + (size_t)size;
            p->body_len -= 4 + (size_t)size;
        }
    }
    return PBA_CHUNK_OK;
}

size_t pba_chunk_pages_read(const pba_chunk_reader *r) { return r == NULL ? 0 : r->pages_read; }

/* The dictionary set up to be read: its sizes checked, its buffer made. */
static int dictionary_start(pba_chunk_reader *r) {
    page *d = &r->dictionary;
    uint32_t count = d->values;
    if (r->chunk.width ? (uint64_t)count * r->chunk.width > d->raw : count > d->raw / 4)
        return PBA_CHUNK_ERR_PAGES; /* a byte array's length alone takes 4 bytes */
    if (!r->chunk.width) {
        r->entry_at = pba_pool_get((size_t)count * sizeof *r->entry_at);
        if (r->entry_at == NULL) return PBA_CHUNK_ERR_MEMORY;
    }
    r->entries = count;
    if (r->chunk.codec == PBA_CODEC_UNCOMPRESSED) {
        if (d->stored_len != d->raw) return PBA_CHUNK_ERR_CORRUPT;
        d->body = d->stored; /* read in place: the stream is done */
        pba_stream_init(&r->stream, PBA_CODEC_UNCOMPRESSED, d->stored, d->raw, NULL, d->raw);
        r->stream.done = d->raw;
        r->stream.finished = 1;
        return PBA_CHUNK_OK;
    }
    int status = page_buffer(r, d->raw, &d->owned);
    if (status != PBA_CHUNK_OK) return status;
    r->decompressed += d->raw;
    d->body = d->owned;
    return pba_stream_init(&r->stream, r->chunk.codec, d->stored, d->stored_len, d->owned,
                           d->raw);
}

/* The dictionary set up (once; a failure stays), its entry count known. */
static int dictionary_opened(pba_chunk_reader *r) {
    if (!r->has_dictionary) return PBA_CHUNK_ERR_PAGES;
    if (r->dictionary_open == 0) {
        int status = dictionary_start(r);
        r->dictionary_open = status == PBA_CHUNK_OK ? 1 : status;
    }
    return r->dictionary_open == 1 ? PBA_CHUNK_OK : r->dictionary_open;
}

/* The dictionary decompressed to at least `need` bytes: ahead in steps of an eighth of it
 * (at least 64 KiB), so that its entries are not found one decompression call each. */
static int dictionary_ahead(pba_chunk_reader *r, uint64_t need) {
    if (need <= r->stream.done) return PBA_CHUNK_OK;
    uint64_t raw = r->dictionary.raw;
    uint64_t step = raw / 8 > ((uint64_t)1 << 16) ? raw / 8 : ((uint64_t)1 << 16);
    uint64_t ahead = r->stream.done + step > need ? r->stream.done + step : need;
    return pba_stream_until(&r->stream, (size_t)(ahead < raw ? ahead : raw));
}

/* The dictionary read as far as entry `index` (below its entry count). */
static int dictionary_upto(pba_chunk_reader *r, uint32_t index) {
    int opened = dictionary_opened(r);
    if (opened != PBA_CHUNK_OK) return opened;
    uint64_t raw = r->dictionary.raw;
    if (r->chunk.width) return dictionary_ahead(r, ((uint64_t)index + 1) * r->chunk.width);
    while (r->entries_known <= index) {
        uint64_t at = r->scan_at;
        if (raw - at < 4) return PBA_TAKE_ERR_TRUNCATED;
        int status = dictionary_ahead(r, at + 4);
        if (status != PBA_CHUNK_OK) return status;
        uint32_t size = pba_le32(r->dictionary.body + at);
        if (size > raw - at - 4) return PBA_TAKE_ERR_TRUNCATED;
        status = dictionary_ahead(r, at + 4 + size);
        if (status != PBA_CHUNK_OK) return status;
        r->entry_at[r->entries_known++] = (int64_t)at;
        r->scan_at = at + 4 + size;
    }
    return PBA_CHUNK_OK;
}

/* The dictionary read whole: every entry found, the page checked to end at its size. */
static int dictionary_read(pba_chunk_reader *r) {
    int status = dictionary_opened(r); /* then whole at once: not a part first */
    if (status == PBA_CHUNK_OK) status = pba_stream_until(&r->stream, r->dictionary.raw);
    if (status == PBA_CHUNK_OK && !r->chunk.width) status = dictionary_upto(r, r->entries - 1);
    if (status != PBA_CHUNK_OK) return status;
    r->dictionary.body_len = r->dictionary.raw;
    return PBA_CHUNK_OK;
}

static int dictionary_encoded(const page *p) {
    return p->encoding == PLAIN_DICTIONARY || p->encoding == RLE_DICTIONARY;
}

/* Scratch for n rows and their refs. */
static int scratch(pba_chunk_reader *r, size_t n) {
    if (n <= r->scratch_n) return PBA_CHUNK_OK;
    free(r->scratch_rows);
    free(r->scratch_refs);
    r->scratch_rows = malloc(n * sizeof *r->scratch_rows);
    r->scratch_refs = malloc(n * sizeof *r->scratch_refs);
    r->scratch_n = 0;
    if (r->scratch_rows == NULL || r->scratch_refs == NULL) return PBA_CHUNK_ERR_MEMORY;
    r->scratch_n = n;
    return PBA_CHUNK_OK;
}

/* Which dictionary entries are keys (pba_match_rows over the dictionary's own bytes). */
static int wanted_entries(pba_chunk_reader *r, const pba_keys *keys) {
    if (r->wanted != NULL) return PBA_CHUNK_OK;
    int status = dictionary_read(r);
    if (status != PBA_CHUNK_OK) return status;
    status = scratch(r, r->entries);
    if (status != PBA_CHUNK_OK) return status;
    size_t found = 0;
    status = pba_match_rows(NULL, 0, r->dictionary.body, r->dictionary.body_len, r->entries, 0,
                            NULL, keys, r->scratch_rows, r->entries, &found);
    if (status != PBA_TAKE_OK) return status;
    r->wanted = calloc(r->entries, 1);
    if (r->wanted == NULL) return PBA_CHUNK_ERR_MEMORY;
    for (size_t i = 0; i < found; i++) r->wanted[r->scratch_rows[i]] = 1;
    r->any_wanted = found > 0;
    return PBA_CHUNK_OK;
}

int pba_chunk_match(pba_chunk_reader *r, const pba_keys *keys, uint32_t *rows, size_t capacity,
                    size_t *found) {
    if (r == NULL || keys == NULL || found == NULL || (capacity && rows == NULL))
        return PBA_CHUNK_ERR_ARG;
    if (keys->width != r->chunk.width) return PBA_CHUNK_ERR_ARG;
    *found = 0;
    size_t n = 0;
    for (size_t i = 0; i < r->n_pages; i++) {
        page *p = &r->pages[i];
        int dictionary = dictionary_encoded(p);
        if (dictionary) {
            int status = wanted_entries(r, keys);
            if (status != PBA_CHUNK_OK) return status;
            if (!r->any_wanted) continue; /* no key in the dictionary: none in its pages */
        }
        int status = page_read(r, p);
        if (status != PBA_CHUNK_OK) return status;
        size_t here = 0;
        status = pba_match_rows(p->levels, p->levels_len, p->body, p->body_len, p->values,
                                dictionary ? r->entries : 0, dictionary ? r->wanted : NULL,
                                keys, rows + n, capacity - n, &here);
        if (status != PBA_TAKE_OK) return status;
        for (size_t k = n; k < n + here; k++) rows[k] += (uint32_t)p->row;
        n += here;
    }
    *found = n;
    return PBA_CHUNK_OK;
}

/* Where the value of a present row lies, from its ref: its bytes and length. */
static int value_of(pba_chunk_reader *r, const page *p, int64_t ref, const uint8_t **at,
                    uint32_t *len) {
    uint32_t width = r->chunk.width;
    const uint8_t *base;
    if (dictionary_encoded(p)) {
        if (width) {
            *at = r->dictionary.body + (size_t)ref * width;
            *len = width;
            return PBA_CHUNK_OK;
        }
        base = r->dictionary.body;
        ref = r->entry_at[ref];
    } else if (width) {
        *at = p->body + ref;
        *len = width;
        return PBA_CHUNK_OK;
    } else {
        base = p->body;
    }
    /* A byte array's 4-byte length, then its bytes (both checked by the page readers). */
    *len = pba_le32(base + ref);
    *at = base + ref + 4;
    return PBA_CHUNK_OK;
}

static int taken_room(pba_chunk_reader *r, size_t n) {
    free(r->taken);
    free(r->taken_len);
    r->taken = malloc((n ? n : 1) * sizeof *r->taken);
    r->taken_len = malloc((n ? n : 1) * sizeof *r->taken_len);
    r->n_taken = 0;
    r->taken_bytes = 0;
    return r->taken == NULL || r->taken_len == NULL ? PBA_CHUNK_ERR_MEMORY : PBA_CHUNK_OK;
}

/* The wanted rows of one page: `count` of them, from rows[first]. */
static int take_page(pba_chunk_reader *r, page *p, const int64_t *rows, size_t first,
                     size_t count, uint8_t *valid, uint8_t *values, int64_t *offsets) {
    int status = page_read(r, p);
    if (status == PBA_CHUNK_OK && dictionary_encoded(p)) status = dictionary_opened(r);
    if (status == PBA_CHUNK_OK) status = scratch(r, count);
    if (status != PBA_CHUNK_OK) return status;
    for (size_t k = 0; k < count; k++) r->scratch_rows[k] = (uint32_t)(rows[first + k] - p->row);
    uint32_t width = r->chunk.width;
    status = pba_take_refs(p->levels, p->levels_len, p->body, p->body_len, p->values,
                           dictionary_encoded(p) ? r->entries : 0, width, r->scratch_rows,
                           count, r->scratch_refs);
    if (status != PBA_TAKE_OK) return status;
    if (dictionary_encoded(p)) { /* the dictionary read as far as the largest index */
        int64_t last = -1;
        for (size_t k = 0; k < count; k++)
            if (r->scratch_refs[k] > last) last = r->scratch_refs[k];
        if (last >= 0) status = dictionary_upto(r, (uint32_t)last);
        if (status != PBA_CHUNK_OK) return status;
    }
    for (size_t k = 0; k < count; k++) {
        size_t i = first + k;
        int64_t ref = r->scratch_refs[k];
        const uint8_t *at = NULL;
        uint32_t len = 0;
        valid[i] = ref >= 0;
        if (ref >= 0) value_of(r, p, ref, &at, &len);
        if (width) {
            if (ref >= 0) {
                memcpy(values + i * width, at, width);
            } else {
                memset(values + i * width, 0, width);
            }
        } else {
            r->taken[i] = at;
            r->taken_len[i] = len;
            r->taken_bytes += len;
            offsets[i + 1] = (int64_t)r->taken_bytes;
        }
    }
    return PBA_CHUNK_OK;
}

int pba_chunk_take(pba_chunk_reader *r, const int64_t *rows, size_t n, uint8_t *valid,
                   uint8_t *values, int64_t *offsets) {
    if (r == NULL || (n && (rows == NULL || valid == NULL))) return PBA_CHUNK_ERR_ARG;
    if (r->chunk.width ? (n && values == NULL) : offsets == NULL) return PBA_CHUNK_ERR_ARG;
    for (size_t i = 0; i < n; i++) {
        if (rows[i] < 0 || (uint64_t)rows[i] >= r->chunk.num_rows) return PBA_CHUNK_ERR_ARG;
        if (i && rows[i] <= rows[i - 1]) return PBA_CHUNK_ERR_ARG;
    }
    if (!r->chunk.width) {
        int status = taken_room(r, n);
        if (status != PBA_CHUNK_OK) return status;
        offsets[0] = 0;
    }
    size_t i = 0;
    for (size_t pi = 0; pi < r->n_pages && i < n; pi++) {
        page *p = &r->pages[pi];
        uint64_t end = p->row + p->values;
        size_t j = i;
        while (j < n && (uint64_t)rows[j] < end) j++;
        if (j > i) {
            int status = take_page(r, p, rows, i, j - i, valid, values, offsets);
            if (status != PBA_CHUNK_OK) return status;
        }
        i = j;
    }
    if (i != n) return PBA_CHUNK_ERR_PAGES; /* the pages end before the rows they must hold */
    r->n_taken = r->chunk.width ? 0 : n;
    return PBA_CHUNK_OK;
}

int pba_chunk_gather(pba_chunk_reader *r, uint8_t *out, size_t out_len) {
    if (r == NULL || (out == NULL && out_len)) return PBA_CHUNK_ERR_ARG;
    if (out_len != r->taken_bytes) return PBA_CHUNK_ERR_ARG;
    size_t at = 0;
    for (size_t i = 0; i < r->n_taken; i++) {
        if (r->taken_len[i]) memcpy(out + at, r->taken[i], r->taken_len[i]);
        at += r->taken_len[i];
    }
    return PBA_CHUNK_OK;
}

/* Chunk c's reader: the one given, or opened now (of the calls' one width). */
static int reader_of(const pba_chunk *chunks, size_t c, pba_chunk_reader **readers) {
    if (chunks[c].width != chunks[0].width) return PBA_CHUNK_ERR_ARG;
    if (readers[c] != NULL) {
        const pba_chunk *had = &readers[c]->chunk;
        return had->width == chunks[c].width && had->num_rows == chunks[c].num_rows
                   ? PBA_CHUNK_OK
                   : PBA_CHUNK_ERR_ARG;
    }
    return pba_chunk_open(&chunks[c], &readers[c]);
}

int pba_chunks_match(const pba_chunk *chunks, size_t n_chunks, const pba_keys *keys,
                     uint32_t *rows, size_t capacity, uint64_t *counts,
                     pba_chunk_reader **readers, size_t *failed) {
    if (failed == NULL || keys == NULL ||
        (n_chunks && (chunks == NULL || counts == NULL || readers == NULL)) ||
        (rows == NULL && capacity))
        return PBA_CHUNK_ERR_ARG;
    *failed = 0;
    size_t at = 0;
    for (size_t c = 0; c < n_chunks; c++) {
        *failed = c;
        int status = reader_of(chunks, c, readers);
        if (status != PBA_CHUNK_OK) return status;
        size_t found = 0;
        status = pba_chunk_match(readers[c], keys, rows == NULL ? NULL : rows + at, capacity - at,
                                 &found);
        if (status != PBA_CHUNK_OK) return status;
        counts[c] = found;
        at += found;
    }
    return PBA_CHUNK_OK;
}

int pba_chunks_take(const pba_chunk *chunks, size_t n_chunks, const int64_t *rows,
                    const uint64_t *counts, uint8_t *valid, uint8_t *values, int64_t *offsets,
                    pba_chunk_reader **readers, size_t *failed) {
    if (failed == NULL || (n_chunks && (chunks == NULL || counts == NULL || readers == NULL)))
        return PBA_CHUNK_ERR_ARG;
    *failed = 0;
    uint32_t width = n_chunks ? chunks[0].width : 0;
    size_t at = 0;
    int64_t bytes = 0;
    if (!width) {
        if (offsets == NULL) return PBA_CHUNK_ERR_ARG;
        offsets[0] = 0;
    }
    for (size_t c = 0; c < n_chunks; c++) {
        *failed = c;
        int status = reader_of(chunks, c, readers);
        if (status != PBA_CHUNK_OK) return status;
        size_t n = (size_t)counts[c];
        if (n && (rows == NULL || valid == NULL || (width && values == NULL)))
            return PBA_CHUNK_ERR_ARG;
        status = pba_chunk_take(readers[c], n ? rows + at : NULL, n, n ? valid + at : NULL,
                                width && n ? values + at * width : NULL,
                                width ? NULL : offsets + at);
        if (status != PBA_CHUNK_OK) return status;
        if (!width) { /* its offsets, written from 0 at offsets + at, moved on past the
                       * bytes before it (offsets[at] is the last chunk's end again) */
            offsets[at] = bytes;
            for (size_t k = 1; k <= n; k++) offsets[at + k] += bytes;
            bytes = offsets[at + n];
        }
        at += n;
    }
    return PBA_CHUNK_OK;
}

int pba_chunks_gather(pba_chunk_reader **readers, size_t n_chunks, uint8_t *out,
                      size_t out_len) {
    if ((n_chunks && readers == NULL) || (out == NULL && out_len)) return PBA_CHUNK_ERR_ARG;
    size_t at = 0;
    for (size_t c = 0; c < n_chunks; c++) {
        pba_chunk_reader *r = readers[c];
        if (r == NULL || r->taken_bytes > out_len - at) return PBA_CHUNK_ERR_ARG;
        int status = pba_chunk_gather(r, out + at, (size_t)r->taken_bytes);
        if (status != PBA_CHUNK_OK) return status;
        at += (size_t)r->taken_bytes;
    }
    return at == out_len ? PBA_CHUNK_OK : PBA_CHUNK_ERR_ARG;
}

void pba_chunks_close(pba_chunk_reader **readers, size_t n_chunks) {
    if (readers == NULL) return;
    for (size_t c = 0; c < n_chunks; c++) {
        pba_chunk_close(readers[c]);
        readers[c] = NULL;
    }
}
