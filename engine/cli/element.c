/*
 * element.c — decode one element of any engine dtype into a double.
 * The float dtypes are decoded by zc__dtype_decode_float (core/dtype.c).
 */
#include <math.h>
#include <string.h>

#include "cli.h"
#include "core/internal.h"

int64_t cli_element_int64(int dtype, const void *data, uint64_t index)
{
    size_t size = zc_dtype_size(dtype);
    const uint8_t *p = (const uint8_t *)data + index * size;
    switch (dtype) {
    case ZC_I8: return (int8_t)p[0];
    case ZC_U8: return p[0];
    case ZC_BOOL: return p[0] != 0;
    case ZC_I16: {
        int16_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case ZC_I32: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case ZC_I64: {
        int64_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    default: return 0;
    }
}

int cli_dtype_is_float(int dtype)
{
    return dtype == ZC_F32 || dtype == ZC_F16 || dtype == ZC_BF16 || dtype == ZC_F64 ||
           dtype == ZC_F8_E4M3FN || dtype == ZC_F8_E5M2;
}

int cli_dtype_is_integer(int dtype)
{
    return dtype == ZC_I8 || dtype == ZC_I16 || dtype == ZC_I32 || dtype == ZC_I64 ||
           dtype == ZC_U8;
}

double cli_element_value(int dtype, const void *data, uint64_t index)
{
    if (cli_dtype_is_float(dtype))
        return zc__dtype_decode_float(dtype, (const uint8_t *)data + index * zc_dtype_size(dtype));
    if (cli_dtype_is_integer(dtype) || dtype == ZC_BOOL)
        return (double)cli_element_int64(dtype, data, index);
    return NAN;
}
