/*
 * pool.h: large buffers of the chunk reader kept for reuse (private to csrc/rows).
 *
 * A lookup's chunks decompress page after page into buffers of a few hundred KiB, freed a
 * moment later. The C library's allocator gives such sizes their own mappings and hands
 * them back on free, so every page paid for fresh memory (a page fault and zeroing per
 * 4 KiB) before its first byte was written. Here a freed buffer of at least
 * PBA_POOL_MIN bytes is kept, up to PBA_POOL_SLOTS buffers and PBA_POOL_BYTES in all,
 * and the next request it fits takes it. The buffers are never read before they are
 * written, so what they held before does not matter. Any thread may call these.
 */
#ifndef PBA_ROWS_POOL_H
#define PBA_ROWS_POOL_H

#include <stddef.h>

#include "pybloom_async_rows.h"

/* Buffers smaller than this are left to malloc and free (64 KiB). */
#define PBA_POOL_MIN ((size_t)PBA_BUFFER_KEPT_MIN)
/* At most this many buffers, and this many bytes, are kept. A file's rows hold about 30
 * at once (each chunk's pages and the file's reads) and a lookup's threads read two files
 * at once: with 16 slots most went back to malloc, which gave their memory back (3,000 to
 * 7,000 page faults in an IN 1,000 lookup of the hive lake, against 1,100 to 1,400). */
#define PBA_POOL_SLOTS 64
#define PBA_POOL_BYTES ((size_t)32 << 20)

/* A buffer of at least `len` bytes (its contents undefined), or NULL. */
void *pba_pool_get(size_t len);

/* Gives a buffer of pba_pool_get back (NULL: nothing). */
void pba_pool_put(void *buf);

#endif /* PBA_ROWS_POOL_H */
