/*
 * generation_numbers.c — generation numbers that are unique across every process
 * sharing a spill folder.  Each tag has a counter file ZC_GEN_PREFIX<tag>
 * holding two fixed-width numbers, "<last> <changes>\n": the highest
 * generation handed out for the tag in the folder, and how many times its
 * spill files changed (a file landed, was pruned, rejected or dropped).
 * Updates happen under an exclusive lock of the counter file (other
 * processes) and zc__shared_tag_mutex (this process: its fcntl lock would
 * not exclude its own threads); reads take a shared lock, so they never see
 * half an update.
 *
 * The counter is not made durable (no fsync on the put path).  A counter a
 * power loss rolled back, truncated or zeroed cannot make a number come
 * again: allocation also goes above what the store indexed, and skips every
 * generation that has a spill file (or one renamed aside).  Numbers only in
 * memory when the power went are lost with that memory, so reusing them
 * mixes nothing up.
 *
 * The counter file is opened without following a symbolic link
 * (zc_os_file_open_rw, zc_os_file_open_read_nofollow): a link planted in its
 * place is refused with a message naming it, never written or locked through.
 * And only a regular file with one name is read, locked or written
 * (zc__open_private, checked on the open handle): a hard link planted in its
 * place (ln victim .zc-gen-<tag>), whose other name may lie anywhere, or a
 * FIFO, is renamed aside to ".rejected", the store notes it (files_rejected,
 * "last_rejected"), and a new counter is made, which allocation survives as
 * it survives a zeroed one.
 */
#include <stdio.h>
#include <string.h>

#include "store_internal.h"

#define FIELD_DIGITS 20
#define COUNTER_BYTES (2 * FIELD_DIGITS + 2) /* "<20 digits> <20 digits>\n" */

static int counter_path(const zc_store *s, const char *tag, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s/" ZC_GEN_PREFIX "%s", s->spill_dir, tag);
    if (n < 0 || (size_t)n >= cap)
        return zc__fail(ZC_E_LIMIT, "counter path for tag \"%s\" is longer than %zu bytes; use a "
                        "shorter spill directory", tag, cap);
    return ZC_OK;
}

/* 20 decimal digits at p, or -1. */
static int parse_field(const char *p, uint64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < FIELD_DIGITS; i++) {
        if (p[i] < '0' || p[i] > '9' || zc__mul_u64(v, 10, &v) != 0 ||
            zc__add_u64(v, (uint64_t)(p[i] - '0'), &v) != 0)
            return -1;
    }
    *out = v;
    return 0;
}

/* The counter in the bytes read; anything else (empty, torn by a power
 * loss, edited) reads as zero, which allocation survives (see the top).  So
 * does a field above ZC_MAX_GENERATION, which no engine writes (the last
 * generation is at most that, and the change count resets here long before
 * it could reach it): trusted, it would make the next number wrap or say the
 * tag used every generation, and each field's + 1 below could overflow. */
static zc_gen_counter parse_counter(const char *buf, size_t got)
{
    zc_gen_counter c = {0, 0};
    if (got != COUNTER_BYTES || buf[FIELD_DIGITS] != ' ' || buf[COUNTER_BYTES - 1] != '\n' ||
        parse_field(buf, &c.last) != 0 || parse_field(buf + FIELD_DIGITS + 1, &c.changes) != 0 ||
        c.last > ZC_MAX_GENERATION || c.changes > ZC_MAX_GENERATION)
        c.last = c.changes = 0;
    return c;
}

static int read_counter(zc_os_file f, const char *path, zc_gen_counter *out)
{
    char buf[COUNTER_BYTES + 1];
    size_t got = 0;
    int err = zc_os_file_read_at(f, buf, sizeof buf, 0, &got);
    if (err != 0)
        return zc__fail(ZC_E_IO, "cannot read generation counter %s: %s", path, ZC_OS_WHY(err));
    *out = parse_counter(buf, got);
    return ZC_OK;
}

/* Open tag's counter at path (create: for update, made when missing) as a
 * file of the engine's alone; a file refused in its place is noted. */
static int open_counter(zc_store *s, const char *path, int create, zc_os_file *f)
{
    zc_refusal refused;
    int err = zc__open_private(path, create, f, &refused);
    if (refused.err != 0) {
        char note[ZC__NOTE_BYTES];
        zc__refusal_text(&refused, "the generation counter", path,
                         create ? "a new counter was made (numbers stay unique: they also go "
                                  "above every spill file in the folder)"
                                : "the next put makes a new counter",
                         note, sizeof note);
        zc__spill_note_rejected(s, "%s", note);
    }
    return err;
}

static int lock_failed(const char *path, int err)
{
    return zc__fail(ZC_E_IO, "cannot lock generation counter %s: %s", path, ZC_OS_WHY(err));
}

