/*
 * win32_file.c — open files over HANDLEs: positional reads through an
 * OVERLAPPED offset, full writes, FlushFileBuffers, and allocation reserved
 * up front.  Files opened for reading share read, write and delete, so the
 * spill tier can replace, prune or reject a file while a reader has it.
 * Files opened for writing or locking never follow a symbolic link or
 * junction (open_no_link).
 */
#include <stdlib.h>

#include "win32_internal.h"

/* Bytes per ReadFile/WriteFile call (their counts are 32-bit). */
#define IO_CHUNK ((DWORD)64 << 20)

#define HANDLE_OF(f) ((HANDLE)(f).handle)

static int open_wide(const char *path, DWORD access, DWORD share, DWORD disposition, DWORD flags,
                     zc_os_file *out)
{
    int err = 0;
    wchar_t *w = zc__win_path(path, NULL, &err);
    if (w == NULL)
        return err;
    HANDLE h = CreateFileW(w, access, share, NULL, disposition, flags, NULL);
    err = h == INVALID_HANDLE_VALUE ? (int)GetLastError() : 0;
    free(w);
    if (err == 0)
        out->handle = (intptr_t)h;
    return err;
}

/* 1 if the two handles' information names the same file. */
static int same_file(const BY_HANDLE_FILE_INFORMATION *a, const BY_HANDLE_FILE_INFORMATION *b)
{
    return a->dwVolumeSerialNumber == b->dwVolumeSerialNumber &&
           a->nFileIndexHigh == b->nFileIndexHigh && a->nFileIndexLow == b->nFileIndexLow;
}

/* open_wide that never follows a link at path (see zc_os_file_open_rw): the
 * reparse point itself is opened, and refused when it is a name surrogate
 * (symbolic link, junction, mount point) or its tag cannot be read; another
 * kind (a cloud-sync placeholder, deduplicated data) is opened again through
 * its filter, as an ordinary open would, and kept if it is the same file. */
static int open_no_link(const char *path, DWORD access, DWORD share, DWORD disposition,
                        DWORD flags, zc_os_file *out)
{
    zc_os_file f = ZC_OS_FILE_CLOSED, g = ZC_OS_FILE_CLOSED;
    BY_HANDLE_FILE_INFORMATION info, again;
    FILE_ATTRIBUTE_TAG_INFO tag;
    int err = open_wide(path, access, share, disposition, flags | FILE_FLAG_OPEN_REPARSE_POINT, &f);
    if (err != 0)
        return err;
    if (!GetFileInformationByHandle(HANDLE_OF(f), &info)) {
        err = (int)GetLastError();
        zc_os_file_close(&f);
        return err;
    }
    if ((info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) == 0) {
        *out = f;
        return 0;
    }
    int surrogate = !GetFileInformationByHandleEx(HANDLE_OF(f), FileAttributeTagInfo, &tag,
                                                  sizeof tag) ||
                    IsReparseTagNameSurrogate(tag.ReparseTag);
    err = ZC_OS_ERROR_LINK_REFUSED;
    if (!surrogate && open_wide(path, access, share, OPEN_EXISTING, flags, &g) == 0) {
        if (GetFileInformationByHandle(HANDLE_OF(g), &again) && same_file(&info, &again)) {
            *out = g;
            err = 0;
        } else {
            zc_os_file_close(&g);
        }
    }
    zc_os_file_close(&f);
    return err;
}

int zc_os_file_open_read(const char *path, zc_os_file *out)
{
    /* BACKUP_SEMANTICS lets a directory open too, so that it is refused as
     * "not a regular file" like everywhere else; SEQUENTIAL_SCAN is the
     * readahead hint Windows takes only at open. */
    return open_wide(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                     OPEN_EXISTING,
                     FILE_ATTRIBUTE_NORMAL | FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_SEQUENTIAL_SCAN,
                     out);
}

int zc_os_file_create_new(const char *path, zc_os_file *out)
{
    return open_wide(path, GENERIC_WRITE, 0, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, out);
}

