/*
 * seam.c — the seam statistics of a hop at put time: a small summary of the
 * frames at each end of a tensor (zc_bundle_seam_summarize), kept with the
 * slot and written into its spill file, and the cut between a parent's tail
 * summary and a new shot's head summary (zc__seam_compare; zc_store_seam, in
 * seam_hop.c, finds the two in the store).
 *
 * The definition is tests/python/seam_reference.py's (_frames, _Cut, _video): the
 * same grid of samples, the same two-pass means and standard deviations,
 * the same ratios, FLOOR and CAP; tests/python/test_seam_engine.py holds the
 * two to each other on every family layout.  Sums run in double over the
 * float32 samples (torch sums in float32), so the numbers agree to float
 * precision, not bit for bit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"
#include "core/jsonbuf.h"
#include "core/internal.h"

#define SEAM_VERSION 1
#define SEAM_CAP 100.0   /* seam_reference.py CAP: ratios are capped here */
#define SEAM_FLOOR 1e-3  /* seam_reference.py FLOOR: within-shot steps below this fraction of the spread */
#define SEAM_MAX_SAMPLES (1u << 24) /* samples of one window: a hostile file cannot ask more */
#define SEAM_PREFETCH 32            /* samples ahead the gather asks the cache for */
#if defined(__GNUC__) || defined(__clang__)
#define ZC_PREFETCH(p) __builtin_prefetch(p)
#else
#define ZC_PREFETCH(p) ((void)(p))
#endif

/* ---- samples ---- */

/* The grid of one frame: the axes other than time and channels, each read with step (1 for a
 * batch on axis 0 when time is another axis), as tests/python/seam_reference.py's _frames does. */
typedef struct {
    int32_t count;                 /* rest axes */
    int32_t axis[ZC_MAX_RANK];
    int64_t n[ZC_MAX_RANK];        /* positions read along each */
    int64_t step[ZC_MAX_RANK];
    uint64_t positions;            /* product of n */
    uint32_t stride;
} seam_grid;

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static void grid_init(seam_grid *g, int32_t ndim, const int64_t *shape, int32_t axis,
                      uint32_t max_values)
{
    uint64_t channels = shape[1] > 0 ? (uint64_t)shape[1] : 1;
    double budget = max_values ? (double)(max_values / channels > 0 ? max_values / channels : 1) : 0;
    int64_t largest = 1;
    for (int32_t d = 0; d < ndim; d++)
        if (d != axis && d != 1 && !(d == 0 && axis != 0) && shape[d] > largest)
            largest = shape[d];
    int64_t stride = 1;
    while (budget > 0 && stride < largest) {
        double product = 1;
        for (int32_t d = 0; d < ndim; d++)
            if (d != axis && d != 1 && !(d == 0 && axis != 0))
                product *= (double)ceil_div(shape[d], stride);
        if (product <= budget)
            break;
        stride++;
    }
    g->count = 0;
    g->positions = 1;
    g->stride = (uint32_t)stride;
    for (int32_t d = 0; d < ndim; d++) {
        if (d == axis || d == 1)
            continue;
        int64_t step = d == 0 && axis != 0 ? 1 : stride;
        g->axis[g->count] = d;
        g->step[g->count] = step;
        g->n[g->count] = ceil_div(shape[d], step);
        g->positions *= (uint64_t)g->n[g->count];
        g->count++;
    }
}

/* The element offsets of the grid's positions within one (frame, channel) plane of a contiguous
 * tensor, in row-major order of the rest axes, into off (g->positions of them). */
static void grid_offsets(int64_t *off, int32_t ndim, const int64_t *shape, const seam_grid *g)
{
    int64_t estride[ZC_MAX_RANK], acc = 1;
    for (int32_t d = ndim - 1; d >= 0; d--) {
        estride[d] = acc;
        acc *= shape[d];
    }
    int64_t idx[ZC_MAX_RANK] = {0};
    for (uint64_t p = 0; p < g->positions; p++) {
        int64_t o = 0;
        for (int32_t k = 0; k < g->count; k++)
            o += idx[k] * g->step[k] * estride[g->axis[k]];
        off[p] = o;
        for (int32_t k = g->count - 1; k >= 0; k--) { /* row-major odometer */
            if (++idx[k] < g->n[k])
                break;
            idx[k] = 0;
        }
    }
}

