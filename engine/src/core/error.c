/* error.c — status names and the thread-local last-error message. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static ZC_THREAD_LOCAL char last_error[1024];

const char *zc_status_name(int status)
{
    switch (status) {
    case ZC_OK: return "ZC_OK";
    case ZC_E_INVALID: return "ZC_E_INVALID";
    case ZC_E_NOMEM: return "ZC_E_NOMEM";
    case ZC_E_NOT_FOUND: return "ZC_E_NOT_FOUND";
    case ZC_E_BUDGET: return "ZC_E_BUDGET";
    case ZC_E_LIMIT: return "ZC_E_LIMIT";
    case ZC_E_IO: return "ZC_E_IO";
    case ZC_E_CORRUPT: return "ZC_E_CORRUPT";
    case ZC_E_STATE: return "ZC_E_STATE";
    case ZC_E_UNSUPPORTED: return "ZC_E_UNSUPPORTED";
    case ZC_E_EXISTS: return "ZC_E_EXISTS";
    case ZC_E_ACCESS: return "ZC_E_ACCESS";
    default: return "ZC_E_UNKNOWN";
    }
}

const char *zc_last_error(void)
{
    return last_error;
}

const char *zc_version(void)
{
    return ZC_VERSION_STRING;
}

int zc__fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

void zc__fail_context(const char *fmt, ...)
{
    char prefix[512];
    char old[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, last_error, sizeof old);
    /* Truncation of an over-long message is acceptable; it stays terminated. */
    size_t n = strlen(prefix);
    if (n > sizeof last_error - 3)
        n = sizeof last_error - 3;
    memcpy(last_error, prefix, n);
    memcpy(last_error + n, ": ", 2);
    size_t room = sizeof last_error - n - 3;
    const char *old_end = memchr(old, '\0', room);
    size_t olen = old_end ? (size_t)(old_end - old) : room;
    memcpy(last_error + n + 2, old, olen);
    last_error[n + 2 + olen] = '\0';
}
