/*
 * dispatch.c: pick the SBBF kernels once, at load time.
 *
 * This file must be built for the baseline target: if it were compiled with
 * AVX2 enabled, the compiler could emit AVX2 instructions here, before the
 * check that says whether the CPU has them (the reason xxHash's
 * xxh_x86dispatch.c refuses -mavx*).
 */
#if defined(__AVX2__)
#error "dispatch.c must be compiled for the baseline target, without -mavx2/-march=native"
#endif

#if !defined(_POSIX_C_SOURCE) && !defined(_WIN32)
#define _POSIX_C_SOURCE 200112L
#endif

#include <stdlib.h>
#include <string.h>

#include "internal.h"

#if defined(PBA_HAVE_AVX2_KERNELS)
#if defined(_MSC_VER)
#include <intrin.h>
#include <immintrin.h>
#else
#include <cpuid.h>
#endif

static int cpu_has_avx2(void)
{
    unsigned int a, b, c, d;
#if defined(_MSC_VER)
    int r[4];
    __cpuid(r, 0);
    if (r[0] < 7) {
        return 0;
    }
    __cpuid(r, 1);
    c = (unsigned)r[2];
#else
    if (__get_cpuid_max(0, NULL) < 7) {
        return 0;
    }
    __cpuid(1, a, b, c, d);
#endif
    /* CPUID.1:ECX bit 27 OSXSAVE (XGETBV usable), bit 28 AVX. */
    if (!(c & (1u << 27)) || !(c & (1u << 28))) {
        return 0;
    }
    /* XCR0 bits 1 and 2: the OS saves XMM and YMM state on context switch.
     * Without them AVX2 instructions fault even when CPUID lists them. */
#if defined(_MSC_VER)
    unsigned long long xcr0 = _xgetbv(0);
#else
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    unsigned long long xcr0 = ((unsigned long long)hi << 32) | lo;
#endif
    if ((xcr0 & 6u) != 6u) {
        return 0;
    }
#if defined(_MSC_VER)
    __cpuidex(r, 7, 0);
    b = (unsigned)r[1];
#else
    __cpuid_count(7, 0, a, b, c, d);
#endif
    (void)a;
    (void)d;
    return (b & (1u << 5)) != 0; /* CPUID.(7,0):EBX bit 5 AVX2 */
}
#else
static int cpu_has_avx2(void) { return 0; }
#endif

static const pba_kernels *active;
static int avx2_ok;

static void select_kernels(void)
{
    avx2_ok = cpu_has_avx2();
    const char *force = getenv("PYBLOOM_ASYNC_SIMD");
    active = &pba_scalar_kernels;
#if defined(PBA_HAVE_AVX2_KERNELS)
    if (avx2_ok && !(force != NULL && strcmp(force, "scalar") == 0)) {
        active = &pba_avx2_kernels;
    }
#else
    (void)force;
#endif
}

#if defined(__GNUC__) || defined(__clang__)
/* At load: the hot paths then read a pointer that never changes. */
__attribute__((constructor)) static void pba_dispatch_init(void) { select_kernels(); }
#endif

const pba_kernels *pba_active_kernels(void)
{
    if (active == NULL) { /* compilers without constructors: first call */
        select_kernels();
    }
    return active;
}

const char *pba_simd_backend(void) { return pba_active_kernels()->name; }

int pba_avx2_available(void)
{
    (void)pba_active_kernels();
    return avx2_ok;
}

int pba_set_backend(const char *name)
{
    (void)pba_active_kernels();
    if (name == NULL) {
        return PBA_ERR_ARG;
    }
    if (strcmp(name, "scalar") == 0) {
        active = &pba_scalar_kernels;
        return PBA_OK;
    }
#if defined(PBA_HAVE_AVX2_KERNELS)
    if (strcmp(name, "avx2") == 0 && avx2_ok) {
        active = &pba_avx2_kernels;
        return PBA_OK;
    }
#endif
    return PBA_ERR_ARG;
}

const char *pba_strerror(int code)
{
    switch (code) {
    case PBA_OK:
        return "ok";
    case PBA_ERR_ARG:
        return "invalid argument";
    case PBA_ERR_NOMEM:
        return "out of memory";
    case PBA_ERR_SIZE:
        return "filter size must be a power of two between 32 bytes and the limit";
    case PBA_ERR_SIZE_MISMATCH:
        return "filters have different sizes";
    case PBA_ERR_OFFSETS:
        return "BYTE_ARRAY offsets decrease or point past the data buffer";
    case PBA_ERR_HDR_TRUNCATED:
        return "Bloom filter header is truncated";
    case PBA_ERR_HDR_MALFORMED:
        return "Bloom filter header is not valid thrift compact protocol";
    case PBA_ERR_HDR_MISSING:
        return "Bloom filter header lacks a required field (numBytes, algorithm, hash or compression)";
    case PBA_ERR_HDR_ALGORITHM:
        return "Bloom filter algorithm is not BLOCK (split block)";
    case PBA_ERR_HDR_HASH:
        return "Bloom filter hash is not XXHASH";
    case PBA_ERR_HDR_COMPRESSION:
        return "Bloom filter compression is not UNCOMPRESSED";
    case PBA_ERR_HDR_NUMBYTES:
        return "Bloom filter numBytes is not a power of two between 32 bytes and the limit";
    default:
        return "unknown error";
    }
}
