/*
 * shot_io.c — shots as the bytes of their spill file, for moving them
 * between machines (the farm tier): zc_view_serialize makes the bytes a
 * spill of the slot would write; zc_store_import checks such bytes as a
 * restore would (hardened reader, identity, every digest) and writes them,
 * unchanged, as a new spill file of the store's folder.  Both are bounded
 * as a restore is: tensors that need more than the store's whole host
 * budget are refused before anything is allocated for them.
 */
#include <string.h>

#include "store_internal.h"

int zc_view_serialize(const zc_view *v, void *buf, size_t cap, size_t *needed)
{
    if (v == NULL || (buf == NULL && cap > 0))
        return zc__fail(ZC_E_INVALID, "zc_view_serialize: view is NULL, or buf is NULL with cap %zu",
                        cap);
    char gen[32];
    zc_meta_entry extra[3 + ZC__SEAM_ENTRIES_MAX];
    zc__spill_identity(v->slot->tag, v->slot->generation, gen, extra);
    uint32_t nseam = zc__seam_entries(v->slot->bundle, extra + 3, ZC__SEAM_ENTRIES_MAX); /* as a spill */
    int rc = zc__safetensors_serialize(v->slot->bundle, extra, 3 + nseam, buf, cap, needed);
    zc__seam_entries_free(extra + 3, nseam);
    if (rc != ZC_OK && rc != ZC_E_LIMIT)
        zc__fail_context("serializing tag \"%s\" generation %llu", v->slot->tag,
                         (unsigned long long)v->slot->generation);
    return rc;
}

/* As a restore (spill.c): tensors that need more than the store's whole
 * host budget could never be restored under it; refused before the load
 * below allocates a copy of them. */
static int check_budget(const zc_store *s, const zc_file *f, size_t len)
{
    uint64_t budget = s->config.host_budget_bytes, need = 0;
    for (uint32_t i = 0; budget && i < zc_file_count(f); i++) {
        zc_file_tensor ft;
        if (zc_file_tensor_at(f, i, &ft) == ZC_OK && strcmp(ft.name, ZC_FILE_LATENT_MARKER) != 0)
            need += ft.nbytes; /* the tensors tile the bytes: no overflow */
    }
    if (budget == 0 || need <= budget)
        return ZC_OK;
    return zc__fail(ZC_E_BUDGET, "<imported bytes> hold %llu bytes of tensors (%zu bytes in all), "
                    "more than the store's whole host budget of %llu bytes, so they could never "
                    "be restored; open the store with host_budget_bytes of at least %llu",
                    (unsigned long long)need, len, (unsigned long long)budget,
                    (unsigned long long)need);
}

/* Everything a restore of the bytes would check: the reader's validation,
 * the identity, the budget, a digest for every tensor and bytes that match
 * it (the bundle made on the way is thrown away). */
static int check_bytes(const zc_store *s, const char *tag, uint64_t generation, const void *data,
                       size_t len)
{
    zc_file *f = NULL;
    zc_bundle *b = NULL;
    int rc = zc_file_open_memory(data, len, &f);
    if (rc == ZC_OK)
        rc = zc__spill_check_identity(f, "<imported bytes>", tag, generation);
    if (rc == ZC_OK)
        rc = check_budget(s, f, len);
    if (rc == ZC_OK)
        rc = zc_file_load_bundle(f, &b);
    zc_bundle_free(b);
    zc_file_close(f);
    return rc;
}

/* Take generation for tag in the folder, unless the store or the folder
 * holds it already; the folder's counter rises to it. */
static int reserve(zc_store *s, const char *tag, uint64_t generation)
{
    zc_os_mutex *m = zc__shared_tag_mutex(tag);
    uint64_t got = 0;
    zc_os_mutex_lock(m);
    zc_os_mutex_lock(&s->lock);
    zc_tag_entry *e = zc__tag_find(s, tag);
    int taken = e && zc__disk_has(e, generation);
    for (uint32_t i = 0; e && !taken && i < e->count; i++)
        taken = e->ring[i]->generation == generation;
    int closing = s->closing;
    zc_os_mutex_unlock(&s->lock);
    int rc = closing ? zc__fail(ZC_E_STATE, "the store is closing; tag \"%s\" was not imported", tag)
             : taken ? zc__fail(ZC_E_EXISTS, "tag \"%s\" already holds generation %llu in memory "
                                "or on disk; nothing was imported", tag,
                                (unsigned long long)generation)
                     : zc__gen_allocate(s, tag, 0, generation, &got);
    zc_os_mutex_unlock(m);
    return rc;
}

int zc_store_import(zc_store *s, const char *tag, uint64_t generation, const void *data,
                    size_t len)
{
    int rc;
    if (s == NULL || (data == NULL && len > 0))
        return zc__fail(ZC_E_INVALID, "zc_store_import: store or data is NULL");
    if ((rc = zc_tag_check(tag)) != ZC_OK)
        return rc;
    if (generation == 0 || generation > ZC_MAX_GENERATION)
        return zc__fail(ZC_E_INVALID, "generation %llu for tag \"%s\" is out of range; expected "
                        "1 to %llu", (unsigned long long)generation, tag,
                        (unsigned long long)ZC_MAX_GENERATION);
    if (s->spill_dir == NULL)
        return zc__fail(ZC_E_UNSUPPORTED, "tag \"%s\": importing needs a disk tier; open the store "
                        "with spill_dir set", tag);
    if ((rc = check_bytes(s, tag, generation, data, len)) != ZC_OK) {
        zc__fail_context("import of tag \"%s\" generation %llu refused, nothing written", tag,
                         (unsigned long long)generation);
        return rc;
    }
    if ((rc = reserve(s, tag, generation)) != ZC_OK)
        return rc;
    char path[4096];
    if ((rc = zc__spill_path(s, tag, generation, path, sizeof path)) != ZC_OK ||
        (rc = zc__write_bytes_new(path, data, len)) != ZC_OK)
        return rc;
    zc_os_mutex_lock(&s->lock);
    zc_tag_entry *e = zc__tag_get_or_create(s, tag);
    if (e == NULL || zc__disk_add(e, generation, 0) != 0)
        rc = zc__fail(ZC_E_NOMEM, "tag \"%s\" generation %llu was written to %s, but there was no "
                      "host memory to index it; it is found after a restart", tag,
                      (unsigned long long)generation, path);
    else
        s->changes++;
    zc_os_mutex_unlock(&s->lock);
    zc__spill_announce(s, tag);
    return rc;
}
