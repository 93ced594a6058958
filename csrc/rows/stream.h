/*
 * stream.h: a page decompressed as far as it is read (private to csrc/rows).
 *
 * A dictionary page of distinct values is most of its chunk, and taking a row or two of
 * it needs only the entries up to the largest index taken. A stream decompresses the
 * page into its buffer only as far as asked: snappy (read in codec.c) goes on from where
 * it stopped; zstd through its streaming API; the other codecs, and a zstd page whose
 * stream fails or is asked for whole, are decompressed whole by pba_decompress, which
 * checks that the page ends exactly at its size. dst[0, done) is always the page's
 * decompressed prefix.
 */
#ifndef PBA_ROWS_STREAM_H
#define PBA_ROWS_STREAM_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int32_t codec;
    const uint8_t *src;
    size_t src_len;
    uint8_t *dst;
    size_t dst_len;
    size_t done;  /* dst[0, done) is decompressed */
    int finished; /* the whole page, checked to end exactly at dst_len */
    int failed;   /* the stream failed: the page is read whole from here on */
    size_t in_at;   /* the source bytes read */
    size_t in_size;   /* zstd: the source bytes given to it so far */
    size_t zstd_left; /* zstd: its last call's result (0: a frame ended there) */
    void *zstd;   /* the zstd stream, once made */
} pba_stream;

/* Sets the stream up (snappy: its declared length checked against dst_len). */
int pba_stream_init(pba_stream *s, int32_t codec, const uint8_t *src, size_t src_len,
                    uint8_t *dst, size_t dst_len);

/* Decompresses until at least `want` bytes (at most dst_len) are done. */
int pba_stream_until(pba_stream *s, size_t want);

/* Frees what the stream holds (not its buffers). */
void pba_stream_free(pba_stream *s);

#endif /* PBA_ROWS_STREAM_H */
