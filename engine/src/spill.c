/*
 * spill.c — the disk tier: a background writer thread that spills slots as
 * crash-safe safetensors files "<tag>@<generation, 20 digits>.latent", the
 * index of a spill directory made at open, and lazy restore with digest
 * verification.  Files of ours that fail to restore are renamed aside with
 * ZC_REJECTED_SUFFIX, never deleted; files that are not ours are left alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

#define GEN_DIGITS 20

int zc__spill_path(const zc_store *s, const char *tag, uint64_t generation, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s/%s@%0*llu%s", s->spill_dir, tag, GEN_DIGITS,
                     (unsigned long long)generation, ZC_SPILL_SUFFIX);
    if (n < 0 || (size_t)n >= cap)
        return zc__fail(ZC_E_LIMIT, "spill path for tag \"%s\" is longer than %zu bytes; use a "
                        "shorter spill directory", tag, cap);
    return ZC_OK;
}

/* Parse "<tag>@<20 digits>.latent"; returns 0 and fills tag/generation. */
static int parse_spill_name(const char *name, char tag[ZC_MAX_TAG_LEN + 1], uint64_t *generation)
{
    size_t len = strlen(name), slen = strlen(ZC_SPILL_SUFFIX);
    const char *at = strrchr(name, '@');
    if (at == NULL || len <= slen || strcmp(name + len - slen, ZC_SPILL_SUFFIX) != 0)
        return -1;
    size_t tlen = (size_t)(at - name);
    if (tlen == 0 || tlen > ZC_MAX_TAG_LEN || (size_t)(name + len - slen - (at + 1)) != GEN_DIGITS)
        return -1;
    uint64_t g = 0;
    for (const char *p = at + 1; p < name + len - slen; p++) {
        if (*p < '0' || *p > '9' || zc__mul_u64(g, 10, &g) != 0 ||
            zc__add_u64(g, (uint64_t)(*p - '0'), &g) != 0)
            return -1;
    }
    memcpy(tag, name, tlen);
    tag[tlen] = '\0';
    if (g == 0 || zc_tag_check(tag) != ZC_OK)
        return -1;
    *generation = g;
    return 0;
}

int zc__disk_add(zc_tag_entry *e, uint64_t generation)
{
    for (uint32_t i = 0; i < e->disk_count; i++)
        if (e->disk[i] == generation)
            return 0;
    if (e->disk_count == e->disk_cap) {
        uint32_t cap = e->disk_cap ? e->disk_cap * 2 : 4;
        uint64_t *d = realloc(e->disk, sizeof *d * cap);
        if (d == NULL)
            return -1;
        e->disk = d;
        e->disk_cap = cap;
    }
    uint32_t i = e->disk_count;
    while (i > 0 && e->disk[i - 1] > generation) {
        e->disk[i] = e->disk[i - 1];
        i--;
    }
    e->disk[i] = generation;
    e->disk_count++;
    if (generation > e->last_generation)
        e->last_generation = generation;
    return 0;
}

void zc__disk_remove(zc_tag_entry *e, uint64_t generation)
{
    for (uint32_t i = 0; i < e->disk_count; i++) {
        if (e->disk[i] == generation) {
            memmove(&e->disk[i], &e->disk[i + 1], sizeof *e->disk * (e->disk_count - i - 1));
            e->disk_count--;
            return;
        }
    }
}

/* 1 if path names an existing directory. */
static int is_dir(const char *path)
{
    zc_os_path_kind kind;
    return zc_os_stat(path, &kind, NULL) == 0 && kind == ZC_OS_PATH_DIR;
}

/* Create dir and its missing parents.  A prefix that cannot be created but
 * exists as a directory is fine (a drive "C:", a read-only parent), and so
 * is one that is no directory at all when the final mkdir still succeeds (a
 * UNC "\\server"); otherwise the first prefix that failed is reported. */
