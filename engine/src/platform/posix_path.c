/* posix_path.c — renames, removal, directories and their listing. */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform.h"

int zc_os_replace(const char *from, const char *to)
{
    return rename(from, to) == 0 ? 0 : errno;
}

int zc_os_rename_noreplace(const char *from, const char *to)
{
#if defined(__linux__) && defined(RENAME_NOREPLACE)
    /* Atomic, and the file never has two names (glibc 2.28+, Linux 3.15+;
     * the file system must support it too: ext4, xfs, btrfs, tmpfs do). */
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP && errno != EOPNOTSUPP)
        return errno; /* EEXIST among them */
#endif
    if (link(from, to) == 0) {
        /* The new name is in place; a from that stays behind is a second
         * name of the same complete file, harmless. */
        (void)unlink(from);
        return 0;
    }
    int err = errno;
    if (err != EPERM && err != ENOTSUP && err != EOPNOTSUPP && err != ENOSYS && err != EMLINK)
        return err; /* EEXIST among them */
    /* No hard links on this file system: check, then rename. */
    struct stat st;
    if (stat(to, &st) == 0)
        return EEXIST;
    if (errno != ENOENT)
        return errno;
    return rename(from, to) == 0 ? 0 : errno;
}

int zc_os_remove(const char *path)
{
    return unlink(path) == 0 ? 0 : errno;
}

int zc_os_mkdir(const char *path)
{
    return mkdir(path, 0777) == 0 ? 0 : errno;
}

int zc_os_stat(const char *path, zc_os_path_kind *kind, uint64_t *size)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno;
    *kind = S_ISREG(st.st_mode) ? ZC_OS_PATH_FILE : S_ISDIR(st.st_mode) ? ZC_OS_PATH_DIR
                                                                         : ZC_OS_PATH_OTHER;
    if (size)
        *size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    return 0;
}

int zc_os_dir_writable(const char *path)
{
    return access(path, W_OK | X_OK) == 0 ? 0 : errno;
}

struct zc_os_dir {
    DIR *d;
};

int zc_os_dir_open(const char *path, zc_os_dir **out)
{
    zc_os_dir *d = malloc(sizeof *d);
    if (d == NULL)
        return ENOMEM;
    if ((d->d = opendir(path)) == NULL) {
        int err = errno;
        free(d);
        return err;
    }
    *out = d;
    return 0;
}

int zc_os_dir_next(zc_os_dir *d, const char **name)
{
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d->d);
        if (e == NULL) {
            *name = NULL;
            return errno;
        }
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            *name = e->d_name;
            return 0;
        }
    }
}

void zc_os_dir_close(zc_os_dir *d)
{
    if (d == NULL)
        return;
    closedir(d->d);
    free(d);
}

int zc_os_is_separator(char c)
{
    return c == '/';
}

const char *zc_os_last_separator(const char *path)
{
    return strrchr(path, '/');
}
