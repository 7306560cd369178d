/*
 * win32_mem.c — aligned host memory from the C runtime's _aligned_malloc
 * (freed only by _aligned_free, hence zc_os_free_aligned).  No huge pages:
 * VirtualAlloc(MEM_LARGE_PAGES) needs the "Lock pages in memory" privilege,
 * which ordinary users do not hold, and Windows has no transparent ones.
 */
#include <malloc.h>

#include "win32_internal.h"

void *zc_os_alloc_aligned(size_t nbytes, size_t align)
{
    return nbytes ? _aligned_malloc(nbytes, align) : NULL;
}

void zc_os_free_aligned(void *p)
{
    _aligned_free(p);
}

static size_t page_size;
static zc_os_once page_once = ZC_OS_ONCE_INIT;

static void query_page_size(void)
{
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    page_size = si.dwPageSize ? (size_t)si.dwPageSize : 4096u;
}

size_t zc_os_page_size(void)
{
    zc_os_once_run(&page_once, query_page_size);
    return page_size;
}

size_t zc_os_huge_page_size(void)
{
    return 0;
}

void zc_os_advise_huge_pages(void *p, size_t nbytes)
{
    (void)p;
    (void)nbytes;
}
