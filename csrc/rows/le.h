/*
 * le.h: little-endian loads of the row readers (private to csrc/rows).
 */
#ifndef PBA_ROWS_LE_H
#define PBA_ROWS_LE_H

#include <stdint.h>
#include <string.h>

/* Four bytes at p, little-endian (a byte array's length, a snappy offset). */
static inline uint32_t pba_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Eight bytes at p, little-endian. */
static inline uint64_t pba_le64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

#endif /* PBA_ROWS_LE_H */