int zc__gen_read(zc_store *s, const char *tag, zc_gen_counter *out, int *exists)
{
    char path[4096];
    zc_os_file f = ZC_OS_FILE_CLOSED;
    int rc = counter_path(s, tag, path, sizeof path), err, locked = 0;
    out->last = out->changes = 0;
    *exists = 0;
    if (rc != ZC_OK)
        return rc;
    zc_os_mutex *m = zc__shared_tag_mutex(tag);
    zc_os_mutex_lock(m);
    if ((err = open_counter(s, path, 0, &f)) != 0) {
        zc_os_mutex_unlock(m);
        if (zc_os_error_is(err, ZC_OS_NOT_FOUND))
            return ZC_OK;
        return zc__fail(ZC_E_IO, "cannot open generation counter %s: %s", path, ZC_OS_WHY(err));
    }
    *exists = 1;
    if (s->shared_locks && (err = zc_os_file_lock(f, 0, 1, &locked)) != 0)
        rc = lock_failed(path, err);
    if (rc == ZC_OK)
        rc = read_counter(f, path, out);
    if (locked)
        zc_os_file_unlock(f);
    zc_os_file_close(&f);
    zc_os_mutex_unlock(m);
    return rc;
}

/* Open tag's counter for update, exclusively locked; caller holds the
 * tag's mutex. */
static int open_locked(zc_store *s, const char *tag, char *path, size_t cap, zc_os_file *f,
                       zc_gen_counter *c)
{
    int rc = counter_path(s, tag, path, cap), err, locked = 0;
    if (rc != ZC_OK)
        return rc;
    if ((err = open_counter(s, path, 1, f)) != 0)
        return zc__fail(ZC_E_IO, "cannot open generation counter %s: %s", path, ZC_OS_WHY(err));
    if (s->shared_locks && (err = zc_os_file_lock(*f, 1, 1, &locked)) != 0)
        rc = lock_failed(path, err);
    if (rc == ZC_OK)
        rc = read_counter(*f, path, c);
    if (rc != ZC_OK)
        zc_os_file_close(f); /* closing drops the lock */
    return rc;
}

/* Write c and release the file (closing drops the lock). */
static int write_and_close(zc_os_file *f, const char *path, zc_gen_counter c)
{
    char buf[COUNTER_BYTES + 1];
    snprintf(buf, sizeof buf, "%0*llu %0*llu\n", FIELD_DIGITS, (unsigned long long)c.last,
             FIELD_DIGITS, (unsigned long long)c.changes);
    int err = zc_os_file_write_at(*f, buf, COUNTER_BYTES, 0);
    zc_os_file_unlock(*f);
    int cerr = zc_os_file_close(f);
    if (err == 0)
        err = cerr;
    if (err != 0)
        return zc__fail(ZC_E_IO, "cannot update generation counter %s: %s", path, ZC_OS_WHY(err));
    return ZC_OK;
}

int zc__spill_name_taken(const zc_store *s, const char *tag, uint64_t generation)
{
    char path[4200];
    zc_os_path_kind kind;
    if (zc__spill_path(s, tag, generation, path, 4096) != ZC_OK)
        return 0;
    if (zc_os_stat(path, &kind, NULL) == 0)
        return 1;
    strcat(path, ZC_REJECTED_SUFFIX);
    return zc_os_stat(path, &kind, NULL) == 0;
}

int zc__gen_allocate(zc_store *s, const char *tag, uint64_t floor, uint64_t requested,
                     uint64_t *out)
{
    char path[4096];
    zc_os_file f = ZC_OS_FILE_CLOSED;
    zc_gen_counter c;
    int rc = open_locked(s, tag, path, sizeof path, &f, &c);
    if (rc != ZC_OK)
        return rc;
    uint64_t g;
    if (requested) {
        if (zc__spill_name_taken(s, tag, requested)) {
            zc_os_file_unlock(f);
            zc_os_file_close(&f);
            return zc__fail(ZC_E_EXISTS, "tag \"%s\" already has generation %llu in the spill "
                            "folder \"%s\" (its file, or one renamed aside); choose another "
                            "generation", tag, (unsigned long long)requested, s->spill_dir);
        }
        g = requested;
    } else {
        /* Both are at most ZC_MAX_GENERATION (INT64_MAX) when they come from
         * this engine, so g never wraps; a larger one runs out at once. */
        uint64_t base = c.last > floor ? c.last : floor;
        g = base < ZC_MAX_GENERATION ? base + 1 : ZC_MAX_GENERATION + 1;
        while (g <= ZC_MAX_GENERATION && zc__spill_name_taken(s, tag, g))
            g++;
        if (g > ZC_MAX_GENERATION) {
            zc_os_file_unlock(f);
            zc_os_file_close(&f);
            return zc__fail(ZC_E_LIMIT, "tag \"%s\" has used every generation up to %llu; "
                            "use a new tag", tag, (unsigned long long)ZC_MAX_GENERATION);
        }
    }
    if (g > c.last)
        c.last = g;
    if ((rc = write_and_close(&f, path, c)) != ZC_OK)
        return rc;
    *out = g;
    return ZC_OK;
}

int zc__gen_note_change(zc_store *s, const char *tag, uint64_t *before)
{
    char path[4096];
    zc_os_file f = ZC_OS_FILE_CLOSED;
    zc_gen_counter c;
    zc_os_mutex *m = zc__shared_tag_mutex(tag);
    zc_os_mutex_lock(m);
    int rc = open_locked(s, tag, path, sizeof path, &f, &c);
    if (rc == ZC_OK) {
        *before = c.changes;
        c.changes++; /* at most ZC_MAX_GENERATION + 1 (see parse_counter): no wrap */
        rc = write_and_close(&f, path, c);
    }
    zc_os_mutex_unlock(m);
    return rc;
}
