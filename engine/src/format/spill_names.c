/*
 * spill_names.c — what a spill file is called and what it says it is: the name
 * "<tag>@<generation, ZC_SPILL_GEN_DIGITS digits>.latent" built from a folder, a tag and a
 * generation, read back from a directory entry, and the identity metadata (format, tag,
 * generation) written into the file and checked when it is read.  The store's writer and
 * the film code, which reads a folder's files without a store, share these.
 */
#include <stdio.h>
#include <string.h>

#include "spill_names.h"

int zc__spill_path_in(const char *dir, const char *tag, uint64_t generation, char *out,
                      size_t cap)
{
    int n = snprintf(out, cap, "%s/%s@%0*llu%s", dir, tag, ZC_SPILL_GEN_DIGITS,
                     (unsigned long long)generation, ZC_SPILL_SUFFIX);
    if (n < 0 || (size_t)n >= cap)
        return zc__fail(ZC_E_LIMIT, "spill path for tag \"%s\" is longer than %zu bytes; use a "
                        "shorter spill directory", tag, cap);
    return ZC_OK;
}

int zc__spill_parse_name(const char *name, char tag[ZC_MAX_TAG_LEN + 1], uint64_t *generation)
{
    size_t len = strlen(name), slen = strlen(ZC_SPILL_SUFFIX);
    const char *at = strrchr(name, '@');
    if (at == NULL || len <= slen || strcmp(name + len - slen, ZC_SPILL_SUFFIX) != 0)
        return -1;
    size_t tlen = (size_t)(at - name);
    if (tlen == 0 || tlen > ZC_MAX_TAG_LEN || (size_t)(name + len - slen - (at + 1)) != ZC_SPILL_GEN_DIGITS)
        return -1;
    uint64_t g = 0;
    for (const char *p = at + 1; p < name + len - slen; p++) {
        if (*p < '0' || *p > '9' || zc__mul_u64(g, 10, &g) != 0 ||
            zc__add_u64(g, (uint64_t)(*p - '0'), &g) != 0)
            return -1;
    }
    memcpy(tag, name, tlen);
    tag[tlen] = '\0';
    /* 20 digits reach 99999999999999999999: a generation above the range the
     * engine hands out (1 to ZC_MAX_GENERATION) would make the next one wrap
     * or run out, so such a name is no spill file of ours (index_directory
     * renames it aside). */
    if (g == 0 || g > ZC_MAX_GENERATION || zc_tag_check(tag) != ZC_OK)
        return -1;
    *generation = g;
    return 0;
}

void zc__spill_identity(const char *tag, uint64_t generation, char gen[32], zc_meta_entry extra[3])
{
    snprintf(gen, 32, "%llu", (unsigned long long)generation);
    extra[0] = (zc_meta_entry){(char *)ZC_FILE_META_FORMAT, (char *)ZC_FILE_FORMAT_VALUE};
    extra[1] = (zc_meta_entry){(char *)ZC_FILE_META_TAG, (char *)tag};
    extra[2] = (zc_meta_entry){(char *)ZC_FILE_META_GENERATION, gen};
}

int zc__spill_check_identity(const zc_file *f, const char *path, const char *tag,
                             uint64_t generation)
{
    const char *format = zc_file_meta(f, ZC_FILE_META_FORMAT);
    const char *ftag = zc_file_meta(f, ZC_FILE_META_TAG);
    const char *fgen = zc_file_meta(f, ZC_FILE_META_GENERATION);
    char want[32];
    snprintf(want, sizeof want, "%llu", (unsigned long long)generation);
    if (format == NULL || strcmp(format, ZC_FILE_FORMAT_VALUE) != 0 || ftag == NULL ||
        strcmp(ftag, tag) != 0 || fgen == NULL || strcmp(fgen, want) != 0)
        return zc__fail(ZC_E_CORRUPT,
                        "spill file \"%s\" does not say it holds tag \"%s\" generation %s (format "
                        "\"%s\", tag \"%s\", generation \"%s\"); it is foreign or was renamed",
                        path, tag, want, format ? format : "(none)", ftag ? ftag : "(none)",
                        fgen ? fgen : "(none)");
    for (uint32_t i = 0; i < zc_file_count(f); i++) {
        zc_file_tensor ft;
        if (zc_file_tensor_at(f, i, &ft) == ZC_OK && !ft.has_digest &&
            strcmp(ft.name, ZC_FILE_LATENT_MARKER) != 0)
            return zc__fail(ZC_E_CORRUPT, "spill file \"%s\": tensor \"%s\" has no recorded "
                            "digest, so it cannot be verified", path, ft.name);
    }
    return ZC_OK;
}
