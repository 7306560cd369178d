/*
 * safetensors_read.c — the hardened safetensors reader (zc_file_*).
 *
 * Layout: 8-byte little-endian header length N, N bytes of UTF-8 JSON
 * mapping tensor name -> {"dtype", "shape", "data_offsets": [begin, end]}
 * (offsets relative to the data section after the header) plus an optional
 * "__metadata__" object of strings, then the data section.
 *
 * Everything in the file is hostile until checked: the header length
 * against ZC_MAX_HEADER_BYTES and the file size, the JSON (json_reader.c),
 * each dtype, rank, dimension and the byte size it implies (with overflow
 * checks) against its offsets, and the offsets together: sorted, they must
 * tile the data section exactly from 0 to its end, with no overlap and no
 * hole, as every safetensors writer produces.  Only then is a zc_file
 * returned; reads after that re-check what the OS gives back.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "json_reader.h"
#include "record.h"

/* Bytes read (and digested while still in cache) per step. */
#define READ_CHUNK ((size_t)1 << 20)

/* The +1 admits ComfyUI's marker tensor beside a full bundle. */
#define FILE_MAX_TENSORS (ZC_MAX_TENSORS + 1)
/* Metadata: the bundle's own entries (up to ZC_MAX_META), plus the engine's
 * "zc." keys (a digest and a seam summary per tensor, the identity, the hop's
 * seam, the record digest, and room to spare), so a file the engine wrote
 * from a full bundle always reads back. */
#define FILE_MAX_ENGINE_META (2 * ZC_MAX_TENSORS + 16)

/* JSON limits: a safetensors header nests 3 deep (root, tensor entry,
 * shape) and holds a few hundred values; these leave room for foreign but
 * harmless extras while bounding memory and the duplicate-key check. */
static const zc_json_limits header_limits = {
    .max_depth = 16,
    .max_nodes = 1u << 16,
    .max_members = 1024,
};

typedef struct {
    char name[ZC_MAX_NAME_LEN + 1];
    int dtype;
    int32_t ndim;
    int64_t shape[ZC_MAX_RANK];
    uint64_t begin; /* relative to the data section */
    uint64_t end;
    int has_digest;
    int digest_algo; /* of the recorded digest */
    uint64_t digest;
} file_tensor;

struct zc_file {
    zc_os_file os;       /* closed for an in-memory image */
    const uint8_t *mem;  /* the in-memory image (borrowed), or NULL */
    uint64_t size;       /* bytes in the file */
    uint64_t data_start; /* 8 + header length */
    char *label;         /* the path, for messages */
    uint32_t count;
    file_tensor tensors[FILE_MAX_TENSORS];
    uint32_t meta_count;
    zc_meta_entry *meta;
    int record;          /* zc_record_status of the header (record.h) */
    char *record_why;    /* its sentence ("" when ok) */
};

/* ---- messages ---- */

static int corrupt(const zc_file *f, const char *fmt, ...) ZC_PRINTF(2, 3);

/* ZC_E_CORRUPT with "label: message". */
static int corrupt(const zc_file *f, const char *fmt, ...)
{
    char msg[896];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return zc__fail(ZC_E_CORRUPT, "%s: %s", f->label, msg);
}

/* A printable rendering of a (hostile) name for messages. */
static const char *quoted(const char *s, char *buf, size_t cap)
{
    zc__json_quote(s, strlen(s), buf, cap);
    return buf;
}

/* The text of a JSON value, for messages: numbers as written, else the type. */
static void value_text(const zc_json_doc *doc, const zc_json_node *n, char *buf, size_t cap)
{
    if (n->type == ZC_JSON_NUMBER)
        snprintf(buf, cap, "%.*s%s", n->len > 24 ? 24 : (int)n->len, doc->text + n->pos,
                 n->len > 24 ? "..." : "");
    else
        snprintf(buf, cap, "a JSON %s", zc__json_type_name(n->type));
}

static uint64_t read_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* ---- header validation ---- */

static const zc_json_node *member_value(const zc_json_doc *doc, const zc_json_node *key)
{
    return zc__json_node(doc, key->child);
}

/* One element of "shape" or "data_offsets": a non-negative integer <= max. */
static int get_uint(const zc_file *f, const zc_json_doc *doc, const zc_json_node *n, uint64_t max,
                    const char *tname, const char *field, uint32_t i, uint64_t *out)
{
    if (n->type != ZC_JSON_NUMBER || !n->is_uint || n->num > max) {
        char q[80], v[48];
        value_text(doc, n, v, sizeof v);
        return corrupt(f, "tensor \"%s\" %s[%u] is %s; expected an integer from 0 to %llu; "
                       "the header is corrupt", quoted(tname, q, sizeof q), field, i, v,
                       (unsigned long long)max);
    }
    *out = n->num;
    return ZC_OK;
}

