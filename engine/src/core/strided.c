/*
 * strided.c — walking a strided tensor's bytes in canonical (row-major,
 * contiguous) order, for the put's copy and for digests of views.
 *
 * The layout is simplified first (size-1 dimensions dropped, dimensions
 * contiguous with their inner neighbour merged), so a typical view — a
 * slice along an outer axis, the tail frames of a video latent — is a few
 * long contiguous runs.  A strided innermost dimension is gathered element
 * by element with fixed-size loads (dtypes are 1, 2, 4 or 8 bytes), never a
 * library call per element.
 */
#include <string.h>

#include "internal.h"

/* Gathered bytes handed to the sink at a time: small enough for L1. */
#define STAGE_BYTES ((size_t)16 << 10)
/* Contiguous runs at least this long go to the sink straight from the
 * source: hashed in place, or copied and hashed in one pass. */
#define DIRECT_RUN_MIN ((size_t)1 << 10)

void zc__strided_init(zc_strided *st, int32_t ndim, const int64_t *shape,
                      const int64_t *byte_strides, size_t elem_size)
{
    int64_t sh[ZC_MAX_RANK], str[ZC_MAX_RANK];
    int32_t n = 0;
    /* Innermost first, merging each dimension into the one inside it when
     * it steps exactly over it. */
    for (int32_t i = ndim - 1; i >= 0; i--) {
        if (shape[i] == 1)
            continue;
        int64_t span;
        if (n > 0 && zc__mul_nonneg_i64(str[n - 1], sh[n - 1], &span) == 0 &&
            span == byte_strides[i]) {
            sh[n - 1] *= shape[i]; /* cannot overflow: at most the element count */
            continue;
        }
        sh[n] = shape[i];
        str[n] = byte_strides[i];
        n++;
    }
    st->ndim = n;
    st->elem_size = elem_size;
    for (int32_t i = 0; i < n; i++) { /* back to outermost first */
        st->shape[i] = sh[n - 1 - i];
        st->byte_strides[i] = str[n - 1 - i];
    }
    st->inner_contiguous = n == 0 || st->byte_strides[n - 1] == (int64_t)elem_size;
}

int zc__strided_is_contiguous(const zc_strided *st)
{
    return st->ndim == 0 || (st->ndim == 1 && st->inner_contiguous);
}

/* Where the walk's bytes go: into dst (the copy) or a staging buffer, and
 * on to the sink in pieces of at most STAGE_BYTES. */
typedef struct {
    uint8_t *dst;            /* the copy being written, or NULL */
    size_t unsunk;           /* bytes at the end of dst not yet given to the sink */
    uint8_t stage[STAGE_BYTES];
    size_t staged;
    const zc_walk_sink *sink;
} walk_out;

static void flush(walk_out *o)
{
    if (o->dst != NULL) {
        if (o->unsunk)
            o->sink->hash(o->sink->ctx, o->dst - o->unsunk, o->unsunk);
        o->unsunk = 0;
    } else if (o->staged) {
        o->sink->hash(o->sink->ctx, o->stage, o->staged);
        o->staged = 0;
    }
}

/* Room for up to want bytes; returns where to write and how many fit. */
static uint8_t *reserve(walk_out *o, size_t want, size_t *room)
{
    if (o->dst != NULL) {
        if (o->unsunk >= STAGE_BYTES)
            flush(o);
        size_t r = STAGE_BYTES - o->unsunk;
        *room = want < r ? want : r;
        return o->dst;
    }
    if (o->staged == STAGE_BYTES)
        flush(o);
    size_t r = STAGE_BYTES - o->staged;
    *room = want < r ? want : r;
    return o->stage + o->staged;
}

static void commit(walk_out *o, size_t n)
{
    if (o->dst != NULL) {
        o->dst += n;
        o->unsunk += n;
    } else {
        o->staged += n;
    }
}

static void emit_run(walk_out *o, const uint8_t *p, size_t n)
{
    if (o->dst != NULL && n >= DIRECT_RUN_MIN) { /* copied and hashed in one pass */
        flush(o);
        o->sink->copy_hash(o->sink->ctx, o->dst, p, n);
        o->dst += n;
        return;
    }
    if (o->dst == NULL && n >= DIRECT_RUN_MIN) {
        flush(o);
        o->sink->hash(o->sink->ctx, p, n);
        return;
    }
    while (n > 0) {
        size_t room;
        uint8_t *w = reserve(o, n, &room);
        memcpy(w, p, room);
        commit(o, room);
        p += room;
        n -= room;
    }
}

/* count elements of elem bytes, stride bytes apart. */
static void emit_gather(walk_out *o, const uint8_t *p, int64_t count, int64_t stride,
                        size_t elem)
{
    int64_t done = 0;
    while (done < count) {
        size_t room;
        uint8_t *w = reserve(o, (size_t)(count - done) * elem, &room);
        int64_t k = (int64_t)(room / elem);
        const uint8_t *q = p + done * stride;
        /* Fixed-size copies compile to single loads and stores. */
        switch (elem) {
        case 1:
            for (int64_t i = 0; i < k; i++)
                w[i] = q[i * stride];
            break;
        case 2:
            for (int64_t i = 0; i < k; i++)
                memcpy(w + 2 * i, q + i * stride, 2);
            break;
        case 4:
            for (int64_t i = 0; i < k; i++)
                memcpy(w + 4 * i, q + i * stride, 4);
            break;
        case 8:
            for (int64_t i = 0; i < k; i++)
                memcpy(w + 8 * i, q + i * stride, 8);
            break;
        default:
            for (int64_t i = 0; i < k; i++)
                memcpy(w + (size_t)i * elem, q + i * stride, elem);
            break;
        }
        commit(o, (size_t)k * elem);
        done += k;
    }
}

void zc__strided_walk(const zc_strided *st, const uint8_t *src, uint8_t *dst,
                      const zc_walk_sink *sink)
{
    walk_out o;
    o.dst = dst;
    o.unsunk = 0;
    o.staged = 0;
    o.sink = sink;
    if (st->ndim == 0) {
        emit_run(&o, src, st->elem_size);
        flush(&o);
        return;
    }
    int32_t inner = st->ndim - 1;
    int64_t idx[ZC_MAX_RANK] = {0};
    int64_t off = 0; /* byte offset of the current run; offsets stay inside the tensor */
    for (;;) {
        if (st->inner_contiguous)
            emit_run(&o, src + off, (size_t)st->shape[inner] * st->elem_size);
        else
            emit_gather(&o, src + off, st->shape[inner], st->byte_strides[inner], st->elem_size);
        int32_t d = inner - 1;
        for (; d >= 0; d--) {
            if (++idx[d] < st->shape[d]) {
                off += st->byte_strides[d];
                break;
            }
            off -= st->byte_strides[d] * (st->shape[d] - 1);
            idx[d] = 0;
        }
        if (d < 0)
            break;
    }
    flush(&o);
}
