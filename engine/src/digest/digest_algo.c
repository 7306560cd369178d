/*
 * digest_algo.c — digests as the rest of the engine sees them: an
 * algorithm (zc_digest_algo) and a 64-bit value, their text form
 * "<name>:<16 hex>", and one streaming interface over both algorithms (the
 * file reader verifies each tensor with the algorithm its file records).
 */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

const char *zc_digest_algo_name(int algo)
{
    switch (algo) {
    case ZC_DIGEST_XXH64:
        return "xxh64";
    case ZC_DIGEST_XXH3_64:
        return "xxh3";
    default:
        return NULL;
    }
}

static int unknown_algo(int algo)
{
    return zc__fail(ZC_E_INVALID, "digest algorithm %d is unknown; expected ZC_DIGEST_XXH64 (%d) "
                    "or ZC_DIGEST_XXH3_64 (%d)", algo, ZC_DIGEST_XXH64, ZC_DIGEST_XXH3_64);
}

int zc_digest_format(int algo, uint64_t digest, char *out, size_t cap)
{
    const char *name = zc_digest_algo_name(algo);
    if (name == NULL)
        return unknown_algo(algo);
    if (out == NULL || cap < ZC_DIGEST_TEXT_SIZE)
        return zc__fail(ZC_E_INVALID, "zc_digest_format: the buffer holds %zu bytes; pass at "
                        "least ZC_DIGEST_TEXT_SIZE (%d)", out ? cap : (size_t)0,
                        ZC_DIGEST_TEXT_SIZE);
    snprintf(out, cap, "%s:%016llx", name, (unsigned long long)digest);
    return ZC_OK;
}

void zc__digest_text(int algo, uint64_t digest, char out[ZC_DIGEST_TEXT_SIZE])
{
    if (zc_digest_format(algo, digest, out, ZC_DIGEST_TEXT_SIZE) != ZC_OK)
        snprintf(out, ZC_DIGEST_TEXT_SIZE, "?:%016llx", (unsigned long long)digest);
}

/* 16 hex digits (either case) into *out.  @return 0 or -1. */
static int parse_hex16(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    size_t n = 0;
    for (; s[n] != '\0'; n++) {
        int d = zc__hex_digit((unsigned char)s[n]);
        if (d < 0 || n == 16)
            return -1;
        v = (v << 4) | (uint64_t)d;
    }
    if (n != 16)
        return -1;
    *out = v;
    return 0;
}

int zc_digest_parse(const char *text, int *algo, uint64_t *digest)
{
    static const int algos[] = {ZC_DIGEST_XXH3_64, ZC_DIGEST_XXH64};
    if (text == NULL || algo == NULL || digest == NULL)
        return zc__fail(ZC_E_INVALID, "zc_digest_parse: an argument is NULL");
    for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) {
        const char *name = zc_digest_algo_name(algos[i]);
        size_t n = strlen(name);
        if (strncmp(text, name, n) == 0 && text[n] == ':' && parse_hex16(text + n + 1, digest) == 0) {
            *algo = algos[i];
            return ZC_OK;
        }
    }
    return zc__fail(ZC_E_INVALID, "digest \"%.40s%s\" is not \"xxh3:\" or \"xxh64:\" followed by "
                    "16 hex digits", text, strlen(text) > 40 ? "..." : "");
}

int zc_digest_bytes(int algo, const void *data, size_t len, uint64_t *digest)
{
    if (digest == NULL || (data == NULL && len > 0))
        return zc__fail(ZC_E_INVALID, "zc_digest_bytes: %s is NULL", digest ? "data" : "digest");
    switch (algo) {
    case ZC_DIGEST_XXH64:
        *digest = zc_xxh64(data, len, 0);
        return ZC_OK;
    case ZC_DIGEST_XXH3_64:
        *digest = zc_xxh3_64(data, len, 0);
        return ZC_OK;
    default:
        return unknown_algo(algo);
    }
}

void zc__digest_stream_init(zc_digest_stream *s, int algo)
{
    s->algo = algo == ZC_DIGEST_XXH64 ? ZC_DIGEST_XXH64 : ZC_DIGEST_XXH3_64;
    if (s->algo == ZC_DIGEST_XXH64)
        zc_xxh64_reset(&s->u.xxh64, 0);
    else
        zc_xxh3_reset(&s->u.xxh3, 0);
}

void zc__digest_stream_update(zc_digest_stream *s, const void *data, size_t len)
{
    if (s->algo == ZC_DIGEST_XXH64)
        zc_xxh64_update(&s->u.xxh64, data, len);
    else
        zc_xxh3_update(&s->u.xxh3, data, len);
}

uint64_t zc__digest_stream_final(const zc_digest_stream *s)
{
    return s->algo == ZC_DIGEST_XXH64 ? zc_xxh64_digest(&s->u.xxh64) : zc_xxh3_digest(&s->u.xxh3);
}