static int parse_dtype(const zc_file *f, const zc_json_doc *doc, const zc_json_node *n,
                       const char *tname, int *dtype)
{
    char q[80], d[48];
    if (n == NULL)
        return corrupt(f, "tensor \"%s\" has no \"dtype\"; every entry needs dtype, shape and "
                       "data_offsets", quoted(tname, q, sizeof q));
    if (n->type != ZC_JSON_STRING)
        return corrupt(f, "tensor \"%s\" dtype is a JSON %s; expected a string such as \"F32\"",
                       quoted(tname, q, sizeof q), zc__json_type_name(n->type));
    if (zc__dtype_from_name(zc__json_str(doc, n), dtype) != ZC_OK)
        return corrupt(f, "tensor \"%s\" has unknown dtype \"%s\"; expected one of F32 F16 BF16 "
                       "F64 F8_E4M3 F8_E5M2 I8 I16 I32 I64 U8 BOOL (convert the tensor first)",
                       quoted(tname, q, sizeof q), quoted(zc__json_str(doc, n), d, sizeof d));
    return ZC_OK;
}

static int parse_shape(const zc_file *f, const zc_json_doc *doc, const zc_json_node *n,
                       file_tensor *t)
{
    char q[80];
    if (n == NULL)
        return corrupt(f, "tensor \"%s\" has no \"shape\"; every entry needs dtype, shape and "
                       "data_offsets", quoted(t->name, q, sizeof q));
    if (n->type != ZC_JSON_ARRAY)
        return corrupt(f, "tensor \"%s\" shape is a JSON %s; expected an array of integers",
                       quoted(t->name, q, sizeof q), zc__json_type_name(n->type));
    if (n->count > ZC_MAX_RANK)
        return corrupt(f, "tensor \"%s\" has rank %u; the engine reads ranks 0 to %d",
                       quoted(t->name, q, sizeof q), n->count, ZC_MAX_RANK);
    uint32_t i = 0;
    for (uint32_t e = n->child; e != ZC_JSON_NONE; e = doc->nodes[e].next, i++) {
        uint64_t dim;
        int rc = get_uint(f, doc, &doc->nodes[e], INT64_MAX, t->name, "shape", i, &dim);
        if (rc != ZC_OK)
            return rc;
        t->shape[i] = (int64_t)dim;
    }
    t->ndim = (int32_t)i;
    return ZC_OK;
}

static int parse_offsets(const zc_file *f, const zc_json_doc *doc, const zc_json_node *n,
                         uint64_t data_len, file_tensor *t)
{
    char q[80];
    uint64_t v[2];
    if (n == NULL)
        return corrupt(f, "tensor \"%s\" has no \"data_offsets\"; every entry needs dtype, shape "
                       "and data_offsets", quoted(t->name, q, sizeof q));
    if (n->type != ZC_JSON_ARRAY)
        return corrupt(f, "tensor \"%s\" data_offsets is a JSON %s; expected an array [begin, "
                       "end]", quoted(t->name, q, sizeof q), zc__json_type_name(n->type));
    if (n->count != 2)
        return corrupt(f, "tensor \"%s\" data_offsets has %u values; expected 2, [begin, end]",
                       quoted(t->name, q, sizeof q), n->count);
    uint32_t e = n->child;
    for (uint32_t i = 0; i < 2; i++, e = doc->nodes[e].next) {
        int rc = get_uint(f, doc, &doc->nodes[e], UINT64_MAX, t->name, "data_offsets", i, &v[i]);
        if (rc != ZC_OK)
            return rc;
    }
    if (v[0] > v[1])
        return corrupt(f, "tensor \"%s\" data_offsets [%llu, %llu] begin after they end; the "
                       "header is corrupt", quoted(t->name, q, sizeof q),
                       (unsigned long long)v[0], (unsigned long long)v[1]);
    if (v[1] > data_len)
        return corrupt(f, "tensor \"%s\" data_offsets [%llu, %llu] run past the end of the data "
                       "section (%llu bytes); the file is truncated or corrupt",
                       quoted(t->name, q, sizeof q), (unsigned long long)v[0],
                       (unsigned long long)v[1], (unsigned long long)data_len);
    t->begin = v[0];
    t->end = v[1];
    return ZC_OK;
}

/* The shape's byte size must be exactly what the offsets hold. */
static int check_size(const zc_file *f, const file_tensor *t)
{
    char q[80], shape[200];
    size_t o = 0;
    uint64_t need;
    shape[0] = '\0';
    for (int32_t i = 0; i < t->ndim && o < sizeof shape; i++)
        o += (size_t)snprintf(shape + o, sizeof shape - o, "%s%lld", i ? ", " : "",
                              (long long)t->shape[i]);
    if (zc__shape_nbytes(t->ndim, t->shape, zc_dtype_size(t->dtype), &need) != 0 ||
        need > (uint64_t)INT64_MAX)
        return corrupt(f, "tensor \"%s\" %s shape [%s] overflows 64 bits; the header is corrupt",
                       quoted(t->name, q, sizeof q), zc_dtype_name(t->dtype), shape);
    if (need != t->end - t->begin)
        return corrupt(f, "tensor \"%s\" data_offsets [%llu, %llu] hold %llu bytes but %s shape "
                       "[%s] needs %llu; the file is truncated or corrupt",
                       quoted(t->name, q, sizeof q), (unsigned long long)t->begin,
                       (unsigned long long)t->end, (unsigned long long)(t->end - t->begin),
                       zc_dtype_name(t->dtype), shape, (unsigned long long)need);
    return ZC_OK;
}

