/*
 * codec.c: a page's bytes decompressed (pybloom_async_rows.h, pba_decompress).
 *
 * Snappy's block format is read here (it is small and needs no library); the other codecs
 * come from their libraries when the build found them (PBA_HAVE_ZLIB, PBA_HAVE_BROTLI,
 * PBA_HAVE_ZSTD, PBA_HAVE_LZ4: csrc/build_native.py). Every call decompresses one whole
 * block into exactly the size the page header gave, or fails: a shorter or longer output,
 * trailing bytes, or a back-reference before the output's start is CORRUPT.
 */
#include <string.h>

#include "pybloom_async_rows.h"
#include "le.h"
#include "stream.h"

#ifdef PBA_HAVE_ZLIB
#include <zlib.h>
#endif
#ifdef PBA_HAVE_BROTLI
#include <brotli/decode.h>
#endif
#ifdef PBA_HAVE_ZSTD
/* For ZSTD_d_stableOutBuffer (zstd >= 1.4.4 reads it; an older one refuses it, and its
 * pages are then read whole). */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#endif
#ifdef PBA_HAVE_LZ4
#include <lz4.h>
#endif

int pba_codec_available(int32_t codec) {
    switch (codec) {
    case PBA_CODEC_UNCOMPRESSED:
    case PBA_CODEC_SNAPPY:
        return 1;
#ifdef PBA_HAVE_ZLIB
    case PBA_CODEC_GZIP:
        return 1;
#endif
#ifdef PBA_HAVE_BROTLI
    case PBA_CODEC_BROTLI:
        return 1;
#endif
#ifdef PBA_HAVE_ZSTD
    case PBA_CODEC_ZSTD:
        return 1;
#endif
#ifdef PBA_HAVE_LZ4
    case PBA_CODEC_LZ4_RAW:
        return 1;
#endif
    default:
        return 0;
    }
}

/* A back-reference: `len` bytes from `offset` bytes back, which may overlap what it
 * writes (a run). */
static int snappy_copy(uint8_t *dst, size_t cap, size_t *at, size_t offset, size_t len) {
    size_t o = *at;
    if (offset == 0 || offset > o || len > cap - o) return PBA_CHUNK_ERR_CORRUPT;
    uint8_t *d = dst + o;
    const uint8_t *s = d - offset;
    if (offset >= 16 && len <= 16 && cap - o >= 16) {
        memcpy(d, s, 16); /* fixed size: inlined; the bytes past len are rewritten later */
    } else if (offset >= len) {
        if (len > 16 && len <= 32 && cap - o >= 32) {
            /* two fixed blocks, inlined (a call of libc's memcpy costs more); the bytes the
             * second needs lie before d (offset >= len), the rest is rewritten later */
            memcpy(d, s, 16);
            memcpy(d + 16, s + 16, 16);
        } else {
            memcpy(d, s, len);
        }
    } else {
        for (size_t k = 0; k < len; k++) d[k] = s[k];
    }
    *at = o + len;
    return PBA_CHUNK_OK;
}

/* Snappy's block format: the uncompressed length as a varint, then literals and copies,
 * each led by a tag byte whose low two bits say which. Read as a stream: each call goes on
 * from where the last stopped (s->in_at, s->done) until `want` bytes are out, or the end. */
static int snappy_start(pba_stream *s) {
    uint64_t size = 0;
    size_t i = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (i >= s->src_len || shift > 28) return PBA_CHUNK_ERR_CORRUPT;
        uint8_t b = s->src[i++];
        size |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
    }
    if (size != s->dst_len) return PBA_CHUNK_ERR_CORRUPT;
    s->in_at = i;
    return PBA_CHUNK_OK;
}

