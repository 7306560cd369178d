/*
 * xxh3_internal.h — the pieces of XXH3-64 shared by the algorithm
 * (digest_xxh3.c), its stripe kernels (xxh3_kernels.c: scalar and
 * dispatch; xxh3_x86.c: SSE2, AVX2 and AVX-512) and the tests.
 *
 * Long inputs (> 240 bytes) are hashed 64-byte stripe by stripe into eight
 * 64-bit accumulators; 16 stripes make a 1024-byte block, after which the
 * accumulators are scrambled.  That inner loop is the only part worth
 * vectorising, so it is the only part a kernel provides.
 */
#ifndef ZC_XXH3_INTERNAL_H
#define ZC_XXH3_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/compiler.h"
#include "zc.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "zc digests assume a little-endian host"
#endif

#define ZC_XXH3_STRIPE 64u
#define ZC_XXH3_SECRET_SIZE 192u
#define ZC_XXH3_STRIPES_PER_BLOCK 16u /* (secret size - 64) / 8 */
#define ZC_XXH3_BLOCK (ZC_XXH3_STRIPE * ZC_XXH3_STRIPES_PER_BLOCK)
#define ZC_XXH3_SCRAMBLE_OFFSET (ZC_XXH3_SECRET_SIZE - ZC_XXH3_STRIPE)
#define ZC_XXH3_MIDSIZE_MAX 240u

#define ZC_XXH_PRIME32_1 0x9E3779B1u

/* The specification's default secret. */
extern const uint8_t zc__xxh3_default_secret[ZC_XXH3_SECRET_SIZE];

/* The stripe loops of one instruction set.  acc is the caller's array of
 * eight accumulators (any alignment); in, dst and secret may be unaligned.
 * - blocks: nblocks whole blocks, each 16 stripes (stripe n keyed with
 *   secret + 8n) followed by a scramble with secret + ZC_XXH3_SCRAMBLE_OFFSET.
 * - stripes: nstripes stripes, stripe n keyed with secret + 8n, no scramble
 *   (the caller keeps nstripes within one block's secret).
 * - *_copy: the same, also storing every byte read to dst (same length),
 *   so a copy and its digest take one pass over memory.
 * - blocks_stream: blocks_copy with streaming (non-temporal) stores, which
 *   skip the cache: for copies too large to stay in it, they save reading
 *   dst's lines before writing them.  dst must be 32-byte aligned; the
 *   stores are complete (fenced) when it returns. */
typedef struct zc_xxh3_impl {
    const char *name;
    void (*blocks)(uint64_t *acc, const uint8_t *in, size_t nblocks, const uint8_t *secret);
    void (*stripes)(uint64_t *acc, const uint8_t *in, size_t nstripes, const uint8_t *secret);
    void (*blocks_copy)(uint64_t *acc, uint8_t *dst, const uint8_t *in, size_t nblocks,
                        const uint8_t *secret);
    void (*stripes_copy)(uint64_t *acc, uint8_t *dst, const uint8_t *in, size_t nstripes,
                         const uint8_t *secret);
    void (*blocks_stream)(uint64_t *acc, uint8_t *dst, const uint8_t *in, size_t nblocks,
                          const uint8_t *secret);
} zc_xxh3_impl;

/* Copies of at least this many bytes use blocks_stream (when dst is
 * aligned): about where source and copy together stop fitting a server
 * CPU's last-level cache slice; measured on a 2-core EPYC VM (32 MiB L3),
 * streaming is even at 8 MiB and 1.8x faster at 19 MB. */
#define ZC_XXH3_STREAM_MIN ((size_t)8 << 20)

/* The portable kernel, always available. */
extern const zc_xxh3_impl zc__xxh3_scalar;

#if ZC_X86_KERNELS
extern const zc_xxh3_impl zc__xxh3_sse2;
extern const zc_xxh3_impl zc__xxh3_avx2;
extern const zc_xxh3_impl zc__xxh3_avx512;
#endif

/* The kernel the engine uses, chosen once per process: the best one the CPU
 * runs, or the one the environment variable ZC_DIGEST_KERNEL names
 * ("scalar", "sse2", "avx2", "avx512") when the CPU runs it.  Thread-safe. */
const zc_xxh3_impl *zc__xxh3_active(void);

/* The kernel called name if this build has it and the CPU runs it, else NULL. */
const zc_xxh3_impl *zc__xxh3_kernel_named(const char *name);

/* XXH3-64 of len bytes with a given kernel (seed 0 uses the default secret). */
uint64_t zc__xxh3_64_with(const zc_xxh3_impl *k, const void *data, size_t len, uint64_t seed);

/* Copy len bytes from src to dst and return the XXH3-64 (seed 0) of them,
 * in one pass, with a given kernel. */
uint64_t zc__xxh3_copy_with(const zc_xxh3_impl *k, void *dst, const void *src, size_t len);

/* Streaming update with a given kernel (zc_xxh3_update uses the active one;
 * the result does not depend on the kernel). */
void zc__xxh3_update_with(const zc_xxh3_impl *k, zc_xxh3_state *s, const void *data, size_t len);

/* Streaming update that also copies the bytes to dst (len bytes), hashing
 * each stripe as it is copied: the strided put's contiguous runs. */
void zc__xxh3_update_copy(const zc_xxh3_impl *k, zc_xxh3_state *s, void *dst, const void *data,
                          size_t len);

/* The scramble step on an accumulator array (portable; once per block). */
void zc__xxh3_scramble_scalar(uint64_t *acc, const uint8_t *secret);

/* 64x64 -> 128-bit product folded to 64 bits (low half xor high half),
 * written with 32-bit halves; compiler.h's zc__mul128_fold64 is the fast
 * spelling and the tests check the two agree. */
static inline uint64_t zc__mul128_fold64_portable(uint64_t a, uint64_t b)
{
    uint64_t a_lo = a & 0xFFFFFFFFu, a_hi = a >> 32;
    uint64_t b_lo = b & 0xFFFFFFFFu, b_hi = b >> 32;
    uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo;
    uint64_t lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
    uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xFFFFFFFFu) + lo_hi;
    uint64_t upper = (hi_lo >> 32) + (cross >> 32) + hi_hi;
    uint64_t lower = (cross << 32) | (lo_lo & 0xFFFFFFFFu);
    return lower ^ upper;
}

static inline uint64_t zc__read64le(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8); /* little-endian hosts only (checked above) */
    return v;
}

static inline uint32_t zc__read32le(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

#endif /* ZC_XXH3_INTERNAL_H */
