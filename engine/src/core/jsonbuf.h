/* jsonbuf.h — a growable text buffer that writes JSON (used for store
 * descriptions and safetensors headers). */
#ifndef ZC_JSONBUF_H
#define ZC_JSONBUF_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

typedef struct {
    char *data;
    size_t len;
    size_t cap;
    int failed; /* an allocation failed; the content is incomplete */
} zc_jsonbuf;

void zc__jb_init(zc_jsonbuf *jb);
void zc__jb_free(zc_jsonbuf *jb);
void zc__jb_raw(zc_jsonbuf *jb, const char *text);
void zc__jb_rawn(zc_jsonbuf *jb, const char *text, size_t n);
void zc__jb_printf(zc_jsonbuf *jb, const char *fmt, ...) ZC_PRINTF(2, 3);
/* A JSON string literal with every character that needs it escaped. */
void zc__jb_string(zc_jsonbuf *jb, const char *s);
void zc__jb_u64(zc_jsonbuf *jb, uint64_t v);
/* Hand a finished text to a caller's buffer of cap bytes, as the describe calls of zc.h do:
 * *needed (optional) gets its size with the NUL; ZC_E_LIMIT when buf is NULL or too small,
 * ZC_E_NOMEM when building it failed (what names it in the message: "describing <what>").
 * Frees jb in every case. */
int zc__jb_deliver(zc_jsonbuf *jb, char *buf, size_t cap, size_t *needed, const char *what);

#endif
