/*
 * tag.c — zc_tag_check: what a tag may be (1 to ZC_MAX_TAG_LEN letters, digits, '_', '-'
 * and '.', not starting with '.' or '-').  Tags name spill files, so the film code and the
 * spill-file names check them as the store does, without the store.
 */
#include <string.h>

#include "internal.h"

int zc_tag_check(const char *tag)
{
    if (tag == NULL)
        return zc__fail(ZC_E_INVALID, "tag is NULL; pass a tag such as \"default_continuity\"");
    size_t len = strlen(tag);
    if (len == 0 || len > ZC_MAX_TAG_LEN)
        return zc__fail(ZC_E_INVALID, "tag \"%.80s%s\" has %zu bytes; expected 1 to %d", tag,
                        len > 80 ? "..." : "", len, ZC_MAX_TAG_LEN);
    size_t character = 0; /* 1-based, counting UTF-8 characters, as the user reads the tag */
    for (size_t i = 0; i < len; i++) {
        unsigned char u = (unsigned char)tag[i];
        if ((u & 0xC0) != 0x80)
            character++;
        int ok = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') ||
                 u == '_' || u == '-' || u == '.';
        if (ok)
            continue;
        if (u == ' ')
            return zc__fail(ZC_E_INVALID, "tag \"%s\" has a space at character %zu; tags use only "
                            "letters, digits, '_', '-' and '.' (write '_' for the space)", tag, character);
        if (u > 0x20 && u < 0x7f)
            return zc__fail(ZC_E_INVALID, "tag \"%s\" has '%c' at character %zu; tags use only letters, "
                            "digits, '_', '-' and '.'", tag, (char)u, character);
        if (u >= 0xC2 && u <= 0xF4) { /* a UTF-8 lead byte: name the whole character */
            size_t n = u >= 0xF0 ? 4 : u >= 0xE0 ? 3 : 2, have = 1;
            while (have < n && i + have < len && ((unsigned char)tag[i + have] & 0xC0) == 0x80)
                have++;
            if (have == n)
                return zc__fail(ZC_E_INVALID, "tag \"%s\" has '%.*s' at character %zu; tags use only "
                                "letters, digits, '_', '-' and '.' (no accents or other scripts)", tag,
                                (int)n, tag + i, character);
        }
        return zc__fail(ZC_E_INVALID, "tag has byte 0x%02x at character %zu; tags use only letters, "
                        "digits, '_', '-' and '.'", u, character);
    }
    if (tag[0] == '.' || tag[0] == '-')
        return zc__fail(ZC_E_INVALID, "tag \"%s\" starts with '%c'; start it with a letter, digit "
                        "or '_'", tag, tag[0]);
    return ZC_OK;
}
