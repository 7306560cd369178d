/* posix_process.c — the process id. */
#include <unistd.h>

#include "platform.h"

long zc_os_pid(void)
{
    return (long)getpid();
}
