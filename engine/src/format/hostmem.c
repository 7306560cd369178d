/*
 * hostmem.c — C-owned host memory: aligned allocation and the copy that
 * brings a (possibly strided) tensor into contiguous form while digesting it.
 */
#include <string.h>

#include "core/internal.h"
#include "digest/xxh3_internal.h"

#define ZC_HUGE_BUFFER ((size_t)32 << 20)

void *zc__host_alloc(uint64_t nbytes)
{
    size_t n = nbytes ? (size_t)nbytes : ZC_HOST_ALIGN;
    if ((uint64_t)n != (nbytes ? nbytes : ZC_HOST_ALIGN))
        return NULL;
    /* Large buffers get page alignment: torch and file I/O both like it. Very large ones
     * get huge-page alignment and ask for transparent huge pages where the OS has them: a
     * fresh buffer is then faulted in 2 MiB at a time instead of 4 KiB, which is most of the
     * cost of a put of a buffer the pool cannot recycle (the kernel may refuse; then nothing
     * changes). */
    size_t huge = zc_os_huge_page_size();
    int want_huge = huge != 0 && n >= ZC_HUGE_BUFFER;
    size_t align = want_huge ? huge : (n >= (1u << 20) ? zc_os_page_size() : ZC_HOST_ALIGN);
    void *p = zc_os_alloc_aligned(n, align < ZC_HOST_ALIGN ? ZC_HOST_ALIGN : align);
    if (p != NULL && want_huge)
        zc_os_advise_huge_pages(p, n);
    return p;
}

void zc__host_free(void *p)
{
    zc_os_free_aligned(p);
}

static void hash_in_place(void *ctx, const uint8_t *bytes, size_t n)
{
    zc_xxh3_update(ctx, bytes, n);
}

static void copy_and_hash(void *ctx, uint8_t *dst, const uint8_t *src, size_t n)
{
    zc__xxh3_update_copy(zc__xxh3_active(), ctx, dst, src, n);
}

uint64_t zc__copy_and_digest(void *dst, const uint8_t *src, int32_t ndim, const int64_t *shape,
                             const int64_t *byte_strides, size_t elem_size, uint64_t nbytes)
{
    if (nbytes == 0)
        return zc_xxh3_64(NULL, 0, 0);
    zc_strided st;
    zc__strided_init(&st, ndim, shape, byte_strides, elem_size);
    if (zc__strided_is_contiguous(&st)) /* one pass: each stripe loaded once, stored, hashed */
        return zc__xxh3_copy_with(zc__xxh3_active(), dst, src, (size_t)nbytes);
    /* Strided: contiguous runs copied and hashed in one pass; gathered
     * elements written to dst piece by piece, each piece hashed while in cache. */
    zc_xxh3_state h;
    zc_xxh3_reset(&h, 0);
    zc_walk_sink sink = {hash_in_place, copy_and_hash, &h};
    zc__strided_walk(&st, src, dst, &sink);
    return zc_xxh3_digest(&h);
}

void zc_host_prefer_huge_pages(void *p, size_t nbytes)
{
    size_t huge = zc_os_huge_page_size();
    if (p == NULL || huge == 0)
        return;
    /* madvise wants aligned ranges: the huge pages wholly inside [p, p + nbytes) */
    uintptr_t start = ((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1);
    uintptr_t end = ((uintptr_t)p + nbytes) & ~(uintptr_t)(huge - 1);
    if (end > start)
        zc_os_advise_huge_pages((void *)start, (size_t)(end - start));
}
