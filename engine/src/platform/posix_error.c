/* posix_error.c — errno values: their classes and their wording (the native
 * part of zc_os_error_is and zc_os_error_text, error_words.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "error_words.h"

const char zc__os_link_kind[] = "symbolic link";
const char zc__os_odd_kinds[] = "a FIFO, device, socket or directory";

int zc__os_error_is_native(int err, zc_os_error_class cls)
{
    switch (cls) {
    case ZC_OS_NOT_FOUND: return err == ENOENT || err == ENOTDIR;
    case ZC_OS_EXISTS: return err == EEXIST;
    case ZC_OS_ACCESS: return err == EACCES || err == EPERM || err == EROFS || err == EBUSY;
    case ZC_OS_NO_SPACE: return err == ENOSPC || err == EDQUOT;
    case ZC_OS_UNSUPPORTED:
        return err == ENOTSUP || err == EOPNOTSUPP || err == ENOSYS || err == ENOLCK;
    case ZC_OS_LINK:
    case ZC_OS_NOT_PRIVATE: return 0;
    }
    return 0;
}

void zc__os_error_native_text(int err, char *buf, size_t cap)
{
    /* glibc with _GNU_SOURCE has the GNU strerror_r, which returns the text
     * (maybe a static string); everyone else has the XSI one, which fills buf. */
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    const char *text = strerror_r(err, buf, cap);
    if (text != buf)
        snprintf(buf, cap, "%s", text ? text : "");
#else
    if (strerror_r(err, buf, cap) != 0)
        buf[0] = '\0';
#endif
}
