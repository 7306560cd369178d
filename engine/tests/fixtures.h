/* fixtures.h — helpers the C tests share: DLPack tensors over test memory
 * and a managed tensor whose deleter counts its calls. */
#ifndef ZC_TEST_FIXTURES_H
#define ZC_TEST_FIXTURES_H

#include <stdlib.h>
#include <string.h>

#include "zc.h"

/* Deterministic bytes (xorshift32): different per seed and position. */
static inline void fixture_fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
}

typedef struct {
    zc_dl_tensor dl;
    int64_t shape[ZC_MAX_RANK];
    int64_t strides[ZC_MAX_RANK];
} fixture_tensor;

/* A contiguous host tensor of float32 over data. */
static inline void fixture_f32(fixture_tensor *ft, float *data, int ndim, const int64_t *shape)
{
    memset(ft, 0, sizeof *ft);
    ft->dl.data = data;
    ft->dl.device.device_type = ZC_DL_CPU;
    ft->dl.ndim = ndim;
    ft->dl.dtype.code = ZC_DL_FLOAT;
    ft->dl.dtype.bits = 32;
    ft->dl.dtype.lanes = 1;
    for (int i = 0; i < ndim; i++)
        ft->shape[i] = shape[i];
    ft->dl.shape = ft->shape;
    ft->dl.strides = NULL;
}

/* A host tensor of float32 over data with the given strides (in elements). */
static inline void fixture_f32_strided(fixture_tensor *ft, float *data, int ndim,
                                       const int64_t *shape, const int64_t *strides)
{
    fixture_f32(ft, data, ndim, shape);
    for (int i = 0; i < ndim; i++)
        ft->strides[i] = strides[i];
    ft->dl.strides = ft->strides;
}

/* A managed tensor whose deleter increments *counter (and frees itself). */
typedef struct {
    zc_dl_managed_versioned m;
    int64_t shape[ZC_MAX_RANK];
    int *counter;
} fixture_managed;

static inline void fixture_managed_delete(zc_dl_managed_versioned *m)
{
    fixture_managed *fm = m->manager_ctx;
    (*fm->counter)++;
    free(fm);
}

static inline void *fixture_managed_new(void *device_data, int32_t device_type, int ndim,
                                        const int64_t *shape, int *counter)
{
    fixture_managed *fm = calloc(1, sizeof *fm);
    fm->m.version.major = 1;
    fm->m.manager_ctx = fm;
    fm->m.deleter = fixture_managed_delete;
    fm->m.dl_tensor.data = device_data;
    fm->m.dl_tensor.device.device_type = device_type;
    fm->m.dl_tensor.ndim = ndim;
    fm->m.dl_tensor.dtype.code = ZC_DL_FLOAT;
    fm->m.dl_tensor.dtype.bits = 32;
    fm->m.dl_tensor.dtype.lanes = 1;
    for (int i = 0; i < ndim; i++)
        fm->shape[i] = shape[i];
    fm->m.dl_tensor.shape = fm->shape;
    fm->counter = counter;
    return &fm->m;
}

/* A bundle with one float32 tensor "latent_tensor" of n values i*scale. */
static inline zc_bundle *fixture_bundle(int64_t n, float scale)
{
    float *data = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        data[i] = (float)i * scale;
    fixture_tensor ft;
    int64_t shape[1] = {n};
    fixture_f32(&ft, data, 1, shape);
    zc_bundle *b = NULL;
    if (zc_bundle_create(&b) != ZC_OK || zc_bundle_add_copy(b, "latent_tensor", &ft.dl) != ZC_OK) {
        zc_bundle_free(b);
        b = NULL;
    }
    free(data);
    return b;
}

/* zc_store_open with spill_dir (NULL: none), default_depth, disk_keep, host_budget_bytes and
 * device_budget_bytes as given (0: the default of each): its status, the store in *out. */
static inline int fixture_store_open(const char *spill_dir, uint32_t depth, uint32_t disk_keep,
                                     uint64_t host_budget, uint64_t device_budget, zc_store **out)
{
    zc_store_config c;
    zc_store_config_init(&c);
    c.spill_dir = spill_dir;
    c.default_depth = depth;
    c.disk_keep = disk_keep;
    c.host_budget_bytes = host_budget;
    c.device_budget_bytes = device_budget;
    return zc_store_open(&c, out);
}

/* The store fixture_store_open opens, or NULL. */
static inline zc_store *fixture_store(const char *spill_dir, uint32_t depth, uint32_t disk_keep,
                                      uint64_t host_budget, uint64_t device_budget)
{
    zc_store *s = NULL;
    return fixture_store_open(spill_dir, depth, disk_keep, host_budget, device_budget, &s) == ZC_OK
               ? s
               : NULL;
}

/* Put a bundle of n values i*scale under tag in s, spilled (ZC_PUT_SPILL), its generation in
 * *gen; the bundle is the store's once put, freed here when the put fails. */
static inline int fixture_put_spilled(zc_store *s, const char *tag, int64_t n, float scale,
                                      uint64_t *gen)
{
    zc_bundle *b = fixture_bundle(n, scale);
    int rc = b ? zc_store_put(s, tag, b, ZC_PUT_SPILL, gen) : ZC_E_NOMEM;
    if (rc != ZC_OK)
        zc_bundle_free(b);
    return rc;
}

/* Spill a bundle of n values i*scale under tag to spill_dir, close the
 * store, open a new one on the same directory and get the tag back (now
 * restored from the file, digests verified).  @return 1 when every byte came
 * back; failures are reported by the caller's CHECK. */
static inline int fixture_spill_roundtrip(const char *spill_dir, const char *tag, int64_t n,
                                          float scale)
{
    zc_store_config c;
    zc_store_config_init(&c);
    c.spill_dir = spill_dir;
    zc_store *s = NULL;
    zc_bundle *b = fixture_bundle(n, scale);
    if (b == NULL || zc_store_open(&c, &s) != ZC_OK) {
        zc_bundle_free(b);
        return 0;
    }
    int ok = zc_store_put(s, tag, b, ZC_PUT_SPILL, NULL) == ZC_OK;
    if (!ok)
        zc_bundle_free(b);
    ok = ok && zc_store_flush(s) == ZC_OK;
    zc_store_close(s);
    s = NULL;
    zc_view *v = NULL;
    zc_tensor_info ti;
    ok = ok && zc_store_open(&c, &s) == ZC_OK && zc_store_get(s, tag, 0, &v) == ZC_OK &&
         zc_view_verify(v) == ZC_OK && zc_view_tensor(v, 0, &ti) == ZC_OK &&
         ti.nbytes == (uint64_t)n * sizeof(float);
    for (int64_t i = 0; ok && i < n; i++)
        ok = ((const float *)ti.data)[i] == (float)i * scale;
    zc_view_release(v);
    zc_store_close(s);
    return ok;
}

#endif
