/*
 * record.c — the record digest of a file's header (record.h): its canonical
 * serialisation, the value the writer records, and the reader's check,
 * which names the tensor or metadata key that changed when it can.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"
#include "record.h"

/* Fields named in one message at most; the rest are counted. */
#define NAMED_MAX 4

/* The recorded value is small (a few hundred bytes, a few KiB at most); these
 * bound a hostile one. */
static const zc_json_limits record_limits = {
    .max_depth = 3,
    .max_nodes = 4096,
    .max_members = 512,
};

/* ---- the header, in canonical order ---- */

typedef struct {
    const zc_record_tensor **t;
    uint32_t nt;
    const zc_meta_entry **m;
    uint32_t nm;
} sorted_header;

static int by_tensor_name(const void *a, const void *b)
{
    return strcmp((*(const zc_record_tensor *const *)a)->name,
                  (*(const zc_record_tensor *const *)b)->name);
}

static int by_meta_key(const void *a, const void *b)
{
    return strcmp((*(const zc_meta_entry *const *)a)->key, (*(const zc_meta_entry *const *)b)->key);
}

static void sorted_free(sorted_header *h)
{
    free(h->t);
    free(h->m);
}

/* Tensors by name and metadata by key (strcmp compares bytes as unsigned
 * char), the record's own entry left out.  @return 0, or -1 out of memory. */
static int sorted_init(sorted_header *h, const zc_record_tensor *tensors, uint32_t ntensors,
                       const zc_meta_entry *meta, uint32_t nmeta)
{
    h->t = malloc(sizeof *h->t * (ntensors ? ntensors : 1));
    h->m = malloc(sizeof *h->m * (nmeta ? nmeta : 1));
    h->nt = h->nm = 0;
    if (h->t == NULL || h->m == NULL) {
        sorted_free(h);
        return -1;
    }
    for (uint32_t i = 0; i < ntensors; i++)
        h->t[h->nt++] = &tensors[i];
    for (uint32_t i = 0; i < nmeta; i++)
        if (strcmp(meta[i].key, ZC_FILE_META_RECORD) != 0)
            h->m[h->nm++] = &meta[i];
    qsort(h->t, h->nt, sizeof *h->t, by_tensor_name);
    qsort(h->m, h->nm, sizeof *h->m, by_meta_key);
    return 0;
}

