/*
 * pybloom_async_rows.h: rows found and taken in the pages of a flat column chunk.
 *
 * A lookup's matching rows are few; their other columns' chunks hold many. Decoding a
 * whole chunk to keep one value costs what the chunk holds. These calls find, in one
 * decompressed data page of a flat column (no repetition, definition levels 0 or 1),
 * where each wanted row's value lies, walking the levels and the values only as far as
 * the last wanted row, and copy out the byte arrays found: the values of the other rows
 * are never materialised. The matches themselves are found so too: pba_match_rows reads
 * a key column's page and gives the rows whose value is one of a few (an equality or an
 * IN list), comparing stored bytes, or dictionary indices with the entries wanted,
 * without building the column.
 *
 * What is read: definition levels in the RLE/bit-packed hybrid encoding of bit width 1;
 * values PLAIN (fixed width, or BYTE_ARRAY with its 4-byte length) or dictionary indices
 * (a bit width byte, then the hybrid encoding). For these page calls, decompression and
 * page headers are the caller's; the chunk reader below does both. The values' Arrow types
 * are always the caller's.
 *
 * The input is untrusted: every read is bounded by the lengths given, every run and
 * length checked against the bytes left, every dictionary index against the
 * dictionary's size; a malformed page gives a negative status, never a read outside
 * the buffers. The page calls allocate nothing (the chunk reader: see below).
 *
 * Thread safety of the page calls: no state; concurrent calls on different outputs are
 * safe.
 */
#ifndef PYBLOOM_ASYNC_ROWS_H
#define PYBLOOM_ASYNC_ROWS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes of the row takers: 0 (PBA_TAKE_OK) or one of these, from -80. */
enum {
    PBA_TAKE_OK = 0,
    PBA_TAKE_ERR_ARG = -80,       /* null pointer, rows not ascending or past the page */
    PBA_TAKE_ERR_TRUNCATED = -81, /* levels or values end before the rows they must hold */
    PBA_TAKE_ERR_MALFORMED = -82, /* a level, bit width or dictionary index out of range */
    PBA_TAKE_ERR_CAPACITY = -83   /* the output buffer is smaller than the values */
};

/*
 * pba_take_refs: where the value of each wanted row of one data page lies.
 *
 * levels, levels_len: the page's definition levels (hybrid encoding, bit width 1, no
 *     length prefix), or NULL for a required column (every value present).
 * values, values_len: the page's values, decompressed.
 * num_values: the page's values, NULLs included (its rows: the column is flat).
 * dictionary_count: nonzero: the values are dictionary indices, each checked to be
 *     below it; zero: PLAIN values.
 * width: bytes of one PLAIN value; 0 for BYTE_ARRAY (a 4-byte length, then the bytes).
 * rows, n: the wanted rows, strictly ascending, each below num_values.
 * refs (out, n): -1 for a NULL; else the dictionary index, or the byte offset in
 *     values of the PLAIN value (of its length, for a byte array; the bytes checked to
 *     lie within values).
 */
int pba_take_refs(const uint8_t *levels, size_t levels_len, const uint8_t *values,
                  size_t values_len, uint32_t num_values, uint32_t dictionary_count,
                  uint32_t width, const uint32_t *rows, size_t n, int64_t *refs);

/*
 * pba_byte_array_offsets: the byte offset of each of the `count` PLAIN byte arrays
 * of `data` (a dictionary page), each checked to lie within it.
 */
int pba_byte_array_offsets(const uint8_t *data, size_t len, uint32_t count, int64_t *offsets);

/*
 * pba_gather_byte_arrays: the byte arrays at `refs` (offsets of their lengths in data;
 * -1: none, an empty value) as Arrow lays them out: offsets (n + 1, from 0) and, when
 * `out` is not NULL, the bytes copied into out (out_len bytes at most). With out NULL
 * only the offsets are written: offsets[n] is the size out needs.
 */
int pba_gather_byte_arrays(const uint8_t *data, size_t len, const int64_t *refs, size_t n,
                           int64_t *offsets, uint8_t *out, size_t out_len);

