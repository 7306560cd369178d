/*
 * win32_path.c — UTF-8 paths to UTF-16 (long paths included), renames,
 * removal, directories and their listing.
 */
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "win32_internal.h"

/* CreateDirectoryW refuses MAX_PATH - 12 characters and more without \\?\. */
#define SHORT_PATH_MAX (MAX_PATH - 12)

/* Not in every SDK's headers (Windows 10 1709 added them). */
#define ZC_FILE_RENAME_INFO_EX 22 /* FileRenameInfoEx */
#define ZC_RENAME_REPLACE_IF_EXISTS 0x1
#define ZC_RENAME_POSIX_SEMANTICS 0x2

static wchar_t *to_wide(const char *s, const wchar_t *suffix, int *err)
{
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
    size_t extra = suffix ? wcslen(suffix) : 0;
    if (n <= 0) {
        *err = (int)GetLastError();
        return NULL;
    }
    wchar_t *w = malloc(((size_t)n + extra) * sizeof *w);
    if (w == NULL) {
        *err = ERROR_NOT_ENOUGH_MEMORY;
        return NULL;
    }
    MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n);
    if (suffix)
        wcscat(w, suffix);
    for (wchar_t *p = w; *p; p++)
        if (*p == L'/')
            *p = L'\\';
    return w;
}

/* "\\?\" + the full path of w ("\\?\UNC\" for \\server\share...), which
 * also resolves "." and ".." the way the shorter form would have. */
static wchar_t *long_form(wchar_t *w, int *err)
{
    DWORD need = GetFullPathNameW(w, 0, NULL, NULL);
    if (need == 0) {
        *err = (int)GetLastError();
        free(w);
        return NULL;
    }
    wchar_t *full = malloc(((size_t)need + 8) * sizeof *full);
    if (full == NULL) {
        *err = ERROR_NOT_ENOUGH_MEMORY;
        free(w);
        return NULL;
    }
    wchar_t *body = full + 4;
    DWORD got = GetFullPathNameW(w, need, body, NULL);
    free(w);
    if (got == 0 || got >= need) {
        *err = got == 0 ? (int)GetLastError() : ERROR_FILENAME_EXCED_RANGE;
        free(full);
        return NULL;
    }
    if (body[0] == L'\\' && body[1] == L'\\') { /* \\server\share\x -> \\?\UNC\server\share\x */
        memmove(full + 8, body + 2, ((size_t)got - 1) * sizeof *full);
        memcpy(full, L"\\\\?\\UNC\\", 8 * sizeof *full);
    } else {
        memcpy(full, L"\\\\?\\", 4 * sizeof *full);
    }
    return full;
}

wchar_t *zc__win_path(const char *path, const wchar_t *suffix, int *err)
{
    wchar_t *w = to_wide(path, suffix, err);
    if (w == NULL || wcslen(w) < SHORT_PATH_MAX || wcsncmp(w, L"\\\\?\\", 4) == 0)
        return w;
    return long_form(w, err);
}

int zc__win_utf8(const wchar_t *w, char *buf, size_t cap)
{
    int cap_int = cap > 0x7fffffff ? 0x7fffffff : (int)cap;
    if (WideCharToMultiByte(CP_UTF8, 0, w, -1, buf, cap_int, NULL, NULL) == 0)
        return (int)GetLastError();
    return 0;
}

/* The POSIX-semantics rename of Windows 10 1709+ on NTFS: replaces `to`
 * even while a reader holds it (the reader keeps the old bytes).  Opened
 * for writing too, so the rename can be flushed like MOVEFILE_WRITE_THROUGH
 * would. */
