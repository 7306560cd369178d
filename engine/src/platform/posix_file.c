/*
 * posix_file.c — open files: positional reads, full writes, durable sync and
 * the Linux fast paths, each behind a check that the headers offer it:
 * fallocate (glibc with _GNU_SOURCE), sync_file_range (likewise) and
 * posix_fadvise (POSIX, absent on macOS).  macOS gets F_FULLFSYNC, for files
 * and for the directory sync that makes a rename durable.  Files opened for
 * writing or locking never follow a symbolic link (O_NOFOLLOW, POSIX 2008),
 * never block on a FIFO (O_NONBLOCK), and are checked on the descriptor
 * (fstat) before anything is written, locked or trusted.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "platform.h"

/* Largest single read or write: below Linux's 0x7ffff000-byte cap per call. */
#define IO_CHUNK ((size_t)64 << 20)

#define FD(f) ((int)(f).handle)

/* open(2) with mode 0644 for a file it creates. */
static int open_fd(const char *path, int flags, zc_os_file *out)
{
    int fd = open(path, flags, 0644);
    if (fd < 0)
        return errno;
    out->handle = fd;
    return 0;
}

/* open_fd that refuses a symbolic link at path (see zc_os_file_open_rw). */
static int open_nofollow(const char *path, int flags, zc_os_file *out)
{
    struct stat st;
#ifdef O_NOFOLLOW
    int err = open_fd(path, flags | O_NOFOLLOW, out);
    /* Linux and macOS say ELOOP, FreeBSD EMLINK, NetBSD EFTYPE: lstat tells
     * a link at path from a loop among the directories above it. */
    if (err != 0 && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        return ZC_OS_ERROR_LINK_REFUSED;
    return err;
#else
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        return ZC_OS_ERROR_LINK_REFUSED;
    return open_fd(path, flags, out);
#endif
}

int zc_os_file_open_read(const char *path, zc_os_file *out)
{
    /* O_NONBLOCK: opening a FIFO or device named by a hostile path must not
     * hang; it does not change reads of regular files. */
    return open_fd(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, out);
}

int zc_os_file_create_new(const char *path, zc_os_file *out)
{
    return open_fd(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, out);
}

int zc_os_file_info(zc_os_file f, uint64_t *size, int *is_regular)
{
    struct stat st;
    if (fstat(FD(f), &st) != 0)
        return errno;
    *size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    *is_regular = S_ISREG(st.st_mode) ? 1 : 0;
    return 0;
}

int zc_os_file_read_at(zc_os_file f, void *buf, size_t n, uint64_t off, size_t *got)
{
    size_t done = 0;
    while (done < n) {
        size_t step = n - done < IO_CHUNK ? n - done : IO_CHUNK;
        ssize_t r = pread(FD(f), (unsigned char *)buf + done, step, (off_t)(off + done));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            *got = done;
            return errno;
        }
        if (r == 0)
            break;
        done += (size_t)r;
    }
    *got = done;
    return 0;
}