/*
 * The values pba_match_rows looks for, as a column stores them (PLAIN): integers of an
 * INT32 (width 4) or INT64 (width 8) column, or byte arrays (width 0).
 *
 * ints: n integers, ascending (width 4: the INT32 values, sign-extended).
 * bytes, offsets: byte arrays: value i is bytes[offsets[i] .. offsets[i + 1]), the n
 *     values ascending as memcmp orders them, a shorter value before the longer one it
 *     begins.
 * filter, filter_bits: NULL and 0, or a bitmap of 2^filter_bits bits (6 to 24) that
 *     pba_keys_filter filled from these keys: a value whose bit is clear is no key, so
 *     most values are ruled out by one hash and one bit, not a search.
 */
typedef struct {
    uint32_t width;
    const int64_t *ints;
    const uint8_t *bytes;
    const int64_t *offsets;
    size_t n;
    const uint64_t *filter;
    uint32_t filter_bits;
} pba_keys;

/*
 * pba_keys_filter: fills `filter` (2^bits bits, bits 6 to 24, as 64-bit words) with the
 * bits of `keys` (whose own filter is not read).
 */
int pba_keys_filter(const pba_keys *keys, uint64_t *filter, uint32_t bits);

/*
 * pba_match_rows: the rows of one data page whose value is wanted, ascending.
 *
 * levels, levels_len, values, values_len, num_values: as for pba_take_refs (a NULL is
 *     never wanted).
 * dictionary_count nonzero: the values are dictionary indices, each checked to be below
 *     it, and wanted[index] (dictionary_count bytes) nonzero says the entry is wanted;
 *     keys is not read. Zero: PLAIN values, wanted where they equal one of keys (wanted
 *     is not read). A dictionary page's own entries are matched so: its bytes as the
 *     values, no levels, num_values its entry count.
 * rows (out, capacity): the rows whose value is wanted; *found: how many there are. More
 *     than capacity: the first capacity are written and PBA_TAKE_ERR_CAPACITY returned.
 *
 * The whole page is read: every level, index and value is checked as it is met.
 */
int pba_match_rows(const uint8_t *levels, size_t levels_len, const uint8_t *values,
                   size_t values_len, uint32_t num_values, uint32_t dictionary_count,
                   const uint8_t *wanted, const pba_keys *keys, uint32_t *rows,
                   size_t capacity, size_t *found);

/*
 * Whole chunks.
 *
 * The calls above read one decompressed data page. Here a whole column chunk (its
 * pages and their headers, as stored in the file) is opened once: its page headers are
 * read (pybloom_async_pages.h), and a page is decompressed the first time a wanted row
 * lies in it, then kept for later calls on the same chunk. Two calls read it:
 *
 *   pba_chunk_match  the rows whose value is one of a few keys (pba_match_rows per page;
 *                    a dictionary-encoded page whose dictionary holds no key is not even
 *                    decompressed);
 *   pba_chunk_take   the values of given rows (pba_take_refs per page), fixed-width
 *                    values copied out, byte arrays as Arrow's offsets, then their bytes
 *                    copied by pba_chunk_gather.
 *
 * Each call does a whole chunk's work, so a caller that holds an interpreter lock can
 * release it for the call (cffi does): the chunks of a run are then read on every core.
 *
 * Codecs: UNCOMPRESSED and SNAPPY always (snappy's format read here); GZIP, BROTLI, ZSTD
 * and LZ4_RAW when the library was built with zlib, libbrotlidec, libzstd and liblz4
 * (pba_codec_available says which). Hadoop's LZ4 framing and LZO are not read.
 *
 * What is read: as pybloom_async_rows.h, plus data pages v1 (definition levels RLE, with
 * their 4-byte length) and v2 (levels stored uncompressed before the values), a PLAIN
 * dictionary page before the data pages, index pages skipped. Anything else, and any page
 * that does not read as its header says, gives a negative status: the caller reads the
 * chunk another way. Nothing outside the given bytes is read.
 *
 * A dictionary page is decompressed only as far as the entries a take reads (snappy and
 * zstd; the other codecs whole), and whole, checked to end at its size, for a match.
 *
 * Memory: a page is decompressed into a buffer of its header's uncompressed size, at most
 * PBA_CHUNK_MAX_PAGE bytes, and the pages decompressed in one chunk total at most the
 * chunk's uncompressed size as its footer says (`limit`). They are freed by
 * pba_chunk_close.
 *
 * Thread safety: one reader is used by one thread at a time; different readers are
 * independent.
 */