static int posix_rename(const wchar_t *from, const wchar_t *to)
{
    HANDLE h = CreateFileW(from, DELETE | GENERIC_WRITE,
                           FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                           OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
    if (h == INVALID_HANDLE_VALUE)
        return (int)GetLastError();
    size_t name_bytes = wcslen(to) * sizeof(wchar_t);
    struct {
        DWORD flags; /* the union of ReplaceIfExists and Flags in FILE_RENAME_INFO */
        HANDLE root;
        DWORD name_length;
        WCHAR name[1];
    } *info = calloc(1, sizeof *info + name_bytes);
    int err = 0;
    if (info == NULL) {
        err = ERROR_NOT_ENOUGH_MEMORY;
    } else {
        info->flags = ZC_RENAME_REPLACE_IF_EXISTS | ZC_RENAME_POSIX_SEMANTICS;
        info->name_length = (DWORD)name_bytes;
        memcpy(info->name, to, name_bytes);
        if (!SetFileInformationByHandle(h, (FILE_INFO_BY_HANDLE_CLASS)ZC_FILE_RENAME_INFO_EX, info,
                                        (DWORD)(sizeof *info + name_bytes)))
            err = (int)GetLastError();
        else if (!FlushFileBuffers(h))
            err = (int)GetLastError();
        free(info);
    }
    CloseHandle(h);
    return err;
}

int zc_os_replace(const char *from, const char *to)
{
    int err = 0;
    wchar_t *wf = zc__win_path(from, NULL, &err), *wt = wf ? zc__win_path(to, NULL, &err) : NULL;
    if (wt != NULL) {
        if (MoveFileExW(wf, wt, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) {
            err = 0;
        } else if ((err = (int)GetLastError()) == ERROR_ACCESS_DENIED &&
                   GetFileAttributesW(wt) != INVALID_FILE_ATTRIBUTES) {
            /* MoveFileExW cannot replace a file that a reader holds open,
             * even one shared for deletion. */
            int posix = posix_rename(wf, wt);
            if (posix == 0 || !(posix == ERROR_INVALID_PARAMETER || posix == ERROR_NOT_SUPPORTED ||
                                posix == ERROR_INVALID_FUNCTION))
                err = posix;
            else
                err = ZC_WIN_ERROR_TARGET_OPEN;
        }
    }
    free(wf);
    free(wt);
    return err;
}

int zc_os_rename_noreplace(const char *from, const char *to)
{
    int err = 0;
    wchar_t *wf = zc__win_path(from, NULL, &err), *wt = wf ? zc__win_path(to, NULL, &err) : NULL;
    if (wt != NULL && !MoveFileExW(wf, wt, MOVEFILE_WRITE_THROUGH))
        err = (int)GetLastError();
    free(wf);
    free(wt);
    return err;
}

int zc_os_sync_parent_dir(const char *path)
{
    /* Nothing to sync (MOVEFILE_WRITE_THROUGH did it); the directory must
     * still exist, as on POSIX. */
    size_t len = strlen(path);
    const char *slash = zc_os_last_separator(path);
    char *dir = malloc(len + 2);
    if (dir == NULL)
        return ERROR_NOT_ENOUGH_MEMORY;
    if (slash == NULL) {
        memcpy(dir, ".", 2);
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        memcpy(dir, path, n);
        dir[n] = '\0';
        if (n == 2 && dir[1] == ':') /* "C:\x": the root, not C:'s current directory */
            memcpy(dir + 2, "\\", 2);
    }
    zc_os_path_kind kind;
    int err = zc_os_stat(dir, &kind, NULL);
    free(dir);
    if (err == 0 && kind != ZC_OS_PATH_DIR)
        err = ERROR_DIRECTORY;
    return err;
}

int zc_os_remove(const char *path)
{
    int err = 0;
    wchar_t *w = zc__win_path(path, NULL, &err);
    if (w != NULL && !DeleteFileW(w))
        err = (int)GetLastError();
    free(w);
    return err;
}

int zc_os_mkdir(const char *path)
{
    int err = 0;
    wchar_t *w = zc__win_path(path, NULL, &err);
    if (w != NULL && !CreateDirectoryW(w, NULL))
        err = (int)GetLastError();
    free(w);
    return err;
}

int zc_os_stat(const char *path, zc_os_path_kind *kind, uint64_t *size)
{
    int err = 0;
    WIN32_FILE_ATTRIBUTE_DATA data;
    wchar_t *w = zc__win_path(path, NULL, &err);
    if (w != NULL && !GetFileAttributesExW(w, GetFileExInfoStandard, &data))
        err = (int)GetLastError();
    free(w);
    if (err != 0)
        return err;
    DWORD a = data.dwFileAttributes;
    *kind = a & FILE_ATTRIBUTE_DIRECTORY ? ZC_OS_PATH_DIR
            : a & FILE_ATTRIBUTE_DEVICE  ? ZC_OS_PATH_OTHER
                                         : ZC_OS_PATH_FILE;
    if (size)
        *size = ((uint64_t)data.nFileSizeHigh << 32) | data.nFileSizeLow;
    return 0;
}

int zc_os_dir_writable(const char *path)
{
    zc_os_path_kind kind;
    int err = zc_os_stat(path, &kind, NULL);
    if (err == 0 && kind != ZC_OS_PATH_DIR)
        err = ERROR_DIRECTORY;
    return err;
}

struct zc_os_dir {
    HANDLE find;
    int have;                  /* data holds an entry not yet returned */
    int pending;               /* an error FindNextFileW gave after that entry */
    WIN32_FIND_DATAW data;
    char name[MAX_PATH * 3 + 1]; /* cFileName (260 UTF-16 units) as UTF-8 */
};

int zc_os_dir_open(const char *path, zc_os_dir **out)
{
    int err = 0;
    wchar_t *pattern = zc__win_path(path, L"\\*", &err);
    if (pattern == NULL)
        return err;
    zc_os_dir *d = calloc(1, sizeof *d);
    if (d == NULL) {
        free(pattern);
        return ERROR_NOT_ENOUGH_MEMORY;
    }
    d->find = FindFirstFileW(pattern, &d->data);
    free(pattern);
    if (d->find == INVALID_HANDLE_VALUE) {
        err = (int)GetLastError();
        if (err != ERROR_FILE_NOT_FOUND) { /* that one means: no entries */
            free(d);
            return err;
        }
    } else {
        d->have = 1;
    }
    *out = d;
    return 0;
}

int zc_os_dir_next(zc_os_dir *d, const char **name)
{
    *name = NULL;
    while (d->have) {
        d->have = 0;
        const wchar_t *n = d->data.cFileName;
        int dots = wcscmp(n, L".") == 0 || wcscmp(n, L"..") == 0;
        int err = dots ? 0 : zc__win_utf8(n, d->name, sizeof d->name); /* before data changes */
        if (FindNextFileW(d->find, &d->data))
            d->have = 1;
        else if (GetLastError() != ERROR_NO_MORE_FILES)
            d->pending = (int)GetLastError(); /* reported after this entry */
        if (err != 0)
            return err;
        if (!dots) {
            *name = d->name;
            return 0;
        }
    }
    return d->pending;
}

void zc_os_dir_close(zc_os_dir *d)
{
    if (d == NULL)
        return;
    if (d->find != INVALID_HANDLE_VALUE)
        FindClose(d->find);
    free(d);
}

int zc_os_is_separator(char c)
{
    return c == '/' || c == '\\';
}

const char *zc_os_last_separator(const char *path)
{
    const char *a = strrchr(path, '/'), *b = strrchr(path, '\\');
    if (a == NULL || b == NULL)
        return a ? a : b;
    return a > b ? a : b;
}
