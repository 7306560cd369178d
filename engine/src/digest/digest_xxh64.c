/*
 * digest_xxh64.c — XXH64, written from the xxHash specification (XXH64
 * section of doc/xxhash_spec.md: primes, stripe rounds, merge, tail and
 * avalanche).  New digests are XXH3 (digest_xxh3.c); XXH64 stays to verify
 * and restore files written by engine 0.2 and earlier.  Little-endian
 * reads; the engine targets little-endian hosts only (checked at build
 * time below).
 */
#include <string.h>

#include "core/internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "zc digests assume a little-endian host"
#endif

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t read64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint32_t read32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint64_t round64(uint64_t acc, uint64_t lane)
{
    acc += lane * P2;
    acc = rotl64(acc, 31);
    return acc * P1;
}

static inline uint64_t merge64(uint64_t acc, uint64_t val)
{
    acc ^= round64(0, val);
    return acc * P1 + P4;
}

/* Consume whole 32-byte stripes; returns the bytes consumed. */
static size_t stripes(uint64_t acc[4], const uint8_t *p, size_t len)
{
    uint64_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    size_t done = 0;
    while (len - done >= 32) {
        a0 = round64(a0, read64(p + done));
        a1 = round64(a1, read64(p + done + 8));
        a2 = round64(a2, read64(p + done + 16));
        a3 = round64(a3, read64(p + done + 24));
        done += 32;
    }
    acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
    return done;
}

static uint64_t finish(const uint64_t acc[4], int long_input, uint64_t seed, uint64_t total,
                       const uint8_t *tail, size_t tail_len)
{
    uint64_t h;
    if (long_input) {
        h = rotl64(acc[0], 1) + rotl64(acc[1], 7) + rotl64(acc[2], 12) + rotl64(acc[3], 18);
        for (int i = 0; i < 4; i++)
            h = merge64(h, acc[i]);
    } else {
        h = seed + P5;
    }
    h += total;
    while (tail_len >= 8) {
        h ^= round64(0, read64(tail));
        h = rotl64(h, 27) * P1 + P4;
        tail += 8;
        tail_len -= 8;
    }
    if (tail_len >= 4) {
        h ^= (uint64_t)read32(tail) * P1;
        h = rotl64(h, 23) * P2 + P3;
        tail += 4;
        tail_len -= 4;
    }
    while (tail_len > 0) {
        h ^= (uint64_t)(*tail) * P5;
        h = rotl64(h, 11) * P1;
        tail++;
        tail_len--;
    }
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}

void zc_xxh64_reset(zc_xxh64_state *s, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->seed = seed;
    s->acc[0] = seed + P1 + P2;
    s->acc[1] = seed + P2;
    s->acc[2] = seed;
    s->acc[3] = seed - P1;
}

void zc_xxh64_update(zc_xxh64_state *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    if (len == 0)
        return;
    s->total_len += len;
    if (s->buffered) {
        size_t take = 32 - s->buffered;
        if (take > len)
            take = len;
        memcpy(s->buffer + s->buffered, p, take);
        s->buffered += (uint32_t)take;
        p += take;
        len -= take;
        if (s->buffered < 32)
            return;
        stripes(s->acc, s->buffer, 32);
        s->buffered = 0;
    }
    size_t done = stripes(s->acc, p, len);
    memcpy(s->buffer, p + done, len - done);
    s->buffered = (uint32_t)(len - done);
}

uint64_t zc_xxh64_digest(const zc_xxh64_state *s)
{
    return finish(s->acc, s->total_len >= 32, s->seed, s->total_len, s->buffer, s->buffered);
}

uint64_t zc_xxh64(const void *data, size_t len, uint64_t seed)
{
    const uint8_t *p = data;
    if (len < 32) {
        uint64_t none[4] = {0, 0, 0, 0};
        return finish(none, 0, seed, len, p, len);
    }
    zc_xxh64_state s;
    zc_xxh64_reset(&s, seed);
    size_t done = stripes(s.acc, p, len);
    return finish(s.acc, 1, seed, len, p + done, len - done);
}