static int mkdir_p(const char *dir)
{
    char path[4096], failed[4096];
    int first_err = 0, err;
    size_t len = strlen(dir);
    if (len == 0 || len >= sizeof path)
        return zc__fail(ZC_E_INVALID, "spill directory \"%.200s\" is empty or too long", dir);
    memcpy(path, dir, len + 1);
    for (char *p = path + 1; *p; p++) {
        if (!zc_os_is_separator(*p) || zc_os_is_separator(p[-1]))
            continue;
        char sep = *p;
        *p = '\0';
        err = zc_os_mkdir(path);
        if (err != 0 && first_err == 0 && !zc_os_error_is(err, ZC_OS_EXISTS) && !is_dir(path)) {
            first_err = err;
            memcpy(failed, path, (size_t)(p - path) + 1);
        }
        *p = sep;
    }
    err = zc_os_mkdir(path);
    if (err != 0 && !zc_os_error_is(err, ZC_OS_EXISTS)) {
        if (first_err != 0 && zc_os_error_is(err, ZC_OS_NOT_FOUND))
            return zc__fail(ZC_E_IO, "cannot create directory \"%s\": %s", failed,
                            ZC_OS_WHY(first_err));
        return zc__fail(ZC_E_IO, "cannot create spill directory \"%s\": %s", path,
                        ZC_OS_WHY(err));
    }
    if (!is_dir(path))
        return zc__fail(ZC_E_IO, "spill directory \"%s\" is not a directory", path);
    if ((err = zc_os_dir_writable(path)) != 0)
        return zc__fail(ZC_E_IO, "spill directory \"%s\" is not writable: %s", path,
                        ZC_OS_WHY(err));
    return ZC_OK;
}

static int index_directory(zc_store *s)
{
    zc_os_dir *d = NULL;
    int err = zc_os_dir_open(s->spill_dir, &d);
    if (err != 0)
        return zc__fail(ZC_E_IO, "cannot read spill directory \"%s\": %s", s->spill_dir,
                        ZC_OS_WHY(err));
    const char *name;
    char tag[ZC_MAX_TAG_LEN + 1];
    uint64_t gen;
    int rc = ZC_OK;
    while ((err = zc_os_dir_next(d, &name)) == 0 && name != NULL) {
        if (strncmp(name, ZC_TMP_PREFIX, strlen(ZC_TMP_PREFIX)) == 0) {
            /* An incomplete write from a crash: never renamed, so never a
             * version anybody saw.  Safe to remove. */
            char path[4096];
            if (snprintf(path, sizeof path, "%s/%s", s->spill_dir, name) < (int)sizeof path)
                zc_os_remove(path);
            continue;
        }
        if (parse_spill_name(name, tag, &gen) != 0)
            continue;
        zc_tag_entry *e = zc__tag_get_or_create(s, tag);
        if (e == NULL || zc__disk_add(e, gen) != 0) {
            rc = zc__fail(ZC_E_NOMEM, "out of host memory indexing \"%s\"", s->spill_dir);
            break;
        }
    }
    zc_os_dir_close(d);
    if (rc == ZC_OK && err != 0)
        rc = zc__fail(ZC_E_IO, "cannot read spill directory \"%s\": %s", s->spill_dir,
                      ZC_OS_WHY(err));
    return rc;
}

static void writer_main(void *arg);

int zc__spill_open(zc_store *s)
{
    int rc = mkdir_p(s->spill_dir);
    if (rc != ZC_OK)
        return rc;
    if ((rc = index_directory(s)) != ZC_OK)
        return rc;
    int err = zc_os_thread_start(&s->writer, writer_main, s);
    if (err != 0)
        return zc__fail(ZC_E_STATE, "cannot start the spill writer thread: %s", ZC_OS_WHY(err));
    s->writer_running = 1;
    return ZC_OK;
}

void zc__spill_close(zc_store *s)
{
    if (!s->writer_running)
        return;
    zc_os_mutex_lock(&s->lock);
    s->closing = 1;
    zc_os_cond_broadcast(&s->work_ready);
    zc_os_mutex_unlock(&s->lock);
    zc_os_thread_join(&s->writer);
    s->writer_running = 0;
}

void zc__spill_enqueue(zc_store *s, zc_slot *slot)
{
    zc_spill_job *job = malloc(sizeof *job);
    if (job == NULL) {
        s->stats.spill_errors++;
        if (s->flush_status == ZC_OK) {
            s->flush_status = ZC_E_NOMEM;
            snprintf(s->flush_message, sizeof s->flush_message,
                     "out of host memory queueing the spill of tag \"%s\"", slot->tag);
        }
        return;
    }
    zc__slot_ref(slot);
    job->slot = slot;
    job->next = NULL;
    if (s->queue_tail)
        s->queue_tail->next = job;
    else
        s->queue_head = job;
    s->queue_tail = job;
    s->stats.pending_spills++;
    zc_os_cond_signal(&s->work_ready);
}