/* The planes (frame, channel) of a gather, walked from frame first: where each begins. */
typedef struct {
    int64_t first, frame_stride, channel_stride;
    uint64_t channels;
} plane_walk;

static inline int64_t plane_base(const plane_walk *w, uint64_t plane)
{
    return (w->first + (int64_t)(plane / w->channels)) * w->frame_stride +
           (int64_t)(plane % w->channels) * w->channel_stride;
}

/* The prefetch cursor that runs ahead of the float32 gather: element p of plane. */
typedef struct {
    uint64_t plane, p;
    int64_t base;
} ahead_cursor;

static inline void prefetch_step(ahead_cursor *a, const plane_walk *w, const float *src,
                                 const int64_t *off, uint64_t n)
{
    ZC_PREFETCH(src + a->base + off[a->p]);
    if (++a->p == n) {
        a->p = 0;
        a->plane++;
        a->base = plane_base(w, a->plane);
    }
}

/* Gather frames [first, first + count) of a contiguous tensor on the grid (offsets off) into
 * out [count][C][N]: float32 read directly (one flat walk, prefetched ahead: the loads miss the
 * cache, so many are kept in flight), the other dtypes converted. */
static void gather(float *out, const uint8_t *bytes, int dtype, int32_t ndim, const int64_t *shape,
                   int32_t axis, const int64_t *off, uint64_t n, int64_t first, uint32_t count)
{
    size_t elem = zc_dtype_size(dtype);
    int64_t estride[ZC_MAX_RANK], acc = 1;
    for (int32_t d = ndim - 1; d >= 0; d--) {
        estride[d] = acc;
        acc *= shape[d];
    }
    plane_walk w = {first, estride[axis], estride[1], (uint64_t)shape[1]};
    uint64_t planes = (uint64_t)count * w.channels;
    if (dtype == ZC_F32) {
        const float *src = (const float *)(const void *)bytes;
        uint64_t total = planes * n;
        ahead_cursor ahead = {0, 0, plane_base(&w, 0)};
        for (uint64_t i = 0; i < SEAM_PREFETCH && i < total; i++) /* prime the walk ahead */
            prefetch_step(&ahead, &w, src, off, n);
        for (uint64_t plane = 0; plane < planes; plane++) {
            int64_t base = plane_base(&w, plane);
            float *dst = out + plane * n;
            for (uint64_t p = 0; p < n; p++) {
                if (ahead.plane < planes)
                    prefetch_step(&ahead, &w, src, off, n);
                dst[p] = src[base + off[p]];
            }
        }
        return;
    }
    for (uint64_t plane = 0; plane < planes; plane++) {
        int64_t base = plane_base(&w, plane);
        for (uint64_t p = 0; p < n; p++)
            out[plane * n + p] =
                (float)zc__dtype_decode_float(dtype, bytes + (size_t)(base + off[p]) * elem);
    }
}

/* ---- summaries ---- */

void zc__seam_side_free(zc_seam_side *side)
{
    if (side == NULL)
        return;
    free(side->mean);
    free(side->edge);
    free(side);
}

/* A summary with room for F frames of C channels (mean, std, power, sumsq, rms, cov in one block). */
static zc_seam_side *side_new(uint32_t frames, uint32_t channels, uint64_t values)
{
    zc_seam_side *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->frames = frames;
    s->channels = channels;
    s->values = values;
    size_t fc = (size_t)frames * channels, steps = frames ? frames - 1 : 0;
    s->mean = calloc(2 * fc + 2 * (size_t)frames + 2 * steps + 1, sizeof(double));
    if (frames)
        s->edge = malloc((size_t)channels * values * sizeof(float));
    if (s->mean == NULL || (frames && s->edge == NULL)) {
        zc__seam_side_free(s);
        return NULL;
    }
    s->std = s->mean + fc;
    s->power = s->std + fc;
    s->sumsq = s->power + frames;
    s->rms = s->sumsq + frames;
    s->cov = s->rms + steps;
    return s;
}

