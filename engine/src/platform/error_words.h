/*
 * error_words.h — how zc_os_error_is and zc_os_error_text (platform.h) are
 * split: error_words.c defines both, the same on every platform, and answers
 * for the engine's own error values (ZC_OS_ERROR_*); each platform's
 * <os>_error.c gives the native part below (for error_words.c only).
 */
#ifndef ZC_PLATFORM_ERROR_WORDS_H
#define ZC_PLATFORM_ERROR_WORDS_H

#include <stddef.h>

#include "platform.h"

/* Whether the native error err (errno, GetLastError()) is of class cls; 0
 * for the classes only the engine's own values are in (ZC_OS_LINK,
 * ZC_OS_NOT_PRIVATE). */
int zc__os_error_is_native(int err, zc_os_error_class cls);

/* The native words for err in buf (cap > 0, always NUL-terminated); buf
 * left empty when the system has none. */
void zc__os_error_native_text(int err, char *buf, size_t cap);

/* What a link is on this platform ("symbolic link"), and the kinds of file
 * that are not regular ("a FIFO, device, ..."), for the engine's words. */
extern const char zc__os_link_kind[];
extern const char zc__os_odd_kinds[];

#endif
