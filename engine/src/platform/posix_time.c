/* posix_time.c — clocks and sleeping. */
#include <errno.h>
#include <time.h>

#include "platform.h"

uint64_t zc_os_now_unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t zc_os_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void zc_os_sleep_ms(unsigned ms)
{
    struct timespec left = {(time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L};
    while (nanosleep(&left, &left) != 0 && errno == EINTR)
        ;
}
