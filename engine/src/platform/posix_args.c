/* posix_args.c — main's arguments are UTF-8 bytes already (the zc tool only). */
#include "platform.h"

char **zc_os_utf8_argv(int argc, char **argv)
{
    (void)argc;
    return argv;
}
