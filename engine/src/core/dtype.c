/* dtype.c — the engine's element types and their DLPack / safetensors names. */
#include <string.h>

#include "internal.h"

static const struct {
    const char *name;  /* safetensors spelling */
    size_t size;
    uint8_t dl_code;
    uint8_t dl_bits;
} dtypes[ZC_DTYPE_COUNT] = {
    [ZC_F32] = {"F32", 4, ZC_DL_FLOAT, 32},
    [ZC_F16] = {"F16", 2, ZC_DL_FLOAT, 16},
    [ZC_BF16] = {"BF16", 2, ZC_DL_BFLOAT, 16},
    [ZC_F64] = {"F64", 8, ZC_DL_FLOAT, 64},
    [ZC_F8_E4M3FN] = {"F8_E4M3", 1, ZC_DL_FLOAT8_E4M3FN, 8},
    [ZC_F8_E5M2] = {"F8_E5M2", 1, ZC_DL_FLOAT8_E5M2, 8},
    [ZC_I8] = {"I8", 1, ZC_DL_INT, 8},
    [ZC_I16] = {"I16", 2, ZC_DL_INT, 16},
    [ZC_I32] = {"I32", 4, ZC_DL_INT, 32},
    [ZC_I64] = {"I64", 8, ZC_DL_INT, 64},
    [ZC_U8] = {"U8", 1, ZC_DL_UINT, 8},
    [ZC_BOOL] = {"BOOL", 1, ZC_DL_BOOL, 8},
};

size_t zc_dtype_size(int dtype)
{
    if (dtype < 0 || dtype >= ZC_DTYPE_COUNT)
        return 0;
    return dtypes[dtype].size;
}

int zc__dtype_to_dlpack(int dtype, zc_dl_dtype *out)
{
    if (dtype < 0 || dtype >= ZC_DTYPE_COUNT)
        return zc__fail(ZC_E_INVALID, "dtype %d is not an engine dtype (0 to %d)", dtype,
                        ZC_DTYPE_COUNT - 1);
    out->code = (uint8_t)dtypes[dtype].dl_code;
    out->bits = (uint8_t)dtypes[dtype].dl_bits;
    out->lanes = 1;
    return ZC_OK;
}

const char *zc_dtype_name(int dtype)
{
    if (dtype < 0 || dtype >= ZC_DTYPE_COUNT)
        return NULL;
    return dtypes[dtype].name;
}

int zc__dtype_from_name(const char *name, int *dtype)
{
    if (name == NULL || dtype == NULL)
        return zc__fail(ZC_E_INVALID, "dtype name is NULL");
    for (int i = 0; i < ZC_DTYPE_COUNT; i++) {
        if (strcmp(name, dtypes[i].name) == 0) {
            *dtype = i;
            return ZC_OK;
        }
    }
    return zc__fail(ZC_E_INVALID,
                    "dtype \"%.32s\" is not supported; expected one of F32 F16 BF16 F64 "
                    "F8_E4M3 F8_E5M2 I8 I16 I32 I64 U8 BOOL", name);
}

int zc__dtype_from_dlpack(zc_dl_dtype dl, int *dtype)
{
    if (dl.lanes != 1)
        return zc__fail(ZC_E_INVALID, "DLPack dtype has %u lanes; only scalar types (lanes 1) are stored",
                        (unsigned)dl.lanes);
    /* torch exports bool as code 6 bits 8; older producers used uint8. */
    for (int i = 0; i < ZC_DTYPE_COUNT; i++) {
        if (dtypes[i].dl_code == dl.code && dtypes[i].dl_bits == dl.bits) {
            *dtype = i;
            return ZC_OK;
        }
    }
    return zc__fail(ZC_E_INVALID,
                    "DLPack dtype (code %u, %u bits) is not supported; convert the tensor to one of "
                    "float32/16, bfloat16, float64, float8_e4m3fn/e5m2, int8..64, uint8, bool first",
                    (unsigned)dl.code, (unsigned)dl.bits);
}

int zc__shape_nbytes(int32_t ndim, const int64_t *shape, size_t elem_size, uint64_t *out)
{
    uint64_t n = elem_size;
    for (int32_t i = 0; i < ndim; i++) {
        if (shape[i] < 0 || zc__mul_u64(n, (uint64_t)shape[i], &n))
            return -1;
    }
    *out = n;
    return 0;
}
