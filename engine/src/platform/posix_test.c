/* posix_test.c — the test programs' own OS services (platform_test.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "platform_test.h"

extern char **environ;

int zc_os_test_temp_dir(char *buf, size_t cap)
{
    const char *base = getenv("TMPDIR");
    if (base == NULL || base[0] == '\0')
        base = "/tmp";
    size_t n = strlen(base);
    while (n > 1 && base[n - 1] == '/')
        n--;
    if (n + 1 > cap)
        return ENAMETOOLONG;
    memcpy(buf, base, n);
    buf[n] = '\0';
    return 0;
}

int zc_os_test_rmdir(const char *path)
{
    return rmdir(path) == 0 ? 0 : errno;
}

int zc_os_test_truncate(const char *path, uint64_t size)
{
    return truncate(path, (off_t)size) == 0 ? 0 : errno;
}

int zc_os_test_symlink(const char *target, const char *link_path)
{
    return symlink(target, link_path) == 0 ? 0 : errno;
}

int zc_os_test_hardlink(const char *target, const char *link_path)
{
    return link(target, link_path) == 0 ? 0 : errno;
}

int zc_os_test_mkfifo(const char *path)
{
    return mkfifo(path, 0644) == 0 ? 0 : errno;
}

int zc_os_test_getcwd(char *buf, size_t cap)
{
    return getcwd(buf, cap) != NULL ? 0 : errno;
}

int zc_os_test_chdir(const char *path)
{
    return chdir(path) == 0 ? 0 : errno;
}

int zc_os_test_spawn(const char *const *argv, int quiet, zc_os_process *p)
{
    posix_spawn_file_actions_t actions;
    int err = posix_spawn_file_actions_init(&actions);
    if (err != 0)
        return err;
    if (quiet)
        err = posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    if (err == 0)
        err = posix_spawn(&pid, argv[0], &actions, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (err == 0) {
        p->pid = (long)pid;
        p->handle = -1;
    }
    return err;
}

int zc_os_test_kill(zc_os_process *p)
{
    return kill((pid_t)p->pid, SIGKILL) == 0 ? 0 : errno;
}

int zc_os_test_wait(zc_os_process *p, int *exit_code)
{
    int status = 0;
    while (waitpid((pid_t)p->pid, &status, 0) < 0) {
        if (errno != EINTR)
            return errno;
    }
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return 0;
}

int zc_os_test_limit_file_size(uint64_t bytes, uint64_t *old)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_FSIZE, &lim) != 0)
        return errno;
    *old = (uint64_t)lim.rlim_cur;
    signal(SIGXFSZ, SIG_IGN);
    lim.rlim_cur = (rlim_t)bytes;
    return setrlimit(RLIMIT_FSIZE, &lim) == 0 ? 0 : errno;
}

int zc_os_test_restore_file_size(uint64_t old)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_FSIZE, &lim) != 0)
        return errno;
    lim.rlim_cur = (rlim_t)old;
    int err = setrlimit(RLIMIT_FSIZE, &lim) == 0 ? 0 : errno;
    signal(SIGXFSZ, SIG_DFL);
    return err;
}

int zc_os_test_set_dir_readonly(const char *path, int readonly)
{
    return chmod(path, readonly ? 0555 : 0755) == 0 ? 0 : errno;
}

int zc_os_test_is_superuser(void)
{
    return geteuid() == 0;
}
