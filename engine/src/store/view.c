/*
 * view.c — read views of stored slots, and their export to DLPack consumers
 * (torch) without a copy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

zc_view *zc__view_new(zc_slot *slot)
{
    zc_view *v = malloc(sizeof *v);
    if (v == NULL)
        return NULL;
    zc__slot_reader_acquire(slot);
    v->slot = slot;
    return v;
}

void zc_view_release(zc_view *v)
{
    if (v == NULL)
        return;
    zc__slot_reader_release(v->slot);
    free(v);
}

const char *zc_view_tag(const zc_view *v)
{
    return v ? v->slot->tag : NULL;
}

uint64_t zc_view_generation(const zc_view *v)
{
    return v ? v->slot->generation : 0;
}

uint32_t zc_view_count(const zc_view *v)
{
    return v ? v->slot->bundle->count : 0;
}

static const zc_tensor *tensor_at(const zc_view *v, uint32_t index)
{
    if (v == NULL || index >= v->slot->bundle->count) {
        zc__fail(ZC_E_NOT_FOUND, "tensor index %u is out of range (the slot has %u tensors)",
                 index, v ? v->slot->bundle->count : 0);
        return NULL;
    }
    return &v->slot->bundle->tensors[index];
}

int zc_view_tensor(const zc_view *v, uint32_t index, zc_tensor_info *out)
{
    const zc_tensor *t = tensor_at(v, index);
    if (t == NULL)
        return ZC_E_NOT_FOUND;
    if (out == NULL)
        return zc__fail(ZC_E_INVALID, "zc_view_tensor: out is NULL");
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->dtype = t->dtype;
    out->ndim = t->ndim;
    memcpy(out->shape, t->shape, sizeof t->shape);
    memcpy(out->byte_strides, t->byte_strides, sizeof t->byte_strides);
    out->device_type = t->device_type;
    out->device_id = t->device_id;
    out->tier = t->tier;
    out->nbytes = t->nbytes;
    out->digest = t->digest;
    out->has_digest = t->has_digest;
    out->digest_algo = t->has_digest ? t->digest_algo : ZC_DIGEST_NONE;
    out->data = t->tier == ZC_TIER_DEVICE ? t->ref_data : t->host;
    return ZC_OK;
}

uint32_t zc_view_meta_count(const zc_view *v)
{
    return v ? v->slot->bundle->meta_count : 0;
}

int zc_view_meta_at(const zc_view *v, uint32_t index, const char **key, const char **value)
{
    if (v == NULL || index >= v->slot->bundle->meta_count)
        return zc__fail(ZC_E_NOT_FOUND, "metadata index %u is out of range", index);
    if (key)
        *key = v->slot->bundle->meta[index].key;
    if (value)
        *value = v->slot->bundle->meta[index].value;
    return ZC_OK;
}

int zc_view_meta_packed(const zc_view *v, char *buf, size_t cap, size_t *len)
{
    if (v == NULL || len == NULL || (buf == NULL && cap > 0))
        return zc__fail(ZC_E_INVALID, "zc_view_meta_packed: view, len or buf is NULL");
    const zc_bundle *b = v->slot->bundle;
    size_t need = 0;
    for (uint32_t i = 0; i < b->meta_count; i++)
        need += strlen(b->meta[i].key) + strlen(b->meta[i].value) + 2;
    *len = need;
    if (need > cap)
        return zc__fail(ZC_E_LIMIT, "the metadata takes %zu bytes packed; the buffer holds %zu", need,
                        cap);
    for (uint32_t i = 0; i < b->meta_count; i++) {
        size_t k = strlen(b->meta[i].key) + 1, value = strlen(b->meta[i].value) + 1;
        memcpy(buf, b->meta[i].key, k);
        memcpy(buf + k, b->meta[i].value, value);
        buf += k + value;
    }
    return ZC_OK;
}

const char *zc_view_meta(const zc_view *v, const char *key)
{
    if (v == NULL || key == NULL)
        return NULL;
    return zc__bundle_meta(v->slot->bundle, key);
}

int zc_view_record(const zc_view *v)
{
    if (v == NULL)
        return zc__fail(ZC_E_INVALID, "zc_view_record: view is NULL");
    return v->slot->bundle->record;
}

/* What an exported DLPack tensor points at: one allocation holding either
 * managed struct, its shape/strides arrays and the slot reference. */
