/*
 * bundle.c — building bundles: named tensors (copied into the host tier or
 * held by reference) and the metadata map.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/utf8.h"

int zc_bundle_create(zc_bundle **out)
{
    if (out == NULL)
        return zc__fail(ZC_E_INVALID, "zc_bundle_create: out is NULL");
    *out = calloc(1, sizeof **out);
    if (*out == NULL)
        return zc__fail(ZC_E_NOMEM, "out of host memory creating a bundle");
    (*out)->record = ZC_RECORD_OK;
    return ZC_OK;
}

void zc__managed_delete(void *managed, int versioned)
{
    if (managed == NULL)
        return;
    if (versioned) {
        zc_dl_managed_versioned *m = managed;
        if (m->deleter)
            m->deleter(m);
    } else {
        zc_dl_managed *m = managed;
        if (m->deleter)
            m->deleter(m);
    }
}

void zc__tensor_release(zc_tensor *t)
{
    zc__bufpool_give(t->pool, t->host, t->nbytes);
    zc__bufpool_unref(t->pool);
    t->pool = NULL;
    t->host = NULL;
    zc__managed_delete(t->ref, t->ref_versioned);
    t->ref = NULL;
    zc__seam_side_free(atomic_load(&t->seam_head));
    zc__seam_side_free(atomic_load(&t->seam_tail));
    atomic_store(&t->seam_head, NULL);
    atomic_store(&t->seam_tail, NULL);
}

void zc_bundle_free(zc_bundle *b)
{
    if (b == NULL)
        return;
    for (uint32_t i = 0; i < b->count; i++)
        zc__tensor_release(&b->tensors[i]);
    for (uint32_t i = 0; i < b->meta_count; i++) {
        free(b->meta[i].key);
        free(b->meta[i].value);
    }
    free(atomic_load(&b->seam_hop_record));
    zc__bufpool_unref(b->pool);
    free(b);
}

uint32_t zc_bundle_count(const zc_bundle *b)
{
    return b ? b->count : 0;
}

uint64_t zc__bundle_bytes(const zc_bundle *b, int tier)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < b->count; i++) {
        const zc_tensor *t = &b->tensors[i];
        if (tier == ZC_TIER_HOST) {
            if (t->host)
                sum += t->nbytes; /* includes host copies of references */
        } else if (t->tier == tier) {
            sum += t->nbytes;
        }
    }
    return sum;
}

static int find_tensor(const zc_bundle *b, const char *name)
{
    for (uint32_t i = 0; i < b->count; i++)
        if (strcmp(b->tensors[i].name, name) == 0)
            return (int)i;
    return -1;
}

static int check_slot(const zc_bundle *b, const char *name)
{
    int rc;
    if (b == NULL)
        return zc__fail(ZC_E_INVALID, "bundle is NULL");
    if ((rc = zc__name_check("tensor name", name, ZC_MAX_NAME_LEN)) != ZC_OK)
        return rc;
    if (b->count >= ZC_MAX_TENSORS)
        return zc__fail(ZC_E_LIMIT, "bundle already holds %d tensors; cannot add \"%s\"",
                        ZC_MAX_TENSORS, name);
    if (find_tensor(b, name) >= 0)
        return zc__fail(ZC_E_STATE, "bundle already has a tensor named \"%s\"; names are unique",
                        name);
    return ZC_OK;
}