/* Status codes of the chunk reader: 0 (PBA_CHUNK_OK), one of pybloom_async_rows.h's
 * PBA_TAKE_ERR_* from the page readers, or one of these, from -90. */
enum {
    PBA_CHUNK_OK = 0,
    PBA_CHUNK_ERR_ARG = -90,       /* a null pointer, rows not ascending or past the chunk */
    PBA_CHUNK_ERR_PAGES = -91,     /* a header unreadable, a page past the chunk or short of
                                      its rows, a page kind or encoding not read here */
    PBA_CHUNK_ERR_CODEC = -92,     /* a codec not built in */
    PBA_CHUNK_ERR_CORRUPT = -93,   /* a page that does not decompress to its size */
    PBA_CHUNK_ERR_TOO_LARGE = -94, /* past PBA_CHUNK_MAX_PAGE or the chunk's limit */
    PBA_CHUNK_ERR_MEMORY = -95     /* an allocation failed */
};

/* A page larger than this, uncompressed, is not read here. */
#define PBA_CHUNK_MAX_PAGE 268435456

/* Parquet's CompressionCodec values. */
#define PBA_CODEC_UNCOMPRESSED 0
#define PBA_CODEC_SNAPPY 1
#define PBA_CODEC_GZIP 2
#define PBA_CODEC_BROTLI 4
#define PBA_CODEC_ZSTD 6
#define PBA_CODEC_LZ4_RAW 7

/* 1 if pages of this codec are decompressed here, else 0. */
int pba_codec_available(int32_t codec);

/* Decompresses src into exactly dst_len bytes: PBA_CHUNK_OK, or ERR_CODEC, or
 * ERR_CORRUPT when src is not one whole compressed block of that size. */
int pba_decompress(int32_t codec, const uint8_t *src, size_t src_len, uint8_t *dst,
                   size_t dst_len);

/* A column chunk as stored: data[0, len) starts at its first page (the dictionary page,
 * if any). width: 4 or 8 for fixed-width values, 0 for BYTE_ARRAY. optional: 1 if its
 * maximum definition level is 1, else 0 (no levels). num_rows: its row group's rows
 * (below 2^31). limit: its total uncompressed size, as its footer says.
 *
 * Or some of a chunk's data pages, back to back after its dictionary page (pages an offset
 * index chose): num_rows is then their rows, and page_rows (n_page_rows entries) each
 * page's rows as the index says. A data page whose values are not its entry's is
 * PBA_CHUNK_ERR_PAGES: rows are placed among the pages by the index, read by the headers.
 * page_rows NULL: no such check (a whole chunk). */
typedef struct {
    const uint8_t *data;
    size_t len;
    int32_t codec;
    uint32_t width;
    uint32_t optional;
    uint64_t num_rows;
    uint64_t limit;
    const uint32_t *page_rows;
    size_t n_page_rows;
} pba_chunk;

typedef struct pba_chunk_reader pba_chunk_reader;

/* Reads the chunk's page headers. The chunk's bytes must outlive the reader (pages
 * stored uncompressed are read in place). On success *out is a reader to close. */
int pba_chunk_open(const pba_chunk *chunk, pba_chunk_reader **out);

/* Frees the reader and the pages it decompressed (NULL: nothing). */
void pba_chunk_close(pba_chunk_reader *reader);

/* The rows (of the row group, ascending) whose value is one of `keys`: *found of them
 * written to rows (capacity: the chunk's num_rows suffices). */
int pba_chunk_match(pba_chunk_reader *reader, const pba_keys *keys, uint32_t *rows,
                    size_t capacity, size_t *found);