int zc_os_file_info(zc_os_file f, uint64_t *size, int *is_regular)
{
    BY_HANDLE_FILE_INFORMATION info;
    if (GetFileType(HANDLE_OF(f)) != FILE_TYPE_DISK) {
        *size = 0;
        *is_regular = 0;
        return 0;
    }
    if (!GetFileInformationByHandle(HANDLE_OF(f), &info))
        return (int)GetLastError();
    *size = ((uint64_t)info.nFileSizeHigh << 32) | info.nFileSizeLow;
    *is_regular = (info.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_DEVICE)) == 0;
    return 0;
}

int zc_os_file_read_at(zc_os_file f, void *buf, size_t n, uint64_t off, size_t *got)
{
    size_t done = 0;
    while (done < n) {
        DWORD step = n - done < IO_CHUNK ? (DWORD)(n - done) : IO_CHUNK, r = 0;
        OVERLAPPED ov = {0};
        uint64_t at = off + done;
        ov.Offset = (DWORD)at;
        ov.OffsetHigh = (DWORD)(at >> 32);
        if (!ReadFile(HANDLE_OF(f), (unsigned char *)buf + done, step, &r, &ov)) {
            DWORD err = GetLastError();
            if (err == ERROR_HANDLE_EOF)
                break;
            *got = done;
            return (int)err;
        }
        if (r == 0)
            break;
        done += r;
    }
    *got = done;
    return 0;
}

int zc_os_file_write_all(zc_os_file f, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    while (n > 0) {
        DWORD step = n < IO_CHUNK ? (DWORD)n : IO_CHUNK, w = 0;
        if (!WriteFile(HANDLE_OF(f), p, step, &w, NULL))
            return (int)GetLastError();
        if (w == 0)
            return ERROR_WRITE_FAULT;
        p += w;
        n -= w;
    }
    return 0;
}

int zc_os_file_sync(zc_os_file f)
{
    return FlushFileBuffers(HANDLE_OF(f)) ? 0 : (int)GetLastError();
}

int zc_os_file_close(zc_os_file *f)
{
    if (f->handle == -1)
        return 0;
    int err = CloseHandle(HANDLE_OF(*f)) ? 0 : (int)GetLastError();
    f->handle = -1;
    return err;
}

int zc_os_file_preallocate(zc_os_file f, uint64_t total)
{
    /* Reserve clusters without changing the file's size: a full disk shows
     * now.  Anything but a full disk (an old or foreign file system) is
     * ignored, as on POSIX. */
    FILE_ALLOCATION_INFO info;
    info.AllocationSize.QuadPart = (LONGLONG)total;
    if (total == 0 || SetFileInformationByHandle(HANDLE_OF(f), FileAllocationInfo, &info,
                                                 sizeof info))
        return 0;
    int err = (int)GetLastError();
    return zc_os_error_is(err, ZC_OS_NO_SPACE) ? err : 0;
}

void zc_os_file_start_writeback(zc_os_file f, uint64_t from, uint64_t to)
{
    (void)f;
    (void)from;
    (void)to;
}

void zc_os_file_advise(zc_os_file f, uint64_t off, uint64_t len, zc_os_advice advice)
{
    /* FILE_FLAG_SEQUENTIAL_SCAN was given at open; Windows has no later hint. */
    (void)f;
    (void)off;
    (void)len;
    (void)advice;
}

int zc_os_file_open_rw(const char *path, zc_os_file *out)
{
    return open_no_link(path, GENERIC_READ | GENERIC_WRITE,
                        FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, OPEN_ALWAYS,
                        FILE_ATTRIBUTE_NORMAL, out);
}

int zc_os_file_open_read_nofollow(const char *path, zc_os_file *out)
{
    /* As zc_os_file_open_read, less BACKUP_SEMANTICS: a directory fails to open here.  Spill
     * files are restored through it: the same readahead hint. */
    return open_no_link(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                        OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL | FILE_FLAG_SEQUENTIAL_SCAN, out);
}

