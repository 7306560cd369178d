/*
 * hostmem.c — C-owned host memory: aligned allocation and the copy that
 * brings a (possibly strided) tensor into contiguous form while digesting it.
 */
#include <string.h>

#include "internal.h"

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

static int is_contiguous(int32_t ndim, const int64_t *shape, const int64_t *byte_strides,
                         size_t elem_size)
{
    int64_t expected = (int64_t)elem_size;
    for (int32_t i = ndim - 1; i >= 0; i--) {
        if (shape[i] == 0)
            return 1;
        if (shape[i] != 1 && byte_strides[i] != expected)
            return 0;
        expected *= shape[i];
    }
    return 1;
}

/* Recursive walk over all but the innermost dimension (rank <= 8). */
static uint8_t *copy_strided(uint8_t *dst, const uint8_t *src, int32_t dim, int32_t ndim,
                             const int64_t *shape, const int64_t *byte_strides, size_t elem_size)
{
    if (dim == ndim - 1) {
        if (byte_strides[dim] == (int64_t)elem_size) {
            size_t n = (size_t)shape[dim] * elem_size;
            memcpy(dst, src, n);
            return dst + n;
        }
        for (int64_t i = 0; i < shape[dim]; i++) {
            memcpy(dst, src + i * byte_strides[dim], elem_size);
            dst += elem_size;
        }
        return dst;
    }
    for (int64_t i = 0; i < shape[dim]; i++)
        dst = copy_strided(dst, src + i * byte_strides[dim], dim + 1, ndim, shape, byte_strides,
                           elem_size);
    return dst;
}

uint64_t zc__copy_and_digest(void *dst, const uint8_t *src, int32_t ndim, const int64_t *shape,
                             const int64_t *byte_strides, size_t elem_size, uint64_t nbytes)
{
    if (nbytes == 0)
        return zc_xxh64(NULL, 0, 0);
    if (ndim == 0 || is_contiguous(ndim, shape, byte_strides, elem_size))
        return zc__xxh64_copy(dst, src, (size_t)nbytes); /* one pass: copy and digest */
    copy_strided(dst, src, 0, ndim, shape, byte_strides, elem_size);
    return zc_xxh64(dst, (size_t)nbytes, 0);
}
