/* win32_error.c — GetLastError() codes: their classes and their wording (the
 * native part of zc_os_error_is and zc_os_error_text, error_words.h). */
#include <stdio.h>
#include <string.h>

#include "error_words.h"
#include "win32_internal.h"

const char zc__os_link_kind[] = "symbolic link or junction";
const char zc__os_odd_kinds[] = "a device, pipe, directory or reparse point";

int zc__os_error_is_native(int err, zc_os_error_class cls)
{
    DWORD e = (DWORD)err;
    switch (cls) {
    case ZC_OS_NOT_FOUND:
        return e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND || e == ERROR_BAD_NETPATH ||
               e == ERROR_BAD_NET_NAME || e == ERROR_INVALID_DRIVE;
    case ZC_OS_EXISTS: return e == ERROR_FILE_EXISTS || e == ERROR_ALREADY_EXISTS;
    case ZC_OS_ACCESS:
        return e == ERROR_ACCESS_DENIED || e == ERROR_SHARING_VIOLATION ||
               e == ERROR_LOCK_VIOLATION || e == ERROR_WRITE_PROTECT ||
               err == ZC_WIN_ERROR_TARGET_OPEN;
    case ZC_OS_NO_SPACE: return e == ERROR_DISK_FULL || e == ERROR_HANDLE_DISK_FULL;
    case ZC_OS_UNSUPPORTED:
        return e == ERROR_NOT_SUPPORTED || e == ERROR_INVALID_FUNCTION ||
               e == ERROR_CALL_NOT_IMPLEMENTED;
    case ZC_OS_LINK:
    case ZC_OS_NOT_PRIVATE: return 0;
    }
    return 0;
}

void zc__os_error_native_text(int err, char *buf, size_t cap)
{
    if (err == ZC_WIN_ERROR_TARGET_OPEN) {
        snprintf(buf, cap, "the destination is open in another program or handle, and this "
                 "Windows version or file system cannot replace an open file (Windows 10 1709+ "
                 "on NTFS can); close it and try again");
        return;
    }
    wchar_t wide[512];
    DWORD n = FormatMessageW(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL,
                             (DWORD)err, 0, wide, sizeof wide / sizeof wide[0], NULL);
    while (n > 0 && (wide[n - 1] == L'\r' || wide[n - 1] == L'\n' || wide[n - 1] == L' '))
        wide[--n] = L'\0';
    char text[768] = "";
    if (n > 0 && zc__win_utf8(wide, text, sizeof text) != 0)
        text[0] = '\0';
    snprintf(buf, cap, "%s%s(Windows error %lu)", text, text[0] ? " " : "", (unsigned long)(DWORD)err);
}
