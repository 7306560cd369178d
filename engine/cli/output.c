/* output.c — error messages and the escaping of text and JSON output. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "cli.h"
#include "core/utf8.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout); /* keep stdout and stderr in order on a shared terminal */
    fputs("zc: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

const char *cli_engine_message(int status)
{
    const char *msg = zc_last_error();
    if (msg == NULL || msg[0] == '\0')
        return zc_status_name(status);
    return msg;
}

void cli_engine_message_copy(int status, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", cli_engine_message(status));
}

void cli_digest_format(int algo, uint64_t digest, char out[ZC_DIGEST_TEXT_SIZE])
{
    if (zc_digest_format(algo, digest, out, ZC_DIGEST_TEXT_SIZE) != ZC_OK)
        snprintf(out, ZC_DIGEST_TEXT_SIZE, "?:%016" PRIx64, digest);
}

const char *cli_plural(uint64_t n)
{
    return n == 1 ? "" : "s";
}

void cli_put_text(FILE *out, const char *s)
{
    cli_put_text_n(out, s, strlen(s));
}

/* The escaped form of byte c (see cli_put_text) into out; its length. */
static size_t escape_byte(unsigned char c, char out[5])
{
    if (c == '\\')
        return (size_t)snprintf(out, 5, "\\\\");
    if (c < 0x20 || c == 0x7f)
        return (size_t)snprintf(out, 5, "\\x%02x", c);
    out[0] = (char)c;
    out[1] = '\0';
    return 1;
}

void cli_put_text_n(FILE *out, const char *s, size_t len)
{
    char e[5];
    for (const unsigned char *p = (const unsigned char *)s; len > 0; p++, len--)
        fwrite(e, 1, escape_byte(*p, e), out);
}

void cli_text_append(zc_jsonbuf *jb, const char *s)
{
    char e[5];
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        zc__jb_rawn(jb, e, escape_byte(*p, e));
}

static void put_json_char(FILE *out, unsigned char c)
{
    switch (c) {
    case '"': fputs("\\\"", out); break;
    case '\\': fputs("\\\\", out); break;
    case '\n': fputs("\\n", out); break;
    case '\r': fputs("\\r", out); break;
    case '\t': fputs("\\t", out); break;
    case '\b': fputs("\\b", out); break;
    case '\f': fputs("\\f", out); break;
    default:
        if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
}

void cli_put_json_string(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
    fputc('"', out);
    while (*p) {
        size_t len = zc__utf8_seq(p, (size_t)(end - p));
        if (len == 0) {
            fputs("\\ufffd", out);
            p++;
        } else if (len == 1) {
            put_json_char(out, *p);
            p++;
        } else {
            fwrite(p, 1, len, out);
            p += len;
        }
    }
    fputc('"', out);
}

void cli_put_shape(FILE *out, int32_t ndim, const int64_t *shape)
{
    fputc('[', out);
    for (int32_t i = 0; i < ndim && i < ZC_MAX_RANK; i++)
        fprintf(out, "%s%" PRId64, i ? "," : "", shape[i]);
    fputc(']', out);
}

void cli_put_number(FILE *out, double v, int precision)
{
    if (isnan(v))
        fputs("nan", out);
    else if (isinf(v))
        fputs(v > 0 ? "inf" : "-inf", out);
    else
        fprintf(out, "%.*g", precision, v);
}