int zc_os_file_check_private(zc_os_file f, uint64_t *links)
{
    BY_HANDLE_FILE_INFORMATION info;
    if (links != NULL)
        *links = 0;
    if (GetFileType(HANDLE_OF(f)) != FILE_TYPE_DISK)
        return ZC_OS_ERROR_NOT_REGULAR; /* a pipe, console or other character device */
    if (!GetFileInformationByHandle(HANDLE_OF(f), &info))
        return (int)GetLastError();
    if (links != NULL)
        *links = info.nNumberOfLinks;
    /* A reparse point is not refused here: the no-follow opens refuse the
     * name surrogates (links, junctions), and the others are files (a
     * cloud-sync placeholder of a OneDrive folder, deduplicated data). */
    if (info.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_DEVICE))
        return ZC_OS_ERROR_NOT_REGULAR;
    /* 0 names: deleted since the open (POSIX-semantics delete). */
    return info.nNumberOfLinks > 1 ? ZC_OS_ERROR_HARD_LINKED : 0;
}

int zc_os_file_is_at(zc_os_file f, const char *path, int *same)
{
    BY_HANDLE_FILE_INFORMATION a, b;
    zc_os_file g = ZC_OS_FILE_CLOSED;
    *same = 0;
    if (!GetFileInformationByHandle(HANDLE_OF(f), &a))
        return (int)GetLastError();
    /* The name itself, never a link's target; no access needed to read its
     * identity, shared with everything so no handle is disturbed. */
    int err = open_wide(path, 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                        OPEN_EXISTING, FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS,
                        &g);
    if (err != 0)
        return zc_os_error_is(err, ZC_OS_NOT_FOUND) ? 0 : err;
    if (GetFileInformationByHandle(HANDLE_OF(g), &b))
        *same = same_file(&a, &b);
    else
        err = (int)GetLastError();
    zc_os_file_close(&g);
    return err;
}

int zc_os_path_owner(const char *path, long *uid, unsigned *mode)
{
    (void)path;
    *uid = -1;
    *mode = 0;
    return ERROR_NOT_SUPPORTED; /* owners and modes are ACLs here */
}

int zc_os_file_write_at(zc_os_file f, const void *buf, size_t n, uint64_t off)
{
    const unsigned char *p = buf;
    while (n > 0) {
        DWORD step = n < IO_CHUNK ? (DWORD)n : IO_CHUNK, w = 0;
        OVERLAPPED ov = {0};
        ov.Offset = (DWORD)off;
        ov.OffsetHigh = (DWORD)(off >> 32);
        if (!WriteFile(HANDLE_OF(f), p, step, &w, &ov))
            return (int)GetLastError();
        if (w == 0)
            return ERROR_WRITE_FAULT;
        p += w;
        n -= w;
        off += w;
    }
    return 0;
}

/* The one byte every lock covers (see platform.h). */
static OVERLAPPED lock_region(void)
{
    OVERLAPPED ov = {0};
    ov.Offset = (DWORD)ZC_OS_LOCK_OFFSET;
    ov.OffsetHigh = (DWORD)(ZC_OS_LOCK_OFFSET >> 32);
    return ov;
}

int zc_os_file_lock(zc_os_file f, int exclusive, int wait, int *acquired)
{
    OVERLAPPED ov = lock_region();
    DWORD flags = (exclusive ? LOCKFILE_EXCLUSIVE_LOCK : 0) | (wait ? 0 : LOCKFILE_FAIL_IMMEDIATELY);
    *acquired = 0;
    if (LockFileEx(HANDLE_OF(f), flags, 0, 1, 0, &ov)) {
        *acquired = 1;
        return 0;
    }
    DWORD err = GetLastError();
    if (!wait && (err == ERROR_LOCK_VIOLATION || err == ERROR_IO_PENDING))
        return 0; /* held by another handle */
    return (int)err;
}

int zc_os_file_unlock(zc_os_file f)
{
    OVERLAPPED ov = lock_region();
    if (UnlockFileEx(HANDLE_OF(f), 0, 1, 0, &ov))
        return 0;
    DWORD err = GetLastError();
    /* Not locked: ERROR_NOT_LOCKED on Windows, ERROR_LOCK_VIOLATION under wine. */
    return err == ERROR_NOT_LOCKED || err == ERROR_LOCK_VIOLATION ? 0 : (int)err;
}
