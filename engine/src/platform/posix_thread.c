/* posix_thread.c — threads, mutexes and condition variables over pthreads. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "platform.h"

_Static_assert(sizeof(pthread_mutex_t) <= sizeof(((zc_os_mutex *)0)->u),
               "zc_os_mutex is too small for pthread_mutex_t");
_Static_assert(sizeof(pthread_cond_t) <= sizeof(((zc_os_cond *)0)->u),
               "zc_os_cond is too small for pthread_cond_t");
_Static_assert(sizeof(pthread_t) <= sizeof(((zc_os_thread *)0)->u),
               "zc_os_thread is too small for pthread_t");

#define MUTEX(m) ((pthread_mutex_t *)(void *)(m)->u.bytes_)
#define COND(c) ((pthread_cond_t *)(void *)(c)->u.bytes_)
#define THREAD(t) ((pthread_t *)(void *)(t)->u.bytes_)

int zc_os_mutex_init(zc_os_mutex *m)
{
    return pthread_mutex_init(MUTEX(m), NULL);
}

void zc_os_mutex_destroy(zc_os_mutex *m)
{
    pthread_mutex_destroy(MUTEX(m));
}

void zc_os_mutex_lock(zc_os_mutex *m)
{
    pthread_mutex_lock(MUTEX(m));
}

void zc_os_mutex_unlock(zc_os_mutex *m)
{
    pthread_mutex_unlock(MUTEX(m));
}

/* The timed wait measures on the monotonic clock where the condition
 * variable can be told so; macOS has no such attribute and waits relative. */
int zc_os_cond_init(zc_os_cond *c)
{
#if defined(__APPLE__)
    return pthread_cond_init(COND(c), NULL);
#else
    pthread_condattr_t attr;
    int err = pthread_condattr_init(&attr);
    if (err != 0)
        return err;
    err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (err == 0)
        err = pthread_cond_init(COND(c), &attr);
    pthread_condattr_destroy(&attr);
    return err;
#endif
}

void zc_os_cond_destroy(zc_os_cond *c)
{
    pthread_cond_destroy(COND(c));
}

void zc_os_cond_wait(zc_os_cond *c, zc_os_mutex *m)
{
    pthread_cond_wait(COND(c), MUTEX(m));
}

void zc_os_cond_wait_ms(zc_os_cond *c, zc_os_mutex *m, unsigned ms)
{
    struct timespec ts;
#if defined(__APPLE__)
    ts.tv_sec = (time_t)(ms / 1000u);
    ts.tv_nsec = (long)(ms % 1000u) * 1000000L;
    pthread_cond_timedwait_relative_np(COND(c), MUTEX(m), &ts);
#else
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long ns = (long long)ts.tv_nsec + (long long)(ms % 1000u) * 1000000LL;
    ts.tv_sec += (time_t)(ms / 1000u) + (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    pthread_cond_timedwait(COND(c), MUTEX(m), &ts);
#endif
}

void zc_os_cond_signal(zc_os_cond *c)
{
    pthread_cond_signal(COND(c));
}

void zc_os_cond_broadcast(zc_os_cond *c)
{
    pthread_cond_broadcast(COND(c));
}

/* pthreads wants void *(*)(void *); the layer's threads return nothing. */
typedef struct {
    void (*fn)(void *);
    void *arg;
} start_args;

static void *trampoline(void *p)
{
    start_args a = *(start_args *)p;
    free(p);
    a.fn(a.arg);
    return NULL;
}

int zc_os_thread_start(zc_os_thread *t, void (*fn)(void *), void *arg)
{
    start_args *a = malloc(sizeof *a);
    if (a == NULL)
        return ENOMEM;
    a->fn = fn;
    a->arg = arg;
    int err = pthread_create(THREAD(t), NULL, trampoline, a);
    if (err != 0)
        free(a);
    return err;
}

void zc_os_thread_join(zc_os_thread *t)
{
    pthread_join(*THREAD(t), NULL);
}

void zc_os_thread_yield(void)
{
    sched_yield();
}
