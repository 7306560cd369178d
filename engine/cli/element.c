/*
 * element.c — decode one element of any engine dtype into a double.
 *
 * The small float formats are decoded from their definitions:
 *   F16       IEEE 754 binary16: 1 sign, 5 exponent (bias 15), 10 mantissa
 *             bits; exponent 31 is infinity (mantissa 0) or NaN.
 *   BF16      the upper half of an IEEE 754 binary32: 1 sign, 8 exponent
 *             (bias 127), 7 mantissa bits; exponent 255 is infinity or NaN.
 *   F8_E4M3   OCP 8-bit floating point E4M3 ("fn": finite): 1 sign,
 *             4 exponent (bias 7), 3 mantissa bits; no infinities; only
 *             S.1111.111 is NaN, so exponent 15 still holds normal numbers
 *             (largest 448).
 *   F8_E5M2   OCP E5M2, IEEE-like: 1 sign, 5 exponent (bias 15), 2 mantissa
 *             bits; exponent 31 is infinity (mantissa 0) or NaN.
 * In all of them exponent 0 holds the subnormals m * 2^(1 - bias - mbits).
 * Every value of these formats is exactly representable as a double.
 * Multi-byte elements are little-endian, as in safetensors files (the
 * engine only builds on little-endian hosts).
 */
#include <math.h>
#include <string.h>

#include "cli.h"

typedef struct {
    int exp_bits;
    int man_bits;
    int bias;
    int finite_only; /* OCP "fn": no infinities, NaN only with every bit set */
} minifloat_format;

static const minifloat_format fmt_f16 = {5, 10, 15, 0};
static const minifloat_format fmt_bf16 = {8, 7, 127, 0};
static const minifloat_format fmt_e4m3fn = {4, 3, 7, 1};
static const minifloat_format fmt_e5m2 = {5, 2, 15, 0};

static double decode_minifloat(uint32_t bits, const minifloat_format *f)
{
    uint32_t man_mask = (1u << f->man_bits) - 1u;
    uint32_t exp_max = (1u << f->exp_bits) - 1u;
    uint32_t man = bits & man_mask;
    uint32_t exp = (bits >> f->man_bits) & exp_max;
    int negative = (bits >> (f->man_bits + f->exp_bits)) & 1u;
    double v;
    if (f->finite_only && exp == exp_max && man == man_mask) {
        v = NAN;
    } else if (!f->finite_only && exp == exp_max) {
        v = man != 0 ? NAN : INFINITY;
    } else if (exp == 0) {
        v = ldexp((double)man, 1 - f->bias - f->man_bits);
    } else {
        v = ldexp((double)(man | (1u << f->man_bits)), (int)exp - f->bias - f->man_bits);
    }
    return negative ? -v : v;
}

static uint16_t load_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static double decode_float(int dtype, const uint8_t *p)
{
    switch (dtype) {
    case ZC_F32: {
        float f;
        memcpy(&f, p, sizeof f);
        return (double)f;
    }
    case ZC_F64: {
        double d;
        memcpy(&d, p, sizeof d);
        return d;
    }
    case ZC_F16: return decode_minifloat(load_u16(p), &fmt_f16);
    case ZC_BF16: return decode_minifloat(load_u16(p), &fmt_bf16);
    case ZC_F8_E4M3FN: return decode_minifloat(p[0], &fmt_e4m3fn);
    case ZC_F8_E5M2: return decode_minifloat(p[0], &fmt_e5m2);
    default: return NAN;
    }
}

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
        return decode_float(dtype, (const uint8_t *)data + index * zc_dtype_size(dtype));
    if (cli_dtype_is_integer(dtype) || dtype == ZC_BOOL)
        return (double)cli_element_int64(dtype, data, index);
    return NAN;
}