/* The statistics of frames x [F][C][N] into s (two passes, as seam_reference.py's _Cut). */
static void side_stats(zc_seam_side *s, const float *x)
{
    uint64_t C = s->channels, N = s->values;
    for (uint32_t f = 0; f < s->frames; f++) {
        double power = 0, sumsq = 0;
        for (uint64_t c = 0; c < C; c++) {
            const float *v = x + ((uint64_t)f * C + c) * N;
            double sum = 0, sq = 0;
            for (uint64_t n = 0; n < N; n++)
                sum += v[n];
            double m = N ? sum / (double)N : 0;
            for (uint64_t n = 0; n < N; n++) {
                double d = v[n] - m;
                sq += d * d;
            }
            sumsq += sq + (double)N * m * m; /* the plain sum of squares, exactly in real numbers */
            s->mean[f * C + c] = m;
            s->std[f * C + c] = N ? sqrt(sq / (double)N) : 0;
            power += sq;
        }
        s->power[f] = power;
        s->sumsq[f] = sumsq;
    }
    for (uint32_t f = 0; f + 1 < s->frames; f++) {
        double d2 = 0, cov = 0;
        for (uint64_t c = 0; c < C; c++) {
            const float *a = x + ((uint64_t)f * C + c) * N, *b = a + C * N;
            double ma = s->mean[f * C + c], mb = s->mean[(f + 1) * C + c];
            for (uint64_t n = 0; n < N; n++) {
                double d = (double)b[n] - a[n];
                d2 += d * d;
                cov += (b[n] - mb) * (a[n] - ma);
            }
        }
        s->rms[f] = C > 0 && N > 0 ? sqrt(d2 / (double)(C * N)) : 0;
        s->cov[f] = cov;
    }
}

static zc_seam_side *summarize(const uint8_t *bytes, int dtype, int32_t ndim, const int64_t *shape,
                               int32_t axis, int64_t first, uint32_t frames, const seam_grid *g,
                               const int64_t *off, int edge_last)
{
    uint32_t channels = (uint32_t)shape[1];
    zc_seam_side *s = side_new(frames, channels, g->positions);
    if (s == NULL)
        return NULL;
    s->ndim = ndim;
    s->axis = axis;
    memcpy(s->shape, shape, sizeof s->shape);
    s->stride = g->stride;
    if (frames == 0)
        return s;
    size_t per_frame = (size_t)channels * g->positions;
    float *x = malloc((size_t)frames * per_frame * sizeof *x);
    if (x == NULL) {
        zc__seam_side_free(s);
        return NULL;
    }
    gather(x, bytes, dtype, ndim, shape, axis, off, g->positions, first, frames);
    side_stats(s, x);
    memcpy(s->edge, x + (edge_last ? (size_t)(frames - 1) * per_frame : 0), per_frame * sizeof *x);
    free(x);
    return s;
}

/* Why layout cannot summarise t ("" when it can), as zc_bundle_seam_summarize reports it. */
static int layout_check(const zc_tensor *t, const void *bytes, const zc_seam_layout *lay)
{
    if (t->ndim < 2 || lay->time_axis < 0 || lay->time_axis >= t->ndim || lay->time_axis == 1)
        return zc__fail(ZC_E_INVALID, "tensor \"%s\" (rank %d): time_axis %d is not a frame "
                        "axis; give 0 (a batch of images) or 2..%d (axis 1 holds the channels)",
                        t->name, (int)t->ndim, (int)lay->time_axis, (int)t->ndim - 1);
    if (lay->window < 1 || lay->window > ZC_SEAM_MAX_WINDOW)
        return zc__fail(ZC_E_INVALID, "tensor \"%s\": seam window %u is not 1..%d frames",
                        t->name, lay->window, ZC_SEAM_MAX_WINDOW);
    if (t->dtype != ZC_F32 && t->dtype != ZC_F16 && t->dtype != ZC_BF16 && t->dtype != ZC_F64)
        return zc__fail(ZC_E_UNSUPPORTED, "tensor \"%s\" is %s: seam summaries read F32, F16, "
                        "BF16 or F64 latents only", t->name, zc_dtype_name(t->dtype));
    if (bytes == NULL && t->nbytes > 0)
        return zc__fail(ZC_E_UNSUPPORTED, "tensor \"%s\" is held by reference without a host "
                        "copy: the engine never reads device memory; add it with a host copy "
                        "to summarise it", t->name);
    seam_grid g;
    grid_init(&g, t->ndim, t->shape, lay->time_axis, lay->max_values);
    if ((uint64_t)t->shape[1] * g.positions * (uint64_t)lay->window > SEAM_MAX_SAMPLES)
        return zc__fail(ZC_E_LIMIT, "tensor \"%s\": a seam window of %u frames would read more "
                        "than %u samples; give a max_values that thins the frames", t->name,
                        lay->window, SEAM_MAX_SAMPLES);
    return ZC_OK;
}

