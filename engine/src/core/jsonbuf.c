/* jsonbuf.c — see jsonbuf.h. */
#include "jsonbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void zc__jb_init(zc_jsonbuf *jb)
{
    memset(jb, 0, sizeof *jb);
}

void zc__jb_free(zc_jsonbuf *jb)
{
    free(jb->data);
    memset(jb, 0, sizeof *jb);
}

static int reserve(zc_jsonbuf *jb, size_t extra)
{
    if (jb->failed)
        return -1;
    if (jb->len + extra + 1 <= jb->cap)
        return 0;
    size_t cap = jb->cap ? jb->cap : 256;
    while (cap < jb->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            jb->failed = 1;
            return -1;
        }
        cap *= 2;
    }
    char *d = realloc(jb->data, cap);
    if (d == NULL) {
        jb->failed = 1;
        return -1;
    }
    jb->data = d;
    jb->cap = cap;
    return 0;
}

void zc__jb_rawn(zc_jsonbuf *jb, const char *text, size_t n)
{
    if (reserve(jb, n) != 0)
        return;
    memcpy(jb->data + jb->len, text, n);
    jb->len += n;
    jb->data[jb->len] = '\0';
}

void zc__jb_raw(zc_jsonbuf *jb, const char *text)
{
    zc__jb_rawn(jb, text, strlen(text));
}

void zc__jb_printf(zc_jsonbuf *jb, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        jb->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        zc__jb_rawn(jb, small, (size_t)n);
        return;
    }
    if (reserve(jb, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(jb->data + jb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    jb->len += (size_t)n;
}

void zc__jb_string(zc_jsonbuf *jb, const char *s)
{
    zc__jb_rawn(jb, "\"", 1);
    const char *run = s;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        zc__jb_rawn(jb, run, (size_t)(p - run));
        run = p + 1;
        switch (c) {
        case '"': zc__jb_raw(jb, "\\\""); break;
        case '\\': zc__jb_raw(jb, "\\\\"); break;
        case '\n': zc__jb_raw(jb, "\\n"); break;
        case '\r': zc__jb_raw(jb, "\\r"); break;
        case '\t': zc__jb_raw(jb, "\\t"); break;
        case '\b': zc__jb_raw(jb, "\\b"); break;
        case '\f': zc__jb_raw(jb, "\\f"); break;
        default: zc__jb_printf(jb, "\\u%04x", c); break;
        }
    }
    zc__jb_raw(jb, run);
    zc__jb_rawn(jb, "\"", 1);
}

void zc__jb_u64(zc_jsonbuf *jb, uint64_t v)
{
    zc__jb_printf(jb, "%llu", (unsigned long long)v);
}

int zc__jb_deliver(zc_jsonbuf *jb, char *buf, size_t cap, size_t *needed, const char *what)
{
    if (jb->failed) {
        zc__jb_free(jb);
        return zc__fail(ZC_E_NOMEM, "out of host memory describing %s", what);
    }
    if (needed)
        *needed = jb->len + 1;
    if (buf == NULL || cap < jb->len + 1) {
        size_t len = jb->len;
        zc__jb_free(jb);
        return zc__fail(ZC_E_LIMIT, "description needs %zu bytes; the buffer has %zu", len + 1, cap);
    }
    memcpy(buf, jb->data, jb->len + 1);
    zc__jb_free(jb);
    return ZC_OK;
}