/* Host copy of src into t->host with digest; src must be host-readable. */
static int copy_in(zc_tensor *t, const char *name, const zc_dl_tensor *src, const zc_tensor *shape_of,
                   zc_bufpool *pool)
{
    if (!zc__is_host_device(src->device.device_type))
        return zc__fail(ZC_E_INVALID,
                        "tensor \"%s\" is on DLPack device type %d; a host copy needs CPU memory "
                        "(move it with tensor.cpu() or add it by reference)", name,
                        (int)src->device.device_type);
    if (shape_of) {
        if (shape_of->dtype != t->dtype || shape_of->ndim != t->ndim ||
            memcmp(shape_of->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim) != 0)
            return zc__fail(ZC_E_INVALID,
                            "tensor \"%s\": the host copy's dtype or shape differs from the "
                            "referenced tensor; pass a copy of the same tensor", name);
    }
    if (t->nbytes > 0 && src->data == NULL)
        return zc__fail(ZC_E_INVALID, "tensor \"%s\" has %llu bytes but a NULL data pointer", name,
                        (unsigned long long)t->nbytes);
    t->host = zc__bufpool_take(pool, t->nbytes);
    if (t->host == NULL)
        return zc__fail(ZC_E_NOMEM, "out of host memory copying tensor \"%s\" (%llu bytes)", name,
                        (unsigned long long)t->nbytes);
    const uint8_t *base = (const uint8_t *)src->data + src->byte_offset;
    t->digest = zc__copy_and_digest(t->host, base, t->ndim, t->shape, t->byte_strides,
                                    zc_dtype_size(t->dtype), t->nbytes);
    t->has_digest = 1;
    t->digest_algo = ZC_DIGEST_XXH3_64;
    return ZC_OK;
}

static void set_contiguous_strides(zc_tensor *t)
{
    int64_t s = (int64_t)zc_dtype_size(t->dtype);
    for (int32_t i = t->ndim - 1; i >= 0; i--) {
        t->byte_strides[i] = s;
        s *= t->shape[i] ? t->shape[i] : 1;
    }
}

int zc_bundle_add_copy(zc_bundle *b, const char *name, const zc_dl_tensor *src)
{
    int rc = check_slot(b, name);
    if (rc != ZC_OK)
        return rc;
    zc_tensor t;
    memset(&t, 0, sizeof t);
    if ((rc = zc__tensor_describe(&t, name, src)) != ZC_OK)
        return rc;
    snprintf(t.name, sizeof t.name, "%s", name);
    if ((rc = copy_in(&t, name, src, NULL, b->pool)) != ZC_OK) {
        zc__tensor_release(&t);
        return rc;
    }
    zc__seam_on_add(b, &t, t.host); /* planned: summarised later, off the put's path */
    t.pool = b->pool;
    zc__bufpool_ref(t.pool);
    t.tier = ZC_TIER_HOST;
    t.device_type = ZC_DL_CPU;
    t.device_id = 0;
    set_contiguous_strides(&t);
    b->tensors[b->count++] = t;
    return ZC_OK;
}

int zc_bundle_add_host_copy(zc_bundle *b, const char *name, const void *data, int dtype,
                            int32_t ndim, const int64_t *dims)
{
    char what[ZC_MAX_NAME_LEN + 16];
    snprintf(what, sizeof what, "tensor \"%s\"", name ? name : "(null)");
    zc_dl_tensor src;
    int rc = zc__plain_dl_tensor(&src, what, data, dtype, ndim, dims);
    return rc != ZC_OK ? rc : zc_bundle_add_copy(b, name, &src);
}

int zc_bundle_tensor_digest(const zc_bundle *b, uint32_t index, int *algo, uint64_t *digest)
{
    if (b == NULL || algo == NULL || digest == NULL)
        return zc__fail(ZC_E_INVALID, "zc_bundle_tensor_digest: bundle, algo or digest is NULL");
    if (index >= b->count)
        return zc__fail(ZC_E_NOT_FOUND, "the bundle has %u tensors; there is no tensor %u",
                        b->count, index);
    const zc_tensor *t = &b->tensors[index];
    if (!t->has_digest)
        return zc__fail(ZC_E_NOT_FOUND, "tensor \"%s\" has no digest (held by reference without "
                        "a host copy)", t->name);
    *algo = t->digest_algo;
    *digest = t->digest;
    return ZC_OK;
}

