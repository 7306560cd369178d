/*
 * digest_xxh3.c — XXH3-64, written from the xxHash specification
 * (doc/xxhash_spec.md, "XXH3 Algorithm Description"): the default secret,
 * the short (0, 1-3, 4-8, 9-16 bytes), medium (17-128, 129-240) and long
 * (> 240: stripes, blocks, scrambles, last stripe, final merge) cases, the
 * secret derived from a seed, and a streaming form.  The stripe loops of
 * long inputs are the kernels of xxh3_kernels.c / xxh3_x86.c.
 */
#include <string.h>

#include "core/internal.h"
#include "xxh3_internal.h"

#define P32_1 0x9E3779B1u
#define P32_2 0x85EBCA77u
#define P32_3 0xC2B2AE3Du
#define P64_1 0x9E3779B185EBCA87ULL
#define P64_2 0xC2B2AE3D27D4EB4FULL
#define P64_3 0x165667B19E3779F9ULL
#define P64_4 0x85EBCA77C2B2AE63ULL
#define P64_5 0x27D4EB2F165667C5ULL
#define PRIME_MX1 0x165667919E3779F9ULL
#define PRIME_MX2 0x9FB21C651E98DF25ULL

/* Offsets into the secret the specification fixes. */
#define MIDSIZE_START_OFFSET 3u
#define MIDSIZE_LAST_OFFSET 119u /* 136 - 17 */
#define LAST_STRIPE_OFFSET (ZC_XXH3_SECRET_SIZE - ZC_XXH3_STRIPE - 7u)
#define MERGE_OFFSET 11u

const uint8_t zc__xxh3_default_secret[ZC_XXH3_SECRET_SIZE] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

static inline uint64_t fold64(uint64_t a, uint64_t b)
{
#if ZC_HAVE_INT128
    return zc__mul128_fold64(a, b);
#else
    return zc__mul128_fold64_portable(a, b);
#endif
}

static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static uint64_t avalanche(uint64_t x)
{
    x ^= x >> 37;
    x *= PRIME_MX1;
    return x ^ (x >> 32);
}

static uint64_t avalanche_xxh64(uint64_t x)
{
    x ^= x >> 33;
    x *= P64_2;
    x ^= x >> 29;
    x *= P64_3;
    return x ^ (x >> 32);
}

/* ---- 0 to 16 bytes ---- */

static uint64_t len_0(const uint8_t *sec, uint64_t seed)
{
    return avalanche_xxh64(seed ^ zc__read64le(sec + 56) ^ zc__read64le(sec + 64));
}

static uint64_t len_1to3(const uint8_t *in, size_t len, const uint8_t *sec, uint64_t seed)
{
    uint32_t combined = (uint32_t)in[len - 1] | ((uint32_t)len << 8) | ((uint32_t)in[0] << 16) |
                        ((uint32_t)in[len >> 1] << 24);
    uint64_t flip = (uint64_t)(zc__read32le(sec) ^ zc__read32le(sec + 4)) + seed;
    return avalanche_xxh64(flip ^ (uint64_t)combined);
}

static uint64_t len_4to8(const uint8_t *in, size_t len, const uint8_t *sec, uint64_t seed)
{
    uint64_t modified = seed ^ ((uint64_t)zc__bswap32((uint32_t)seed) << 32);
    uint64_t first = zc__read32le(in), last = zc__read32le(in + len - 4);
    uint64_t combined = last | (first << 32);
    uint64_t v = ((zc__read64le(sec + 8) ^ zc__read64le(sec + 16)) - modified) ^ combined;
    v ^= rotl64(v, 49) ^ rotl64(v, 24);
    v *= PRIME_MX2;
    v ^= (v >> 35) + (uint64_t)len;
    v *= PRIME_MX2;
    return v ^ (v >> 28);
}

static uint64_t len_9to16(const uint8_t *in, size_t len, const uint8_t *sec, uint64_t seed)
{
    uint64_t lo = ((zc__read64le(sec + 24) ^ zc__read64le(sec + 32)) + seed) ^ zc__read64le(in);
    uint64_t hi = ((zc__read64le(sec + 40) ^ zc__read64le(sec + 48)) - seed) ^
                  zc__read64le(in + len - 8);
    uint64_t acc = (uint64_t)len + zc__bswap64(lo) + hi + fold64(lo, hi);
    return avalanche(acc);
}

