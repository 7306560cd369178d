/*
 * xxh3_kernels.c — the portable XXH3 stripe kernel and the choice, once
 * per process, of the kernel every digest uses.
 *
 * The choice is a fact about the CPU, made once through zc_os_once_run and
 * never changed afterwards; it is the engine's only process-wide state
 * besides the platform layer's own caches.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "xxh3_internal.h"

/* One stripe: each lane adds itself to its neighbour's accumulator and the
 * product of its keyed halves to its own. */
static inline void stripe_scalar(uint64_t *acc, const uint8_t *in, const uint8_t *secret)
{
    for (size_t i = 0; i < 8; i++) {
        uint64_t v = zc__read64le(in + 8 * i);
        uint64_t k = v ^ zc__read64le(secret + 8 * i);
        acc[i ^ 1] += v;
        acc[i] += (k & 0xFFFFFFFFu) * (k >> 32);
    }
}

static void stripes_scalar(uint64_t *acc, const uint8_t *in, size_t n, const uint8_t *secret)
{
    uint64_t a[8];
    memcpy(a, acc, sizeof a);
    for (size_t s = 0; s < n; s++)
        stripe_scalar(a, in + s * ZC_XXH3_STRIPE, secret + 8 * s);
    memcpy(acc, a, sizeof a);
}

static void stripes_copy_scalar(uint64_t *acc, uint8_t *dst, const uint8_t *in, size_t n,
                                const uint8_t *secret)
{
    uint64_t a[8];
    memcpy(a, acc, sizeof a);
    for (size_t s = 0; s < n; s++) {
        uint8_t stripe[ZC_XXH3_STRIPE];
        memcpy(stripe, in + s * ZC_XXH3_STRIPE, ZC_XXH3_STRIPE); /* one load of each word */
        memcpy(dst + s * ZC_XXH3_STRIPE, stripe, ZC_XXH3_STRIPE);
        stripe_scalar(a, stripe, secret + 8 * s);
    }
    memcpy(acc, a, sizeof a);
}

void zc__xxh3_scramble_scalar(uint64_t *acc, const uint8_t *secret)
{
    for (size_t i = 0; i < 8; i++) {
        uint64_t a = acc[i];
        a ^= a >> 47;
        a ^= zc__read64le(secret + 8 * i);
        acc[i] = a * ZC_XXH_PRIME32_1;
    }
}

static void blocks_scalar(uint64_t *acc, const uint8_t *in, size_t nblocks, const uint8_t *secret)
{
    for (size_t b = 0; b < nblocks; b++) {
        stripes_scalar(acc, in + b * ZC_XXH3_BLOCK, ZC_XXH3_STRIPES_PER_BLOCK, secret);
        zc__xxh3_scramble_scalar(acc, secret + ZC_XXH3_SCRAMBLE_OFFSET);
    }
}

static void blocks_copy_scalar(uint64_t *acc, uint8_t *dst, const uint8_t *in, size_t nblocks,
                               const uint8_t *secret)
{
    for (size_t b = 0; b < nblocks; b++) {
        stripes_copy_scalar(acc, dst + b * ZC_XXH3_BLOCK, in + b * ZC_XXH3_BLOCK,
                            ZC_XXH3_STRIPES_PER_BLOCK, secret);
        zc__xxh3_scramble_scalar(acc, secret + ZC_XXH3_SCRAMBLE_OFFSET);
    }
}

/* Portable C has no streaming store: the plain copy serves. */
const zc_xxh3_impl zc__xxh3_scalar = {
    "scalar", blocks_scalar, stripes_scalar, blocks_copy_scalar, stripes_copy_scalar,
    blocks_copy_scalar,
};

const zc_xxh3_impl *zc__xxh3_kernel_named(const char *name)
{
    if (name == NULL)
        return NULL;
    if (strcmp(name, "scalar") == 0)
        return &zc__xxh3_scalar;
#if ZC_X86_KERNELS
    if (strcmp(name, "sse2") == 0)
        return &zc__xxh3_sse2;
    if (strcmp(name, "avx2") == 0)
        return zc__cpu_has_avx2() ? &zc__xxh3_avx2 : NULL;
    if (strcmp(name, "avx512") == 0)
        return zc__cpu_has_avx512() ? &zc__xxh3_avx512 : NULL;
#endif
    return NULL;
}

static zc_os_once chosen_once = ZC_OS_ONCE_INIT;
static const zc_xxh3_impl *chosen;

static void choose(void)
{
    /* ISO C getenv: the one knob, read once, to test or rule out a kernel. */
    const zc_xxh3_impl *k = zc__xxh3_kernel_named(getenv("ZC_DIGEST_KERNEL"));
    if (k == NULL) {
#if ZC_X86_KERNELS
        k = zc__cpu_has_avx512() ? &zc__xxh3_avx512
            : zc__cpu_has_avx2()  ? &zc__xxh3_avx2
                                  : &zc__xxh3_sse2;
#else
        k = &zc__xxh3_scalar;
#endif
    }
    chosen = k;
}

const zc_xxh3_impl *zc__xxh3_active(void)
{
    zc_os_once_run(&chosen_once, choose);
    return chosen;
}

const char *zc_xxh3_kernel(void)
{
    return zc__xxh3_active()->name;
}
