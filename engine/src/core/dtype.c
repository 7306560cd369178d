/* dtype.c — the engine's element types, their DLPack / safetensors names, and
 * one element of a float type as a double. */
#include <math.h>
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

/* ---- one element of a float dtype as a double ----
 *
 * The formats, each decoded from its definition (F8 by decode_minifloat, F16
 * and BF16 by their bits):
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

typedef struct {
    int exp_bits;
    int man_bits;
    int bias;
    int finite_only; /* OCP "fn": no infinities, NaN only with every bit set */
} minifloat_format;

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

/* F16 and BF16 by their bits: the same values as decode_minifloat gives (NaN keeping its
 * payload), and fast on the seam summaries' walk over whole frames. */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while ((mant & 0x400) == 0) {
                mant <<= 1;
                exp--;
            }
            bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static float bf16_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

double zc__dtype_decode_float(int dtype, const uint8_t *p)
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
    case ZC_F16: return half_to_float(load_u16(p));
    case ZC_BF16: return bf16_to_float(load_u16(p));
    case ZC_F8_E4M3FN: return decode_minifloat(p[0], &fmt_e4m3fn);
    case ZC_F8_E5M2: return decode_minifloat(p[0], &fmt_e5m2);
    default: return NAN;
    }
}
