/*
 * bufpool.c — recycling of host-tier buffers.  A film puts latents of the
 * same shape shot after shot; giving the buffer of an evicted slot to the next
 * put of the same size avoids faulting in fresh pages every time (for a
 * 19 MB latent that is ~4,700 page faults, more than the copy itself).
 * The pool is bounded in buffers and bytes, shared by a store and by every
 * bundle and slot made for it, and freed with the last of them.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

#define POOL_BUFFERS 8

struct zc_bufpool {
    atomic_int_fast64_t refs;
    zc_os_mutex lock;
    uint64_t limit_bytes;
    uint64_t bytes;
    uint32_t count;
    struct {
        void *p;
        uint64_t nbytes;
    } buffers[POOL_BUFFERS];
};

zc_bufpool *zc__bufpool_new(uint64_t limit_bytes)
{
    zc_bufpool *pool = calloc(1, sizeof *pool);
    if (pool == NULL)
        return NULL;
    if (zc_os_mutex_init(&pool->lock) != 0) {
        free(pool);
        return NULL; /* callers then allocate without recycling */
    }
    atomic_init(&pool->refs, 1);
    pool->limit_bytes = limit_bytes;
    return pool;
}

void zc__bufpool_ref(zc_bufpool *pool)
{
    if (pool)
        atomic_fetch_add(&pool->refs, 1);
}

void zc__bufpool_unref(zc_bufpool *pool)
{
    if (pool == NULL || atomic_fetch_sub(&pool->refs, 1) != 1)
        return;
    for (uint32_t i = 0; i < pool->count; i++)
        zc__host_free(pool->buffers[i].p);
    zc_os_mutex_destroy(&pool->lock);
    free(pool);
}

void *zc__bufpool_take(zc_bufpool *pool, uint64_t nbytes)
{
    if (pool) {
        zc_os_mutex_lock(&pool->lock);
        for (uint32_t i = pool->count; i > 0; i--) { /* newest first: warmest in cache */
            if (pool->buffers[i - 1].nbytes == nbytes) {
                void *p = pool->buffers[i - 1].p;
                /* keep the rest in age order (oldest first) for zc__bufpool_give */
                memmove(&pool->buffers[i - 1], &pool->buffers[i],
                        (pool->count - i) * sizeof pool->buffers[0]);
                pool->count--;
                pool->bytes -= nbytes;
                zc_os_mutex_unlock(&pool->lock);
                return p;
            }
        }
        zc_os_mutex_unlock(&pool->lock);
    }
    return zc__host_alloc(nbytes);
}

void zc__bufpool_give(zc_bufpool *pool, void *p, uint64_t nbytes)
{
    if (p == NULL)
        return;
    if (pool && nbytes <= pool->limit_bytes) {
        /* The newest buffer is the likeliest to be asked for again (a film puts one shape
         * shot after shot): the oldest pooled buffers make room for it. */
        void *evicted[POOL_BUFFERS];
        uint32_t n_evicted = 0;
        zc_os_mutex_lock(&pool->lock);
        while (pool->count > 0 &&
               (pool->count == POOL_BUFFERS || pool->bytes + nbytes > pool->limit_bytes)) {
            evicted[n_evicted++] = pool->buffers[0].p;
            pool->bytes -= pool->buffers[0].nbytes;
            pool->count--;
            memmove(&pool->buffers[0], &pool->buffers[1], pool->count * sizeof pool->buffers[0]);
        }
        pool->buffers[pool->count].p = p;
        pool->buffers[pool->count].nbytes = nbytes;
        pool->count++;
        pool->bytes += nbytes;
        zc_os_mutex_unlock(&pool->lock);
        for (uint32_t i = 0; i < n_evicted; i++) /* unmapping outside the lock */
            zc__host_free(evicted[i]);
        return;
    }
    zc__host_free(p);
}

uint64_t zc__bufpool_bytes(zc_bufpool *pool)
{
    if (pool == NULL)
        return 0;
    zc_os_mutex_lock(&pool->lock);
    uint64_t bytes = pool->bytes;
    zc_os_mutex_unlock(&pool->lock);
    return bytes;
}

uint64_t zc__bufpool_trim(zc_bufpool *pool, uint64_t want)
{
    if (pool == NULL || want == 0)
        return 0;
    void *freed[POOL_BUFFERS];
    uint32_t n = 0;
    uint64_t bytes = 0;
    zc_os_mutex_lock(&pool->lock);
    while (pool->count > 0 && bytes < want) { /* the oldest first: the least likely asked for */
        freed[n++] = pool->buffers[0].p;
        bytes += pool->buffers[0].nbytes;
        pool->bytes -= pool->buffers[0].nbytes;
        pool->count--;
        memmove(&pool->buffers[0], &pool->buffers[1], pool->count * sizeof pool->buffers[0]);
    }
    zc_os_mutex_unlock(&pool->lock);
    for (uint32_t i = 0; i < n; i++) /* unmapping outside the lock */
        zc__host_free(freed[i]);
    return bytes;
}