/* The summary of one end of t's bytes (contiguous, as t's shape): the tail (the last window
 * frames) or the head (window frames from head_skip). */
static zc_seam_side *end_of(const zc_tensor *t, const uint8_t *bytes, const zc_seam_layout *lay, int tail)
{
    int64_t frames = t->shape[lay->time_axis];
    for (int32_t d = 0; d < t->ndim; d++)
        if (t->shape[d] == 0)
            frames = 0; /* nothing to read */
    int64_t first, count;
    if (tail) {
        count = frames < lay->window ? frames : lay->window;
        first = frames - count;
    } else {
        first = lay->head_skip < frames ? lay->head_skip : frames;
        count = frames - first < lay->window ? frames - first : lay->window;
    }
    seam_grid g;
    grid_init(&g, t->ndim, t->shape, lay->time_axis, lay->max_values);
    int64_t *off = malloc((g.positions ? g.positions : 1) * sizeof *off);
    if (off == NULL)
        return NULL;
    grid_offsets(off, t->ndim, t->shape, &g);
    zc_seam_side *s = summarize(bytes, t->dtype, t->ndim, t->shape, lay->time_axis, first,
                                (uint32_t)count, &g, off, tail);
    free(off);
    return s;
}

int zc_bundle_seam_plan(zc_bundle *b, const char *name, const zc_seam_layout *lay)
{
    if (b == NULL || name == NULL || lay == NULL)
        return zc__fail(ZC_E_INVALID, "zc_bundle_seam_plan: bundle, name or layout is NULL");
    int rc = zc__name_check("tensor name", name, ZC_MAX_NAME_LEN);
    if (rc != ZC_OK)
        return rc;
    if (lay->window < 1 || lay->window > ZC_SEAM_MAX_WINDOW || lay->time_axis < 0 ||
        lay->time_axis == 1 || lay->time_axis >= ZC_MAX_RANK)
        return zc__fail(ZC_E_INVALID, "tensor \"%s\": seam window %u (1..%d) or time_axis %d "
                        "(0, or 2..%d; axis 1 holds the channels) is out of range", name,
                        lay->window, ZC_SEAM_MAX_WINDOW, (int)lay->time_axis, ZC_MAX_RANK - 1);
    uint32_t i = 0;
    while (i < b->seam_plan_count && strcmp(b->seam_plans[i].name, name) != 0)
        i++;
    if (i == ZC_MAX_TENSORS)
        return zc__fail(ZC_E_LIMIT, "zc_bundle_seam_plan: %d tensors planned already",
                        ZC_MAX_TENSORS);
    snprintf(b->seam_plans[i].name, sizeof b->seam_plans[i].name, "%s", name);
    b->seam_plans[i].layout = *lay;
    if (i == b->seam_plan_count)
        b->seam_plan_count++;
    for (uint32_t k = 0; k < b->count; k++) /* added already: planned now */
        if (strcmp(b->tensors[k].name, name) == 0)
            zc__seam_on_add(b, &b->tensors[k], b->tensors[k].host);
    return ZC_OK;
}