static int parse_tensor(zc_file *f, const zc_json_doc *doc, const zc_json_node *key,
                        uint64_t data_len)
{
    const char *name = zc__json_str(doc, key);
    const zc_json_node *v = member_value(doc, key);
    const zc_json_node *dtype = NULL, *shape = NULL, *offsets = NULL;
    char q[80];
    int rc;
    if (key->len == 0 || key->len > ZC_MAX_NAME_LEN)
        return corrupt(f, "tensor name \"%s\" has %u bytes; the engine reads names of 1 to %d "
                       "bytes", quoted(name, q, sizeof q), key->len, ZC_MAX_NAME_LEN);
    if (v->type != ZC_JSON_OBJECT)
        return corrupt(f, "tensor \"%s\" is described by a JSON %s; expected an object with "
                       "dtype, shape and data_offsets", quoted(name, q, sizeof q),
                       zc__json_type_name(v->type));
    /* Unknown fields are ignored, as safetensors does; duplicates were
     * already refused by the JSON reader. */
    for (uint32_t k = v->child; k != ZC_JSON_NONE; k = doc->nodes[k].next) {
        const char *field = zc__json_str(doc, &doc->nodes[k]);
        const zc_json_node *fv = member_value(doc, &doc->nodes[k]);
        if (strcmp(field, "dtype") == 0)
            dtype = fv;
        else if (strcmp(field, "shape") == 0)
            shape = fv;
        else if (strcmp(field, "data_offsets") == 0)
            offsets = fv;
    }
    file_tensor *t = &f->tensors[f->count];
    memset(t, 0, sizeof *t);
    memcpy(t->name, name, key->len + 1);
    if ((rc = parse_dtype(f, doc, dtype, name, &t->dtype)) != ZC_OK ||
        (rc = parse_shape(f, doc, shape, t)) != ZC_OK ||
        (rc = parse_offsets(f, doc, offsets, data_len, t)) != ZC_OK ||
        (rc = check_size(f, t)) != ZC_OK)
        return rc;
    f->count++;
    return ZC_OK;
}