static int snappy_until(pba_stream *s, size_t want) {
    const uint8_t *src = s->src;
    uint8_t *dst = s->dst;
    size_t n = s->src_len, cap = s->dst_len, i = s->in_at, o = s->done;
    while (i < n && o < want) {
        uint8_t tag = src[i++];
        size_t len, offset;
        int status;
        switch (tag & 3) {
        case 0: /* a literal: its length - 1 in the tag, or in the 1-4 bytes after it */
            len = tag >> 2;
            if (len >= 60) {
                size_t k = len - 59;
                if (n - i < k) return PBA_CHUNK_ERR_CORRUPT;
                len = 0;
                for (size_t j = 0; j < k; j++) len |= (size_t)src[i + j] << (8 * j);
                i += k;
            }
            len += 1;
            if (len > n - i || len > cap - o) return PBA_CHUNK_ERR_CORRUPT;
            if (len <= 16 && n - i >= 16 && cap - o >= 16) {
                memcpy(dst + o, src + i, 16); /* the bytes past len are rewritten later */
            } else {
                memcpy(dst + o, src + i, len);
            }
            i += len;
            o += len;
            continue;
        case 1: /* 4-11 bytes, an 11-bit offset */
            if (i >= n) return PBA_CHUNK_ERR_CORRUPT;
            len = ((tag >> 2) & 7) + 4;
            offset = ((size_t)(tag >> 5) << 8) | src[i++];
            break;
        case 2: /* 1-64 bytes, a 16-bit offset */
            if (n - i < 2) return PBA_CHUNK_ERR_CORRUPT;
            len = (size_t)(tag >> 2) + 1;
            offset = (size_t)src[i] | (size_t)src[i + 1] << 8;
            i += 2;
            break;
        default: /* 1-64 bytes, a 32-bit offset */
            if (n - i < 4) return PBA_CHUNK_ERR_CORRUPT;
            len = (size_t)(tag >> 2) + 1;
            offset = pba_le32(src + i);
            i += 4;
            break;
        }
        status = snappy_copy(dst, cap, &o, offset, len);
        if (status != PBA_CHUNK_OK) return status;
    }
    s->in_at = i;
    s->done = o;
    if (i == n) {
        if (o != cap) return PBA_CHUNK_ERR_CORRUPT;
        s->finished = 1;
    }
    return PBA_CHUNK_OK;
}

#ifdef PBA_HAVE_ZSTD
/* The largest window a zstd page may ask for when read as a stream (16 MiB): a larger
 * one is read whole, by the one-shot call, into the page's own buffer instead. */
#define ZSTD_STREAM_WINDOW_LOG 24

static int zstd_until(pba_stream *s, size_t want) {
    if (s->zstd == NULL) {
        ZSTD_DStream *z = ZSTD_createDStream();
        if (z == NULL) return PBA_CHUNK_ERR_MEMORY;
        s->zstd = z;
        /* Decoded straight into the page's buffer (no window of its own, no copy). */
        if (ZSTD_isError(ZSTD_DCtx_setParameter(z, ZSTD_d_windowLogMax, ZSTD_STREAM_WINDOW_LOG)) ||
            ZSTD_isError(ZSTD_DCtx_setParameter(z, ZSTD_d_stableOutBuffer, 1)))
            return PBA_CHUNK_ERR_CORRUPT;
    }
    /* The output buffer stays the whole page (as the stable buffer requires); the input is
     * fed in steps of an eighth (at least 16 KiB) until `want` bytes are out. */
    size_t step = s->src_len / 8 > ((size_t)1 << 14) ? s->src_len / 8 : ((size_t)1 << 14);
    ZSTD_inBuffer in = {s->src, s->in_size, s->in_at};
    ZSTD_outBuffer out = {s->dst, s->dst_len, s->done};
    while (out.pos < want) {
        if (in.pos == in.size) {
            if (in.size == s->src_len) return PBA_CHUNK_ERR_CORRUPT; /* ends short */
            in.size = s->src_len - in.size > step ? in.size + step : s->src_len;
        }
        size_t r = ZSTD_decompressStream((ZSTD_DStream *)s->zstd, &out, &in);
        if (ZSTD_isError(r)) return PBA_CHUNK_ERR_CORRUPT;
        s->zstd_left = r;
    }
    s->in_size = in.size;
    s->in_at = in.pos;
    s->done = out.pos;
    if (out.pos < s->dst_len) return PBA_CHUNK_OK;
    /* The whole page out: the rest of the input must end its frames with no more bytes
     * (the output has no room left, so more would be an error). */
    in.size = s->src_len;
    while (s->zstd_left != 0 || in.pos < in.size) {
        size_t before = in.pos;
        size_t r = ZSTD_decompressStream((ZSTD_DStream *)s->zstd, &out, &in);
        if (ZSTD_isError(r)) return PBA_CHUNK_ERR_CORRUPT;
        if (in.pos == before && r == s->zstd_left) return PBA_CHUNK_ERR_CORRUPT; /* cut short */
        s->zstd_left = r;
    }
    s->in_at = in.pos;
    s->finished = 1;
    return PBA_CHUNK_OK;
}
#endif

int pba_stream_init(pba_stream *s, int32_t codec, const uint8_t *src, size_t src_len,
                    uint8_t *dst, size_t dst_len) {
    memset(s, 0, sizeof *s);
    s->codec = codec;
    s->src = src;
    s->src_len = src_len;
    s->dst = dst;
    s->dst_len = dst_len;
    return codec == PBA_CODEC_SNAPPY ? snappy_start(s) : PBA_CHUNK_OK;
}

/* The whole of dst decompressed at once (what a stream that cannot go on falls back to). */
static int stream_whole(pba_stream *s) {
    int status = pba_decompress(s->codec, s->src, s->src_len, s->dst, s->dst_len);
    if (status != PBA_CHUNK_OK) return status;
    s->done = s->dst_len;
    s->finished = 1;
    return PBA_CHUNK_OK;
}

