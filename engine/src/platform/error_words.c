/*
 * error_words.c — zc__os_error_words and zc__os_error_is_engine, the same on
 * every platform: how zc_os_error_text words, and zc_os_error_is classes, the
 * values the engine gives a file it will not use (error_words.h).
 */
#include <stdio.h>

#include "error_words.h"

const char *zc__os_error_words(int err, char *buf, size_t cap, const char *link, const char *odd)
{
    if (err == ZC_OS_ERROR_LINK_REFUSED) {
        snprintf(buf, cap, "it is a %s, and the engine never follows a link to a file it writes "
                 "or locks (a planted link could make it overwrite a file elsewhere); remove the "
                 "link, and the engine creates the file anew", link);
        return buf;
    }
    if (err == ZC_OS_ERROR_NOT_REGULAR) {
        snprintf(buf, cap, "it is not a regular file (%s), and the engine reads, writes and locks "
                 "only regular files of its own in a spill folder", odd);
        return buf;
    }
    if (err == ZC_OS_ERROR_HARD_LINKED) {
        snprintf(buf, cap, "it has more than one name (a hard link), so another name, perhaps "
                 "outside the spill folder, shares its bytes, and the engine never writes, locks "
                 "or serves such a file");
        return buf;
    }
    return NULL;
}

int zc__os_error_is_engine(int err, zc_os_error_class cls)
{
    switch (cls) {
    case ZC_OS_LINK: return err == ZC_OS_ERROR_LINK_REFUSED;
    case ZC_OS_NOT_PRIVATE:
        return err == ZC_OS_ERROR_LINK_REFUSED || err == ZC_OS_ERROR_NOT_REGULAR ||
               err == ZC_OS_ERROR_HARD_LINKED;
    default: return 0;
    }
}
