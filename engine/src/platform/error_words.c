/*
 * error_words.c — zc_os_error_is and zc_os_error_text, the same on every
 * platform: the engine's own values (a file it will not use) are classed and
 * worded here, every other error by the platform's native part (error_words.h).
 */
#include <stdio.h>

#include "error_words.h"

/* The words for one of the engine's own values in buf, or 0 when err is not one. */
static int engine_words(int err, char *buf, size_t cap)
{
    if (err == ZC_OS_ERROR_LINK_REFUSED) {
        snprintf(buf, cap, "it is a %s, and the engine never follows a link to a file it writes "
                 "or locks (a planted link could make it overwrite a file elsewhere); remove the "
                 "link, and the engine creates the file anew", zc__os_link_kind);
        return 1;
    }
    if (err == ZC_OS_ERROR_NOT_REGULAR) {
        snprintf(buf, cap, "it is not a regular file (%s), and the engine reads, writes and locks "
                 "only regular files of its own in a spill folder", zc__os_odd_kinds);
        return 1;
    }
    if (err == ZC_OS_ERROR_HARD_LINKED) {
        snprintf(buf, cap, "it has more than one name (a hard link), so another name, perhaps "
                 "outside the spill folder, shares its bytes, and the engine never writes, locks "
                 "or serves such a file");
        return 1;
    }
    return 0;
}

int zc_os_error_is(int err, zc_os_error_class cls)
{
    switch (cls) {
    case ZC_OS_LINK: return err == ZC_OS_ERROR_LINK_REFUSED;
    case ZC_OS_NOT_PRIVATE:
        return err == ZC_OS_ERROR_LINK_REFUSED || err == ZC_OS_ERROR_NOT_REGULAR ||
               err == ZC_OS_ERROR_HARD_LINKED;
    default: return zc__os_error_is_native(err, cls);
    }
}

const char *zc_os_error_text(int err, char *buf, size_t cap)
{
    if (cap == 0)
        return "";
    buf[0] = '\0';
    if (!engine_words(err, buf, cap))
        zc__os_error_native_text(err, buf, cap);
    if (buf[0] == '\0')
        snprintf(buf, cap, "error %d", err);
    return buf;
}