void zc__seam_on_add(const zc_bundle *b, zc_tensor *t, const uint8_t *bytes)
{
    for (uint32_t i = 0; i < b->seam_plan_count; i++) {
        if (strcmp(b->seam_plans[i].name, t->name) != 0)
            continue;
        const zc_seam_layout *lay = &b->seam_plans[i].layout;
        char saved[1024]; /* a summary is a report: the caller's last error stays its own */
        snprintf(saved, sizeof saved, "%s", zc_last_error());
        if (layout_check(t, bytes, lay) == ZC_OK) {
            t->seam_planned = 1; /* summarised later, off the put's path */
            t->seam_layout = *lay;
        }
        if (saved[0])
            zc__fail(ZC_E_INVALID, "%s", saved);
        return;
    }
}

/* The summary of one end of t, made from its host bytes and published once in *slot_of_t
 * (another thread may publish it first: then that one is kept). */
static const zc_seam_side *publish_end(zc_tensor *t, _Atomic(zc_seam_side *) *slot_of_t, int tail)
{
    zc_seam_side *have = atomic_load(slot_of_t);
    if (have != NULL || !t->seam_planned || t->host == NULL)
        return have;
    zc_seam_side *made = end_of(t, t->host, &t->seam_layout, tail);
    if (made == NULL)
        return NULL;
    zc_seam_side *expected = NULL;
    if (!atomic_compare_exchange_strong(slot_of_t, &expected, made)) {
        zc__seam_side_free(made); /* another thread published it first */
        return expected;
    }
    return made;
}

const zc_seam_side *zc__seam_head(zc_tensor *t)
{
    return publish_end(t, &t->seam_head, 0);
}

const zc_seam_side *zc__seam_tail(zc_tensor *t)
{
    return publish_end(t, &t->seam_tail, 1);
}

int zc_bundle_seam_summarize(zc_bundle *b, uint32_t index, const zc_seam_layout *lay)
{
    if (b == NULL || lay == NULL)
        return zc__fail(ZC_E_INVALID, "zc_bundle_seam_summarize: bundle or layout is NULL");
    if (index >= b->count)
        return zc__fail(ZC_E_INVALID, "zc_bundle_seam_summarize: tensor index %u is beyond the "
                        "bundle's %u tensors", index, b->count);
    zc_tensor *t = &b->tensors[index];
    int rc = layout_check(t, t->host, lay);
    if (rc != ZC_OK)
        return rc;
    zc_seam_side *tail = end_of(t, t->host, lay, 1), *head = end_of(t, t->host, lay, 0);
    if (tail == NULL || head == NULL) {
        zc__seam_side_free(tail);
        zc__seam_side_free(head);
        return zc__fail(ZC_E_NOMEM, "out of host memory summarising tensor \"%s\"", t->name);
    }
    zc__seam_side_free(atomic_load(&t->seam_tail));
    zc__seam_side_free(atomic_load(&t->seam_head));
    atomic_store(&t->seam_tail, tail);
    atomic_store(&t->seam_head, head);
    t->seam_planned = 1;
    t->seam_layout = *lay;
    return ZC_OK;
}

int zc__seam_side_moments(const zc_seam_side *s, double *mean, double *std)
{
    if (s == NULL || s->frames == 0)
        return -1;
    for (uint32_t c = 0; c < s->channels; c++) {
        double m = 0, v = 0;
        for (uint32_t f = 0; f < s->frames; f++)
            m += s->mean[f * s->channels + c];
        m /= s->frames;
        for (uint32_t f = 0; f < s->frames; f++) {
            double d = s->mean[f * s->channels + c] - m, sd = s->std[f * s->channels + c];
            v += sd * sd + d * d;
        }
        mean[c] = m;
        std[c] = sqrt(v / s->frames);
    }
    return 0;
}

/* ---- the cut ---- */

double zc__seam_ratio(double num, double den)
{
    if (den <= 0.0)
        return num <= 0.0 ? 0.0 : SEAM_CAP;
    return num / den < SEAM_CAP ? num / den : SEAM_CAP;
}

static double vec_step(const double *a, const double *b, uint32_t n)
{
    double s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += (b[i] - a[i]) * (b[i] - a[i]);
    return sqrt(s);
}

static double corr_of(double cov, double pa, double pb)
{
    double den = sqrt(pa * pb);
    return den > 0 ? cov / den : 0.0;
}

