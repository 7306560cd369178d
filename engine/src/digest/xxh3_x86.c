/*
 * xxh3_x86.c — the XXH3 stripe kernels for x86-64: SSE2 (part of x86-64
 * itself, so always usable), AVX2 and AVX-512F (each compiled per function
 * with the target attribute and used only when the CPU and OS report it,
 * see xxh3_kernels.c).  Each does exactly what the portable kernel does, lane
 * for lane; the tests compare them with it on every length class.
 *
 * One stripe is 64 bytes = eight 64-bit lanes: 4 SSE2, 2 AVX2 or 1 AVX-512
 * register.
 * For lane i: key = data ^ secret; acc[i] += lo32(key) * hi32(key) (the
 * unsigned 32x32->64 multiply, mul_epu32); acc[i ^ 1] += data (a swap of
 * the two 64-bit halves of each 128-bit lane).  The scramble multiplies by
 * a 32-bit prime, done as two 32x32 products.
 */
#include "core/internal.h"
#include "xxh3_internal.h"

#if ZC_X86_KERNELS

#include <immintrin.h>

/* The five entry points of a kernel, each one call of its run loop
 * (acc, dst or NULL, in, whole blocks, loose stripes, secret, streaming). */
#define ZC_XXH3_KERNEL(name, target)                                                              \
    target static void blocks_##name(uint64_t *acc, const uint8_t *in, size_t nblocks,            \
                                     const uint8_t *secret)                                       \
    {                                                                                             \
        name##_run(acc, NULL, in, nblocks, 0, secret, 0);                                         \
    }                                                                                             \
    target static void stripes_##name(uint64_t *acc, const uint8_t *in, size_t nstripes,          \
                                      const uint8_t *secret)                                      \
    {                                                                                             \
        name##_run(acc, NULL, in, 0, nstripes, secret, 0);                                        \
    }                                                                                             \
    target static void blocks_copy_##name(uint64_t *acc, uint8_t *dst, const uint8_t *in,         \
                                          size_t nblocks, const uint8_t *secret)                  \
    {                                                                                             \
        name##_run(acc, dst, in, nblocks, 0, secret, 0);                                          \
    }                                                                                             \
    target static void stripes_copy_##name(uint64_t *acc, uint8_t *dst, const uint8_t *in,        \
                                           size_t nstripes, const uint8_t *secret)                \
    {                                                                                             \
        name##_run(acc, dst, in, 0, nstripes, secret, 0);                                         \
    }                                                                                             \
    target static void blocks_stream_##name(uint64_t *acc, uint8_t *dst, const uint8_t *in,       \
                                            size_t nblocks, const uint8_t *secret)                \
    {                                                                                             \
        name##_run(acc, dst, in, nblocks, 0, secret, 1);                                          \
    }                                                                                             \
    const zc_xxh3_impl zc__xxh3_##name = {                                                        \
        #name, blocks_##name, stripes_##name, blocks_copy_##name, stripes_copy_##name,            \
        blocks_stream_##name,                                                                     \
    }

/* For SSE2, part of x86-64: no target attribute. */
#define ZC_TARGET_BASELINE

/* ---- SSE2 ---- */

static inline void sse2_stripe(__m128i a[4], uint8_t *dst, const uint8_t *in,
                               const uint8_t *secret, int stream)
{
    for (int j = 0; j < 4; j++) {
        __m128i d = _mm_loadu_si128((const __m128i *)(const void *)(in + 16 * j));
        if (dst != NULL && stream)
            _mm_stream_si128((__m128i *)(void *)(dst + 16 * j), d);
        else if (dst != NULL)
            _mm_storeu_si128((__m128i *)(void *)(dst + 16 * j), d);
        __m128i k = _mm_xor_si128(d, _mm_loadu_si128((const __m128i *)(const void *)(secret + 16 * j)));
        __m128i prod = _mm_mul_epu32(k, _mm_srli_epi64(k, 32));
        __m128i swapped = _mm_shuffle_epi32(d, _MM_SHUFFLE(1, 0, 3, 2));
        a[j] = _mm_add_epi64(a[j], _mm_add_epi64(prod, swapped));
    }
}

static inline void sse2_scramble(__m128i a[4], const uint8_t *secret)
{
    const __m128i prime = _mm_set1_epi32((int)ZC_XXH_PRIME32_1);
    for (int j = 0; j < 4; j++) {
        __m128i x = _mm_xor_si128(a[j], _mm_srli_epi64(a[j], 47));
        x = _mm_xor_si128(x, _mm_loadu_si128((const __m128i *)(const void *)(secret + 16 * j)));
        __m128i lo = _mm_mul_epu32(x, prime);
        __m128i hi = _mm_mul_epu32(_mm_srli_epi64(x, 32), prime);
        a[j] = _mm_add_epi64(lo, _mm_slli_epi64(hi, 32));
    }
}

