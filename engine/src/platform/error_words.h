/*
 * error_words.h — the part of zc_os_error_text every platform shares (for
 * posix_error.c and win32_error.c only): the words for the engine's own
 * error values, ZC_OS_ERROR_*, and their classes.
 */
#ifndef ZC_PLATFORM_ERROR_WORDS_H
#define ZC_PLATFORM_ERROR_WORDS_H

#include <stddef.h>

#include "platform.h"

/* When err is one of the engine's own values (ZC_OS_ERROR_LINK_REFUSED,
 * ZC_OS_ERROR_NOT_REGULAR, ZC_OS_ERROR_HARD_LINKED), its words in buf
 * (cap > 0, always NUL-terminated) and buf is returned; else NULL, buf
 * untouched.  link names what a link is on this platform ("symbolic link"),
 * odd the kinds of file that are not regular ("a FIFO, device, ..."). */
const char *zc__os_error_words(int err, char *buf, size_t cap, const char *link, const char *odd);

/* zc_os_error_is for the classes only the engine's own values are in
 * (ZC_OS_LINK, ZC_OS_NOT_PRIVATE); 0 for every other class. */
int zc__os_error_is_engine(int err, zc_os_error_class cls);

#endif
