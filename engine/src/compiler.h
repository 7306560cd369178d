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

#endif /* ZC_COMPILER_H */
