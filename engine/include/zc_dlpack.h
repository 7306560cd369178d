/*
 * zc_dlpack.h — the DLPack data structures the engine exchanges with PyTorch.
 *
 * Declared here from the published DLPack specification (data layout of
 * DLDevice, DLDataType, DLTensor, DLManagedTensor and DLManagedTensorVersioned,
 * version 1.x).  The layout is an ABI contract with every framework that
 * speaks DLPack; the names carry a ZC_ prefix so this header can sit beside a
 * framework's own dlpack.h without clashing.
 */
#ifndef ZC_DLPACK_H
#define ZC_DLPACK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Device type codes (DLDeviceType). */
enum {
    ZC_DL_CPU = 1,
    ZC_DL_CUDA = 2,
    ZC_DL_CUDA_HOST = 3,
    ZC_DL_OPENCL = 4,
    ZC_DL_VULKAN = 7,
    ZC_DL_METAL = 8,
    ZC_DL_VPI = 9,
    ZC_DL_ROCM = 10,
    ZC_DL_ROCM_HOST = 11,
    ZC_DL_EXT_DEV = 12,
    ZC_DL_CUDA_MANAGED = 13,
    ZC_DL_ONEAPI = 14,
    ZC_DL_WEBGPU = 15,
    ZC_DL_HEXAGON = 16,
    ZC_DL_MAIA = 17
};

/* Data type codes (DLDataTypeCode). */
enum {
    ZC_DL_INT = 0,
    ZC_DL_UINT = 1,
    ZC_DL_FLOAT = 2,
    ZC_DL_OPAQUE_HANDLE = 3,
    ZC_DL_BFLOAT = 4,
    ZC_DL_COMPLEX = 5,
    ZC_DL_BOOL = 6,
    ZC_DL_FLOAT8_E4M3FN = 10,
    ZC_DL_FLOAT8_E5M2 = 12
};

/* Flags of DLManagedTensorVersioned. */
#define ZC_DL_FLAG_READ_ONLY ((uint64_t)1 << 0)
#define ZC_DL_FLAG_IS_COPIED ((uint64_t)1 << 1)

typedef struct {
    uint32_t major;
    uint32_t minor;
} zc_dl_version;

typedef struct {
    int32_t device_type;
    int32_t device_id;
} zc_dl_device;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} zc_dl_dtype;

/* DLTensor.  Strides are in elements (not bytes); NULL strides mean a
 * compact row-major tensor.  The first element lies at data + byte_offset. */
typedef struct {
    void *data;
    zc_dl_device device;
    int32_t ndim;
    zc_dl_dtype dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} zc_dl_tensor;

/* DLManagedTensor (the legacy, unversioned capsule "dltensor"). */
typedef struct zc_dl_managed {
    zc_dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct zc_dl_managed *self);
} zc_dl_managed;

/* DLManagedTensorVersioned (the capsule "dltensor_versioned", DLPack >= 1.0). */
typedef struct zc_dl_managed_versioned {
    zc_dl_version version;
    void *manager_ctx;
    void (*deleter)(struct zc_dl_managed_versioned *self);
    uint64_t flags;
    zc_dl_tensor dl_tensor;
} zc_dl_managed_versioned;

#define ZC_DLPACK_MAJOR 1
#define ZC_DLPACK_MINOR 0

#ifdef __cplusplus
}
#endif
#endif /* ZC_DLPACK_H */
