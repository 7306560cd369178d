/*
 * compiler.h — the few compiler features the engine uses beyond plain C11,
 * each with its GCC/Clang spelling (what the project builds and tests with:
 * gcc and clang on Linux, mingw-w64 gcc for Windows) and an MSVC spelling.
 * The MSVC branches have never been compiled by this project: they are a
 * starting point, not a promise.
 */
#ifndef ZC_COMPILER_H
#define ZC_COMPILER_H

#include <stdint.h>

/* C11 atomics.  MSVC has <stdatomic.h> from Visual Studio 2022 17.5 on, with
 * /std:c11 /experimental:c11atomics. */
#include <stdatomic.h>

/* printf-style argument checking of the engine's own formatting helpers.
 * mingw-w64 builds define __USE_MINGW_ANSI_STDIO=1 (the build does), so
 * that snprintf is C99's (%zu, %llu) rather than the old msvcrt's, and
 * check formats accordingly. */
#if defined(__MINGW32__)
#define ZC_PRINTF(fmt_index, first_arg) __attribute__((format(gnu_printf, fmt_index, first_arg)))
#elif defined(__GNUC__) || defined(__clang__)
#define ZC_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define ZC_PRINTF(fmt_index, first_arg)
#endif

/* Thread-local storage (the last-error message).  MSVC spells it
 * __declspec(thread). */
#if defined(_MSC_VER) && !defined(__clang__)
#define ZC_THREAD_LOCAL __declspec(thread)
#else
#define ZC_THREAD_LOCAL _Thread_local
#endif

/* Overflow-checked arithmetic: 0 and the result in *out, or -1 on overflow
 * (then *out is unspecified). */
static inline int zc__mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_mul_overflow(a, b, out) ? -1 : 0;
#else
    if (a != 0 && b > UINT64_MAX / a)
        return -1;
    *out = a * b;
    return 0;
#endif
}

static inline int zc__add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_add_overflow(a, b, out) ? -1 : 0;
#else
    if (b > UINT64_MAX - a)
        return -1;
    *out = a + b;
    return 0;
#endif
}

/* For non-negative a and b only (sizes and strides, checked by the caller). */
static inline int zc__mul_nonneg_i64(int64_t a, int64_t b, int64_t *out)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_mul_overflow(a, b, out) ? -1 : 0;
#else
    if (a < 0 || b < 0 || (a != 0 && b > INT64_MAX / a))
        return -1;
    *out = a * b;
    return 0;
#endif
}

/* Byte swaps (XXH3 mixes with them). */
static inline uint32_t zc__bswap32(uint32_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_bswap32(x);
#else
    return (x >> 24) | ((x >> 8) & 0xFF00u) | ((x << 8) & 0xFF0000u) | (x << 24);
#endif
}

static inline uint64_t zc__bswap64(uint64_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_bswap64(x);
#else
    return ((uint64_t)zc__bswap32((uint32_t)x) << 32) | zc__bswap32((uint32_t)(x >> 32));
#endif
}

/* The 128-bit product of two 64-bit values folded to 64 bits (low half xor
 * high half), as XXH3 uses it.  GCC and Clang on 64-bit targets have a
 * 128-bit integer type; elsewhere the 32-bit-halves version of
 * xxh3_internal.h is used (the tests check both agree). */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__SIZEOF_INT128__)
#define ZC_HAVE_INT128 1
__extension__ typedef unsigned __int128 zc__u128;
static inline uint64_t zc__mul128_fold64(uint64_t a, uint64_t b)
{
    zc__u128 p = (zc__u128)a * b;
    return (uint64_t)p ^ (uint64_t)(p >> 64);
}
#else
#define ZC_HAVE_INT128 0
#endif

/* SIMD digest kernels (xxh3_x86.c): x86-64 with GCC or Clang (mingw-w64
 * included), which compile AVX2 code per function (target attribute) and
 * (and AVX-512F) code per function (target attribute) and tell at run time
 * whether the CPU and OS support it.  SSE2 is part of
 * x86-64 itself.  Other compilers and architectures get the portable
 * kernel only: an MSVC spelling (__cpuid, no target attribute needed)
 * would be easy but could not be tested here, and NEON on aarch64 is not
 * written for the same reason (no aarch64 machine to run it on). */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define ZC_X86_KERNELS 1
#define ZC_TARGET_AVX2 __attribute__((target("avx2")))
#define ZC_TARGET_AVX512 __attribute__((target("avx512f,avx2")))
static inline int zc__cpu_has_avx2(void)
{
    __builtin_cpu_init(); /* needed when called before constructors ran; cheap */
    return __builtin_cpu_supports("avx2") != 0;
}
/* GCC's and Clang's cpu_supports also check that the OS saves the 512-bit
 * state (XCR0's ZMM bits), not only the CPUID flag. */
static inline int zc__cpu_has_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
}
#else
#define ZC_X86_KERNELS 0
#endif

#endif /* ZC_COMPILER_H */
