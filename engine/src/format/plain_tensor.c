/*
 * plain_tensor.c — a host tensor described by plain values (data pointer,
 * engine dtype, rank, sizes and strides in one array) as the DLTensor the
 * engine's copy and digest read.  A binding's hot path passes these instead
 * of building a DLPack capsule per call.
 */
#include <string.h>

#include "core/internal.h"

int zc__plain_dl_tensor(zc_dl_tensor *out, const char *what, const void *data, int dtype,
                        int32_t ndim, const int64_t *dims)
{
    memset(out, 0, sizeof *out);
    int rc = zc__dtype_to_dlpack(dtype, &out->dtype);
    if (rc != ZC_OK) {
        zc__fail_context("%s", what);
        return rc;
    }
    if (ndim > 0 && dims == NULL)
        return zc__fail(ZC_E_INVALID, "%s has rank %d but no dims array", what, (int)ndim);
    out->data = (void *)data;
    out->device.device_type = ZC_DL_CPU;
    out->ndim = ndim;
    /* the DLTensor's arrays are not const; the engine only reads them */
    out->shape = ndim > 0 ? (int64_t *)dims : NULL;
    out->strides = ndim > 0 ? (int64_t *)dims + ndim : NULL;
    return ZC_OK;
}

int zc_digest_host_tensor(const void *data, int dtype, int32_t ndim, const int64_t *dims,
                          uint64_t *digest)
{
    zc_dl_tensor src;
    int rc = zc__plain_dl_tensor(&src, "the tensor to digest", data, dtype, ndim, dims);
    return rc != ZC_OK ? rc : zc_digest_tensor(&src, digest);
}
