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
    for (size_t i = 0; i < len; i++) {
        char c = tag[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-' || c == '.';
        if (!ok) {
            unsigned char u = (unsigned char)c;
            if (u >= 0x20 && u < 0x7f)
                return zc__fail(ZC_E_INVALID,
                                "tag \"%s\" has '%c' at position %zu; tags use only letters, "
                                "digits, '_', '-' and '.'", tag, c, i);
            return zc__fail(ZC_E_INVALID,
                            "tag has byte 0x%02x at position %zu; tags use only letters, digits, "
                            "'_', '-' and '.'", u, i);
        }
    }
    if (tag[0] == '.' || tag[0] == '-')
        return zc__fail(ZC_E_INVALID, "tag \"%s\" starts with '%c'; start it with a letter, digit "
                        "or '_'", tag, tag[0]);
    return ZC_OK;
}