/* Mean of each side's per-channel std over its frames: its norm (spread), and the RMS of the std
 * over frames and channels (rms_spread), as seam_reference.py's _Cut. */
static void side_spread(const zc_seam_side *s, double *spread, double *rms_spread)
{
    double norm = 0, sq = 0;
    for (uint32_t c = 0; c < s->channels; c++) {
        double m = 0;
        for (uint32_t f = 0; f < s->frames; f++) {
            double v = s->std[f * s->channels + c];
            m += v;
            sq += v * v;
        }
        m /= s->frames;
        norm += m * m;
    }
    *spread = sqrt(norm);
    *rms_spread = sqrt(sq / ((double)s->frames * s->channels));
}

static double level_of(const zc_seam_side *s)
{
    double sum = 0;
    for (uint32_t f = 0; f < s->frames; f++)
        sum += s->sumsq[f];
    double count = (double)s->frames * s->channels * (double)s->values;
    return count > 0 ? sqrt(sum / count) : 0.0;
}

/* rel(): the cut's value over the mean inside, floored at FLOOR * scale. */
static double rel(double cut, double inside_sum, uint32_t inside_n, double scale)
{
    double within = inside_n ? inside_sum / inside_n : 0.0;
    double floor = SEAM_FLOOR * scale;
    return zc__seam_ratio(cut, within > floor ? within : floor);
}

static int same_layout(const zc_seam_side *p, const zc_seam_side *n)
{
    if (p->ndim != n->ndim || p->axis != n->axis)
        return 0;
    for (int32_t d = 0; d < p->ndim; d++)
        if (d != p->axis && p->shape[d] != n->shape[d])
            return 0;
    return 1;
}

int zc__seam_compare(const zc_seam_side *p, const zc_seam_side *n, zc_seam_stats *out)
{
    if (!same_layout(p, n) || p->frames == 0 || n->frames == 0 || (p->frames < 2 && n->frames < 2))
        return ZC_OK; /* measured 0 */
    if (p->stride != n->stride || p->values != n->values || p->channels != n->channels)
        return zc__fail(ZC_E_INVALID, "the seam summaries of the parent and the shot were taken "
                        "on different grids (strides %u and %u); summarise both with the same "
                        "max_values", p->stride, n->stride);
    uint32_t C = p->channels;
    uint64_t N = p->values;
    double mean_in = 0, std_in = 0, rms_in = 0, corr_in = 0;
    uint32_t inside = 0;
    for (uint32_t f = 0; f + 1 < p->frames; f++, inside++) {
        mean_in += vec_step(p->mean + f * C, p->mean + (f + 1) * C, C);
        std_in += vec_step(p->std + f * C, p->std + (f + 1) * C, C);
        rms_in += p->rms[f];
        corr_in += corr_of(p->cov[f], p->power[f], p->power[f + 1]);
    }
    for (uint32_t f = 0; f + 1 < n->frames; f++, inside++) {
        mean_in += vec_step(n->mean + f * C, n->mean + (f + 1) * C, C);
        std_in += vec_step(n->std + f * C, n->std + (f + 1) * C, C);
        rms_in += n->rms[f];
        corr_in += corr_of(n->cov[f], n->power[f], n->power[f + 1]);
    }
    const double *pm = p->mean + (size_t)(p->frames - 1) * C, *ps = p->std + (size_t)(p->frames - 1) * C;
    double d2 = 0, cov = 0;
    for (uint32_t c = 0; c < C; c++) {
        const float *a = p->edge + (uint64_t)c * N, *b = n->edge + (uint64_t)c * N;
        double ma = pm[c], mb = n->mean[c];
        for (uint64_t i = 0; i < N; i++) {
            double d = (double)b[i] - a[i];
            d2 += d * d;
            cov += (b[i] - mb) * (a[i] - ma);
        }
    }
    double sp_p, sp_n, rs_p, rs_n;
    side_spread(p, &sp_p, &rs_p);
    side_spread(n, &sp_n, &rs_n);
    double spread = (sp_p + sp_n) / 2, rms_spread = (rs_p + rs_n) / 2;
    out->measured = 1;
    out->parent_frames = p->frames;
    out->shot_frames = n->frames;
    out->mean_step = rel(vec_step(pm, n->mean, C), mean_in, inside, spread);
    out->std_step = rel(vec_step(ps, n->std, C), std_in, inside, spread);
    out->rms_step = rel(sqrt(d2 / ((double)C * N)), rms_in, inside, rms_spread);
    out->correlation = corr_of(cov, p->power[p->frames - 1], n->power[0]);
    out->within_correlation = inside ? corr_in / inside : 0.0;
    out->parent_level = level_of(p);
    out->shot_level = level_of(n);
    return ZC_OK;
}

