/*
 * once.c — zc_os_once_run, the same on every platform: C11 atomics plus the
 * layer's yield.  (pthread_once cannot be used here: PTHREAD_ONCE_INIT is
 * not all-zero bytes on every system, and the header promises a plain
 * zero-initialised value.)  The functions run once are short (a sysconf
 * query), so waiters yield rather than sleep.
 */
#include <stdatomic.h>

#include "platform.h"

enum { ONCE_NEW, ONCE_RUNNING, ONCE_DONE };

void zc_os_once_run(zc_os_once *once, void (*fn)(void))
{
    if (atomic_load_explicit(&once->state, memory_order_acquire) == ONCE_DONE)
        return;
    int expected = ONCE_NEW;
    if (atomic_compare_exchange_strong_explicit(&once->state, &expected, ONCE_RUNNING,
                                                memory_order_acq_rel, memory_order_acquire)) {
        fn();
        atomic_store_explicit(&once->state, ONCE_DONE, memory_order_release);
        return;
    }
    while (atomic_load_explicit(&once->state, memory_order_acquire) != ONCE_DONE)
        zc_os_thread_yield();
}