static inline void sse2_load(__m128i a[4], const uint64_t *acc)
{
    for (int j = 0; j < 4; j++)
        a[j] = _mm_loadu_si128((const __m128i *)(const void *)(acc + 2 * j));
}

static inline void sse2_save(uint64_t *acc, const __m128i a[4])
{
    for (int j = 0; j < 4; j++)
        _mm_storeu_si128((__m128i *)(void *)(acc + 2 * j), a[j]);
}

static inline void sse2_run(uint64_t *acc, uint8_t *dst, const uint8_t *in, size_t nblocks,
                            size_t nstripes, const uint8_t *secret, int stream)
{
    __m128i a[4];
    sse2_load(a, acc);
    for (size_t b = 0; b < nblocks; b++) {
        for (size_t s = 0; s < ZC_XXH3_STRIPES_PER_BLOCK; s++)
            sse2_stripe(a, dst ? dst + s * ZC_XXH3_STRIPE : NULL, in + s * ZC_XXH3_STRIPE,
                        secret + 8 * s, stream);
        sse2_scramble(a, secret + ZC_XXH3_SCRAMBLE_OFFSET);
        in += ZC_XXH3_BLOCK;
        if (dst)
            dst += ZC_XXH3_BLOCK;
    }
    for (size_t s = 0; s < nstripes; s++)
        sse2_stripe(a, dst ? dst + s * ZC_XXH3_STRIPE : NULL, in + s * ZC_XXH3_STRIPE,
                    secret + 8 * s, stream);
    sse2_save(acc, a);
    if (stream)
        _mm_sfence(); /* streaming stores are weakly ordered: done before we return */
}

ZC_XXH3_KERNEL(sse2, ZC_TARGET_BASELINE);

/* ---- AVX2 ---- */

ZC_TARGET_AVX2 static inline void avx2_stripe(__m256i a[2], uint8_t *dst, const uint8_t *in,
                                              const uint8_t *secret, int stream)
{
    for (int j = 0; j < 2; j++) {
        __m256i d = _mm256_loadu_si256((const __m256i *)(const void *)(in + 32 * j));
        if (dst != NULL && stream)
            _mm256_stream_si256((__m256i *)(void *)(dst + 32 * j), d);
        else if (dst != NULL)
            _mm256_storeu_si256((__m256i *)(void *)(dst + 32 * j), d);
        __m256i k = _mm256_xor_si256(
            d, _mm256_loadu_si256((const __m256i *)(const void *)(secret + 32 * j)));
        __m256i prod = _mm256_mul_epu32(k, _mm256_srli_epi64(k, 32));
        __m256i swapped = _mm256_shuffle_epi32(d, _MM_SHUFFLE(1, 0, 3, 2));
        a[j] = _mm256_add_epi64(a[j], _mm256_add_epi64(prod, swapped));
    }
}

ZC_TARGET_AVX2 static inline void avx2_scramble(__m256i a[2], const uint8_t *secret)
{
    const __m256i prime = _mm256_set1_epi32((int)ZC_XXH_PRIME32_1);
    for (int j = 0; j < 2; j++) {
        __m256i x = _mm256_xor_si256(a[j], _mm256_srli_epi64(a[j], 47));
        x = _mm256_xor_si256(
            x, _mm256_loadu_si256((const __m256i *)(const void *)(secret + 32 * j)));
        __m256i lo = _mm256_mul_epu32(x, prime);
        __m256i hi = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), prime);
        a[j] = _mm256_add_epi64(lo, _mm256_slli_epi64(hi, 32));
    }
}

