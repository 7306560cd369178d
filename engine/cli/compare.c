/*
 * compare.c — element-wise comparison of two arrays for "zc diff".
 *
 * Rules (also in "zc help diff"):
 * - Elements whose bytes are equal contribute no error, whatever they hold
 *   (NaN with the same bits, infinities, -0.0 vs -0.0).
 * - Elements whose bytes differ are "differing".  When either side is NaN
 *   the pair is counted in nan_counted and left out of MSE and max-abs
 *   (their error has no value); otherwise the error is a - b in double.
 *   +0.0 vs -0.0 differ in bytes but have error 0.
 * - MSE = sum((a-b)^2) / (elements - nan_counted); the sum is compensated
 *   (Neumaier) so long tensors keep full double precision.
 * - peak = max |a| over the finite elements of A (the first file).
 * - PSNR = 10*log10(peak^2 / MSE) dB: +inf when MSE is 0, -inf when peak is
 *   0 (or the error is infinite) and MSE is not.
 */
#include <math.h>
#include <string.h>

#include "cli.h"

static void add_compensated(cli_diff_stats *s, double x)
{
    double t = s->sum_sq + x;
    if (isinf(t) || isinf(x)) {
        s->sum_sq = t;
        s->sum_comp = 0.0;
        return;
    }
    if (fabs(s->sum_sq) >= fabs(x))
        s->sum_comp += (s->sum_sq - t) + x;
    else
        s->sum_comp += (x - t) + s->sum_sq;
    s->sum_sq = t;
}

static void update_peak(cli_diff_stats *s, double a)
{
    if (isfinite(a) && fabs(a) > s->peak)
        s->peak = fabs(a);
}

static void compare_element(cli_diff_stats *s, double a, double b)
{
    s->differing++;
    if (isnan(a) || isnan(b)) {
        s->nan_counted++;
        return;
    }
    double err = a == b ? 0.0 : fabs(a - b); /* a == b: equal infinities, +0/-0 */
    if (err > s->max_abs)
        s->max_abs = err;
    add_compensated(s, err * err);
}

void cli_diff_compute(int dtype, const void *a, const void *b, uint64_t count, cli_diff_stats *out)
{
    const uint8_t *pa = a;
    const uint8_t *pb = b;
    size_t size = zc_dtype_size(dtype);
    memset(out, 0, sizeof *out);
    out->elements = count;
    for (uint64_t i = 0; i < count; i++) {
        double va = cli_element_value(dtype, a, i);
        update_peak(out, va);
        if (memcmp(pa + i * size, pb + i * size, size) != 0)
            compare_element(out, va, cli_element_value(dtype, b, i));
    }
}

double cli_diff_mse(const cli_diff_stats *s)
{
    uint64_t n = s->elements - s->nan_counted;
    if (n == 0)
        return s->elements == 0 ? 0.0 : NAN;
    double sum = s->sum_sq + s->sum_comp;
    if (isinf(s->sum_sq))
        sum = s->sum_sq;
    return sum / (double)n;
}

double cli_diff_psnr(const cli_diff_stats *s)
{
    double mse = cli_diff_mse(s);
    if (isnan(mse))
        return NAN;
    if (mse == 0.0)
        return INFINITY;
    if (s->peak == 0.0 || isinf(mse))
        return -INFINITY;
    /* 10*log10(peak^2/mse), written so peak^2 cannot overflow */
    return 20.0 * log10(s->peak) - 10.0 * log10(mse);
}