/* ---- text: the tail summary in a spill file ---- */

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64_put(zc_jsonbuf *jb, const void *data, size_t len)
{
    const uint8_t *p = data;
    char q[5] = {0};
    zc__jb_raw(jb, "\"");
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < len ? p[i + 2] : 0);
        q[0] = B64[v >> 18 & 63];
        q[1] = B64[v >> 12 & 63];
        q[2] = i + 1 < len ? B64[v >> 6 & 63] : '=';
        q[3] = i + 2 < len ? B64[v & 63] : '=';
        zc__jb_rawn(jb, q, 4);
    }
    zc__jb_raw(jb, "\"");
}

static int b64_value(char c)
{
    const char *p = c ? strchr(B64, c) : NULL;
    return p ? (int)(p - B64) : -1;
}

/* Decode text into exactly len bytes at out: 0, or -1 when it is not that. */
static int b64_get(const char *text, void *out, size_t len)
{
    size_t n = strlen(text);
    if (n != (len + 2) / 3 * 4)
        return -1;
    uint8_t *o = out;
    for (size_t i = 0, w = 0; i < n; i += 4) {
        int v[4];
        for (int k = 0; k < 4; k++) {
            v[k] = text[i + k] == '=' && i + 4 == n && k >= 2 ? 0 : b64_value(text[i + k]);
            if (v[k] < 0)
                return -1;
        }
        uint32_t bits = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        for (int k = 0; k < 3 && w < len; k++)
            o[w++] = (uint8_t)(bits >> (16 - 8 * k));
    }
    return 0;
}

static size_t side_doubles(const zc_seam_side *s)
{
    size_t steps = s->frames ? s->frames - 1 : 0;
    return 2 * (size_t)s->frames * s->channels + 2 * (size_t)s->frames + 2 * steps;
}

char *zc__seam_side_text(const zc_seam_side *s)
{
    zc_jsonbuf jb;
    zc__jb_init(&jb);
    zc__jb_printf(&jb, "{\"version\":%d,\"axis\":%d,\"shape\":[", SEAM_VERSION, (int)s->axis);
    for (int32_t d = 0; d < s->ndim; d++)
        zc__jb_printf(&jb, d ? ",%lld" : "%lld", (long long)s->shape[d]);
    zc__jb_printf(&jb, "],\"stride\":%u,\"frames\":%u,\"channels\":%u,\"values\":%llu,"
                  "\"stats\":", s->stride, s->frames, s->channels, (unsigned long long)s->values);
    b64_put(&jb, s->mean, side_doubles(s) * sizeof(double)); /* little-endian, as the tensors */
    zc__jb_raw(&jb, ",\"edge\":");
    b64_put(&jb, s->edge, s->frames ? (size_t)s->channels * s->values * sizeof(float) : 0);
    zc__jb_raw(&jb, "}");
    if (jb.failed || jb.len > ZC_MAX_META_VALUE_LEN) {
        zc__jb_free(&jb);
        return NULL;
    }
    return jb.data;
}

static int get_u64(const zc_json_doc *doc, const zc_json_node *obj, const char *key, uint64_t max,
                   uint64_t *out)
{
    const zc_json_node *n = zc__json_member(doc, obj, key);
    if (n == NULL || n->type != ZC_JSON_NUMBER || !n->is_uint || n->num > max)
        return -1;
    *out = n->num;
    return 0;
}