/* After a successful write: index it and choose older files to prune. */
static uint32_t after_write(zc_store *s, const zc_slot *slot, uint64_t *prune, uint32_t cap)
{
    uint32_t n = 0;
    zc_tag_entry *e = zc__tag_get_or_create(s, slot->tag);
    if (e == NULL || zc__disk_add(e, slot->generation) != 0)
        return 0;
    while (e->disk_count > s->config.disk_keep && n < cap) {
        prune[n++] = e->disk[0];
        zc__disk_remove(e, e->disk[0]);
    }
    return n;
}

static void writer_main(void *arg)
{
    zc_store *s = arg;
    zc_os_mutex_lock(&s->lock);
    for (;;) {
        while (s->queue_head == NULL && !s->closing)
            zc_os_cond_wait(&s->work_ready, &s->lock);
        if (s->queue_head == NULL)
            break;
        zc_spill_job *job = s->queue_head;
        s->queue_head = job->next;
        if (s->queue_head == NULL)
            s->queue_tail = NULL;
        s->writer_busy = 1;
        zc_os_mutex_unlock(&s->lock);

        zc_slot *slot = job->slot;
        char path[4096];
        char gen[32];
        snprintf(gen, sizeof gen, "%llu", (unsigned long long)slot->generation);
        zc_meta_entry extra[3] = {
            {(char *)ZC_META_FORMAT, (char *)ZC_FORMAT_VALUE},
            {(char *)ZC_META_TAG, slot->tag},
            {(char *)ZC_META_GENERATION, gen},
        };
        int rc = zc__spill_path(s, slot->tag, slot->generation, path, sizeof path);
        if (rc == ZC_OK)
            rc = zc__safetensors_write(path, slot->bundle, extra, 3);
        const char *err = rc == ZC_OK ? NULL : zc_last_error();

        uint64_t prune[64];
        uint32_t nprune = 0;
        int unwanted = 0;
        zc_os_mutex_lock(&s->lock);
        s->stats.pending_spills--;
        if (rc == ZC_OK && slot->files_dropped) {
            unwanted = 1; /* its tag was dropped with its files while this write ran */
        } else if (rc == ZC_OK) {
            s->stats.spills_written++;
            nprune = after_write(s, slot, prune, 64);
        } else {
            s->stats.spill_errors++;
            if (s->flush_status == ZC_OK) {
                s->flush_status = rc;
                snprintf(s->flush_message, sizeof s->flush_message, "spill of tag \"%s\" "
                         "generation %llu failed: %s", slot->tag,
                         (unsigned long long)slot->generation, err);
            }
        }
        zc_os_mutex_unlock(&s->lock);
        if (unwanted) {
            zc_os_remove(path);
            zc_os_sync_parent_dir(path);
        }
        for (uint32_t i = 0; i < nprune; i++) {
            char old[4096];
            if (zc__spill_path(s, slot->tag, prune[i], old, sizeof old) == ZC_OK)
                zc_os_remove(old);
        }
        zc__slot_unref(slot);
        free(job);

        zc_os_mutex_lock(&s->lock);
        s->writer_busy = 0;
        if (s->queue_head == NULL)
            zc_os_cond_broadcast(&s->work_done);
    }
    zc_os_cond_broadcast(&s->work_done);
    zc_os_mutex_unlock(&s->lock);
}

void zc__worker_wait(zc_store *s)
{
    zc_os_mutex_lock(&s->lock);
    while (s->writer_running && (s->queue_head != NULL || s->writer_busy))
        zc_os_cond_wait(&s->work_done, &s->lock);
    zc_os_mutex_unlock(&s->lock);
}

