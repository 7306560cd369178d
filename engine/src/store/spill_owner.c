/*
 * spill_owner.c — whose temporary files are whose, in a spill folder that
 * several processes share.  A process names its temporary files
 * ZC_TMP_PREFIX<token>-... with its process token (shared_process.c), and
 * every open store holds an exclusive lock on an owner file
 * ZC_OWNER_PREFIX<token>-<n>ZC_OWNER_SUFFIX for as long as it is open; the
 * OS drops the lock when the process ends, a crash or a kill included.
 *
 * A store that opens takes the folder lock ZC_FOLDER_LOCK, creates and
 * locks its owner file, and only then looks at the others: a token whose
 * owner files are all unlocked (their process is gone) or that has none
 * (a crash before any store opened, or an engine from before shared folders, whose
 * temporary files say a pid instead) is dead, and its temporary files and
 * owner files go.  Every other token is alive and its files stay: this
 * process's own token, and a token with a locked owner file.  Owner files
 * are only ever created under the folder lock, so an unlocked one is never
 * one whose store is about to lock it; a reused pid changes nothing, since
 * it is the lock, not the number, that says a process is alive.
 *
 * On a file system without file locks nobody can tell, so nothing of
 * another token's is removed (temporary files of crashes then stay).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

/* Stores of this process ever opened: numbers their owner files. */
static atomic_ulong owner_counter;

struct zc_owner_scan {
    zc_folder_lock folder_lock; /* ZC_FOLDER_LOCK and the process's folder mutex */
    zc_name_list temps;        /* ZC_TMP_PREFIX files */
    zc_name_list owners;       /* ZC_OWNER_PREFIX files */
};

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The token at p: ZC_TOKEN_LEN lowercase hex digits and then '-'.  0 (and
 * out) if so, -1 if p names no token (an older engine's pid, say). */
static int parse_token(const char *p, char out[ZC_TOKEN_LEN + 1])
{
    for (int i = 0; i < ZC_TOKEN_LEN; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return -1;
    if (p[ZC_TOKEN_LEN] != '-')
        return -1;
    memcpy(out, p, ZC_TOKEN_LEN);
    out[ZC_TOKEN_LEN] = '\0';
    return 0;
}

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir), m = strlen(name);
    char *p = malloc(n + m + 2);
    if (p) {
        memcpy(p, dir, n);
        p[n] = '/';
        memcpy(p + n + 1, name, m + 1);
    }
    return p;
}

/* Create and lock this store's owner file. */
static int create_owner(zc_store *s)
{
    char token[ZC_TOKEN_LEN + 1], name[96];
    zc__process_token(token);
    int err = 0;
    for (int attempt = 0; attempt < 64; attempt++) {
        snprintf(name, sizeof name, ZC_OWNER_PREFIX "%s-%lu" ZC_OWNER_SUFFIX, token,
                 (unsigned long)atomic_fetch_add(&owner_counter, 1));
        char *path = join(s->spill_dir, name);
        if (path == NULL)
            return zc__fail(ZC_E_NOMEM, "out of host memory opening a store");
        zc_os_file f = ZC_OS_FILE_CLOSED;
        int locked = 0;
        if ((err = zc_os_file_create_new(path, &f)) == 0 &&
            (err = zc_os_file_lock(f, 1, 0, &locked)) == 0 && locked) {
            char text[48];
            int n = snprintf(text, sizeof text, "pid %ld\n", zc_os_pid());
            (void)zc_os_file_write_all(f, text, (size_t)n); /* for people; nobody reads it */
            s->owner_file = f;
            s->owner_path = path;
            return ZC_OK;
        }
        if (f.handle != -1) { /* created but not locked: not ours to keep */
            zc_os_file_close(&f);
            zc_os_remove(path);
        }
        free(path);
        if (err != 0 && !zc_os_error_is(err, ZC_OS_EXISTS))
            break;
    }
    return zc__fail(ZC_E_IO, "cannot create an owner file in spill directory \"%s\": %s",
                    s->spill_dir, err ? ZC_OS_WHY(err) : "it stayed locked by another process");
}

int zc__owner_begin(zc_store *s, zc_owner_scan **out)
{
    *out = NULL;
    zc_owner_scan *scan = calloc(1, sizeof *scan);
    char *lock_path = join(s->spill_dir, ZC_FOLDER_LOCK);
    if (scan == NULL || lock_path == NULL) {
        free(scan);
        free(lock_path);
        return zc__fail(ZC_E_NOMEM, "out of host memory opening a store");
    }
    zc_refusal refused;
    int rc = zc__folder_lock(s->spill_dir, &scan->folder_lock, &refused);
    if (refused.err != 0) { /* a planted hard link or FIFO: renamed aside, a new lock made */
        char note[ZC__NOTE_BYTES];
        zc__refusal_text(&refused, "the folder lock", lock_path,
                         "a new one was made and the store opened", note, sizeof note);
        zc__spill_note_rejected(s, "%s", note);
    }
    free(lock_path);
    if (rc != ZC_OK) {
        free(scan);
        return rc;
    }
    s->shared_locks = scan->folder_lock.locked;
    if (s->shared_locks && (rc = create_owner(s)) != ZC_OK) {
        zc__folder_unlock(&scan->folder_lock);
        free(scan);
        return rc;
    }
    *out = scan;
    return ZC_OK;
}

