/*
 * win32_thread.c — threads over _beginthreadex (the C runtime's own start,
 * safe for a thread that uses the CRT), slim reader/writer locks in exclusive
 * mode as mutexes, and native condition variables.  None of them needs
 * destroying; init cannot fail.
 */
#include <process.h>
#include <stdlib.h>

#include "win32_internal.h"

_Static_assert(sizeof(SRWLOCK) <= sizeof(((zc_os_mutex *)0)->u), "zc_os_mutex too small");
_Static_assert(sizeof(CONDITION_VARIABLE) <= sizeof(((zc_os_cond *)0)->u), "zc_os_cond too small");
_Static_assert(sizeof(HANDLE) <= sizeof(((zc_os_thread *)0)->u), "zc_os_thread too small");

#define LOCK(m) ((SRWLOCK *)(void *)(m)->u.bytes_)
#define COND(c) ((CONDITION_VARIABLE *)(void *)(c)->u.bytes_)
#define THREAD(t) ((HANDLE *)(void *)(t)->u.bytes_)

int zc_os_mutex_init(zc_os_mutex *m)
{
    InitializeSRWLock(LOCK(m));
    return 0;
}

void zc_os_mutex_destroy(zc_os_mutex *m)
{
    (void)m;
}

void zc_os_mutex_lock(zc_os_mutex *m)
{
    AcquireSRWLockExclusive(LOCK(m));
}

void zc_os_mutex_unlock(zc_os_mutex *m)
{
    ReleaseSRWLockExclusive(LOCK(m));
}

int zc_os_cond_init(zc_os_cond *c)
{
    InitializeConditionVariable(COND(c));
    return 0;
}

void zc_os_cond_destroy(zc_os_cond *c)
{
    (void)c;
}

void zc_os_cond_wait(zc_os_cond *c, zc_os_mutex *m)
{
    SleepConditionVariableSRW(COND(c), LOCK(m), INFINITE, 0);
}

void zc_os_cond_wait_ms(zc_os_cond *c, zc_os_mutex *m, unsigned ms)
{
    SleepConditionVariableSRW(COND(c), LOCK(m), (DWORD)ms, 0);
}

void zc_os_cond_signal(zc_os_cond *c)
{
    WakeConditionVariable(COND(c));
}

void zc_os_cond_broadcast(zc_os_cond *c)
{
    WakeAllConditionVariable(COND(c));
}

typedef struct {
    void (*fn)(void *);
    void *arg;
} start_args;

static unsigned __stdcall trampoline(void *p)
{
    start_args a = *(start_args *)p;
    free(p);
    a.fn(a.arg);
    return 0;
}

int zc_os_thread_start(zc_os_thread *t, void (*fn)(void *), void *arg)
{
    start_args *a = malloc(sizeof *a);
    if (a == NULL)
        return ERROR_NOT_ENOUGH_MEMORY;
    a->fn = fn;
    a->arg = arg;
    uintptr_t h = _beginthreadex(NULL, 0, trampoline, a, 0, NULL);
    if (h == 0) {
        DWORD err = GetLastError(); /* from the CreateThread inside */
        free(a);
        return err ? (int)err : ERROR_NOT_ENOUGH_MEMORY;
    }
    *THREAD(t) = (HANDLE)h;
    return 0;
}

void zc_os_thread_join(zc_os_thread *t)
{
    WaitForSingleObject(*THREAD(t), INFINITE);
    CloseHandle(*THREAD(t));
}

void zc_os_thread_yield(void)
{
    SwitchToThread();
}
