/*
 * private_file.c — opening the files of a spill folder that the engine
 * writes, locks or trusts (a tag's counter, the folder lock, a film's
 * choices file), so that nothing outside the folder is ever written,
 * locked or served through a name in it: never through a symbolic link
 * (the no-follow opens), and only a regular file with one name, checked on
 * the open handle (zc_os_file_check_private).  Anything else found under
 * such a name (a hard link to a file elsewhere, a FIFO, a device) is
 * renamed aside with ZC_REJECTED_SUFFIX, never deleted, and the caller is
 * told so it can say it.  Also the folder lock ZC_FOLDER_LOCK, taken by a
 * store that opens and by a film's choice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Rename path aside while it still names the file f has open: to
 * <path>ZC_REJECTED_SUFFIX, or when a file rejected before holds that name,
 * <path>.<n>ZC_REJECTED_SUFFIX (never over one: each stays as found, and a
 * rename onto another name of the same file would do nothing). */
static int rename_aside(const char *path, zc_os_file f, int *number)
{
    size_t cap = strlen(path) + sizeof ZC_REJECTED_SUFFIX + 8;
    char *aside = malloc(cap);
    int same = 0, err;
    *number = 0;
    if (aside == NULL)
        return -1;
    err = zc_os_file_is_at(f, path, &same);
    for (int k = 1; err == 0 && same && *number == 0 && k <= 99; k++) {
        if (k == 1)
            snprintf(aside, cap, "%s%s", path, ZC_REJECTED_SUFFIX);
        else
            snprintf(aside, cap, "%s.%d%s", path, k, ZC_REJECTED_SUFFIX);
        err = zc_os_rename_noreplace(path, aside);
        if (err == 0) {
            /* A rename onto another name of the same file "succeeds" doing
             * nothing (POSIX rename, and wine's): the name must be gone. */
            int still = 0;
            err = zc_os_file_is_at(f, path, &still);
            if (err == 0 && !still)
                *number = k;
        } else if (zc_os_error_is(err, ZC_OS_EXISTS)) {
            err = 0; /* taken: the next number */
        }
    }
    if (*number != 0)
        zc_os_sync_parent_dir(path);
    free(aside);
    return *number != 0 ? 0 : -1;
}

int zc__open_private(const char *path, int create, zc_os_file *out, zc_refusal *refused)
{
    memset(refused, 0, sizeof *refused);
    *out = ZC_OS_FILE_CLOSED;
    /* Twice at most: the file found, and after it was renamed aside a new one
     * (create) or none.  A third would be a race with whoever plants them. */
    for (int attempt = 0; attempt < 2; attempt++) {
        zc_os_file f = ZC_OS_FILE_CLOSED;
        uint64_t links = 0;
        int err = create ? zc_os_file_open_rw(path, &f) : zc_os_file_open_read_nofollow(path, &f);
        if (err != 0)
            return err;
        err = zc_os_file_check_private(f, &links);
        if (err == 0) {
            *out = f;
            return 0;
        }
        if (!zc_os_error_is(err, ZC_OS_NOT_PRIVATE) || attempt > 0 || refused->err != 0) {
            zc_os_file_close(&f);
            return err;
        }
        refused->err = err;
        refused->links = links;
        refused->renamed = rename_aside(path, f, &refused->aside) == 0;
        zc_os_file_close(&f);
        if (!refused->renamed)
            return err;
    }
    return refused->err;
}

void zc__refusal_text(const zc_refusal *r, const char *what, const char *path, const char *after,
                      char *buf, size_t cap)
{
    char links[64] = "", number[16] = "";
    if (r->err == ZC_OS_ERROR_HARD_LINKED)
        snprintf(links, sizeof links, " (it had %llu names)", (unsigned long long)r->links);
    if (r->aside > 1)
        snprintf(number, sizeof number, ".%d", r->aside);
    if (r->renamed)
        snprintf(buf, cap, "%s \"%s\" was refused: %s%s; it was renamed to \"%s%s%s\" (kept, "
                 "never deleted)%s%s; find out how it came there, then delete it", what, path,
                 ZC_OS_WHY(r->err), links, path, number, ZC_REJECTED_SUFFIX, after ? "; " : "",
                 after ? after : "");
    else
        snprintf(buf, cap, "%s \"%s\" was refused: %s%s; it could not be renamed aside: remove "
                 "it (a new one is made)", what, path, ZC_OS_WHY(r->err), links);
}

int zc__folder_lock(const char *dir, zc_folder_lock *l, zc_refusal *refused)
{
    size_t n = strlen(dir);
    char *path = malloc(n + sizeof ZC_FOLDER_LOCK + 1);
    int err, locked = 0;
    memset(refused, 0, sizeof *refused);
    l->file = ZC_OS_FILE_CLOSED;
    l->locked = 0;
    if (path == NULL)
        return zc__fail(ZC_E_NOMEM, "out of host memory locking spill directory \"%s\"", dir);
    memcpy(path, dir, n);
    path[n] = '/';
    memcpy(path + n + 1, ZC_FOLDER_LOCK, sizeof ZC_FOLDER_LOCK);
    zc_os_mutex_lock(zc__shared_folder_mutex());
    err = zc__open_private(path, 1, &l->file, refused);
    if (err == 0 && !zc__shared_locks_disabled_for_tests)
        err = zc_os_file_lock(l->file, 1, 1, &locked);
    l->locked = err == 0 && locked;
    if (!l->locked)
        zc_os_file_close(&l->file); /* no locks here: the mutex alone, within this process */
    free(path);
    if (err != 0 && !zc_os_error_is(err, ZC_OS_UNSUPPORTED)) {
        zc_os_mutex_unlock(zc__shared_folder_mutex());
        return zc__fail(ZC_E_IO, "cannot lock \"%s\" in spill directory \"%s\": %s", ZC_FOLDER_LOCK,
                        dir, ZC_OS_WHY(err));
    }
    return ZC_OK;
}

void zc__folder_unlock(zc_folder_lock *l)
{
    if (l->file.handle != -1) {
        zc_os_file_unlock(l->file);
        zc_os_file_close(&l->file);
    }
    l->locked = 0;
    zc_os_mutex_unlock(zc__shared_folder_mutex());
}
