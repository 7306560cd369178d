/*
 * tensor_check.c — the checks every entry point shares: a name (length,
 * printable, UTF-8), a DLPack tensor description (rank, shape, strides,
 * dtype, size overflow) and whether a device's memory is host-readable.
 */
#include <string.h>

#include "core/internal.h"
#include "core/utf8.h"

int zc__name_check(const char *what, const char *name, size_t max_len)
{
    if (name == NULL)
        return zc__fail(ZC_E_INVALID, "%s is NULL; pass a non-empty string", what);
    size_t len = strlen(name);
    if (len == 0 || len > max_len)
        return zc__fail(ZC_E_INVALID, "%s \"%.64s%s\" has %zu bytes; expected 1 to %zu", what, name,
                        len > 64 ? "..." : "", len, max_len);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
            return zc__fail(ZC_E_INVALID,
                            "%s \"%.64s\" has a control, quote or backslash character at byte %zu; "
                            "use printable characters", what, name, i);
    }
    return zc__utf8_valid(name, len) ? zc__fail(ZC_E_INVALID, "%s is not valid UTF-8", what) : ZC_OK;
}

/* Validate a DLPack tensor description and fill t's shape/dtype/strides. */
int zc__tensor_describe(zc_tensor *t, const char *name, const zc_dl_tensor *src)
{
    int rc;
    if (src == NULL)
        return zc__fail(ZC_E_INVALID, "tensor \"%s\": DLTensor is NULL", name);
    if (src->ndim < 0 || src->ndim > ZC_MAX_RANK)
        return zc__fail(ZC_E_INVALID, "tensor \"%s\" has rank %d; expected 0 to %d", name,
                        (int)src->ndim, ZC_MAX_RANK);
    if (src->ndim > 0 && src->shape == NULL)
        return zc__fail(ZC_E_INVALID, "tensor \"%s\" has rank %d but no shape array", name,
                        (int)src->ndim);
    if ((rc = zc__dtype_from_dlpack(src->dtype, &t->dtype)) != ZC_OK) {
        zc__fail_context("tensor \"%s\"", name);
        return rc;
    }
    size_t elem = zc_dtype_size(t->dtype);
    t->ndim = src->ndim;
    int64_t expected = (int64_t)elem;
    for (int32_t i = src->ndim - 1; i >= 0; i--) {
        int64_t dim = src->shape[i];
        if (dim < 0)
            return zc__fail(ZC_E_INVALID, "tensor \"%s\" has negative size %lld in dimension %d",
                            name, (long long)dim, (int)i);
        t->shape[i] = dim;
        if (src->strides) {
            int64_t s = src->strides[i];
            if (s < 0)
                return zc__fail(ZC_E_INVALID,
                                "tensor \"%s\" has negative stride %lld in dimension %d; make it "
                                "contiguous first (tensor.contiguous())", name, (long long)s, (int)i);
            if (zc__mul_nonneg_i64(s, (int64_t)elem, &t->byte_strides[i]) != 0)
                return zc__fail(ZC_E_LIMIT, "tensor \"%s\": stride overflows", name);
        } else {
            t->byte_strides[i] = expected;
        }
        if (dim > 0 && zc__mul_nonneg_i64(expected, dim, &expected) != 0)
            return zc__fail(ZC_E_LIMIT, "tensor \"%s\": size overflows 64 bits", name);
    }
    if (zc__shape_nbytes(t->ndim, t->shape, elem, &t->nbytes) || t->nbytes > (uint64_t)INT64_MAX)
        return zc__fail(ZC_E_LIMIT, "tensor \"%s\": byte size overflows 64 bits", name);
    t->device_type = src->device.device_type;
    t->device_id = src->device.device_id;
    return ZC_OK;
}

int zc__is_host_device(int32_t device_type)
{
    return device_type == ZC_DL_CPU || device_type == ZC_DL_CUDA_HOST ||
           device_type == ZC_DL_ROCM_HOST;
}
