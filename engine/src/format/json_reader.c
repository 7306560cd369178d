/*
 * json_reader.c — a small JSON (RFC 8259) reader for hostile input.
 *
 * Written for safetensors headers: every byte is checked before it is used,
 * every length is bounded, recursion is bounded by limits->max_depth, and the
 * amount of memory is bounded by the text length and limits->max_nodes.
 * Stricter than the RFC where C strings or safety need it: \u0000 and
 * duplicate keys are rejected, and the text must be valid UTF-8.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/compiler.h"
#include "core/internal.h"
#include "json_reader.h"
#include "core/utf8.h"
#include "zc.h"

typedef struct {
    const unsigned char *s;
    size_t len;
    size_t i;
    const zc_json_limits *lim;
    zc_json_doc *doc;
    zc_json_error *err;
    int nomem; /* set when a failure was an allocation, not the input */
} parser;

static int fail_at(parser *ps, size_t pos, const char *fmt, ...)
    ZC_PRINTF(3, 4);

static int fail_at(parser *ps, size_t pos, const char *fmt, ...)
{
    va_list ap;
    ps->err->pos = pos;
    va_start(ap, fmt);
    vsnprintf(ps->err->msg, sizeof ps->err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

/* Describe the byte at pos for a message: 'x' when printable, else hex. */
static void describe_byte(const parser *ps, size_t pos, char out[16])
{
    if (pos >= ps->len) {
        snprintf(out, 16, "end of text");
        return;
    }
    unsigned char c = ps->s[pos];
    if (c >= 0x20 && c < 0x7f)
        snprintf(out, 16, "'%c'", (char)c);
    else
        snprintf(out, 16, "byte 0x%02x", (unsigned)c);
}

static int fail_unexpected(parser *ps, const char *expected)
{
    char what[16];
    describe_byte(ps, ps->i, what);
    return fail_at(ps, ps->i, "expected %s, found %s", expected, what);
}

static int fail_nomem(parser *ps)
{
    ps->nomem = 1;
    return fail_at(ps, ps->i, "out of memory parsing JSON");
}

/* ---- UTF-8 ---- */

void zc__json_quote(const char *s, size_t len, char *out, size_t cap)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0, i = 0;
    if (cap == 0)
        return;
    while (i < len) {
        char piece[8];
        size_t n = 1, used = 1;
        unsigned char c = p[i];
        if (c < 0x20 || c == 0x7f || (c >= 0x80 && zc__utf8_seq(p + i, len - i) == 0)) {
            n = (size_t)snprintf(piece, sizeof piece, "\\x%02x", (unsigned)c);
        } else if (c == '"' || c == '\\') {
            piece[0] = '\\';
            piece[1] = (char)c;
            n = 2;
        } else if (c >= 0x80) {
            n = used = zc__utf8_seq(p + i, len - i);
            memcpy(piece, p + i, n);
        } else {
            piece[0] = (char)c;
        }
        /* A piece that is not the last must leave room for "..." after it. */
        size_t reserve = i + used < len ? 3 : 0;
        if (o + n + reserve + 1 > cap) {
            if (o + 4 <= cap) {
                memcpy(out + o, "...", 3);
                o += 3;
            }
            break;
        }
        memcpy(out + o, piece, n);
        o += n;
        i += used;
    }
    out[o] = '\0';
}

/* ---- storage ---- */

static uint32_t new_node(parser *ps, int type, size_t pos)
{
    zc_json_doc *d = ps->doc;
    if (d->node_count >= ps->lim->max_nodes) {
        fail_at(ps, pos, "more than %u JSON values", ps->lim->max_nodes);
        return ZC_JSON_NONE;
    }
    if (d->node_count == d->node_cap) {
        uint32_t cap = d->node_cap ? d->node_cap * 2 : 64;
        if (cap > ps->lim->max_nodes)
            cap = ps->lim->max_nodes;
        zc_json_node *nodes = realloc(d->nodes, (size_t)cap * sizeof *nodes);
        if (nodes == NULL) {
            fail_nomem(ps);
            return ZC_JSON_NONE;
        }
        d->nodes = nodes;
        d->node_cap = cap;
    }
    uint32_t idx = d->node_count++;
    zc_json_node *n = &d->nodes[idx];
    memset(n, 0, sizeof *n);
    n->type = (uint8_t)type;
    n->pos = (uint32_t)pos;
    n->child = ZC_JSON_NONE;
    n->next = ZC_JSON_NONE;
    return idx;
}

/* Make room for extra more bytes in the string arena. */
static int strings_reserve(parser *ps, size_t extra)
{
    zc_json_doc *d = ps->doc;
    if (d->strings_cap - d->strings_len >= extra)
        return 0;
    size_t need = d->strings_len + extra;
    size_t cap = d->strings_cap ? d->strings_cap : 256;
    while (cap < need) {
        if (cap > SIZE_MAX / 2)
            return fail_nomem(ps);
        cap *= 2;
    }
    char *s = realloc(d->strings, cap);
    if (s == NULL)
        return fail_nomem(ps);
    d->strings = s;
    d->strings_cap = cap;
    return 0;
}

static int strings_append(parser *ps, const void *data, size_t n)
{
    if (strings_reserve(ps, n) != 0)
        return -1;
    memcpy(ps->doc->strings + ps->doc->strings_len, data, n);
    ps->doc->strings_len += n;
    return 0;
}

/* ---- lexical pieces ---- */

static void skip_ws(parser *ps)
{
    while (ps->i < ps->len) {
        unsigned char c = ps->s[ps->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        ps->i++;
    }
}

static int hex4(parser *ps, size_t at, uint32_t *out)
{
    uint32_t v = 0;
    if (ps->len - at < 4)
        return fail_at(ps, at, "\\u escape needs 4 hex digits before the end of text");
    for (size_t k = 0; k < 4; k++) {
        int d = zc__hex_digit((unsigned char)ps->s[at + k]);
        if (d < 0)
            return fail_at(ps, at + k, "\\u escape needs 4 hex digits");
        v = (v << 4) | (uint32_t)d;
    }
    *out = v;
    return 0;
}

static size_t utf8_encode(uint32_t cp, unsigned char out[4])
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decode the escape at ps->i (just after the backslash) and append it. */
static int parse_escape(parser *ps)
{
    size_t at = ps->i - 1; /* the backslash */
    if (ps->i >= ps->len)
        return fail_at(ps, at, "unterminated escape at the end of text");
    unsigned char c = ps->s[ps->i++];
    unsigned char out[4];
    size_t n = 1;
    switch (c) {
    case '"': out[0] = '"'; break;
    case '\\': out[0] = '\\'; break;
    case '/': out[0] = '/'; break;
    case 'b': out[0] = '\b'; break;
    case 'f': out[0] = '\f'; break;
    case 'n': out[0] = '\n'; break;
    case 'r': out[0] = '\r'; break;
    case 't': out[0] = '\t'; break;
    case 'u': {
        uint32_t cp;
        if (hex4(ps, ps->i, &cp) != 0)
            return -1;
        ps->i += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return fail_at(ps, at, "\\u%04X is a lone low surrogate", (unsigned)cp);
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low;
            if (ps->len - ps->i < 2 || ps->s[ps->i] != '\\' || ps->s[ps->i + 1] != 'u')
                return fail_at(ps, at, "\\u%04X is a high surrogate without a following \\u low "
                               "surrogate", (unsigned)cp);
            if (hex4(ps, ps->i + 2, &low) != 0)
                return -1;
            if (low < 0xDC00 || low > 0xDFFF)
                return fail_at(ps, at, "\\u%04X is a high surrogate followed by \\u%04X, not a low "
                               "surrogate", (unsigned)cp, (unsigned)low);
            ps->i += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        if (cp == 0)
            return fail_at(ps, at, "\\u0000 (NUL) is not allowed in strings");
        n = utf8_encode(cp, out);
        break;
    }
    default:
        if (c > 0x20 && c < 0x7f)
            return fail_at(ps, at, "invalid escape \\%c", (char)c);
        return fail_at(ps, at, "invalid escape: backslash before byte 0x%02x", (unsigned)c);
    }
    return strings_append(ps, out, n);
}

static uint32_t parse_string(parser *ps)
{
    size_t start = ps->i; /* the opening quote */
    uint32_t idx = new_node(ps, ZC_JSON_STRING, start);
    if (idx == ZC_JSON_NONE)
        return ZC_JSON_NONE;
    size_t first = ps->doc->strings_len;
    if (first > UINT32_MAX - 1) {
        fail_at(ps, start, "JSON text too large");
        return ZC_JSON_NONE;
    }
    ps->i++;
    for (;;) {
        /* Copy the longest run of plain bytes in one go. */
        size_t run = ps->i;
        while (run < ps->len) {
            unsigned char c = ps->s[run];
            if (c == '"' || c == '\\' || c < 0x20)
                break;
            if (c < 0x80) {
                run++;
                continue;
            }
            size_t n = zc__utf8_seq(ps->s + run, ps->len - run);
            if (n == 0)
                break;
            run += n;
        }
        if (run > ps->i && strings_append(ps, ps->s + ps->i, run - ps->i) != 0)
            return ZC_JSON_NONE;
        ps->i = run;
        if (ps->i >= ps->len) {
            fail_at(ps, start, "unterminated string");
            return ZC_JSON_NONE;
        }
        unsigned char c = ps->s[ps->i];
        if (c == '"')
            break;
        if (c == '\\') {
            ps->i++;
            if (parse_escape(ps) != 0)
                return ZC_JSON_NONE;
            continue;
        }
        if (c < 0x20) {
            fail_at(ps, ps->i, "raw control character 0x%02x in a string (control characters "
                    "must be escaped)", (unsigned)c);
            return ZC_JSON_NONE;
        }
        fail_at(ps, ps->i, "invalid UTF-8 byte 0x%02x in a string", (unsigned)c);
        return ZC_JSON_NONE;
    }
    ps->i++; /* closing quote */
    size_t slen = ps->doc->strings_len - first;
    if (strings_append(ps, "", 1) != 0)
        return ZC_JSON_NONE;
    zc_json_node *n = &ps->doc->nodes[idx];
    n->str = (uint32_t)first;
    n->len = (uint32_t)slen;
    return idx;
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static uint32_t parse_number(parser *ps)
{
    size_t start = ps->i;
    int negative = 0, integral = 1, overflow = 0;
    uint64_t v = 0;
    if (ps->s[ps->i] == '-') {
        negative = 1;
        ps->i++;
    }
    if (ps->i >= ps->len || !is_digit(ps->s[ps->i])) {
        fail_unexpected(ps, "a digit");
        return ZC_JSON_NONE;
    }
    if (ps->s[ps->i] == '0') {
        ps->i++;
        if (ps->i < ps->len && is_digit(ps->s[ps->i])) {
            fail_at(ps, start, "number with a leading zero");
            return ZC_JSON_NONE;
        }
    } else {
        while (ps->i < ps->len && is_digit(ps->s[ps->i])) {
            uint64_t d = (uint64_t)(ps->s[ps->i] - '0');
            if (v > (UINT64_MAX - d) / 10)
                overflow = 1;
            else
                v = v * 10 + d;
            ps->i++;
        }
    }
    if (ps->i < ps->len && ps->s[ps->i] == '.') {
        integral = 0;
        ps->i++;
        if (ps->i >= ps->len || !is_digit(ps->s[ps->i])) {
            fail_unexpected(ps, "a digit after the decimal point");
            return ZC_JSON_NONE;
        }
        while (ps->i < ps->len && is_digit(ps->s[ps->i]))
            ps->i++;
    }
    if (ps->i < ps->len && (ps->s[ps->i] == 'e' || ps->s[ps->i] == 'E')) {
        integral = 0;
        ps->i++;
        if (ps->i < ps->len && (ps->s[ps->i] == '+' || ps->s[ps->i] == '-'))
            ps->i++;
        if (ps->i >= ps->len || !is_digit(ps->s[ps->i])) {
            fail_unexpected(ps, "a digit in the exponent");
            return ZC_JSON_NONE;
        }
        while (ps->i < ps->len && is_digit(ps->s[ps->i]))
            ps->i++;
    }
    uint32_t idx = new_node(ps, ZC_JSON_NUMBER, start);
    if (idx == ZC_JSON_NONE)
        return ZC_JSON_NONE;
    zc_json_node *n = &ps->doc->nodes[idx];
    n->len = (uint32_t)(ps->i - start);
    n->is_uint = (uint8_t)(!negative && integral && !overflow);
    n->num = n->is_uint ? v : 0;
    return idx;
}

static uint32_t parse_literal(parser *ps, const char *word, int type)
{
    size_t n = strlen(word);
    if (ps->len - ps->i < n || memcmp(ps->s + ps->i, word, n) != 0) {
        fail_unexpected(ps, "a JSON value");
        return ZC_JSON_NONE;
    }
    uint32_t idx = new_node(ps, type, ps->i);
    ps->i += n;
    return idx;
}

static uint32_t parse_value(parser *ps, uint32_t depth);

static uint32_t parse_array(parser *ps, uint32_t depth)
{
    size_t start = ps->i;
    if (depth > ps->lim->max_depth) {
        fail_at(ps, start, "arrays/objects nested deeper than %u levels", ps->lim->max_depth);
        return ZC_JSON_NONE;
    }
    uint32_t idx = new_node(ps, ZC_JSON_ARRAY, start);
    if (idx == ZC_JSON_NONE)
        return ZC_JSON_NONE;
    uint32_t last = ZC_JSON_NONE, count = 0;
    ps->i++;
    skip_ws(ps);
    if (ps->i < ps->len && ps->s[ps->i] == ']') {
        ps->i++;
        return idx;
    }
    for (;;) {
        skip_ws(ps);
        uint32_t v = parse_value(ps, depth);
        if (v == ZC_JSON_NONE)
            return ZC_JSON_NONE;
        if (last == ZC_JSON_NONE)
            ps->doc->nodes[idx].child = v;
        else
            ps->doc->nodes[last].next = v;
        last = v;
        count++;
        skip_ws(ps);
        if (ps->i < ps->len && ps->s[ps->i] == ',') {
            ps->i++;
            continue;
        }
        if (ps->i < ps->len && ps->s[ps->i] == ']') {
            ps->i++;
            break;
        }
        fail_unexpected(ps, "',' or ']' in an array");
        return ZC_JSON_NONE;
    }
    ps->doc->nodes[idx].count = count;
    return idx;
}

/* Reject an object with two equal keys.  Keys are compared by hash first:
 * the pairwise loop (members are bounded by limits->max_members) then costs
 * integer compares, not a memcmp of every pair of long hostile keys. */
static int check_duplicates(parser *ps, uint32_t obj)
{
    const zc_json_doc *d = ps->doc;
    uint32_t count = d->nodes[obj].count, i = 0;
    uint32_t *keys = malloc((size_t)count * sizeof *keys);
    uint64_t *hash = malloc((size_t)count * sizeof *hash);
    int rc = 0;
    if (keys == NULL || hash == NULL) {
        rc = fail_nomem(ps);
        goto cleanup;
    }
    for (uint32_t k = d->nodes[obj].child; k != ZC_JSON_NONE && i < count; k = d->nodes[k].next) {
        keys[i] = k;
        hash[i++] = zc_xxh64(d->strings + d->nodes[k].str, d->nodes[k].len, 0);
    }
    for (uint32_t b = 1; b < i && rc == 0; b++) {
        const zc_json_node *kb = &d->nodes[keys[b]];
        for (uint32_t a = 0; a < b; a++) {
            const zc_json_node *ka = &d->nodes[keys[a]];
            char q[80];
            if (hash[a] != hash[b] || ka->len != kb->len ||
                memcmp(d->strings + ka->str, d->strings + kb->str, ka->len) != 0)
                continue;
            zc__json_quote(d->strings + kb->str, kb->len, q, sizeof q);
            rc = fail_at(ps, kb->pos, "duplicate key \"%s\" in one object", q);
            break;
        }
    }
cleanup:
    free(keys);
    free(hash);
    return rc;
}

static uint32_t parse_object(parser *ps, uint32_t depth)
{
    size_t start = ps->i;
    if (depth > ps->lim->max_depth) {
        fail_at(ps, start, "arrays/objects nested deeper than %u levels", ps->lim->max_depth);
        return ZC_JSON_NONE;
    }
    uint32_t idx = new_node(ps, ZC_JSON_OBJECT, start);
    if (idx == ZC_JSON_NONE)
        return ZC_JSON_NONE;
    uint32_t last = ZC_JSON_NONE, count = 0;
    ps->i++;
    skip_ws(ps);
    if (ps->i < ps->len && ps->s[ps->i] == '}') {
        ps->i++;
        return idx;
    }
    for (;;) {
        skip_ws(ps);
        if (ps->i >= ps->len || ps->s[ps->i] != '"') {
            fail_unexpected(ps, "a string key in an object");
            return ZC_JSON_NONE;
        }
        if (count >= ps->lim->max_members) {
            fail_at(ps, ps->i, "object has more than %u members", ps->lim->max_members);
            return ZC_JSON_NONE;
        }
        uint32_t key = parse_string(ps);
        if (key == ZC_JSON_NONE)
            return ZC_JSON_NONE;
        skip_ws(ps);
        if (ps->i >= ps->len || ps->s[ps->i] != ':') {
            fail_unexpected(ps, "':' after an object key");
            return ZC_JSON_NONE;
        }
        ps->i++;
        skip_ws(ps);
        uint32_t v = parse_value(ps, depth);
        if (v == ZC_JSON_NONE)
            return ZC_JSON_NONE;
        ps->doc->nodes[key].child = v;
        if (last == ZC_JSON_NONE)
            ps->doc->nodes[idx].child = key;
        else
            ps->doc->nodes[last].next = key;
        last = key;
        count++;
        skip_ws(ps);
        if (ps->i < ps->len && ps->s[ps->i] == ',') {
            ps->i++;
            continue;
        }
        if (ps->i < ps->len && ps->s[ps->i] == '}') {
            ps->i++;
            break;
        }
        fail_unexpected(ps, "',' or '}' in an object");
        return ZC_JSON_NONE;
    }
    ps->doc->nodes[idx].count = count;
    if (count > 1 && check_duplicates(ps, idx) != 0)
        return ZC_JSON_NONE;
    return idx;
}

/* depth: containers already open around this value. */
static uint32_t parse_value(parser *ps, uint32_t depth)
{
    if (ps->i >= ps->len) {
        fail_at(ps, ps->i, "expected a JSON value, found the end of text");
        return ZC_JSON_NONE;
    }
    switch (ps->s[ps->i]) {
    case '{': return parse_object(ps, depth + 1);
    case '[': return parse_array(ps, depth + 1);
    case '"': return parse_string(ps);
    case 't': return parse_literal(ps, "true", ZC_JSON_TRUE);
    case 'f': return parse_literal(ps, "false", ZC_JSON_FALSE);
    case 'n': return parse_literal(ps, "null", ZC_JSON_NULL);
    default:
        if (ps->s[ps->i] == '-' || is_digit(ps->s[ps->i]))
            return parse_number(ps);
        fail_unexpected(ps, "a JSON value");
        return ZC_JSON_NONE;
    }
}

int zc__json_parse(const char *text, size_t len, const zc_json_limits *limits, zc_json_doc *doc,
                   zc_json_error *err)
{
    parser ps = {(const unsigned char *)text, len, 0, limits, doc, err, 0};
    memset(doc, 0, sizeof *doc);
    memset(err, 0, sizeof *err);
    if (text == NULL && len > 0)
        return fail_at(&ps, 0, "JSON text is NULL");
    /* Positions and string offsets are 32-bit. */
    if (len >= UINT32_MAX)
        return fail_at(&ps, 0, "JSON text of %zu bytes is too large", len);
    skip_ws(&ps);
    uint32_t root = parse_value(&ps, 0);
    if (root != ZC_JSON_NONE) {
        skip_ws(&ps);
        if (ps.i != len) {
            char what[16];
            describe_byte(&ps, ps.i, what);
            fail_at(&ps, ps.i, "unexpected %s after the JSON value", what);
            root = ZC_JSON_NONE;
        }
    }
    if (root == ZC_JSON_NONE) {
        zc__json_free(doc);
        return ps.nomem ? -2 : -1;
    }
    doc->text = text;
    return 0;
}

void zc__json_free(zc_json_doc *doc)
{
    if (doc == NULL)
        return;
    free(doc->nodes);
    free(doc->strings);
    memset(doc, 0, sizeof *doc);
}

const zc_json_node *zc__json_node(const zc_json_doc *doc, uint32_t index)
{
    if (doc == NULL || index >= doc->node_count)
        return NULL;
    return &doc->nodes[index];
}

const char *zc__json_str(const zc_json_doc *doc, const zc_json_node *node)
{
    if (doc == NULL || node == NULL || node->type != ZC_JSON_STRING || doc->strings == NULL)
        return "";
    return doc->strings + node->str;
}

const zc_json_node *zc__json_member(const zc_json_doc *doc, const zc_json_node *obj, const char *key)
{
    if (doc == NULL || obj == NULL || obj->type != ZC_JSON_OBJECT)
        return NULL;
    for (uint32_t k = obj->child; k != ZC_JSON_NONE; k = doc->nodes[k].next)
        if (strcmp(zc__json_str(doc, &doc->nodes[k]), key) == 0)
            return zc__json_node(doc, doc->nodes[k].child);
    return NULL;
}

const char *zc__json_type_name(int type)
{
    switch (type) {
    case ZC_JSON_NULL: return "null";
    case ZC_JSON_FALSE: return "false";
    case ZC_JSON_TRUE: return "true";
    case ZC_JSON_NUMBER: return "number";
    case ZC_JSON_STRING: return "string";
    case ZC_JSON_ARRAY: return "array";
    case ZC_JSON_OBJECT: return "object";
    default: return "unknown";
    }
}
