/* win32_time.c — clocks and sleeping. */
#include "win32_internal.h"

/* 100-ns intervals between 1601-01-01 (FILETIME's epoch) and 1970-01-01. */
#define UNIX_EPOCH_AS_FILETIME 116444736000000000ULL

uint64_t zc_os_now_unix_ms(void)
{
    FILETIME ft;
    GetSystemTimeAsFileTime(&ft);
    uint64_t t = ((uint64_t)ft.dwHighDateTime << 32) | ft.dwLowDateTime;
    return (t - UNIX_EPOCH_AS_FILETIME) / 10000u;
}

uint64_t zc_os_monotonic_ns(void)
{
    LARGE_INTEGER count, freq;
    QueryPerformanceCounter(&count);
    QueryPerformanceFrequency(&freq); /* fixed at boot; cheap to ask */
    uint64_t c = (uint64_t)count.QuadPart, f = (uint64_t)freq.QuadPart;
    return c / f * 1000000000u + c % f * 1000000000u / f;
}

void zc_os_sleep_ms(unsigned ms)
{
    Sleep(ms);
}