int zc_store_flush(zc_store *s)
{
    if (s == NULL)
        return zc__fail(ZC_E_INVALID, "zc_store_flush: store is NULL");
    zc_os_mutex_lock(&s->lock);
    while (s->writer_running && (s->queue_head != NULL || s->writer_busy))
        zc_os_cond_wait(&s->work_done, &s->lock);
    int rc = s->flush_status;
    char msg[sizeof s->flush_message];
    memcpy(msg, s->flush_message, sizeof msg);
    s->flush_status = ZC_OK;
    s->flush_message[0] = '\0';
    zc_os_mutex_unlock(&s->lock);
    if (rc != ZC_OK)
        return zc__fail(rc, "%s", msg);
    return ZC_OK;
}

void zc__spill_reject(zc_store *s, const char *path)
{
    char aside[4200];
    snprintf(aside, sizeof aside, "%s%s", path, ZC_REJECTED_SUFFIX);
    if (zc_os_replace(path, aside) == 0) {
        zc_os_sync_parent_dir(path);
        zc_os_mutex_lock(&s->lock);
        s->stats.files_rejected++;
        zc_os_mutex_unlock(&s->lock);
    }
}

static int check_identity(const zc_file *f, const char *path, const char *tag, uint64_t generation)
{
    const char *format = zc_file_meta(f, ZC_META_FORMAT);
    const char *ftag = zc_file_meta(f, ZC_META_TAG);
    const char *fgen = zc_file_meta(f, ZC_META_GENERATION);
    char want[32];
    snprintf(want, sizeof want, "%llu", (unsigned long long)generation);
    if (format == NULL || strcmp(format, ZC_FORMAT_VALUE) != 0 || ftag == NULL ||
        strcmp(ftag, tag) != 0 || fgen == NULL || strcmp(fgen, want) != 0)
        return zc__fail(ZC_E_CORRUPT,
                        "spill file \"%s\" does not say it holds tag \"%s\" generation %s (format "
                        "\"%s\", tag \"%s\", generation \"%s\"); it is foreign or was renamed",
                        path, tag, want, format ? format : "(none)", ftag ? ftag : "(none)",
                        fgen ? fgen : "(none)");
    for (uint32_t i = 0; i < zc_file_count(f); i++) {
        zc_file_tensor ft;
        if (zc_file_tensor_at(f, i, &ft) == ZC_OK && !ft.has_digest &&
            strcmp(ft.name, ZC_LATENT_MARKER) != 0)
            return zc__fail(ZC_E_CORRUPT, "spill file \"%s\": tensor \"%s\" has no recorded "
                            "digest, so it cannot be verified", path, ft.name);
    }
    return ZC_OK;
}

int zc__spill_restore(zc_store *s, const char *tag, uint64_t generation, zc_slot **out)
{
    char path[4096];
    zc_file *f = NULL;
    zc_bundle *b = NULL;
    int rc = zc__spill_path(s, tag, generation, path, sizeof path);
    if (rc != ZC_OK)
        return rc;
    rc = zc_file_open(path, &f);
    if (rc == ZC_OK)
        rc = check_identity(f, path, tag, generation);
    if (rc == ZC_OK)
        rc = zc_file_load_bundle(f, &b);
    zc_file_close(f);
    if (rc != ZC_OK) {
        if (rc == ZC_E_CORRUPT) {
            zc__spill_reject(s, path);
            zc__fail_context("restoring tag \"%s\" (file renamed to \"%s%s\")", tag, path,
                             ZC_REJECTED_SUFFIX);
        } else {
            zc__fail_context("restoring tag \"%s\"", tag);
        }
        zc_os_mutex_lock(&s->lock);
        zc_tag_entry *e = zc__tag_find(s, tag);
        /* Forget the file only if it is bad or gone; a transient I/O error keeps it. */
        zc_os_path_kind kind;
        if (e && (rc == ZC_E_CORRUPT || rc == ZC_E_NOT_FOUND ||
                  zc_os_error_is(zc_os_stat(path, &kind, NULL), ZC_OS_NOT_FOUND)))
            zc__disk_remove(e, generation);
        zc_os_mutex_unlock(&s->lock);
        return rc;
    }
    zc_slot *slot = zc__slot_new(s->core, b, tag);
    if (slot == NULL) {
        zc_bundle_free(b);
        return zc__fail(ZC_E_NOMEM, "out of host memory restoring tag \"%s\"", tag);
    }
    slot->generation = generation;
    slot->from_disk = 1;
    *out = slot;
    return ZC_OK;
}
