/*
 * pool.c: large buffers kept for reuse (pool.h).
 *
 * Each buffer carries its capacity in a header before the bytes handed out. The kept
 * buffers sit in a small array guarded by a spin lock (gcc's and clang's atomic builtins):
 * its critical sections scan at most PBA_POOL_SLOTS entries, far shorter than the
 * allocator calls they save.
 */
#define _POSIX_C_SOURCE 200809L /* pread under -std=c99 */
#include "pool.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "../footer/pread.h"

/* The header before a buffer's bytes: its capacity, padded as malloc aligns (the widest
 * scalar's alignment), so the bytes after it are aligned as malloc's. */
typedef union {
    size_t cap;
    long double widest_float;
    void *pointer;
    uint64_t widest_int;
} header;

static struct {
    header *buf;
} slots[PBA_POOL_SLOTS];
static size_t kept_bytes;
static volatile int lock; /* the compilers' atomic builtins (the build is C99) */

static void acquire(void) {
    while (__atomic_test_and_set(&lock, __ATOMIC_ACQUIRE)) {
    }
}

static void release(void) { __atomic_clear(&lock, __ATOMIC_RELEASE); }

/* Under AddressSanitizer nothing is kept: every buffer is malloc's and freed at once, so
 * that a read of a page after its reader closed is caught, not served from the pool. */
#if defined(__SANITIZE_ADDRESS__)
#define PBA_POOL_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PBA_POOL_OFF 1
#endif
#endif
#ifndef PBA_POOL_OFF
#define PBA_POOL_OFF 0
#endif

/* A kept buffer fits a request of `len` bytes when it holds them and is not more than
 * twice as large (a small request does not take a large buffer from a later large one). */
static int fits(size_t cap, size_t len) { return cap >= len && cap / 2 <= len; }

void *pba_pool_get(size_t len) {
    if (len >= PBA_POOL_MIN && !PBA_POOL_OFF) {
        header *found = NULL;
        acquire();
        size_t best = PBA_POOL_SLOTS;
        for (size_t i = 0; i < PBA_POOL_SLOTS; i++) {
            header *h = slots[i].buf;
            if (h != NULL && fits(h->cap, len) &&
                (best == PBA_POOL_SLOTS || h->cap < slots[best].buf->cap))
                best = i;
        }
        if (best != PBA_POOL_SLOTS) {
            found = slots[best].buf;
            slots[best].buf = NULL;
            kept_bytes -= found->cap;
        }
        release();
        if (found != NULL) return found + 1;
    }
    if (len > SIZE_MAX - sizeof(header)) return NULL;
    header *h = malloc(sizeof(header) + (len ? len : 1));
    if (h == NULL) return NULL;
    h->cap = len;
    return h + 1;
}

void pba_pool_put(void *buf) {
    if (buf == NULL) return;
    header *h = (header *)buf - 1;
    if (h->cap >= PBA_POOL_MIN && !PBA_POOL_OFF) {
        int kept = 0;
        acquire();
        if (h->cap <= PBA_POOL_BYTES - kept_bytes) {
            for (size_t i = 0; i < PBA_POOL_SLOTS; i++) {
                if (slots[i].buf == NULL) {
                    slots[i].buf = h;
                    kept_bytes += h->cap;
                    kept = 1;
                    break;
                }
            }
        }
        release();
        if (kept) return;
    }
    free(h);
}

void *pba_buffer_new(size_t len) { return pba_pool_get(len); }

void pba_buffer_free(void *buf) { pba_pool_put(buf); }

int pba_buffers_read(int fd, size_t n, const int64_t *starts, const uint64_t *lens, void **bufs,
                     uint64_t *got) {
    for (size_t i = 0; i < n; i++) {
        bufs[i] = NULL;
        got[i] = 0;
    }
#ifndef PBA_HAVE_PREAD
    (void)fd;
    (void)starts;
    (void)lens;
    return ENOSYS;
#else
    int err = 0;
    for (size_t i = 0; i < n; i++) {
        if (starts[i] < 0 || lens[i] > (uint64_t)(INT64_MAX - starts[i]) ||
            lens[i] > (uint64_t)SIZE_MAX) {
            err = EINVAL;
            break;
        }
        bufs[i] = pba_pool_get((size_t)lens[i]);
        if (bufs[i] == NULL) {
            err = ENOMEM;
            break;
        }
        uint64_t requests = 0, read = 0;
        if (!pba_read_at(fd, bufs[i], (size_t)lens[i], starts[i], &requests, &read) &&
            errno != 0) {
            err = errno;
            break;
        }
        got[i] = read; /* fewer than asked only at the file's end */
    }
    if (err != 0) {
        for (size_t i = 0; i < n; i++) {
            pba_pool_put(bufs[i]);
            bufs[i] = NULL;
            got[i] = 0;
        }
    }
    return err;
#endif
}
