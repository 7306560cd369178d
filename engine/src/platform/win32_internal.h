/*
 * win32_internal.h — what the win32_*.c files share: the Windows headers at
 * the API level the engine targets (Windows 7 and later; newer calls are
 * looked up or tried at run time), path conversion and an error of our own.
 */
#ifndef ZC_WIN32_INTERNAL_H
#define ZC_WIN32_INTERNAL_H

#ifndef _WIN32_WINNT
#define _WIN32_WINNT 0x0601
#endif
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include "platform.h"

/* An application error code (bit 29 set: never a system code) for a replace
 * whose destination a reader holds open, on a Windows or file system that
 * cannot replace an open file (see zc_os_replace). */
#define ZC_WIN_ERROR_TARGET_OPEN ((int)0x20000001)

/* path (UTF-8) as a wide string for the W functions, or NULL with *err set:
 * '/' becomes '\', and a path of MAX_PATH - 12 characters or more (the
 * CreateDirectoryW limit) becomes "\\?\<full path>" ("\\?\UNC\..." for a
 * UNC path), which lifts MAX_PATH without the registry's long-path opt-in.
 * suffix (may be NULL) is appended first, e.g. "\\*" for a listing. The
 * caller frees the result with free(). */
wchar_t *zc__win_path(const char *path, const wchar_t *suffix, int *err);

/* A wide string as UTF-8 into buf (cap bytes); 0 or an error code. */
int zc__win_utf8(const wchar_t *w, char *buf, size_t cap);

#endif
