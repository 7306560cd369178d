/* win32_process.c — the process id. */
#include "win32_internal.h"

long zc_os_pid(void)
{
    return (long)GetCurrentProcessId();
}