int zc__owner_note(zc_owner_scan *scan, const char *name)
{
    size_t len = strlen(name), slen = strlen(ZC_OWNER_SUFFIX);
    if (starts_with(name, ZC_TMP_PREFIX))
        return zc__name_list_add(&scan->temps, name) == 0 ? 1 : -1;
    if (starts_with(name, ZC_OWNER_PREFIX) && len > slen &&
        strcmp(name + len - slen, ZC_OWNER_SUFFIX) == 0)
        return zc__name_list_add(&scan->owners, name) == 0 ? 1 : -1;
    return starts_with(name, ZC_GEN_PREFIX) || strcmp(name, ZC_FOLDER_LOCK) == 0;
}

typedef struct {
    char token[ZC_TOKEN_LEN + 1];
    int alive;
} token_state;

/* Whose is each owner file: alive tokens, and the files of dead owners
 * (each held open under a shared lock until it is removed). */
static int judge_owners(zc_store *s, zc_owner_scan *scan, const char *own, token_state *tokens,
                        zc_os_file *dead, int *others_alive)
{
    const char *own_name = zc_os_last_separator(s->owner_path) + 1;
    for (size_t i = 0; i < scan->owners.count; i++) {
        const char *name = scan->owners.names[i];
        token_state *t = &tokens[i];
        t->alive = 1;
        if (parse_token(name + strlen(ZC_OWNER_PREFIX), t->token) != 0) {
            t->token[0] = '\0'; /* not ours to judge */
            continue;
        }
        if (strcmp(name, own_name) == 0)
            continue;
        if (strcmp(t->token, own) == 0)
            continue; /* another store of this process: never opened, its lock would go */
        char *path = join(s->spill_dir, name);
        if (path == NULL)
            return zc__fail(ZC_E_NOMEM, "out of host memory opening a store");
        zc_os_file f = ZC_OS_FILE_CLOSED;
        /* Never through a planted link: it would lock a file elsewhere. */
        int locked = 0, err = zc_os_file_open_read_nofollow(path, &f);
        free(path);
        if (err != 0) {
            /* Gone meanwhile (its store closed), or not openable (Windows
             * sharing: a live handle) — only "gone" says dead. */
            if (zc_os_error_is(err, ZC_OS_NOT_FOUND))
                t->alive = 0;
            continue;
        }
        /* Only an owner file of ours is locked: a hard link planted under an
         * owner file's name would lock its other name (zc_os_file_check_private);
         * such a name is left alone, as if alive. */
        if (zc_os_file_check_private(f, NULL) != 0) {
            zc_os_file_close(&f);
            continue;
        }
        if (zc_os_file_lock(f, 0, 0, &locked) == 0 && locked) {
            t->alive = 0;
            dead[i] = f; /* removed, then closed, once its temporary files are gone */
        } else {
            zc_os_file_close(&f);
        }
    }
    *others_alive = 0;
    for (size_t i = 0; i < scan->owners.count; i++)
        if (tokens[i].token[0] && tokens[i].alive && strcmp(scan->owners.names[i], own_name) != 0)
            *others_alive = 1;
    return ZC_OK;
}

/* 1 if the temporary file name belongs to a live process. */
static int temp_is_alive(const char *name, const char *own, const token_state *tokens, size_t n)
{
    char token[ZC_TOKEN_LEN + 1];
    if (parse_token(name + strlen(ZC_TMP_PREFIX), token) != 0)
        return 0; /* an older engine's leftover: no owner can vouch for it */
    if (strcmp(token, own) == 0)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (tokens[i].alive && strcmp(tokens[i].token, token) == 0)
            return 1;
    return 0; /* every owner file dead, or none at all */
}

static void remove_in(const zc_store *s, const char *name)
{
    char *path = join(s->spill_dir, name);
    if (path)
        zc_os_remove(path);
    free(path);
}

int zc__owner_end(zc_store *s, zc_owner_scan *scan, int *alone)
{
    char own[ZC_TOKEN_LEN + 1];
    size_t n = scan->owners.count;
    token_state *tokens = calloc(n ? n : 1, sizeof *tokens);
    zc_os_file *dead = calloc(n ? n : 1, sizeof *dead);
    int rc = ZC_OK, others_alive = 0;
    *alone = 1;
    zc__process_token(own);
    for (size_t i = 0; dead && i < n; i++)
        dead[i] = ZC_OS_FILE_CLOSED;
    if (tokens == NULL || dead == NULL)
        rc = zc__fail(ZC_E_NOMEM, "out of host memory opening a store");
    else if (s->shared_locks)
        rc = judge_owners(s, scan, own, tokens, dead, &others_alive);
    if (rc == ZC_OK && s->shared_locks) {
        for (size_t i = 0; i < scan->temps.count; i++)
            if (!temp_is_alive(scan->temps.names[i], own, tokens, n))
                remove_in(s, scan->temps.names[i]);
        *alone = !others_alive;
    }
    for (size_t i = 0; dead && i < n; i++) {
        if (dead[i].handle == -1)
            continue;
        if (rc == ZC_OK)
            remove_in(s, scan->owners.names[i]);
        zc_os_file_close(&dead[i]);
    }
    free(tokens);
    free(dead);
    zc__folder_unlock(&scan->folder_lock);
    zc__name_list_free(&scan->temps);
    zc__name_list_free(&scan->owners);
    free(scan);
    return rc;
}

void zc__owner_release(zc_store *s)
{
    if (s->owner_path == NULL)
        return;
    /* Closed first (Windows cannot remove a file its handle does not share
     * for deletion); a store opening meanwhile finds it dead with no
     * temporary file of ours left, and may remove it first. */
    zc_os_file_close(&s->owner_file);
    zc_os_remove(s->owner_path);
    free(s->owner_path);
    s->owner_path = NULL;
}
