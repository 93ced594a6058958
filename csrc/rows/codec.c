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

#ifdef PBA_HAVE_ZLIB
#include <zlib.h>
#endif
#ifdef PBA_HAVE_BROTLI
#include <brotli/decode.h>
#endif
#ifdef PBA_HAVE_ZSTD
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

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
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
        memcpy(d, s, len);
    } else {
        for (size_t k = 0; k < len; k++) d[k] = s[k];
    }
    *at = o + len;
    return PBA_CHUNK_OK;
}

/* Snappy's block format: the uncompressed length as a varint, then literals and copies,
 * each led by a tag byte whose low two bits say which. */
static int snappy_decompress(const uint8_t *src, size_t n, uint8_t *dst, size_t cap) {
    uint64_t size = 0;
    size_t i = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (i >= n || shift > 28) return PBA_CHUNK_ERR_CORRUPT;
        uint8_t b = src[i++];
        size |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
    }
    if (size != cap) return PBA_CHUNK_ERR_CORRUPT;
    size_t o = 0;
    while (i < n) {
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
                memcpy(dst + o, src + i, 16);
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
            offset = le32(src + i);
            i += 4;
            break;
        }
        status = snappy_copy(dst, cap, &o, offset, len);
        if (status != PBA_CHUNK_OK) return status;
    }
    return o == cap ? PBA_CHUNK_OK : PBA_CHUNK_ERR_CORRUPT;
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
    case PBA_CODEC_SNAPPY:
        return snappy_decompress(src, src_len, dst, dst_len);
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