typedef struct {
    union {
        zc_dl_managed legacy;
        zc_dl_managed_versioned versioned;
    } m;
    int64_t shape[ZC_MAX_RANK];
    int64_t strides[ZC_MAX_RANK];
    zc_slot *slot;
    zc_write_watch *watch;  /* the host bytes this export can write, or NULL (device tier) */
} export_ctx;

static void release_export(export_ctx *ctx)
{
    zc_slot *slot = ctx->slot;
    zc_write_watch *w = ctx->watch;
    free(ctx);
    if (w != NULL) { /* released first, then no longer live: see zc_write_watch */
        atomic_fetch_add(&w->released, 1);
        atomic_fetch_sub(&w->live, 1);
    }
    zc__slot_reader_release(slot);
}

static void delete_legacy(zc_dl_managed *m)
{
    release_export(m->manager_ctx);
}

static void delete_versioned(zc_dl_managed_versioned *m)
{
    release_export(m->manager_ctx);
}

int zc_view_export_dlpack(const zc_view *v, uint32_t index, int versioned, void **managed)
{
    const zc_tensor *t = tensor_at(v, index);
    if (t == NULL)
        return ZC_E_NOT_FOUND;
    if (managed == NULL)
        return zc__fail(ZC_E_INVALID, "zc_view_export_dlpack: managed is NULL");
    export_ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL)
        return zc__fail(ZC_E_NOMEM, "out of host memory exporting tensor \"%s\"", t->name);
    size_t elem = zc_dtype_size(t->dtype);
    for (int32_t i = 0; i < t->ndim; i++) {
        ctx->shape[i] = t->shape[i];
        ctx->strides[i] = t->byte_strides[i] / (int64_t)elem;
    }
    zc_dl_tensor dl;
    memset(&dl, 0, sizeof dl);
    dl.data = t->tier == ZC_TIER_DEVICE ? t->ref_data : t->host;
    dl.device.device_type = t->device_type;
    dl.device.device_id = t->device_id;
    dl.ndim = t->ndim;
    static const zc_dl_dtype dl_types[ZC_DTYPE_COUNT] = {
        [ZC_F32] = {ZC_DL_FLOAT, 32, 1},       [ZC_F16] = {ZC_DL_FLOAT, 16, 1},
        [ZC_BF16] = {ZC_DL_BFLOAT, 16, 1},     [ZC_F64] = {ZC_DL_FLOAT, 64, 1},
        [ZC_F8_E4M3FN] = {ZC_DL_FLOAT8_E4M3FN, 8, 1}, [ZC_F8_E5M2] = {ZC_DL_FLOAT8_E5M2, 8, 1},
        [ZC_I8] = {ZC_DL_INT, 8, 1},           [ZC_I16] = {ZC_DL_INT, 16, 1},
        [ZC_I32] = {ZC_DL_INT, 32, 1},         [ZC_I64] = {ZC_DL_INT, 64, 1},
        [ZC_U8] = {ZC_DL_UINT, 8, 1},          [ZC_BOOL] = {ZC_DL_BOOL, 8, 1},
    };
    dl.dtype = dl_types[t->dtype];
    dl.shape = t->ndim ? ctx->shape : NULL;
    dl.strides = t->ndim ? ctx->strides : NULL;
    dl.byte_offset = 0;
    ctx->slot = v->slot;
    zc__slot_reader_acquire(v->slot);
    if (t->tier == ZC_TIER_HOST && t->nbytes > 0) { /* a writer from now until its deleter runs */
        ctx->watch = &v->slot->watch[index];
        atomic_fetch_add(&ctx->watch->live, 1);
    }
    if (versioned) {
        ctx->m.versioned.version.major = ZC_DLPACK_MAJOR;
        ctx->m.versioned.version.minor = ZC_DLPACK_MINOR;
        ctx->m.versioned.manager_ctx = ctx;
        ctx->m.versioned.deleter = delete_versioned;
        ctx->m.versioned.flags = 0;
        ctx->m.versioned.dl_tensor = dl;
    } else {
        ctx->m.legacy.manager_ctx = ctx;
        ctx->m.legacy.deleter = delete_legacy;
        ctx->m.legacy.dl_tensor = dl;
    }
    *managed = &ctx->m;
    return ZC_OK;
}

