/* posix_error.c — errno values: their classes and their wording. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "platform.h"

int zc_os_error_is(int err, zc_os_error_class cls)
{
    switch (cls) {
    case ZC_OS_NOT_FOUND: return err == ENOENT || err == ENOTDIR;
    case ZC_OS_EXISTS: return err == EEXIST;
    case ZC_OS_ACCESS: return err == EACCES || err == EPERM || err == EROFS || err == EBUSY;
    case ZC_OS_NO_SPACE: return err == ENOSPC || err == EDQUOT;
    case ZC_OS_UNSUPPORTED:
        return err == ENOTSUP || err == EOPNOTSUPP || err == ENOSYS || err == ENOLCK;
    case ZC_OS_LINK: return err == ZC_OS_ERROR_LINK_REFUSED;
    case ZC_OS_NOT_PRIVATE:
        return err == ZC_OS_ERROR_LINK_REFUSED || err == ZC_OS_ERROR_NOT_REGULAR ||
               err == ZC_OS_ERROR_HARD_LINKED;
    }
    return 0;
}

const char *zc_os_error_text(int err, char *buf, size_t cap)
{
    if (cap == 0)
        return "";
    buf[0] = '\0';
    if (err == ZC_OS_ERROR_LINK_REFUSED) {
        snprintf(buf, cap, "it is a symbolic link, and the engine never follows a link to a file "
                 "it writes or locks (a planted link could make it overwrite a file elsewhere); "
                 "remove the link, and the engine creates the file anew");
        return buf;
    }
    if (err == ZC_OS_ERROR_NOT_REGULAR) {
        snprintf(buf, cap, "it is not a regular file (a FIFO, device, socket or directory), and "
                 "the engine reads, writes and locks only regular files of its own in a spill "
                 "folder");
        return buf;
    }
    if (err == ZC_OS_ERROR_HARD_LINKED) {
        snprintf(buf, cap, "it has more than one name (a hard link), so another name, perhaps "
                 "outside the spill folder, shares its bytes, and the engine never writes, locks "
                 "or serves such a file");
        return buf;
    }
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