int zc_bundle_add_reference(zc_bundle *b, const char *name, void *managed, int versioned,
                            const zc_dl_tensor *host_copy)
{
    int rc = check_slot(b, name);
    if (rc == ZC_OK && managed == NULL)
        rc = zc__fail(ZC_E_INVALID, "tensor \"%s\": managed tensor is NULL", name);
    if (rc == ZC_OK && versioned) {
        const zc_dl_managed_versioned *m = managed;
        if (m->version.major != ZC_DLPACK_MAJOR)
            rc = zc__fail(ZC_E_INVALID,
                          "tensor \"%s\": DLPack major version %u is not supported; expected %d",
                          name, m->version.major, ZC_DLPACK_MAJOR);
    }
    if (rc != ZC_OK) {
        zc__managed_delete(managed, versioned);
        return rc;
    }
    const zc_dl_tensor *dl = versioned ? &((zc_dl_managed_versioned *)managed)->dl_tensor
                                       : &((zc_dl_managed *)managed)->dl_tensor;
    zc_tensor t;
    memset(&t, 0, sizeof t);
    if ((rc = zc__tensor_describe(&t, name, dl)) != ZC_OK)
        goto fail;
    if (t.nbytes > 0 && dl->data == NULL) {
        rc = zc__fail(ZC_E_INVALID, "tensor \"%s\" has %llu bytes but a NULL data pointer", name,
                      (unsigned long long)t.nbytes);
        goto fail;
    }
    if (host_copy) {
        zc_tensor shadow;
        memset(&shadow, 0, sizeof shadow);
        if ((rc = zc__tensor_describe(&shadow, name, host_copy)) != ZC_OK ||
            (rc = copy_in(&shadow, name, host_copy, &t, b->pool)) != ZC_OK) {
            zc__bufpool_give(b->pool, shadow.host, shadow.nbytes);
            goto fail;
        }
        t.pool = b->pool;
        zc__bufpool_ref(t.pool);
        t.host = shadow.host;
        t.digest = shadow.digest;
        t.has_digest = 1;
        t.digest_algo = shadow.digest_algo;
        snprintf(t.name, sizeof t.name, "%s", name);
        zc__seam_on_add(b, &t, t.host); /* from the host copy (a reference's: small, or rare) */
    }
    snprintf(t.name, sizeof t.name, "%s", name);
    t.tier = ZC_TIER_DEVICE;
    t.ref = managed;
    t.ref_versioned = versioned;
    t.ref_data = (uint8_t *)dl->data + dl->byte_offset;
    b->tensors[b->count++] = t;
    return ZC_OK;
fail:
    zc__managed_delete(managed, versioned);
    return rc;
}

int zc__meta_key_check(const char *key, int allow_reserved)
{
    int rc = zc__name_check("metadata key", key, ZC_MAX_META_KEY_LEN);
    if (rc != ZC_OK)
        return rc;
    if (!allow_reserved && strncmp(key, "zc.", 3) == 0)
        return zc__fail(ZC_E_INVALID,
                        "metadata key \"%s\" starts with \"zc.\", which the engine reserves; "
                        "choose another prefix", key);
    return ZC_OK;
}

static int set_meta(zc_bundle *b, const char *key, const char *value, int allow_reserved)
{
    int rc;
    if (b == NULL)
        return zc__fail(ZC_E_INVALID, "bundle is NULL");
    if ((rc = zc__meta_key_check(key, allow_reserved)) != ZC_OK)
        return rc;
    if (value == NULL)
        return zc__fail(ZC_E_INVALID, "metadata \"%s\": value is NULL", key);
    size_t vlen = strlen(value);
    if (vlen > ZC_MAX_META_VALUE_LEN)
        return zc__fail(ZC_E_LIMIT, "metadata \"%s\": value has %zu bytes; the limit is %d", key,
                        vlen, ZC_MAX_META_VALUE_LEN);
    if (zc__utf8_valid(value, vlen))
        return zc__fail(ZC_E_INVALID, "metadata \"%s\": value is not valid UTF-8", key);
    char *v = zc__strdup(value);
    if (v == NULL)
        return zc__fail(ZC_E_NOMEM, "out of host memory for metadata \"%s\"", key);
    for (uint32_t i = 0; i < b->meta_count; i++) {
        if (strcmp(b->meta[i].key, key) == 0) {
            free(b->meta[i].value);
            b->meta[i].value = v;
            return ZC_OK;
        }
    }
    if (b->meta_count >= ZC_MAX_META) {
        free(v);
        return zc__fail(ZC_E_LIMIT, "bundle already has %d metadata entries; cannot add \"%s\"",
                        ZC_MAX_META, key);
    }
    char *k = zc__strdup(key);
    if (k == NULL) {
        free(v);
        return zc__fail(ZC_E_NOMEM, "out of host memory for metadata \"%s\"", key);
    }
    b->meta[b->meta_count].key = k;
    b->meta[b->meta_count].value = v;
    b->meta_count++;
    return ZC_OK;
}

