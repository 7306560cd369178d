/*
 * digest_tensor.c — zc_digest_tensor: the digest of a host tensor's
 * canonical bytes, read in place through its strides.  It is the digest
 * zc_bundle_add_copy records, without the copy (the Python bridge's
 * digest_tensor of a tail view used to make the view contiguous first).
 */
#include <string.h>

#include "core/internal.h"

static void hash_sink(void *ctx, const uint8_t *bytes, size_t n)
{
    zc_xxh3_update(ctx, bytes, n);
}

int zc_digest_tensor(const zc_dl_tensor *src, uint64_t *digest)
{
    zc_tensor t;
    int rc;
    if (digest == NULL)
        return zc__fail(ZC_E_INVALID, "zc_digest_tensor: digest is NULL");
    memset(&t, 0, sizeof t);
    if ((rc = zc__tensor_describe(&t, "passed to zc_digest_tensor", src)) != ZC_OK)
        return rc;
    if (!zc__is_host_device(src->device.device_type))
        return zc__fail(ZC_E_INVALID,
                        "the tensor to digest is on DLPack device type %d; the engine reads host "
                        "memory only (CPU, CUDA-host, ROCm-host): copy it to the host first",
                        (int)src->device.device_type);
    if (t.nbytes > 0 && src->data == NULL)
        return zc__fail(ZC_E_INVALID, "the tensor to digest has %llu bytes but a NULL data pointer",
                        (unsigned long long)t.nbytes);
    if (t.nbytes > SIZE_MAX)
        return zc__fail(ZC_E_LIMIT, "the tensor to digest has %llu bytes, more than this host "
                        "addresses", (unsigned long long)t.nbytes);
    const uint8_t *base = (const uint8_t *)src->data + src->byte_offset;
    if (t.nbytes == 0) {
        *digest = zc_xxh3_64(NULL, 0, 0);
        return ZC_OK;
    }
    zc_strided st;
    zc__strided_init(&st, t.ndim, t.shape, t.byte_strides, zc_dtype_size(t.dtype));
    if (zc__strided_is_contiguous(&st)) {
        *digest = zc_xxh3_64(base, (size_t)t.nbytes, 0);
        return ZC_OK;
    }
    zc_xxh3_state h;
    zc_xxh3_reset(&h, 0);
    zc_walk_sink sink = {hash_sink, NULL, &h}; /* no copy is written */
    zc__strided_walk(&st, base, NULL, &sink);
    *digest = zc_xxh3_digest(&h);
    return ZC_OK;
}