/* The values of `rows` (n of them, strictly ascending, each below num_rows).
 * valid (out, n): 1 where the row's value is present, 0 for a NULL.
 * Fixed width: values (out, n * width bytes): each present value, zeros for a NULL.
 * BYTE_ARRAY: offsets (out, n + 1): Arrow's offsets of the values, from 0 (a NULL is
 *     empty); the bytes are then copied by pba_chunk_gather. */
int pba_chunk_take(pba_chunk_reader *reader, const int64_t *rows, size_t n, uint8_t *valid,
                   uint8_t *values, int64_t *offsets);

/* How many of its data pages the reader has read so far (each once: decompressed, or
 * read in place). */
size_t pba_chunk_pages_read(const pba_chunk_reader *reader);

/* Copies the byte arrays of the last pba_chunk_take into out (exactly the size its
 * offsets[n] said). */
int pba_chunk_gather(pba_chunk_reader *reader, uint8_t *out, size_t out_len);

/*
 * Many chunks of one column at once (a file's row groups): one call opens each chunk and
 * matches or takes its rows, so a file's column costs a call or two, not three per row
 * group. readers (n_chunks) holds each chunk's reader: a NULL entry is opened here from
 * chunks[c] (and left there), a reader given (by an earlier call on the same chunks) is
 * used as it is. The caller closes them all (pba_chunks_close) whatever the status. On a
 * failure *failed is the chunk that failed, whose status is returned; the outputs are
 * then not all written.
 *
 * pba_chunks_match: the rows of each chunk whose value is one of `keys`, one chunk's after
 * another's in rows (capacity: the chunks' num_rows together suffice), counts[c] of
 * chunks[c].
 *
 * pba_chunks_take: chunks[c] taken at its counts[c] rows, which follow one another in rows
 * (each chunk's strictly ascending, below its num_rows); valid, values and offsets as one
 * pba_chunk_take of all the rows, in order (byte arrays: offsets go on across the chunks
 * from 0, and pba_chunks_gather copies their bytes).
 */
int pba_chunks_match(const pba_chunk *chunks, size_t n_chunks, const pba_keys *keys,
                     uint32_t *rows, size_t capacity, uint64_t *counts,
                     pba_chunk_reader **readers, size_t *failed);

int pba_chunks_take(const pba_chunk *chunks, size_t n_chunks, const int64_t *rows,
                    const uint64_t *counts, uint8_t *valid, uint8_t *values, int64_t *offsets,
                    pba_chunk_reader **readers, size_t *failed);

/* Copies the byte arrays of a pba_chunks_take into out (exactly the size its last offset
 * said). */
int pba_chunks_gather(pba_chunk_reader **readers, size_t n_chunks, uint8_t *out,
                      size_t out_len);

/* Closes the readers of these calls (NULL entries are skipped) and sets them NULL. */
void pba_chunks_close(pba_chunk_reader **readers, size_t n_chunks);

/*
 * Buffers of the chunk reader's pool for bytes a caller reads into (a local file's chunks,
 * read once while their rows are read): freed buffers of PBA_BUFFER_KEPT_MIN bytes or more
 * are kept for reuse, up to 64 of them and 32 MiB in all, so such reads do not fault in
 * fresh memory each time. pba_buffer_new: at least `len` bytes (contents undefined), or
 * NULL; pba_buffer_free gives it back (NULL: nothing).
 */
#define PBA_BUFFER_KEPT_MIN 65536
void *pba_buffer_new(size_t len);
void pba_buffer_free(void *buf);

/*
 * Reads n ranges of the file open as `fd`, each into a new buffer of the pool
 * (pba_buffer_new): bufs[i] holds lens[i] bytes read at starts[i] and got[i] says how many
 * were read (fewer only where the range passes the file's end). One call for a file's
 * ranges: the caller's thread is not woken between them. 0 when done; else an errno value
 * (EINVAL: a range out of bounds; ENOMEM: no buffer; ENOSYS: no pread on this system; or
 * the read's own), and then every buffer is given back and its bufs entry is NULL.
 */
int pba_buffers_read(int fd, size_t n, const int64_t *starts, const uint64_t *lens, void **bufs,
                     uint64_t *got);

#ifdef __cplusplus
}
#endif

#endif /* PYBLOOM_ASYNC_ROWS_H */