/* ---- 17 to 240 bytes ---- */

static inline uint64_t mix16(const uint8_t *in, const uint8_t *sec, uint64_t seed)
{
    return fold64(zc__read64le(in) ^ (zc__read64le(sec) + seed),
                  zc__read64le(in + 8) ^ (zc__read64le(sec + 8) - seed));
}

static uint64_t len_17to128(const uint8_t *in, size_t len, const uint8_t *sec, uint64_t seed)
{
    uint64_t acc = (uint64_t)len * P64_1;
    size_t rounds = ((len - 1) >> 5) + 1;
    for (size_t i = rounds; i-- > 0;) {
        acc += mix16(in + 16 * i, sec + 32 * i, seed);
        acc += mix16(in + len - 16 * i - 16, sec + 32 * i + 16, seed);
    }
    return avalanche(acc);
}

static uint64_t len_129to240(const uint8_t *in, size_t len, const uint8_t *sec, uint64_t seed)
{
    uint64_t acc = (uint64_t)len * P64_1;
    size_t chunks = len >> 4;
    for (size_t i = 0; i < 8; i++)
        acc += mix16(in + 16 * i, sec + 16 * i, seed);
    acc = avalanche(acc);
    for (size_t i = 8; i < chunks; i++)
        acc += mix16(in + 16 * i, sec + 16 * (i - 8) + MIDSIZE_START_OFFSET, seed);
    acc += mix16(in + len - 16, sec + MIDSIZE_LAST_OFFSET, seed);
    return avalanche(acc);
}

/* Inputs up to 240 bytes: the default secret and the seed itself. */
static uint64_t hash_upto240(const uint8_t *in, size_t len, uint64_t seed)
{
    const uint8_t *sec = zc__xxh3_default_secret;
    if (len == 0)
        return len_0(sec, seed);
    if (len <= 3)
        return len_1to3(in, len, sec, seed);
    if (len <= 8)
        return len_4to8(in, len, sec, seed);
    if (len <= 16)
        return len_9to16(in, len, sec, seed);
    if (len <= 128)
        return len_17to128(in, len, sec, seed);
    return len_129to240(in, len, sec, seed);
}

/* ---- more than 240 bytes ---- */

static void init_acc(uint64_t acc[8])
{
    acc[0] = P32_3;
    acc[1] = P64_1;
    acc[2] = P64_2;
    acc[3] = P64_3;
    acc[4] = P64_4;
    acc[5] = P32_2;
    acc[6] = P64_5;
    acc[7] = P32_1;
}

/* The default secret with the seed added to its even and subtracted from
 * its odd 64-bit words. */
static void derive_secret(uint8_t out[ZC_XXH3_SECRET_SIZE], uint64_t seed)
{
    for (size_t i = 0; i < ZC_XXH3_SECRET_SIZE / 16; i++) {
        uint64_t lo = zc__read64le(zc__xxh3_default_secret + 16 * i) + seed;
        uint64_t hi = zc__read64le(zc__xxh3_default_secret + 16 * i + 8) - seed;
        memcpy(out + 16 * i, &lo, 8);
        memcpy(out + 16 * i + 8, &hi, 8);
    }
}

static uint64_t merge(const uint64_t acc[8], const uint8_t *sec, uint64_t start)
{
    uint64_t r = start;
    for (size_t i = 0; i < 4; i++)
        r += fold64(acc[2 * i] ^ zc__read64le(sec + 16 * i),
                    acc[2 * i + 1] ^ zc__read64le(sec + 16 * i + 8));
    return avalanche(r);
}

/* The finish of a long input: the accumulators after every stripe but the
 * last, which is the input's last 64 bytes (possibly overlapping stripes
 * already hashed). */
static uint64_t finish_long(const zc_xxh3_impl *k, uint64_t acc[8], const uint8_t *last_stripe,
                            uint64_t total, const uint8_t *sec)
{
    k->stripes(acc, last_stripe, 1, sec + LAST_STRIPE_OFFSET);
    return merge(acc, sec + MERGE_OFFSET, total * P64_1);
}