int zc_os_file_write_all(zc_os_file f, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    while (n > 0) {
        size_t step = n < IO_CHUNK ? n : IO_CHUNK;
        ssize_t w = write(FD(f), p, step);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (w == 0)
            return EIO; /* should not happen for a regular file; avoid spinning */
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* fsync, or on macOS the F_FULLFSYNC that also empties the drive's cache.
 * EINVAL: this descriptor cannot be synced (some file systems, for
 * directories); callers decide what that means. */
static int sync_fd(int fd)
{
#ifdef F_FULLFSYNC
    if (fcntl(fd, F_FULLFSYNC) == 0)
        return 0;
    /* Not every file system supports it (network and FAT volumes): fsync is
     * then the best there is. */
#endif
    return fsync(fd) == 0 ? 0 : errno;
}

int zc_os_file_sync(zc_os_file f)
{
    return sync_fd(FD(f));
}

int zc_os_file_close(zc_os_file *f)
{
    if (f->handle < 0)
        return 0;
    int rc = close(FD(*f)) == 0 ? 0 : errno;
    f->handle = -1;
    return rc;
}

int zc_os_file_preallocate(zc_os_file f, uint64_t total)
{
#if defined(__linux__) && defined(FALLOC_FL_KEEP_SIZE)
    if (total > 0 && fallocate(FD(f), 0, 0, (off_t)total) != 0 && errno != EOPNOTSUPP &&
        errno != ENOSYS && errno != EINVAL && errno != EINTR)
        return errno;
#else
    (void)f;
    (void)total;
#endif
    return 0;
}

void zc_os_file_start_writeback(zc_os_file f, uint64_t from, uint64_t to)
{
#ifdef SYNC_FILE_RANGE_WRITE
    if (to > from)
        (void)sync_file_range(FD(f), (off_t)from, (off_t)(to - from), SYNC_FILE_RANGE_WRITE);
#else
    (void)f;
    (void)from;
    (void)to;
#endif
}

void zc_os_file_advise(zc_os_file f, uint64_t off, uint64_t len, zc_os_advice advice)
{
#ifdef POSIX_FADV_SEQUENTIAL
    int how = advice == ZC_OS_ADVISE_SEQUENTIAL ? POSIX_FADV_SEQUENTIAL : POSIX_FADV_WILLNEED;
    (void)posix_fadvise(FD(f), (off_t)off, (off_t)len, how);
#else
    (void)f;
    (void)off;
    (void)len;
    (void)advice;
#endif
}

/* The parent-directory sync lives with the file syncs: same flags, same
 * F_FULLFSYNC. */
int zc_os_sync_parent_dir(const char *path)
{
    char dir[4096];
    const char *slash = zc_os_last_separator(path);
    if (slash == NULL) {
        dir[0] = '.';
        dir[1] = '\0';
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        if (n >= sizeof dir)
            return ENAMETOOLONG;
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int rc = sync_fd(fd);
    close(fd);
    /* Some file systems cannot sync a directory (EINVAL); their renames are
     * as durable as they get. */
    return rc == EINVAL ? 0 : rc;
}

int zc_os_file_open_rw(const char *path, zc_os_file *out)
{
    /* O_NONBLOCK: a FIFO planted at path must not hang the open (O_RDWR does
     * not on Linux, but POSIX leaves it undefined); regular files ignore it. */
    return open_nofollow(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, out);
}

int zc_os_file_open_read_nofollow(const char *path, zc_os_file *out)
{
    return open_nofollow(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, out);
}

int zc_os_file_check_private(zc_os_file f, uint64_t *links)
{
    struct stat st;
    if (fstat(FD(f), &st) != 0)
        return errno;
    if (links != NULL)
        *links = (uint64_t)st.st_nlink;
    if (!S_ISREG(st.st_mode))
        return ZC_OS_ERROR_NOT_REGULAR;
    /* 0 names: removed or renamed aside since the open, which leaves the
     * bytes to this descriptor alone. */
    return st.st_nlink > 1 ? ZC_OS_ERROR_HARD_LINKED : 0;
}

int zc_os_file_is_at(zc_os_file f, const char *path, int *same)
{
    struct stat a, b;
    *same = 0;
    if (fstat(FD(f), &a) != 0)
        return errno;
    if (lstat(path, &b) != 0)
        return errno == ENOENT || errno == ENOTDIR ? 0 : errno;
    *same = a.st_dev == b.st_dev && a.st_ino == b.st_ino;
    return 0;
}

int zc_os_path_owner(const char *path, long *uid, unsigned *mode)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno;
    *uid = (long)st.st_uid;
    *mode = (unsigned)(st.st_mode & 07777);
    return 0;
}

int zc_os_file_write_at(zc_os_file f, const void *buf, size_t n, uint64_t off)
{
    const unsigned char *p = buf;
    while (n > 0) {
        size_t step = n < IO_CHUNK ? n : IO_CHUNK;
        ssize_t w = pwrite(FD(f), p, step, (off_t)off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (w == 0)
            return EIO;
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

static void lock_region(struct flock *fl, short type)
{
    memset(fl, 0, sizeof *fl);
    fl->l_type = type;
    fl->l_whence = SEEK_SET;
    fl->l_start = (off_t)ZC_OS_LOCK_OFFSET;
    fl->l_len = 1;
}

int zc_os_file_lock(zc_os_file f, int exclusive, int wait, int *acquired)
{
    struct flock fl;
    lock_region(&fl, exclusive ? F_WRLCK : F_RDLCK);
    *acquired = 0;
    for (;;) {
        if (fcntl(FD(f), wait ? F_SETLKW : F_SETLK, &fl) == 0) {
            *acquired = 1;
            return 0;
        }
        int err = errno;
        if (err == EINTR)
            continue;
        if (!wait && (err == EACCES || err == EAGAIN))
            return 0; /* held by another process */
        /* A file system without record locks says so in several ways. */
        if (err == EINVAL || err == ENOSYS || err == EOPNOTSUPP)
            return ENOTSUP;
        return err;
    }
}

int zc_os_file_unlock(zc_os_file f)
{
    struct flock fl;
    lock_region(&fl, F_UNLCK);
    return fcntl(FD(f), F_SETLK, &fl) == 0 ? 0 : errno;
}
