/* posix_error.c — errno values: their classes and their wording. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "error_words.h"

int zc_os_error_is(int err, zc_os_error_class cls)
{
    switch (cls) {
    case ZC_OS_NOT_FOUND: return err == ENOENT || err == ENOTDIR;
    case ZC_OS_EXISTS: return err == EEXIST;
    case ZC_OS_ACCESS: return err == EACCES || err == EPERM || err == EROFS || err == EBUSY;
    case ZC_OS_NO_SPACE: return err == ENOSPC || err == EDQUOT;
    case ZC_OS_UNSUPPORTED:
        return err == ENOTSUP || err == EOPNOTSUPP || err == ENOSYS || err == ENOLCK;
    case ZC_OS_LINK:
    case ZC_OS_NOT_PRIVATE: return zc__os_error_is_engine(err, cls);
    }
    return 0;
}

const char *zc_os_error_text(int err, char *buf, size_t cap)
{
    if (cap == 0)
        return "";
    buf[0] = '\0';
    if (zc__os_error_words(err, buf, cap, "symbolic link", "a FIFO, device, socket or directory"))
        return buf;
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
    if (buf[0] == '\0')
        snprintf(buf, cap, "error %d", err);
    return buf;
}