static uint64_t hash_long(const zc_xxh3_impl *k, const uint8_t *in, size_t len,
                          const uint8_t *sec)
{
    uint64_t acc[8];
    init_acc(acc);
    /* Every block but the last (even when the last is full) is scrambled. */
    size_t blocks = (len - 1) / ZC_XXH3_BLOCK;
    k->blocks(acc, in, blocks, sec);
    size_t done = blocks * ZC_XXH3_BLOCK;
    k->stripes(acc, in + done, (len - 1 - done) / ZC_XXH3_STRIPE, sec);
    return finish_long(k, acc, in + len - ZC_XXH3_STRIPE, len, sec);
}

uint64_t zc__xxh3_64_with(const zc_xxh3_impl *k, const void *data, size_t len, uint64_t seed)
{
    const uint8_t *in = data;
    if (len <= ZC_XXH3_MIDSIZE_MAX)
        return hash_upto240(in, len, seed);
    if (seed == 0)
        return hash_long(k, in, len, zc__xxh3_default_secret);
    uint8_t sec[ZC_XXH3_SECRET_SIZE];
    derive_secret(sec, seed);
    return hash_long(k, in, len, sec);
}

uint64_t zc__xxh3_copy_with(const zc_xxh3_impl *k, void *dst, const void *src, size_t len)
{
    uint8_t *d = dst;
    const uint8_t *in = src;
    const uint8_t *sec = zc__xxh3_default_secret;
    if (len <= ZC_XXH3_MIDSIZE_MAX) {
        if (len)
            memcpy(d, in, len);
        return hash_upto240(d, len, 0); /* hashed from the copy, in cache */
    }
    uint64_t acc[8];
    init_acc(acc);
    size_t blocks = (len - 1) / ZC_XXH3_BLOCK;
    if (len >= ZC_XXH3_STREAM_MIN && ((uintptr_t)d & 31u) == 0)
        k->blocks_stream(acc, d, in, blocks, sec);
    else
        k->blocks_copy(acc, d, in, blocks, sec);
    size_t done = blocks * ZC_XXH3_BLOCK;
    size_t stripes = (len - 1 - done) / ZC_XXH3_STRIPE;
    k->stripes_copy(acc, d + done, in + done, stripes, sec);
    done += stripes * ZC_XXH3_STRIPE;
    memcpy(d + done, in + done, len - done); /* 1 to 64 bytes */
    return finish_long(k, acc, d + len - ZC_XXH3_STRIPE, len, sec);
}

uint64_t zc_xxh3_64(const void *data, size_t len, uint64_t seed)
{
    return zc__xxh3_64_with(zc__xxh3_active(), data, len, seed);
}

/* ---- streaming ---- */

/* Hash n stripes that are known not to be the input's last bytes: whole
 * blocks straight through the kernel, partial ones stripe by stripe with
 * the block's scramble when a block completes.  With dst (not NULL) the
 * stripes are also stored there as they are read. */
static void consume(const zc_xxh3_impl *k, uint64_t acc[8], uint32_t *in_block,
                    const uint8_t *sec, uint8_t *dst, const uint8_t *p, size_t n)
{
    while (n > 0) {
        size_t take;
        if (*in_block == 0 && n >= ZC_XXH3_STRIPES_PER_BLOCK) {
            size_t blocks = n / ZC_XXH3_STRIPES_PER_BLOCK;
            if (dst)
                k->blocks_copy(acc, dst, p, blocks, sec);
            else
                k->blocks(acc, p, blocks, sec);
            take = blocks * ZC_XXH3_STRIPES_PER_BLOCK;
        } else {
            size_t room = ZC_XXH3_STRIPES_PER_BLOCK - *in_block;
            take = n < room ? n : room;
            const uint8_t *key = sec + 8 * (size_t)*in_block;
            if (dst)
                k->stripes_copy(acc, dst, p, take, key);
            else
                k->stripes(acc, p, take, key);
            *in_block += (uint32_t)take;
            if (*in_block == ZC_XXH3_STRIPES_PER_BLOCK) {
                zc__xxh3_scramble_scalar(acc, sec + ZC_XXH3_SCRAMBLE_OFFSET);
                *in_block = 0;
            }
        }
        p += take * ZC_XXH3_STRIPE;
        if (dst)
            dst += take * ZC_XXH3_STRIPE;
        n -= take;
    }
}

