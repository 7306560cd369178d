/* utf8.h — the engine's one UTF-8 validator, shared by the bundle checks, the
 * JSON reader and writer, and the zc tool's output. */
#ifndef ZC_UTF8_H
#define ZC_UTF8_H

#include <stddef.h>

/* Length (1..4) of the well-formed UTF-8 sequence at p, of which avail bytes
 * may be read, or 0.  Follows the Unicode table of well-formed byte
 * sequences, which excludes overlong forms, surrogates and code points above
 * U+10FFFF.  A NUL-terminated string may pass avail = the bytes up to and
 * including its NUL: the NUL ends any sequence. */
size_t zc__utf8_seq(const unsigned char *p, size_t avail);

/* 0 when s[0..len) is well-formed UTF-8, else -1. */
int zc__utf8_valid(const char *s, size_t len);

#endif