int pba_stream_until(pba_stream *s, size_t want) {
    if (want > s->dst_len) return PBA_CHUNK_ERR_ARG;
    if (s->finished || s->done >= want) return PBA_CHUNK_OK;
    if (s->codec == PBA_CODEC_SNAPPY) {
        /* The whole page: read to its end, so that trailing bytes are refused. */
        int status = snappy_until(s, want == s->dst_len ? SIZE_MAX : want);
        if (status != PBA_CHUNK_OK) return status;
        return s->done >= want ? PBA_CHUNK_OK : PBA_CHUNK_ERR_CORRUPT;
    }
#ifdef PBA_HAVE_ZSTD
    /* A part read as a stream, and the rest of a stream begun (checked to end exactly at
     * the page's size); a whole page not begun at once. */
    if (s->codec == PBA_CODEC_ZSTD && !s->failed && (want < s->dst_len || s->zstd != NULL)) {
        if (zstd_until(s, want) == PBA_CHUNK_OK) return PBA_CHUNK_OK;
        s->failed = 1; /* read whole from here on: it says whether the page is damaged */
    }
#endif
    return stream_whole(s);
}

void pba_stream_free(pba_stream *s) {
#ifdef PBA_HAVE_ZSTD
    if (s->zstd != NULL) ZSTD_freeDStream((ZSTD_DStream *)s->zstd);
#endif
    s->zstd = NULL;
}

#ifdef PBA_HAVE_ZLIB
/* GZIP pages: a gzip stream (zlib's header accepted too, as pyarrow's reader does). */
static int gzip_decompress(const uint8_t *src, size_t n, uint8_t *dst, size_t cap) {
    if (n > UINT32_MAX || cap > UINT32_MAX) return PBA_CHUNK_ERR_TOO_LARGE;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 32) != Z_OK) return PBA_CHUNK_ERR_MEMORY;
    z.next_in = (Bytef *)(uintptr_t)src;
    z.avail_in = (uInt)n;
    z.next_out = dst;
    z.avail_out = (uInt)cap;
    int status = inflate(&z, Z_FINISH);
    int whole = status == Z_STREAM_END && z.total_out == cap && z.avail_in == 0;
    inflateEnd(&z);
    return whole ? PBA_CHUNK_OK : PBA_CHUNK_ERR_CORRUPT;
}
#endif

int pba_decompress(int32_t codec, const uint8_t *src, size_t src_len, uint8_t *dst,
                   size_t dst_len) {
    if ((src == NULL && src_len) || (dst == NULL && dst_len)) return PBA_CHUNK_ERR_ARG;
    switch (codec) {
    case PBA_CODEC_UNCOMPRESSED:
        if (src_len != dst_len) return PBA_CHUNK_ERR_CORRUPT;
        if (dst_len) memcpy(dst, src, dst_len);
        return PBA_CHUNK_OK;
    case PBA_CODEC_SNAPPY: {
        pba_stream s;
        int status = pba_stream_init(&s, codec, src, src_len, dst, dst_len);
        if (status == PBA_CHUNK_OK) status = snappy_until(&s, SIZE_MAX);
        return status == PBA_CHUNK_OK && s.finished ? PBA_CHUNK_OK : PBA_CHUNK_ERR_CORRUPT;
    }
#ifdef PBA_HAVE_ZLIB
    case PBA_CODEC_GZIP:
        return gzip_decompress(src, src_len, dst, dst_len);
#endif
#ifdef PBA_HAVE_BROTLI
    case PBA_CODEC_BROTLI: {
        size_t out = dst_len;
        BrotliDecoderResult r = BrotliDecoderDecompress(src_len, src, &out, dst);
        return r == BROTLI_DECODER_RESULT_SUCCESS && out == dst_len ? PBA_CHUNK_OK
                                                                     : PBA_CHUNK_ERR_CORRUPT;
    }
#endif
#ifdef PBA_HAVE_ZSTD
    case PBA_CODEC_ZSTD: {
        size_t out = ZSTD_decompress(dst, dst_len, src, src_len);
        return !ZSTD_isError(out) && out == dst_len ? PBA_CHUNK_OK : PBA_CHUNK_ERR_CORRUPT;
    }
#endif
#ifdef PBA_HAVE_LZ4
    case PBA_CODEC_LZ4_RAW: {
        if (src_len > INT32_MAX || dst_len > INT32_MAX) return PBA_CHUNK_ERR_TOO_LARGE;
        int out = LZ4_decompress_safe((const char *)src, (char *)dst, (int)src_len,
                                      (int)dst_len);
        return out >= 0 && (size_t)out == dst_len ? PBA_CHUNK_OK : PBA_CHUNK_ERR_CORRUPT;
    }
#endif
    default:
        return PBA_CHUNK_ERR_CODEC;
    }
}