void zc_xxh3_reset(zc_xxh3_state *s, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->seed = seed;
    init_acc(s->acc);
    if (seed == 0)
        memcpy(s->secret, zc__xxh3_default_secret, ZC_XXH3_SECRET_SIZE);
    else
        derive_secret(s->secret, seed);
}

/* n input bytes into the state's buffer at to; with *dst, copied there
 * first (and the buffer filled from the copy, which is in cache). */
static void take_in(uint8_t *to, uint8_t **dst, const uint8_t *p, size_t n)
{
    if (*dst != NULL) {
        memcpy(*dst, p, n);
        p = *dst;
        *dst += n;
    }
    memcpy(to, p, n);
}

/* The streaming update, copying every byte to dst when dst is not NULL.
 * Bytes are hashed only once more input is known to follow them: the
 * input's last stripe is hashed differently (see zc_xxh3_digest). */
static void update(const zc_xxh3_impl *k, zc_xxh3_state *s, uint8_t *dst, const uint8_t *p,
                   size_t len)
{
    const size_t cap = sizeof s->buffer;
    if (len == 0)
        return;
    s->total_len += len;
    if (s->buffered + len <= cap) {
        take_in(s->buffer + s->buffered, &dst, p, len);
        s->buffered += (uint32_t)len;
        return;
    }
    if (s->buffered) {
        size_t take = cap - s->buffered;
        take_in(s->buffer + s->buffered, &dst, p, take);
        p += take;
        len -= take; /* still > 0 */
        consume(k, s->acc, &s->stripes_in_block, s->secret, NULL, s->buffer,
                cap / ZC_XXH3_STRIPE);
        memcpy(s->last_stripe, s->buffer + cap - ZC_XXH3_STRIPE, ZC_XXH3_STRIPE);
        s->buffered = 0;
    }
    if (len > cap) {
        size_t n = (len - 1) / ZC_XXH3_STRIPE, bytes = n * ZC_XXH3_STRIPE;
        consume(k, s->acc, &s->stripes_in_block, s->secret, dst, p, n);
        p += bytes;
        len -= bytes; /* 1 to 64 bytes */
        if (dst)
            dst += bytes;
        /* from the copy when there is one: the digest is of the bytes stored */
        memcpy(s->last_stripe, (dst ? dst : p) - ZC_XXH3_STRIPE, ZC_XXH3_STRIPE);
    }
    take_in(s->buffer, &dst, p, len);
    s->buffered = (uint32_t)len;
}

void zc__xxh3_update_with(const zc_xxh3_impl *k, zc_xxh3_state *s, const void *data, size_t len)
{
    update(k, s, NULL, data, len);
}

void zc_xxh3_update(zc_xxh3_state *s, const void *data, size_t len)
{
    update(zc__xxh3_active(), s, NULL, data, len);
}

void zc__xxh3_update_copy(const zc_xxh3_impl *k, zc_xxh3_state *s, void *dst, const void *data,
                          size_t len)
{
    update(k, s, dst, data, len);
}

uint64_t zc_xxh3_digest(const zc_xxh3_state *s)
{
    if (s->total_len <= ZC_XXH3_MIDSIZE_MAX)
        return hash_upto240(s->buffer, (size_t)s->total_len, s->seed);
    const zc_xxh3_impl *k = zc__xxh3_active();
    uint64_t acc[8];
    uint32_t in_block = s->stripes_in_block;
    size_t r = s->buffered; /* 1 to 256: at least one byte is always kept */
    memcpy(acc, s->acc, sizeof acc);
    consume(k, acc, &in_block, s->secret, NULL, s->buffer, (r - 1) / ZC_XXH3_STRIPE);
    uint8_t last[ZC_XXH3_STRIPE];
    const uint8_t *stripe;
    if (r < ZC_XXH3_STRIPE) { /* the last stripe begins in bytes already hashed */
        memcpy(last, s->last_stripe + r, ZC_XXH3_STRIPE - r);
        memcpy(last + ZC_XXH3_STRIPE - r, s->buffer, r);
        stripe = last;
    } else {
        stripe = s->buffer + r - ZC_XXH3_STRIPE;
    }
    return finish_long(k, acc, stripe, s->total_len, s->secret);
}
