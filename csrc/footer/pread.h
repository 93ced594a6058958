/*
 * pread.h: exact reads at an offset, for the filter probes (decide.c), the file pass
 * (pass.c) and the rows' reads into the pool's buffers (rows/pool.c). Private to csrc.
 * Where the system has no pread, PBA_HAVE_PREAD is not defined and the callers answer
 * UNSURE or ASIDE, or ENOSYS, instead of reading.
 */
#ifndef PBA_FOOTER_PREAD_H
#define PBA_FOOTER_PREAD_H

#if defined(__unix__) || defined(__APPLE__)
#include <errno.h>
#include <unistd.h>
#define PBA_HAVE_PREAD 1
#endif

#include <stddef.h>
#include <stdint.h>

#ifdef PBA_HAVE_PREAD
/* Read exactly n bytes at offset, counting one request and the bytes read; 0 on a short
 * read or an error (errno then says which, 0 for the file's end). */
static inline int pba_read_at(int fd, uint8_t *dst, size_t n, int64_t offset,
                              uint64_t *requests, uint64_t *bytes_read)
{
    size_t done = 0;
    (*requests)++;
    while (done < n) {
        const ssize_t got = pread(fd, dst + done, n - done, (off_t)(offset + (int64_t)done));
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            if (got == 0) {
                errno = 0;
            }
            return 0;
        }
        done += (size_t)got;
        *bytes_read += (uint64_t)got;
    }
    return 1;
}
#endif

#endif /* PBA_FOOTER_PREAD_H */
