/* str.c — string copies (POSIX and C23 have strdup/strndup; C11 and the
 * Windows C runtime do not), lists of copied strings, and hex digits. */
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

int zc__name_list_add(zc_name_list *l, const char *name)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        char **n = realloc(l->names, sizeof *n * cap);
        if (n == NULL)
            return -1;
        l->names = n;
        l->cap = cap;
    }
    if ((l->names[l->count] = zc__strdup(name)) == NULL)
        return -1;
    l->count++;
    return 0;
}

void zc__name_list_free(zc_name_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->names[i]);
    free(l->names);
    *l = (zc_name_list){NULL, 0, 0};
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