ZC_TARGET_AVX2 static inline void avx2_run(uint64_t *acc, uint8_t *dst, const uint8_t *in,
                                           size_t nblocks, size_t nstripes,
                                           const uint8_t *secret, int stream)
{
    __m256i a[2];
    a[0] = _mm256_loadu_si256((const __m256i *)(const void *)acc);
    a[1] = _mm256_loadu_si256((const __m256i *)(const void *)(acc + 4));
    for (size_t b = 0; b < nblocks; b++) {
        for (size_t s = 0; s < ZC_XXH3_STRIPES_PER_BLOCK; s++)
            avx2_stripe(a, dst ? dst + s * ZC_XXH3_STRIPE : NULL, in + s * ZC_XXH3_STRIPE,
                        secret + 8 * s, stream);
        avx2_scramble(a, secret + ZC_XXH3_SCRAMBLE_OFFSET);
        in += ZC_XXH3_BLOCK;
        if (dst)
            dst += ZC_XXH3_BLOCK;
    }
    for (size_t s = 0; s < nstripes; s++)
        avx2_stripe(a, dst ? dst + s * ZC_XXH3_STRIPE : NULL, in + s * ZC_XXH3_STRIPE,
                    secret + 8 * s, stream);
    _mm256_storeu_si256((__m256i *)(void *)acc, a[0]);
    _mm256_storeu_si256((__m256i *)(void *)(acc + 4), a[1]);
    if (stream)
        _mm_sfence();
}

ZC_XXH3_KERNEL(avx2, ZC_TARGET_AVX2);

/* ---- AVX-512 (F: 512-bit integer ops and streaming stores) ----
 * One stripe is exactly one register.  The streaming store needs a 64-byte
 * aligned destination; the caller guarantees 32, so a stripe is then stored
 * as two 32-byte streaming halves when dst is not 64-byte aligned. */

ZC_TARGET_AVX512 static inline void avx512_store(uint8_t *dst, __m512i d, int stream)
{
    if (!stream) {
        _mm512_storeu_si512((void *)dst, d);
    } else if (((uintptr_t)dst & 63u) == 0) {
        _mm512_stream_si512((void *)dst, d);
    } else {
        _mm256_stream_si256((__m256i *)(void *)dst, _mm512_castsi512_si256(d));
        _mm256_stream_si256((__m256i *)(void *)(dst + 32), _mm512_extracti64x4_epi64(d, 1));
    }
}

ZC_TARGET_AVX512 static inline __m512i avx512_stripe(__m512i a, uint8_t *dst, const uint8_t *in,
                                                     const uint8_t *secret, int stream)
{
    __m512i d = _mm512_loadu_si512((const void *)in);
    if (dst != NULL)
        avx512_store(dst, d, stream);
    __m512i k = _mm512_xor_si512(d, _mm512_loadu_si512((const void *)secret));
    __m512i prod = _mm512_mul_epu32(k, _mm512_srli_epi64(k, 32));
    __m512i swapped = _mm512_shuffle_epi32(d, (_MM_PERM_ENUM)_MM_SHUFFLE(1, 0, 3, 2));
    return _mm512_add_epi64(a, _mm512_add_epi64(prod, swapped));
}

ZC_TARGET_AVX512 static inline __m512i avx512_scramble(__m512i a, const uint8_t *secret)
{
    const __m512i prime = _mm512_set1_epi32((int)ZC_XXH_PRIME32_1);
    __m512i x = _mm512_xor_si512(a, _mm512_srli_epi64(a, 47));
    x = _mm512_xor_si512(x, _mm512_loadu_si512((const void *)secret));
    __m512i lo = _mm512_mul_epu32(x, prime);
    __m512i hi = _mm512_mul_epu32(_mm512_srli_epi64(x, 32), prime);
    return _mm512_add_epi64(lo, _mm512_slli_epi64(hi, 32));
}

ZC_TARGET_AVX512 static inline void avx512_run(uint64_t *acc, uint8_t *dst, const uint8_t *in,
                                               size_t nblocks, size_t nstripes,
                                               const uint8_t *secret, int stream)
{
    __m512i a = _mm512_loadu_si512((const void *)acc);
    for (size_t b = 0; b < nblocks; b++) {
        for (size_t s = 0; s < ZC_XXH3_STRIPES_PER_BLOCK; s++)
            a = avx512_stripe(a, dst ? dst + s * ZC_XXH3_STRIPE : NULL, in + s * ZC_XXH3_STRIPE,
                              secret + 8 * s, stream);
        a = avx512_scramble(a, secret + ZC_XXH3_SCRAMBLE_OFFSET);
        in += ZC_XXH3_BLOCK;
        if (dst)
            dst += ZC_XXH3_BLOCK;
    }
    for (size_t s = 0; s < nstripes; s++)
        a = avx512_stripe(a, dst ? dst + s * ZC_XXH3_STRIPE : NULL, in + s * ZC_XXH3_STRIPE,
                          secret + 8 * s, stream);
    _mm512_storeu_si512((void *)acc, a);
    if (stream)
        _mm_sfence();
}

ZC_XXH3_KERNEL(avx512, ZC_TARGET_AVX512);

#else
/* ISO C forbids an empty translation unit. */
typedef int zc__xxh3_x86_unused;
#endif