const char *zc__bundle_meta(const zc_bundle *b, const char *key)
{
    for (uint32_t i = 0; b && key && i < b->meta_count; i++)
        if (strcmp(b->meta[i].key, key) == 0)
            return b->meta[i].value;
    return NULL;
}

int zc_bundle_set_meta(zc_bundle *b, const char *key, const char *value)
{
    return set_meta(b, key, value, 0);
}

int zc_bundle_set_meta_packed(zc_bundle *b, const char *packed, size_t len)
{
    if (len > 0 && packed == NULL)
        return zc__fail(ZC_E_INVALID, "zc_bundle_set_meta_packed: %zu bytes but no buffer", len);
    size_t at = 0;
    while (at < len) {
        const char *key = packed + at;
        const char *key_end = memchr(key, '\0', len - at);
        const char *value = key_end ? key_end + 1 : NULL;
        const char *value_end =
            value && value < packed + len ? memchr(value, '\0', (size_t)(packed + len - value)) : NULL;
        if (value_end == NULL)
            return zc__fail(ZC_E_INVALID, "packed metadata: the entry at byte %zu is not a "
                            "NUL-terminated key followed by a NUL-terminated value", at);
        int rc = set_meta(b, key, value, 0);
        if (rc != ZC_OK)
            return rc;
        at = (size_t)(value_end - packed) + 1;
    }
    return ZC_OK;
}

int zc__bundle_set_meta_internal(zc_bundle *b, const char *key, const char *value)
{
    return set_meta(b, key, value, 1);
}

int zc__bundle_adopt_host(zc_bundle *b, const char *name, int dtype, int32_t ndim,
                          const int64_t *shape, void *host, uint64_t nbytes, int digest_algo,
                          uint64_t digest)
{
    int rc = check_slot(b, name);
    if (rc != ZC_OK)
        return rc;
    if (zc_dtype_size(dtype) == 0 || ndim < 0 || ndim > ZC_MAX_RANK ||
        zc_digest_algo_name(digest_algo) == NULL)
        return zc__fail(ZC_E_INVALID, "tensor \"%s\": bad dtype %d, rank %d or digest algorithm %d",
                        name, dtype, (int)ndim, digest_algo);
    zc_tensor t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "%s", name);
    t.dtype = dtype;
    t.ndim = ndim;
    for (int32_t i = 0; i < ndim; i++)
        t.shape[i] = shape[i];
    uint64_t expect;
    if (zc__shape_nbytes(ndim, t.shape, zc_dtype_size(dtype), &expect) || expect != nbytes)
        return zc__fail(ZC_E_INVALID, "tensor \"%s\": %llu bytes do not match its shape", name,
                        (unsigned long long)nbytes);
    t.nbytes = nbytes;
    t.tier = ZC_TIER_HOST;
    t.device_type = ZC_DL_CPU;
    t.host = host;
    t.digest = digest;
    t.has_digest = 1;
    t.digest_algo = digest_algo;
    set_contiguous_strides(&t);
    b->tensors[b->count++] = t;
    return ZC_OK;
}