/* "F32 [1,16,13,60,104]" */
static void put_desc(zc_jsonbuf *jb, const zc_record_tensor *t)
{
    const char *dtype = zc_dtype_name(t->dtype);
    zc__jb_printf(jb, "%s [", dtype ? dtype : "?");
    for (int32_t d = 0; d < t->ndim; d++)
        zc__jb_printf(jb, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    zc__jb_raw(jb, "]");
}

static void put_canonical(zc_jsonbuf *jb, const sorted_header *h)
{
    zc__jb_printf(jb, "zc.record %d\n", ZC_RECORD_VERSION);
    for (uint32_t i = 0; i < h->nt; i++) {
        zc__jb_printf(jb, "tensor %zu:", strlen(h->t[i]->name));
        zc__jb_raw(jb, h->t[i]->name);
        zc__jb_raw(jb, " ");
        put_desc(jb, h->t[i]);
        zc__jb_raw(jb, "\n");
    }
    for (uint32_t i = 0; i < h->nm; i++) {
        zc__jb_printf(jb, "meta %zu:", strlen(h->m[i]->key));
        zc__jb_raw(jb, h->m[i]->key);
        zc__jb_printf(jb, " %zu:", strlen(h->m[i]->value));
        zc__jb_raw(jb, h->m[i]->value);
        zc__jb_raw(jb, "\n");
    }
}

int zc__record_canonical(zc_jsonbuf *jb, const zc_record_tensor *tensors, uint32_t ntensors,
                         const zc_meta_entry *meta, uint32_t nmeta)
{
    sorted_header h;
    if (sorted_init(&h, tensors, ntensors, meta, nmeta) != 0) {
        jb->failed = 1;
        return zc__fail(ZC_E_NOMEM, "out of host memory for a record digest");
    }
    put_canonical(jb, &h);
    sorted_free(&h);
    if (jb->failed)
        return zc__fail(ZC_E_NOMEM, "out of host memory for a record digest");
    return ZC_OK;
}

/* The 8 hex digits that stand for a metadata value in the record. */
static uint32_t value_hint(const char *value)
{
    return (uint32_t)(zc_xxh3_64(value, strlen(value), 0) >> 32);
}

char *zc__record_text(const zc_record_tensor *tensors, uint32_t ntensors,
                      const zc_meta_entry *meta, uint32_t nmeta)
{
    sorted_header h;
    zc_jsonbuf canon, out;
    char digest[ZC_DIGEST_TEXT_SIZE], hint[16];
    if (sorted_init(&h, tensors, ntensors, meta, nmeta) != 0)
        return NULL;
    zc__jb_init(&canon);
    zc__jb_init(&out);
    put_canonical(&canon, &h);
    if (!canon.failed)
        zc__digest_text(ZC_DIGEST_XXH3_64, zc_xxh3_64(canon.data, canon.len, 0), digest);
    zc__jb_printf(&out, "{\"version\":%d,\"digest\":\"%s\",\"tensors\":{", ZC_RECORD_VERSION,
                  canon.failed ? "" : digest);
    for (uint32_t i = 0; i < h.nt; i++) {
        zc__jb_raw(&out, i ? "," : "");
        zc__jb_string(&out, h.t[i]->name);
        zc__jb_raw(&out, ":\"");
        put_desc(&out, h.t[i]);
        zc__jb_raw(&out, "\"");
    }
    zc__jb_raw(&out, "},\"meta\":{");
    for (uint32_t i = 0; i < h.nm; i++) {
        zc__jb_raw(&out, i ? "," : "");
        zc__jb_string(&out, h.m[i]->key);
        snprintf(hint, sizeof hint, ":\"%08lx\"", (unsigned long)value_hint(h.m[i]->value));
        zc__jb_raw(&out, hint);
    }
    zc__jb_raw(&out, "}}");
    int failed = canon.failed || out.failed;
    zc__jb_free(&canon);
    sorted_free(&h);
    if (failed) {
        zc__jb_free(&out);
        return NULL;
    }
    return out.data;
}

/* ---- the check ---- */

typedef struct {
    char *text;       /* the sentence being built */
    size_t cap, len;
    unsigned named;   /* fields named so far */
    unsigned more;    /* fields that differ beyond NAMED_MAX */
} diff_list;

static void diff_add(diff_list *d, const char *fmt, ...) ZC_PRINTF(2, 3);

static void diff_add(diff_list *d, const char *fmt, ...)
{
    if (d->named >= NAMED_MAX) {
        d->more++;
        return;
    }
    va_list ap;
    if (d->named++ > 0 && d->len + 2 < d->cap) {
        memcpy(d->text + d->len, "; ", 3);
        d->len += 2;
    }
    va_start(ap, fmt);
    int n = d->len < d->cap ? vsnprintf(d->text + d->len, d->cap - d->len, fmt, ap) : 0;
    va_end(ap);
    if (n > 0)
        d->len = d->len + (size_t)n < d->cap ? d->len + (size_t)n : d->cap - 1;
}

static const char *quoted(const char *s, char *buf, size_t cap)
{
    zc__json_quote(s, strlen(s), buf, cap);
    return buf;
}

/* The member of obj (an object) named key, or NULL. */
static const zc_json_node *member(const zc_json_doc *doc, const zc_json_node *obj, const char *key)
{
    return obj != NULL ? zc__json_member(doc, obj, key) : NULL;
}

/* Compare one tensor's "<DTYPE> [<dims>]" as recorded (was, untrusted) and as now (is). */
static void diff_tensor(diff_list *d, const char *name, const char *was, const char *is)
{
    char q[96], wd[32], id[32], wsh[96], ish[96];
    const char *wsp = strchr(was, ' '), *isp = strchr(is, ' ');
    size_t wl = wsp ? (size_t)(wsp - was) : strlen(was), il = isp ? (size_t)(isp - is) : strlen(is);
    zc__json_quote(was, wl, wd, sizeof wd);
    zc__json_quote(is, il, id, sizeof id);
    quoted(wsp ? wsp + 1 : "", wsh, sizeof wsh);
    quoted(isp ? isp + 1 : "", ish, sizeof ish);
    int dtype = strcmp(wd, id) != 0, shape = strcmp(wsh, ish) != 0;
    quoted(name, q, sizeof q);
    if (dtype && shape)
        diff_add(d, "tensor \"%s\" is %s %s, was %s %s", q, id, ish, wd, wsh);
    else if (dtype)
        diff_add(d, "tensor \"%s\" dtype is %s, was %s", q, id, wd);
    else
        diff_add(d, "tensor \"%s\" shape is %s, was %s", q, ish, wsh);
}

/* Every member of one section ("tensors" or "meta") that differs between the recorded object
 * (rdoc, r) and the one made now (ndoc, n). */
static void diff_section(diff_list *d, int tensors, const zc_json_doc *rdoc, const zc_json_node *r,
                         const zc_json_doc *ndoc, const zc_json_node *n)
{
    const char *what = tensors ? "tensor" : "metadata";
    char q[96];
    for (uint32_t k = r->child; k != ZC_JSON_NONE; k = rdoc->nodes[k].next) {
        const char *name = zc__json_str(rdoc, &rdoc->nodes[k]);
        const zc_json_node *was = zc__json_node(rdoc, rdoc->nodes[k].child);
        const zc_json_node *is = member(ndoc, n, name);
        if (is == NULL)
            diff_add(d, "%s \"%s\" was removed", what, quoted(name, q, sizeof q));
        else if (was->type != ZC_JSON_STRING ||
                 strcmp(zc__json_str(rdoc, was), zc__json_str(ndoc, is)) != 0) {
            if (tensors && was->type == ZC_JSON_STRING)
                diff_tensor(d, name, zc__json_str(rdoc, was), zc__json_str(ndoc, is));
            else
                diff_add(d, "%s \"%s\" changed", what, quoted(name, q, sizeof q));
        }
    }
    for (uint32_t k = n->child; k != ZC_JSON_NONE; k = ndoc->nodes[k].next) {
        const char *name = zc__json_str(ndoc, &ndoc->nodes[k]);
        if (member(rdoc, r, name) == NULL)
            diff_add(d, "%s \"%s\" was added", what, quoted(name, q, sizeof q));
    }
}

/* Why the recorded text differs from the one made now (expected). */
static int diagnose(const char *recorded, const char *expected, char *why, size_t cap)
{
    zc_json_doc rdoc, ndoc;
    zc_json_error err;
    static const char lead[] = "the record (dtype, shape or metadata) changed since it was written";
    int rc = zc__json_parse(recorded, strlen(recorded), &record_limits, &rdoc, &err);
    if (rc == -2)
        return zc__fail(ZC_E_NOMEM, "out of host memory checking a record digest");
    if (rc != 0) {
        snprintf(why, cap, "%s: its record digest (metadata \"%s\") is damaged: not valid JSON "
                 "at byte %zu (%s)", lead, ZC_FILE_META_RECORD, err.pos, err.msg);
        return ZC_RECORD_BAD;
    }
    const zc_json_node *root = zc__json_node(&rdoc, 0);
    const zc_json_node *version = member(&rdoc, root->type == ZC_JSON_OBJECT ? root : NULL,
                                         "version");
    if (version != NULL && version->type == ZC_JSON_NUMBER && version->is_uint &&
        version->num > ZC_RECORD_VERSION) {
        snprintf(why, cap, "record not covered: its record digest has version %llu, and this "
                 "engine reads version %d (update the engine to check it)",
                 (unsigned long long)version->num, ZC_RECORD_VERSION);
        zc__json_free(&rdoc);
        return ZC_RECORD_NOT_COVERED;
    }
    const zc_json_node *rd = member(&rdoc, root, "digest"), *rt = member(&rdoc, root, "tensors"),
                       *rm = member(&rdoc, root, "meta");
    if (root->type != ZC_JSON_OBJECT || version == NULL || version->type != ZC_JSON_NUMBER ||
        !version->is_uint || version->num != ZC_RECORD_VERSION ||
        rd == NULL || rd->type != ZC_JSON_STRING || rt == NULL || rt->type != ZC_JSON_OBJECT ||
        rm == NULL || rm->type != ZC_JSON_OBJECT) {
        snprintf(why, cap, "%s: its record digest (metadata \"%s\") is damaged: not the object "
                 "of version %d the engine writes", lead, ZC_FILE_META_RECORD, ZC_RECORD_VERSION);
        zc__json_free(&rdoc);
        return ZC_RECORD_BAD;
    }
    rc = zc__json_parse(expected, strlen(expected), &record_limits, &ndoc, &err);
    if (rc != 0) { /* our own text: only memory can fail it */
        zc__json_free(&rdoc);
        return zc__fail(ZC_E_NOMEM, "out of host memory checking a record digest");
    }
    const zc_json_node *nroot = zc__json_node(&ndoc, 0);
    char list[768];
    diff_list d = {list, sizeof list, 0, 0, 0};
    list[0] = '\0';
    if (strcmp(zc__json_str(&rdoc, rd), zc__json_str(&ndoc, member(&ndoc, nroot, "digest"))) ==
        0) {
        diff_add(&d, "the header matches its digest, but the rest of metadata \"%s\" itself "
                 "changed", ZC_FILE_META_RECORD);
    } else {
        diff_section(&d, 1, &rdoc, rt, &ndoc, member(&ndoc, nroot, "tensors"));
        diff_section(&d, 0, &rdoc, rm, &ndoc, member(&ndoc, nroot, "meta"));
        if (d.named == 0)
            diff_add(&d, "no single field can be named");
    }
    if (d.more)
        snprintf(why, cap, "%s: %s; and %u more", lead, list, d.more);
    else
        snprintf(why, cap, "%s: %s", lead, list);
    zc__json_free(&rdoc);
    zc__json_free(&ndoc);
    return ZC_RECORD_BAD;
}

int zc__record_check(const char *recorded, const zc_record_tensor *tensors, uint32_t ntensors,
                     const zc_meta_entry *meta, uint32_t nmeta, char *why, size_t cap)
{
    why[0] = '\0';
    if (recorded == NULL) {
        snprintf(why, cap, "record not covered: the file records no digest of its dtype, shape "
                 "and metadata (written before record digests, or by another program)");
        return ZC_RECORD_NOT_COVERED;
    }
    char *expected = zc__record_text(tensors, ntensors, meta, nmeta);
    if (expected == NULL)
        return zc__fail(ZC_E_NOMEM, "out of host memory checking a record digest");
    int rc = strcmp(expected, recorded) == 0 ? ZC_RECORD_OK
                                             : diagnose(recorded, expected, why, cap);
    free(expected);
    return rc;
}