zc_seam_side *zc__seam_side_parse(const char *text)
{
    static const zc_json_limits limits = {4, 64, 16};
    zc_json_doc doc;
    zc_json_error err;
    if (text == NULL || zc__json_parse(text, strlen(text), &limits, &doc, &err) != 0)
        return NULL;
    zc_seam_side *s = NULL;
    const zc_json_node *root = zc__json_node(&doc, 0);
    const zc_json_node *shape = zc__json_member(&doc, root, "shape");
    const zc_json_node *stats = zc__json_member(&doc, root, "stats");
    const zc_json_node *edge = zc__json_member(&doc, root, "edge");
    uint64_t version, axis, stride, frames, channels, values;
    if (root->type != ZC_JSON_OBJECT || get_u64(&doc, root, "version", 1000, &version) ||
        version != SEAM_VERSION || get_u64(&doc, root, "axis", ZC_MAX_RANK - 1, &axis) ||
        get_u64(&doc, root, "stride", UINT32_MAX, &stride) ||
        get_u64(&doc, root, "frames", ZC_SEAM_MAX_WINDOW, &frames) ||
        get_u64(&doc, root, "channels", SEAM_MAX_SAMPLES, &channels) ||
        get_u64(&doc, root, "values", SEAM_MAX_SAMPLES, &values) || shape == NULL ||
        shape->type != ZC_JSON_ARRAY || shape->count < 2 || shape->count > ZC_MAX_RANK ||
        stats == NULL || stats->type != ZC_JSON_STRING || edge == NULL ||
        edge->type != ZC_JSON_STRING || channels * values * (frames ? frames : 1) > SEAM_MAX_SAMPLES)
        goto done;
    s = side_new((uint32_t)frames, (uint32_t)channels, values);
    if (s == NULL)
        goto done;
    s->ndim = (int32_t)shape->count;
    s->axis = (int32_t)axis;
    s->stride = (uint32_t)stride;
    uint32_t i = 0;
    for (uint32_t k = shape->child; k != ZC_JSON_NONE; k = zc__json_node(&doc, k)->next, i++) {
        const zc_json_node *v = zc__json_node(&doc, k);
        if (v->type != ZC_JSON_NUMBER || !v->is_uint || v->num > (uint64_t)INT64_MAX)
            goto bad;
        s->shape[i] = (int64_t)v->num;
    }
    if (s->axis >= s->ndim || s->axis == 1 || (uint64_t)s->shape[1] != channels ||
        b64_get(zc__json_str(&doc, stats), s->mean, side_doubles(s) * sizeof(double)) ||
        b64_get(zc__json_str(&doc, edge), s->edge, frames ? channels * values * sizeof(float) : 0))
        goto bad;
    goto done;
bad:
    zc__seam_side_free(s);
    s = NULL;
done:
    zc__json_free(&doc);
    return s;
}

uint32_t zc__seam_entries(zc_bundle *b, zc_meta_entry *extra, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t i = 0; b != NULL && i < b->count && n < cap; i++) {
        zc_tensor *t = &b->tensors[i];
        const zc_seam_side *tail = zc__seam_tail(t); /* the writer thread makes a planned one */
        if (tail == NULL)
            continue;
        size_t klen = strlen(ZC_FILE_META_SEAM_PREFIX) + strlen(t->name) + 1;
        char *key = malloc(klen), *value = zc__seam_side_text(tail);
        if (key == NULL || value == NULL) { /* a summary is a report: the file is written without */
            free(key);
            free(value);
            continue;
        }
        snprintf(key, klen, "%s%s", ZC_FILE_META_SEAM_PREFIX, t->name);
        extra[n++] = (zc_meta_entry){key, value};
    }
    const char *hop = b != NULL && atomic_load(&b->seam_hop_state) ? atomic_load(&b->seam_hop_record)
                                                                    : NULL; /* measured by now */
    if (hop != NULL && n < cap) {
        char *key = zc__strdup(ZC_FILE_META_HOP_SEAM), *value = zc__strdup(hop);
        if (key != NULL && value != NULL) {
            extra[n++] = (zc_meta_entry){key, value};
        } else {
            free(key);
            free(value);
        }
    }
    return n;
}

void zc__seam_entries_free(zc_meta_entry *extra, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        free(extra[i].key);
        free(extra[i].value);
    }
}