static int by_offsets(const void *a, const void *b)
{
    const file_tensor *x = *(const file_tensor *const *)a;
    const file_tensor *y = *(const file_tensor *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return 0;
}

/* Sorted by offsets, the tensors must tile [0, data_len) exactly. */
static int check_tiling(const zc_file *f, uint64_t data_len)
{
    const file_tensor *order[FILE_MAX_TENSORS];
    char q[80], p[80];
    for (uint32_t i = 0; i < f->count; i++)
        order[i] = &f->tensors[i];
    qsort(order, f->count, sizeof order[0], by_offsets);
    uint64_t at = 0;
    const file_tensor *prev = NULL;
    for (uint32_t i = 0; i < f->count; i++) {
        const file_tensor *t = order[i];
        if (t->begin < at)
            return corrupt(f, "tensor \"%s\" data_offsets [%llu, %llu] overlap tensor \"%s\" "
                           "[%llu, %llu]; the header is corrupt", quoted(t->name, q, sizeof q),
                           (unsigned long long)t->begin, (unsigned long long)t->end,
                           quoted(prev->name, p, sizeof p), (unsigned long long)prev->begin,
                           (unsigned long long)prev->end);
        if (t->begin > at)
            return corrupt(f, "data section bytes [%llu, %llu) before tensor \"%s\" belong to no "
                           "tensor (a hole); the header is corrupt", (unsigned long long)at,
                           (unsigned long long)t->begin, quoted(t->name, q, sizeof q));
        at = t->end;
        prev = t;
    }
    if (at != data_len)
        return corrupt(f, "the tensors cover %llu bytes of the %llu-byte data section; the "
                       "remaining bytes belong to no tensor (trailing garbage or a corrupt "
                       "header)", (unsigned long long)at, (unsigned long long)data_len);
    return ZC_OK;
}

static int find_tensor(const zc_file *f, const char *name)
{
    for (uint32_t i = 0; i < f->count; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int count_metadata(const zc_file *f, const zc_json_doc *doc, const zc_json_node *m)
{
    uint32_t user = 0, engine = 0;
    for (uint32_t k = m->child; k != ZC_JSON_NONE; k = doc->nodes[k].next) {
        if (strncmp(zc__json_str(doc, &doc->nodes[k]), "zc.", 3) == 0)
            engine++;
        else
            user++;
    }
    if (user > ZC_MAX_META)
        return corrupt(f, "__metadata__ has %u entries; the engine reads at most %d (plus its own "
                       "\"zc.\" keys)", user, ZC_MAX_META);
    if (engine > FILE_MAX_ENGINE_META)
        return corrupt(f, "__metadata__ has %u \"zc.\" entries; the engine writes at most %d",
                       engine, FILE_MAX_ENGINE_META);
    return ZC_OK;
}

/* A "zc.digest.<tensor>" entry: the value must parse and name a tensor. */
static int apply_digest(zc_file *f, const char *key, const char *value)
{
    char q[80], p[80];
    const char *tname = key + strlen(ZC_FILE_META_DIGEST_PREFIX);
    int i = find_tensor(f, tname);
    uint64_t d;
    int algo;
    if (i < 0)
        return corrupt(f, "metadata \"%s\" records a digest for a tensor the file does not hold; "
                       "the file was edited or is corrupt", quoted(key, q, sizeof q));
    if (zc_digest_parse(value, &algo, &d) != ZC_OK)
        return corrupt(f, "metadata \"%s\" is \"%s\"; expected \"xxh3:\" (or \"xxh64:\") and "
                       "16 hex digits; the file was edited or is corrupt",
                       quoted(key, q, sizeof q), quoted(value, p, sizeof p));
    f->tensors[i].has_digest = 1;
    f->tensors[i].digest_algo = algo;
    f->tensors[i].digest = d;
    return ZC_OK;
}

static int parse_metadata(zc_file *f, const zc_json_doc *doc, const zc_json_node *m)
{
    char q[80];
    int rc;
    if (m->type != ZC_JSON_OBJECT)
        return corrupt(f, "__metadata__ is a JSON %s; expected an object of strings",
                       zc__json_type_name(m->type));
    if ((rc = count_metadata(f, doc, m)) != ZC_OK)
        return rc;
    f->meta = calloc(m->count ? m->count : 1, sizeof *f->meta);
    if (f->meta == NULL)
        return zc__fail(ZC_E_NOMEM, "%s: out of host memory for %u metadata entries", f->label,
                        m->count);
    for (uint32_t k = m->child; k != ZC_JSON_NONE; k = doc->nodes[k].next) {
        const zc_json_node *key = &doc->nodes[k];
        const zc_json_node *v = member_value(doc, key);
        const char *ks = zc__json_str(doc, key);
        if (v->type != ZC_JSON_STRING)
            return corrupt(f, "metadata \"%s\" is a JSON %s; safetensors metadata values are "
                           "strings", quoted(ks, q, sizeof q), zc__json_type_name(v->type));
        zc_meta_entry *e = &f->meta[f->meta_count];
        e->key = zc__strndup(ks, key->len);
        e->value = zc__strndup(zc__json_str(doc, v), v->len);
        if (e->key == NULL || e->value == NULL) {
            free(e->key);
            free(e->value);
            e->key = e->value = NULL;
            return zc__fail(ZC_E_NOMEM, "%s: out of host memory for metadata", f->label);
        }
        f->meta_count++;
        if (strncmp(ks, ZC_FILE_META_DIGEST_PREFIX, strlen(ZC_FILE_META_DIGEST_PREFIX)) == 0 &&
            (rc = apply_digest(f, e->key, e->value)) != ZC_OK)
            return rc;
    }
    return ZC_OK;
}

static int count_tensors(const zc_file *f, const zc_json_doc *doc, const zc_json_node *root)
{
    uint32_t n = 0;
    for (uint32_t k = root->child; k != ZC_JSON_NONE; k = doc->nodes[k].next) {
        const char *name = zc__json_str(doc, &doc->nodes[k]);
        if (strcmp(name, "__metadata__") != 0 && strcmp(name, ZC_FILE_LATENT_MARKER) != 0)
            n++;
    }
    if (n > ZC_MAX_TENSORS)
        return corrupt(f, "the file holds %u tensors; the engine reads at most %d (plus ComfyUI's "
                       "\"" ZC_FILE_LATENT_MARKER "\" marker)", n, ZC_MAX_TENSORS);
    return ZC_OK;
}

/* The record digest against the header as parsed: its status and sentence are kept (a file is
 * refused for it by zc_file_load_bundle, not here, so that tools can still show it). */
static int check_record(zc_file *f)
{
    zc_record_tensor rt[FILE_MAX_TENSORS];
    char why[1024];
    for (uint32_t i = 0; i < f->count; i++)
        rt[i] = (zc_record_tensor){f->tensors[i].name, f->tensors[i].dtype, f->tensors[i].ndim,
                                   f->tensors[i].shape};
    int rc = zc__record_check(zc_file_meta(f, ZC_FILE_META_RECORD), rt, f->count, f->meta,
                              f->meta_count, why, sizeof why);
    if (rc < 0)
        return rc;
    f->record = rc;
    if ((f->record_why = zc__strdup(why)) == NULL)
        return zc__fail(ZC_E_NOMEM, "%s: out of host memory", f->label);
    return ZC_OK;
}

static int parse_header(zc_file *f, const char *text, size_t len)
{
    zc_json_doc doc;
    zc_json_error err;
    uint64_t data_len = f->size - f->data_start;
    const zc_json_node *meta = NULL;
    int rc = zc__json_parse(text, len, &header_limits, &doc, &err);
    if (rc == -2)
        return zc__fail(ZC_E_NOMEM, "%s: out of host memory parsing a %zu-byte header", f->label,
                        len);
    if (rc != 0)
        return corrupt(f, "header is not valid JSON at header byte %zu (file byte %zu): %s; the "
                       "file is not a safetensors file or its header is corrupt", err.pos,
                       err.pos + 8, err.msg);
    const zc_json_node *root = zc__json_node(&doc, 0);
    if (root->type != ZC_JSON_OBJECT) {
        rc = corrupt(f, "header is a JSON %s; expected an object mapping tensor names to "
                     "{dtype, shape, data_offsets}", zc__json_type_name(root->type));
        goto cleanup;
    }
    if ((rc = count_tensors(f, &doc, root)) != ZC_OK)
        goto cleanup;
    for (uint32_t k = root->child; k != ZC_JSON_NONE; k = doc.nodes[k].next) {
        const zc_json_node *key = &doc.nodes[k];
        if (strcmp(zc__json_str(&doc, key), "__metadata__") == 0) {
            meta = member_value(&doc, key);
            continue;
        }
        if ((rc = parse_tensor(f, &doc, key, data_len)) != ZC_OK)
            goto cleanup;
    }
    if ((rc = check_tiling(f, data_len)) != ZC_OK)
        goto cleanup;
    /* After the tensors: digests refer to them. */
    if (meta != NULL && (rc = parse_metadata(f, &doc, meta)) != ZC_OK)
        goto cleanup;
    rc = check_record(f);
cleanup:
    zc__json_free(&doc);
    return rc;
}

/* Check the 8-byte length prefix against the limits and the file size. */
static int check_prefix(zc_file *f, const uint8_t prefix[8], uint64_t *header_len)
{
    uint64_t n = read_le64(prefix);
    if (n > ZC_MAX_HEADER_BYTES)
        return corrupt(f, "header length %llu exceeds the %u-byte limit; the file is not a "
                       "safetensors file or is corrupt", (unsigned long long)n,
                       ZC_MAX_HEADER_BYTES);
    if (n > f->size - 8)
        return corrupt(f, "header length %llu runs past the end of the %llu-byte file; the file "
                       "is truncated or not a safetensors file", (unsigned long long)n,
                       (unsigned long long)f->size);
    if (n < 2)
        return corrupt(f, "header length %llu is too small for a JSON object; the file is not a "
                       "safetensors file", (unsigned long long)n);
    *header_len = n;
    f->data_start = 8 + n;
    return ZC_OK;
}

static int new_file(const char *label, uint64_t size, zc_file **out)
{
    zc_file *f = calloc(1, sizeof *f);
    if (f == NULL || (f->label = zc__strdup(label)) == NULL) {
        free(f);
        return zc__fail(ZC_E_NOMEM, "out of host memory opening %s", label);
    }
    f->os = ZC_OS_FILE_CLOSED;
    f->size = size;
    *out = f;
    return ZC_OK;
}

static int check_size_min(zc_file *f)
{
    if (f->size < 8)
        return corrupt(f, "file has %llu bytes; a safetensors file starts with an 8-byte header "
                       "length, so it is truncated or not a safetensors file",
                       (unsigned long long)f->size);
    return ZC_OK;
}

/* ---- public API ---- */

int zc_file_open_memory(const void *data, size_t len, zc_file **out)
{
    zc_file *f = NULL;
    uint64_t hlen = 0;
    int rc;
    if (out == NULL)
        return zc__fail(ZC_E_INVALID, "zc_file_open_memory: out is NULL");
    *out = NULL;
    if (data == NULL && len > 0)
        return zc__fail(ZC_E_INVALID, "zc_file_open_memory: data is NULL but len is %zu", len);
    if ((rc = new_file("<memory image>", len, &f)) != ZC_OK)
        return rc;
    f->mem = data;
    if ((rc = check_size_min(f)) != ZC_OK || (rc = check_prefix(f, f->mem, &hlen)) != ZC_OK ||
        (rc = parse_header(f, (const char *)f->mem + 8, (size_t)hlen)) != ZC_OK) {
        zc_file_close(f);
        return rc;
    }
    *out = f;
    return ZC_OK;
}

static int io_error(const char *what, const char *path, int err)
{
    return zc__fail(ZC_E_IO, "%s %s: %s", what, path, ZC_OS_WHY(err));
}

/* Read and validate the header of the open file f. */
static int load_header(zc_file *f)
{
    uint8_t prefix[8];
    uint64_t hlen = 0;
    char *text = NULL;
    size_t got = 0;
    int rc, err;
    if ((rc = check_size_min(f)) != ZC_OK)
        return rc;
    if ((err = zc_os_file_read_at(f->os, prefix, 8, 0, &got)) != 0)
        return io_error("cannot read", f->label, err);
    if (got < 8)
        return corrupt(f, "file ended while reading the header length; it is truncated");
    if ((rc = check_prefix(f, prefix, &hlen)) != ZC_OK)
        return rc;
    text = malloc((size_t)hlen);
    if (text == NULL)
        return zc__fail(ZC_E_NOMEM, "%s: out of host memory for a %llu-byte header", f->label,
                        (unsigned long long)hlen);
    if ((err = zc_os_file_read_at(f->os, text, (size_t)hlen, 8, &got)) != 0)
        rc = io_error("cannot read", f->label, err);
    else if ((uint64_t)got < hlen)
        rc = corrupt(f, "file ended inside its %llu-byte header; it is truncated",
                     (unsigned long long)hlen);
    else
        rc = parse_header(f, text, (size_t)hlen);
    free(text);
    return rc;
}

static int open_opened(const char *path, zc_os_file os, zc_file **out);

int zc_file_open(const char *path, zc_file **out)
{
    zc_os_file os = ZC_OS_FILE_CLOSED;
    int err;
    if (out == NULL || path == NULL)
        return zc__fail(ZC_E_INVALID, "zc_file_open: %s is NULL", path ? "out" : "path");
    *out = NULL;
    /* A hostile path may name a FIFO or device: the open does not block on
     * it, and anything but a regular file is refused below. */
    if ((err = zc_os_file_open_read(path, &os)) != 0)
        return io_error("cannot open", path, err);
    return open_opened(path, os, out);
}

/* How long a spill file with two names is looked at again (ms, doubling
 * from 1): the instant of a non-replacing rename by link + unlink lasts
 * microseconds (see zc_os_rename_noreplace); a planted link stays. */
#define TWO_NAMES_WAIT_MS 16

int zc__spill_file_open(const char *path, zc_file **out)
{
    zc_os_file os = ZC_OS_FILE_CLOSED;
    uint64_t links = 0;
    *out = NULL;
    int err = zc_os_file_open_read_nofollow(path, &os);
    if (zc_os_error_is(err, ZC_OS_ACCESS)) {
        long uid = -1;
        unsigned mode = 0;
        char owner[96] = "";
        if (zc_os_path_owner(path, &uid, &mode) == 0)
            snprintf(owner, sizeof owner, " (owner uid %ld, mode %04o)", uid, mode);
        return zc__fail(ZC_E_ACCESS, "spill file \"%s\" cannot be read: permission denied%s; it "
                        "is kept and not used: make it readable by the user this process runs "
                        "as (chown or chmod), or move it out of the spill folder", path, owner);
    }
    if (err == 0) {
        err = zc_os_file_check_private(os, &links);
        for (unsigned ms = 1; err == ZC_OS_ERROR_HARD_LINKED && ms <= TWO_NAMES_WAIT_MS; ms *= 2) {
            zc_os_sleep_ms(ms);
            err = zc_os_file_check_private(os, &links);
        }
        if (err != 0)
            zc_os_file_close(&os);
    }
    if (zc_os_error_is(err, ZC_OS_NOT_PRIVATE)) {
        char names[64] = "";
        if (err == ZC_OS_ERROR_HARD_LINKED)
            snprintf(names, sizeof names, " (it has %llu names)", (unsigned long long)links);
        return zc__fail(ZC_E_CORRUPT, "spill file \"%s\" is not served: %s%s; if it is a shot "
                        "you want, copy it into the folder (a copy, not a link) under an unused "
                        "generation", path, ZC_OS_WHY(err), names);
    }
    if (err != 0)
        return io_error("cannot open", path, err);
    return open_opened(path, os, out);
}

/* zc_file_open's work once the file is open: only a regular file, its
 * header read and checked.  os is the caller's no more. */
static int open_opened(const char *path, zc_os_file os, zc_file **out)
{
    zc_file *f = NULL;
    uint64_t size = 0;
    int rc, err, regular = 0;
    if ((err = zc_os_file_info(os, &size, &regular)) != 0) {
        zc_os_file_close(&os);
        return io_error("cannot stat", path, err);
    }
    if (!regular) {
        zc_os_file_close(&os);
        return zc__fail(ZC_E_IO, "cannot read %s: not a regular file", path);
    }
    if ((rc = new_file(path, size, &f)) != ZC_OK) {
        zc_os_file_close(&os);
        return rc;
    }
    f->os = os;
    /* Tensors are read front to back: ask for generous readahead. */
    zc_os_file_advise(os, 0, 0, ZC_OS_ADVISE_SEQUENTIAL);
    if ((rc = load_header(f)) != ZC_OK) {
        zc_file_close(f);
        return rc;
    }
    *out = f;
    return ZC_OK;
}

void zc_file_close(zc_file *f)
{
    if (f == NULL)
        return;
    zc_os_file_close(&f->os);
    for (uint32_t i = 0; i < f->meta_count; i++) {
        free(f->meta[i].key);
        free(f->meta[i].value);
    }
    free(f->meta);
    free(f->record_why);
    free(f->label);
    free(f);
}

uint32_t zc_file_count(const zc_file *f)
{
    return f ? f->count : 0;
}

int zc_file_tensor_at(const zc_file *f, uint32_t index, zc_file_tensor *out)
{
    if (f == NULL || out == NULL)
        return zc__fail(ZC_E_INVALID, "zc_file_tensor_at: %s is NULL", f ? "out" : "file");
    if (index >= f->count)
        return zc__fail(ZC_E_NOT_FOUND, "%s: tensor index %u is out of range; the file holds %u",
                        f->label, index, f->count);
    const file_tensor *t = &f->tensors[index];
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->dtype = t->dtype;
    out->ndim = t->ndim;
    memcpy(out->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    out->nbytes = t->end - t->begin;
    out->offset = f->data_start + t->begin;
    out->has_digest = t->has_digest;
    out->digest_algo = t->has_digest ? t->digest_algo : ZC_DIGEST_NONE;
    out->recorded_digest = t->digest;
    return ZC_OK;
}

int zc_file_find(const zc_file *f, const char *name, uint32_t *index)
{
    char q[80];
    if (f == NULL || name == NULL || index == NULL)
        return zc__fail(ZC_E_INVALID, "zc_file_find: an argument is NULL");
    int i = find_tensor(f, name);
    if (i < 0)
        return zc__fail(ZC_E_NOT_FOUND, "%s holds no tensor \"%s\"", f->label,
                        quoted(name, q, sizeof q));
    *index = (uint32_t)i;
    return ZC_OK;
}

int zc_file_record(const zc_file *f, const char **why)
{
    if (f == NULL)
        return zc__fail(ZC_E_INVALID, "zc_file_record: file is NULL");
    if (why)
        *why = f->record_why ? f->record_why : "";
    return f->record;
}

uint32_t zc_file_meta_count(const zc_file *f)
{
    return f ? f->meta_count : 0;
}

int zc_file_meta_at(const zc_file *f, uint32_t index, const char **key, const char **value)
{
    if (f == NULL)
        return zc__fail(ZC_E_INVALID, "zc_file_meta_at: file is NULL");
    if (index >= f->meta_count)
        return zc__fail(ZC_E_NOT_FOUND, "%s: metadata index %u is out of range; the file has %u",
                        f->label, index, f->meta_count);
    if (key)
        *key = f->meta[index].key;
    if (value)
        *value = f->meta[index].value;
    return ZC_OK;
}

const char *zc_file_meta(const zc_file *f, const char *key)
{
    if (f == NULL || key == NULL)
        return NULL;
    for (uint32_t i = 0; i < f->meta_count; i++)
        if (strcmp(f->meta[i].key, key) == 0)
            return f->meta[i].value;
    return NULL;
}

/* Copy one chunk of a tensor into dst from the file or the image. */
static int read_chunk(zc_file *f, const file_tensor *t, uint8_t *dst, uint64_t off, size_t n)
{
    char q[80];
    uint64_t at = f->data_start + t->begin + off;
    if (f->mem) {
        memcpy(dst, f->mem + at, n);
        return ZC_OK;
    }
    size_t got = 0;
    int err = zc_os_file_read_at(f->os, dst, n, at, &got);
    if (err != 0)
        return zc__fail(ZC_E_IO, "cannot read tensor \"%s\" from %s: %s",
                        quoted(t->name, q, sizeof q), f->label, ZC_OS_WHY(err));
    if (got < n)
        return corrupt(f, "file ends at byte %llu, inside tensor \"%s\" (bytes %llu to %llu); it "
                       "was truncated after it was opened",
                       (unsigned long long)(at + (uint64_t)got),
                       quoted(t->name, q, sizeof q), (unsigned long long)(f->data_start + t->begin),
                       (unsigned long long)(f->data_start + t->end));
    return ZC_OK;
}

/* The algorithm a tensor is read with: the one its file records, else the default. */
static int read_algo(const file_tensor *t)
{
    return t->has_digest ? t->digest_algo : ZC_DIGEST_DEFAULT;
}

int zc_file_read(zc_file *f, uint32_t index, void *dst, size_t cap, uint64_t *digest)
{
    char q[80], want[ZC_DIGEST_TEXT_SIZE], got[ZC_DIGEST_TEXT_SIZE];
    zc_digest_stream st;
    int rc;
    if (f == NULL)
        return zc__fail(ZC_E_INVALID, "zc_file_read: file is NULL");
    if (index >= f->count)
        return zc__fail(ZC_E_NOT_FOUND, "%s: tensor index %u is out of range; the file holds %u",
                        f->label, index, f->count);
    const file_tensor *t = &f->tensors[index];
    uint64_t nbytes = t->end - t->begin;
    if (nbytes > cap)
        return zc__fail(ZC_E_LIMIT, "%s: tensor \"%s\" has %llu bytes but the buffer holds %zu; "
                        "pass a buffer of at least its nbytes", f->label,
                        quoted(t->name, q, sizeof q), (unsigned long long)nbytes, cap);
    if (nbytes > 0 && dst == NULL)
        return zc__fail(ZC_E_INVALID, "zc_file_read: dst is NULL for %llu bytes",
                        (unsigned long long)nbytes);
    /* Ask the kernel to start reading the whole tensor now, so the disk works
     * while this thread hashes (readahead alone waits for each window). */
    if (!f->mem && nbytes > READ_CHUNK)
        zc_os_file_advise(f->os, f->data_start + t->begin, nbytes, ZC_OS_ADVISE_WILLNEED);
    /* Digest each chunk right after reading it, while it is still in cache:
     * a second pass over a large tensor would run at memory bandwidth. */
    zc__digest_stream_init(&st, read_algo(t));
    for (uint64_t off = 0; off < nbytes; off += READ_CHUNK) {
        size_t n = nbytes - off < READ_CHUNK ? (size_t)(nbytes - off) : READ_CHUNK;
        if ((rc = read_chunk(f, t, (uint8_t *)dst + off, off, n)) != ZC_OK)
            return rc;
        zc__digest_stream_update(&st, (uint8_t *)dst + off, n);
    }
    uint64_t d = zc__digest_stream_final(&st);
    if (digest)
        *digest = d;
    if (t->has_digest && d != t->digest) {
        zc__digest_text(t->digest_algo, t->digest, want);
        zc__digest_text(t->digest_algo, d, got);
        return corrupt(f, "tensor \"%s\" reads back as %s but the file records %s; its bytes "
                       "changed after it was written (disk corruption or an edit), so restore it "
                       "from a good copy", quoted(t->name, q, sizeof q), got, want);
    }
    return ZC_OK;
}

static int load_tensor(zc_file *f, uint32_t i, zc_bundle *b)
{
    const file_tensor *t = &f->tensors[i];
    uint64_t nbytes = t->end - t->begin, d;
    char q[80];
    int rc;
    if (nbytes > SIZE_MAX)
        return zc__fail(ZC_E_LIMIT, "%s: tensor \"%s\" of %llu bytes does not fit in memory",
                        f->label, quoted(t->name, q, sizeof q), (unsigned long long)nbytes);
    void *host = zc__host_alloc(nbytes);
    if (host == NULL)
        return zc__fail(ZC_E_NOMEM, "%s: out of host memory for tensor \"%s\" (%llu bytes)",
                        f->label, quoted(t->name, q, sizeof q), (unsigned long long)nbytes);
    if ((rc = zc_file_read(f, i, host, (size_t)nbytes, &d)) != ZC_OK) {
        zc__host_free(host);
        return rc;
    }
    rc = zc__bundle_adopt_host(b, t->name, t->dtype, t->ndim, t->shape, host, nbytes,
                               read_algo(t), d);
    if (rc != ZC_OK) {
        zc__host_free(host);
        zc__fail_context("%s", f->label);
    }
    return rc;
}

int zc_file_load_bundle(zc_file *f, zc_bundle **out)
{
    zc_bundle *b = NULL;
    int rc;
    if (f == NULL || out == NULL)
        return zc__fail(ZC_E_INVALID, "zc_file_load_bundle: %s is NULL", f ? "out" : "file");
    *out = NULL;
    if (f->record == ZC_RECORD_BAD)
        return corrupt(f, "%s; the file was edited or is corrupt: restore it from a good copy, or "
                       "store the shot again", f->record_why);
    if ((rc = zc_bundle_create(&b)) != ZC_OK)
        return rc;
    b->record = f->record;
    for (uint32_t i = 0; i < f->count; i++) {
        if (strcmp(f->tensors[i].name, ZC_FILE_LATENT_MARKER) == 0)
            continue;
        if ((rc = load_tensor(f, i, b)) != ZC_OK)
            goto fail;
    }
    for (uint32_t i = 0; i < f->meta_count; i++) {
        if (strncmp(f->meta[i].key, "zc.", 3) == 0)
            continue;
        if ((rc = zc__bundle_set_meta_internal(b, f->meta[i].key, f->meta[i].value)) != ZC_OK) {
            zc__fail_context("%s", f->label);
            goto fail;
        }
    }
    *out = b;
    return ZC_OK;
fail:
    zc_bundle_free(b);
    return rc;
}
