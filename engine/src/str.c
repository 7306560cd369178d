/* str.c — string copies (POSIX and C23 have strdup/strndup; C11 and the
 * Windows C runtime do not) and hex digits. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

char *zc__strndup(const char *s, size_t n)
{
    const char *end = memchr(s, '\0', n);
    size_t len = end ? (size_t)(end - s) : n;
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return NULL;
    memcpy(copy, s, len);
    copy[len] = '\0';
    return copy;
}

char *zc__strdup(const char *s)
{
    return zc__strndup(s, strlen(s));
}

int zc__hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}
