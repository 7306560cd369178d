/*
 * posix_mem.c — aligned host memory and the huge-page hint.  Transparent huge
 * pages are Linux's (madvise(MADV_HUGEPAGE), present where the headers define
 * it: glibc with _GNU_SOURCE or _DEFAULT_SOURCE); a strict POSIX build and
 * macOS compile the hint to nothing.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "platform.h"

void *zc_os_alloc_aligned(size_t nbytes, size_t align)
{
    void *p = NULL;
    if (nbytes == 0 || posix_memalign(&p, align, nbytes) != 0)
        return NULL;
    return p;
}

void zc_os_free_aligned(void *p)
{
    free(p);
}

static size_t page_size;
static zc_os_once page_once = ZC_OS_ONCE_INIT;

static void query_page_size(void)
{
    long n = sysconf(_SC_PAGESIZE);
    page_size = n > 0 ? (size_t)n : 4096u;
}

size_t zc_os_page_size(void)
{
    zc_os_once_run(&page_once, query_page_size);
    return page_size;
}

size_t zc_os_huge_page_size(void)
{
#if defined(MADV_HUGEPAGE)
    return (size_t)2 << 20; /* x86-64 and arm64 (4 KiB base pages) PMD size */
#else
    return 0;
#endif
}

void zc_os_advise_huge_pages(void *p, size_t nbytes)
{
#if defined(MADV_HUGEPAGE)
    size_t huge = zc_os_huge_page_size();
    (void)madvise(p, nbytes & ~(huge - 1), MADV_HUGEPAGE); /* the kernel may refuse: fine */
#else
    (void)p;
    (void)nbytes;
#endif
}