/* Whether anything could have written tensor i since its digest was last
 * checked; *since gets the release count to record if a check now matches. */
static int writer_possible(zc_write_watch *w, uint64_t *since)
{
    int64_t live = atomic_load(&w->live); /* live first: see zc_write_watch */
    *since = atomic_load(&w->released);
    return live != 0 || *since != atomic_load(&w->checked);
}

static uint64_t rehash(const zc_tensor *t)
{
    if (t->digest_algo == ZC_DIGEST_XXH64)
        return zc_xxh64(t->host, (size_t)t->nbytes, 0);
    return zc_xxh3_64(t->host, (size_t)t->nbytes, 0);
}

int zc_view_verify_ex(const zc_view *v, uint32_t flags, zc_verify_report *report)
{
    zc_verify_report r;
    memset(&r, 0, sizeof r);
    if (report)
        *report = r;
    if (v == NULL)
        return zc__fail(ZC_E_INVALID, "zc_view_verify: view is NULL");
    if (flags & ~ZC_VERIFY_REHASH)
        return zc__fail(ZC_E_INVALID, "zc_view_verify_ex: flags 0x%x has unknown bits; expected 0 "
                        "or ZC_VERIFY_REHASH", (unsigned)flags);
    zc_slot *slot = v->slot;
    const zc_bundle *b = slot->bundle;
    uint64_t skipped_bytes = 0;
    int rc = ZC_OK;
    for (uint32_t i = 0; i < b->count && rc == ZC_OK; i++) {
        const zc_tensor *t = &b->tensors[i];
        uint32_t bit = 1u << i;
        if (t->tier == ZC_TIER_DEVICE)
            r.device |= bit;
        if (!t->has_digest || t->host == NULL) {
            r.unchecked |= bit;
            continue;
        }
        uint64_t since;
        if (!writer_possible(&slot->watch[i], &since) && !(flags & ZC_VERIFY_REHASH)) {
            r.unchanged |= bit;
            skipped_bytes += t->nbytes;
            continue;
        }
        uint64_t now = rehash(t);
        r.hashed_bytes += t->nbytes;
        if (now == t->digest) {
            r.hashed |= bit;
            atomic_store(&slot->watch[i].checked, since);
            continue;
        }
        char want[ZC_DIGEST_TEXT_SIZE], got[ZC_DIGEST_TEXT_SIZE];
        zc__digest_text(t->digest_algo, t->digest, want);
        zc__digest_text(t->digest_algo, now, got);
        rc = zc__fail(ZC_E_CORRUPT,
                      "tag \"%s\" generation %llu: tensor \"%s\" changed since it was stored "
                      "(digest %s, now %s); something wrote through a view",
                      slot->tag, (unsigned long long)slot->generation, t->name, want, got);
    }
    atomic_fetch_add(&slot->core->verify_hashed_bytes, r.hashed_bytes);
    atomic_fetch_add(&slot->core->verify_skipped_bytes, skipped_bytes);
    if (report)
        *report = r;
    return rc;
}

int zc_view_verify(const zc_view *v)
{
    return zc_view_verify_ex(v, 0, NULL);
}

int zc_view_save(const zc_view *v, const char *path)
{
    if (v == NULL || path == NULL)
        return zc__fail(ZC_E_INVALID, "zc_view_save: view or path is NULL");
    char gen[32];
    snprintf(gen, sizeof gen, "%llu", (unsigned long long)v->slot->generation);
    zc_meta_entry extra[3] = {
        {(char *)ZC_FILE_META_FORMAT, (char *)ZC_FILE_FORMAT_VALUE},
        {(char *)ZC_FILE_META_TAG, v->slot->tag},
        {(char *)ZC_FILE_META_GENERATION, gen},
    };
    return zc__safetensors_write(path, v->slot->bundle, extra, 3);
}
