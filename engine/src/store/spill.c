/*
 * spill.c — the disk tier: a background writer thread that spills slots as
 * crash-safe safetensors files "<tag>@<generation, 20 digits>.latent" (never
 * over an existing file), the index of a spill directory made at open, and
 * lazy restore with digest verification.  Files of ours that fail to restore
 * are renamed aside with ZC_REJECTED_SUFFIX, never deleted; files that are
 * not ours are left alone.  What other processes sharing the folder do is
 * seen through generation_numbers.c, spill_owner.c and spill_refresh.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

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

/* 1 if name has the shape of a spill file's name, "<valid tag>@<20 digits>.latent",
 * whatever number the digits spell; tag receives the tag. */
static int shaped_like_spill(const char *name, char tag[ZC_MAX_TAG_LEN + 1])
{
    size_t len = strlen(name), slen = strlen(ZC_SPILL_SUFFIX);
    const char *at = strrchr(name, '@');
    if (at == NULL || len <= slen || strcmp(name + len - slen, ZC_SPILL_SUFFIX) != 0)
        return 0;
    size_t tlen = (size_t)(at - name);
    if (tlen == 0 || tlen > ZC_MAX_TAG_LEN || (size_t)(name + len - slen - (at + 1)) != ZC_SPILL_GEN_DIGITS)
        return 0;
    for (const char *p = at + 1; p < name + len - slen; p++)
        if (*p < '0' || *p > '9')
            return 0;
    memcpy(tag, name, tlen);
    tag[tlen] = '\0';
    return zc_tag_check(tag) == ZC_OK;
}

/* The fewest bytes a spill file of tag@generation can have: the length prefix
 * and a header holding at least the identity a restore insists on, written
 * without spaces (escapes only lengthen it). */
static uint64_t smallest_spill_file(const char *tag, uint64_t generation)
{
    char header[160 + ZC_MAX_TAG_LEN];
    int n = snprintf(header, sizeof header, "{\"__metadata__\":{\"%s\":\"%s\",\"%s\":\"%s\","
                     "\"%s\":\"%llu\"}}", ZC_FILE_META_FORMAT, ZC_FILE_FORMAT_VALUE,
                     ZC_FILE_META_TAG, tag, ZC_FILE_META_GENERATION,
                     (unsigned long long)generation);
    return 8 + (n > 0 ? (uint64_t)n : 0);
}

/* 0 if the file at path, named as tag@generation's spill file, may be one (a
 * restore reads it to be sure); -1 if it cannot be: no regular file, or too
 * small to hold a spill file's header.  One stat, no read.  A file that
 * cannot be looked at (gone, a dangling link) is left to the restore. */
static int may_be_spill_file(const char *path, const char *tag, uint64_t generation)
{
    zc_os_path_kind kind;
    uint64_t size = 0;
    if (zc_os_stat(path, &kind, &size) != 0)
        return 0;
    return kind == ZC_OS_PATH_FILE && size >= smallest_spill_file(tag, generation) ? 0 : -1;
}

/* Rename aside, as zc__spill_reject does, the files index_directory found
 * named like spill files that cannot be ours: a generation out of range (0,
 * or above ZC_MAX_GENERATION: indexed, it would make the tag's next number
 * wrap or run out), or no file that could hold a spill (empty, too small, a
 * directory).  Each is counted in files_rejected.  The store is not running
 * yet; the folder lock is held, so no store opens meanwhile.  A change to
 * files another store might have indexed (an in-range name) is announced. */
static void reject_found(zc_store *s, zc_name_list *l)
{
    char path[4096], aside[4200], tag[ZC_MAX_TAG_LEN + 1];
    uint64_t gen;
    for (size_t i = 0; i < l->count; i++) {
        const char *name = l->names[i];
        int n = snprintf(path, sizeof path, "%s/%s", s->spill_dir, name);
        if (n < 0 || (size_t)n >= sizeof path)
            continue;
        snprintf(aside, sizeof aside, "%s%s", path, ZC_REJECTED_SUFFIX);
        if (zc_os_replace(path, aside) != 0)
            continue; /* stays unindexed: its name alone keeps it out */
        zc_os_sync_parent_dir(path);
        zc__spill_note_rejected(s, "\"%s\" is named like a spill file but cannot be one (a "
                                "generation out of range, no regular file, or too small for a "
                                "spill file's header); it was renamed to \"%s\" (kept, never "
                                "deleted)", path, aside);
        if (zc__spill_parse_name(name, tag, &gen) == 0)
            zc__spill_announce(s, tag);
    }
}

/* Index the spill files by name and hand temporary and owner files to the
 * owner scan; the folder lock is held (no store can open meanwhile).  Names
 * shaped like a spill file's that cannot be one are renamed aside
 * (reject_found); names of any other shape are not ours and stay. */
static int index_directory(zc_store *s, zc_owner_scan *scan)
{
    zc_os_dir *d = NULL;
    int err = zc_os_dir_open(s->spill_dir, &d);
    if (err != 0)
        return zc__fail(ZC_E_IO, "cannot read spill directory \"%s\": %s", s->spill_dir,
                        ZC_OS_WHY(err));
    const char *name;
    char tag[ZC_MAX_TAG_LEN + 1], path[4096];
    uint64_t gen;
    int rc = ZC_OK;
    zc_name_list bad = {NULL, 0, 0};
    while ((err = zc_os_dir_next(d, &name)) == 0 && name != NULL) {
        int noted = zc__owner_note(scan, name);
        if (noted < 0) {
            rc = zc__fail(ZC_E_NOMEM, "out of host memory indexing \"%s\"", s->spill_dir);
            break;
        }
        if (noted || !shaped_like_spill(name, tag))
            continue;
        int n = snprintf(path, sizeof path, "%s/%s", s->spill_dir, name);
        if (zc__spill_parse_name(name, tag, &gen) != 0 ||
            (n > 0 && (size_t)n < sizeof path && may_be_spill_file(path, tag, gen) != 0)) {
            if (zc__name_list_add(&bad, name) != 0) {
                rc = zc__fail(ZC_E_NOMEM, "out of host memory indexing \"%s\"", s->spill_dir);
                break;
            }
            continue;
        }
        zc_tag_entry *e = zc__tag_get_or_create(s, tag);
        if (e == NULL || zc__disk_add(e, gen, 0) != 0) {
            rc = zc__fail(ZC_E_NOMEM, "out of host memory indexing \"%s\"", s->spill_dir);
            break;
        }
    }
    zc_os_dir_close(d);
    if (rc == ZC_OK && err != 0)
        rc = zc__fail(ZC_E_IO, "cannot read spill directory \"%s\": %s", s->spill_dir,
                      ZC_OS_WHY(err));
    if (rc == ZC_OK)
        reject_found(s, &bad);
    zc__name_list_free(&bad);
    return rc;
}

/* Files found at open are this store's to prune when no other store had
 * the folder open: they were left by stores that are gone.  Otherwise a
 * live store may have written them, and only it prunes them. */
static void adopt_found_files(zc_store *s)
{
    for (size_t b = 0; b < s->bucket_count; b++)
        for (zc_tag_entry *e = s->buckets[b]; e; e = e->next)
            for (uint32_t i = 0; i < e->disk_count; i++)
                e->disk[i].mine = 1;
}

void zc__release_deferred(zc_store *s)
{
    zc_os_mutex_lock(&s->lock);
    zc_slot *list = s->deferred;
    s->deferred = NULL;
    zc_os_mutex_unlock(&s->lock);
    while (list) {
        zc_slot *next = list->next_deferred;
        zc__slot_unref(list);
        list = next;
    }
}

static void writer_main(void *arg);

int zc__spill_open(zc_store *s)
{
    zc_owner_scan *scan = NULL;
    int alone = 0;
    int rc = mkdir_p(s->spill_dir);
    if (rc != ZC_OK)
        return rc;
    if ((rc = zc__owner_begin(s, &scan)) != ZC_OK)
        return rc;
    rc = index_directory(s, scan);
    int end = zc__owner_end(s, scan, &alone);
    if (rc == ZC_OK)
        rc = end;
    if (rc != ZC_OK)
        return rc;
    if (alone)
        adopt_found_files(s);
    int err = zc_os_thread_start(&s->writer, writer_main, s);
    if (err != 0)
        return zc__fail(ZC_E_STATE, "cannot start the spill writer thread: %s", ZC_OS_WHY(err));
    s->writer_running = 1;
    return ZC_OK;
}

void zc__spill_close(zc_store *s)
{
    if (s->writer_running) {
        zc_os_mutex_lock(&s->lock);
        s->closing = 1;
        zc_os_cond_broadcast(&s->work_ready);
        zc_os_mutex_unlock(&s->lock);
        zc_os_thread_join(&s->writer);
        s->writer_running = 0;
    }
    zc__owner_release(s); /* no temporary file of ours is left: the writer drained */
}

void zc__spill_enqueue(zc_store *s, zc_slot *slot)
{
    zc_spill_job *job = malloc(sizeof *job);
    if (job == NULL) {
        s->stats.spill_errors++;
        slot->spill_state = ZC__SPILL_FAILED; /* pinned; the next flush queues it again */
        snprintf(slot->spill_problem, sizeof slot->spill_problem,
                 "out of host memory queueing the spill of tag \"%s\" generation %llu", slot->tag,
                 (unsigned long long)slot->generation);
        if (s->flush_status == ZC_OK) {
            s->flush_status = ZC_E_NOMEM;
            snprintf(s->flush_message, sizeof s->flush_message,
                     "out of host memory queueing the spill of tag \"%s\"", slot->tag);
        }
        return;
    }
    zc__slot_ref(slot);
    slot->spill_state = ZC__SPILL_PENDING; /* pinned in memory until written */
    job->slot = slot;
    job->next = NULL;
    job->due_ns = zc_os_monotonic_ns() + (uint64_t)s->config.spill_delay_ms * 1000000u;
    if (s->queue_tail)
        s->queue_tail->next = job;
    else
        s->queue_head = job;
    s->queue_tail = job;
    s->stats.pending_spills++;
    zc_os_cond_signal(&s->work_ready);
}

/* After a successful write: index it, with its lineage.  @return 1 when
 * this store now holds more of the tag's files than disk_keep (then
 * zc__spill_plan_prune chooses which go). */
static int after_write(zc_store *s, const zc_slot *slot, const zc_disk_file *lineage)
{
    uint32_t mine = 0;
    zc_tag_entry *e = zc__tag_get_or_create(s, slot->tag);
    if (e == NULL || zc__disk_add(e, slot->generation, 1) != 0)
        return 0;
    for (uint32_t i = 0; i < e->disk_count; i++) {
        if (e->disk[i].generation == slot->generation)
            zc__lineage_copy(&e->disk[i], lineage);
        mine += e->disk[i].mine != 0;
    }
    return mine > s->config.disk_keep;
}

/* Tell other processes the tag's files changed.  When nobody else changed
 * them since this store last looked, the store knows the folder as it is
 * and need not look again. */
void zc__spill_announce(zc_store *s, const char *tag)
{
    uint64_t before = 0;
    if (zc__gen_note_change(s, tag, &before) != ZC_OK)
        return; /* others see the change at their next look after another one */
    zc_os_mutex_lock(&s->lock);
    zc_tag_entry *e = zc__tag_find(s, tag);
    if (e && e->seen_valid && e->seen_changes == before)
        e->seen_changes = before + 1;
    zc_os_mutex_unlock(&s->lock);
}

int zc__spill_dir_recreate(zc_store *s)
{
    zc_os_path_kind kind;
    if (!zc_os_error_is(zc_os_stat(s->spill_dir, &kind, NULL), ZC_OS_NOT_FOUND))
        return 0;
    (void)mkdir_p(s->spill_dir); /* its message stays the last error when it fails */
    zc_os_mutex_lock(&s->lock);
    s->stats.spill_folder_recreated++;
    zc_os_mutex_unlock(&s->lock);
    return zc_os_stat(s->spill_dir, &kind, NULL) == 0;
}

/* A spill that failed once: re-create the spill folder if it was removed, or
 * else free what retention would prune after this write anyway (this store's
 * files beyond the newest disk_keep, counting the new one; never a film's
 * protected ancestors, pins or anchor), then write once more.  Lock NOT
 * held.  @return the retry's result, or the first failure (its message
 * kept) when nothing could be healed. */
static int heal_and_retry(zc_store *s, zc_slot *slot, const char *path, const zc_meta_entry *extra,
                          uint32_t extra_count, const zc_disk_file *lineage)
{
    char first[1024];
    snprintf(first, sizeof first, "%s", zc_last_error());
    int rc = ZC_E_IO;
    zc_os_path_kind kind;
    int healed = 0;
    if (zc_os_error_is(zc_os_stat(s->spill_dir, &kind, NULL), ZC_OS_NOT_FOUND)) {
        healed = zc__spill_dir_recreate(s); /* removed while the store ran */
    } else {
        /* Index the new file provisionally, so the plan counts it among the kept. */
        zc_os_mutex_lock(&s->lock);
        zc_tag_entry *e = zc__tag_get_or_create(s, slot->tag);
        int added = e && !zc__disk_has(e, slot->generation) &&
                    zc__disk_add(e, slot->generation, 1) == ZC_OK;
        for (uint32_t i = 0; added && i < e->disk_count; i++)
            if (e->disk[i].generation == slot->generation)
                zc__lineage_copy(&e->disk[i], lineage);
        zc_os_mutex_unlock(&s->lock);
        if (!added)
            return zc__fail(ZC_E_IO, "%s", first);
        uint64_t prune[64];
        uint32_t nprune = zc__spill_plan_prune(s, slot->tag, prune, 64);
        for (uint32_t i = 0; i < nprune; i++) {
            char old[4096];
            if (prune[i] != slot->generation &&
                zc__spill_path(s, slot->tag, prune[i], old, sizeof old) == ZC_OK &&
                zc_os_remove(old) == 0)
                healed = 1;
        }
        if (healed)
            zc__spill_announce(s, slot->tag);
        zc_os_mutex_lock(&s->lock); /* after_write indexes it for real once it is written */
        if ((e = zc__tag_find(s, slot->tag)) != NULL)
            zc__disk_remove(e, slot->generation);
        zc_os_mutex_unlock(&s->lock);
    }
    if (!healed)
        return zc__fail(ZC_E_IO, "%s", first);
    rc = zc__safetensors_write_new(path, slot->bundle, extra, extra_count);
    if (rc != ZC_OK)
        return zc__fail(rc, "%s (written again after %s; it failed again)", zc_last_error(),
                        zc_os_error_is(zc_os_stat(s->spill_dir, &kind, NULL), ZC_OS_NOT_FOUND)
                            ? "re-creating the removed spill folder"
                            : "pruning older files beyond disk_keep");
    return ZC_OK;
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
        if (!s->closing && s->spill_waiters == 0) { /* wait out the head job's delay */
            uint64_t now = zc_os_monotonic_ns(), due = s->queue_head->due_ns;
            if (due > now) {
                zc_os_cond_wait_ms(&s->work_ready, &s->lock,
                                   (unsigned)((due - now + 999999u) / 1000000u));
                continue;
            }
        }
        zc_spill_job *job = s->queue_head;
        s->queue_head = job->next;
        if (s->queue_head == NULL)
            s->queue_tail = NULL;
        s->writer_busy = 1;
        zc_os_mutex_unlock(&s->lock);

        zc_slot *slot = job->slot;
        char path[4096];
        path[0] = '\0';
        char gen[32];
        zc_meta_entry extra[3 + ZC__SEAM_ENTRIES_MAX];
        zc__spill_identity(slot->tag, slot->generation, gen, extra);
        /* the seam of the hop that made it (seam_hop.c), measured now, off the put's path, and
         * the tail summaries (seam.c), each "zc.seam.<name>" */
        (void)zc__seam_hop_record(s, slot->bundle, 1);
        uint32_t nseam = zc__seam_entries(slot->bundle, extra + 3, ZC__SEAM_ENTRIES_MAX);
        zc_disk_file lineage = {.generation = slot->generation}; /* parsed before the lock */
        zc__lineage_read(&lineage, slot->tag, zc__bundle_meta(slot->bundle, "lineage"),
                         zc__bundle_meta(slot->bundle, "kind"));
        int rc = zc__spill_path(s, slot->tag, slot->generation, path, sizeof path);
        if (rc == ZC_OK)
            rc = zc__safetensors_write_new(path, slot->bundle, extra, 3 + nseam);
        if (rc != ZC_OK && path[0] && !slot->files_dropped)
            rc = heal_and_retry(s, slot, path, extra, 3 + nseam, &lineage);
        zc__seam_entries_free(extra + 3, nseam);
        const char *err = rc == ZC_OK ? NULL : zc_last_error();
        uint64_t written_bytes = 0; /* what a later zc_store_flush_tag expects to find */
        zc_os_path_kind written_kind;
        if (rc == ZC_OK && zc_os_stat(path, &written_kind, &written_bytes) != 0)
            written_bytes = 0;

        uint64_t prune[64];
        uint32_t nprune = 0, ntrimmed = 0;
        zc_slot *trimmed[ZC_MAX_DEPTH];
        int unwanted = 0, over = 0;
        zc_os_mutex_lock(&s->lock);
        s->stats.pending_spills--;
        if (rc == ZC_OK && slot->files_dropped) {
            unwanted = 1; /* its tag was dropped with its files while this write ran */
        } else if (rc == ZC_OK) {
            s->stats.spills_written++;
            slot->spill_state = ZC__SPILL_WRITTEN;
            slot->spill_bytes = written_bytes;
            slot->spill_problem[0] = '\0';
            over = after_write(s, slot, &lineage);
            zc_tag_entry *e = zc__tag_find(s, slot->tag);
            if (e) /* a ring grown by pinned slots comes back to its depth */
                ntrimmed = zc__ring_trim(s, e, trimmed, ZC_MAX_DEPTH);
        } else {
            s->stats.spill_errors++;
            /* Pinned in memory: it exists nowhere else.  Retried at the next flush. */
            slot->spill_state = ZC__SPILL_FAILED;
            snprintf(s->spill_problem, sizeof s->spill_problem, "the spill of tag \"%s\" "
                     "generation %llu failed: %s", slot->tag,
                     (unsigned long long)slot->generation, err);
            snprintf(slot->spill_problem, sizeof slot->spill_problem, "%s", s->spill_problem);
            if (s->flush_status == ZC_OK) {
                s->flush_status = rc;
                snprintf(s->flush_message, sizeof s->flush_message, "%s", s->spill_problem);
            }
        }
        zc_os_mutex_unlock(&s->lock);
        for (uint32_t i = 0; i < ntrimmed; i++)
            zc__spill_release_from_writer(s, trimmed[i]);
        if (over)
            nprune = zc__spill_plan_prune(s, slot->tag, prune, 64);
        if (unwanted) {
            zc_os_remove(path);
            zc_os_sync_parent_dir(path);
        }
        for (uint32_t i = 0; i < nprune; i++) {
            char old[4096];
            if (zc__spill_path(s, slot->tag, prune[i], old, sizeof old) == ZC_OK)
                zc_os_remove(old);
        }
        if (rc == ZC_OK)
            zc__spill_announce(s, slot->tag);
        zc__spill_release_from_writer(s, slot);
        free(job);

        zc_os_mutex_lock(&s->lock);
        s->writer_busy = 0;
        if (s->queue_head == NULL)
            zc_os_cond_broadcast(&s->work_done);
    }
    zc_os_cond_broadcast(&s->work_done);
    zc_os_mutex_unlock(&s->lock);
}

/* Wait, lock held, until the writer has drained the queue; the writer skips
 * the spill delay while anyone waits here. */
static void wait_drained(zc_store *s)
{
    if (!s->writer_running || (s->queue_head == NULL && !s->writer_busy))
        return;
    s->spill_waiters++;
    zc_os_cond_signal(&s->work_ready);
    while (s->writer_running && (s->queue_head != NULL || s->writer_busy))
        zc_os_cond_wait(&s->work_done, &s->lock);
    s->spill_waiters--;
}

void zc__worker_wait(zc_store *s)
{
    zc_os_mutex_lock(&s->lock);
    wait_drained(s);
    zc_os_mutex_unlock(&s->lock);
}

/* Queue again every shot whose spill failed (lock held): a folder that was
 * full, removed or unwritable may be fine now. */
static void requeue_failed(zc_store *s)
{
    if (s->spill_dir == NULL || !s->writer_running)
        return;
    for (size_t b = 0; b < s->bucket_count; b++)
        for (zc_tag_entry *e = s->buckets[b]; e; e = e->next)
            for (uint32_t i = 0; i < e->count; i++)
                if (e->ring[i]->spill_state == ZC__SPILL_FAILED)
                    zc__spill_enqueue(s, e->ring[i]);
}

int zc_store_flush(zc_store *s)
{
    if (s == NULL)
        return zc__fail(ZC_E_INVALID, "zc_store_flush: store is NULL");
    zc_os_mutex_lock(&s->lock);
    requeue_failed(s);
    wait_drained(s);
    int rc = s->flush_status;
    char msg[sizeof s->flush_message];
    memcpy(msg, s->flush_message, sizeof msg);
    s->flush_status = ZC_OK;
    s->flush_message[0] = '\0';
    zc_os_mutex_unlock(&s->lock);
    zc__release_deferred(s);
    if (rc != ZC_OK)
        return zc__fail(rc, "%s", msg);
    return ZC_OK;
}

void zc__spill_reject(zc_store *s, const char *tag, const char *path, const char *why)
{
    char aside[4200];
    snprintf(aside, sizeof aside, "%s%s", path, ZC_REJECTED_SUFFIX);
    if (zc_os_replace(path, aside) == 0) {
        zc_os_sync_parent_dir(path);
        zc__spill_note_rejected(s, "spill file \"%s\" was renamed to \"%s\" (kept, never "
                                "deleted): %s", path, aside, why ? why : "it could not be restored");
        zc__spill_announce(s, tag);
    }
}

/* A restore is bounded before it allocates: the reader already refused a
 * header whose tensors run past the file's real size (ZC_E_CORRUPT: the file
 * is renamed aside), but a file may really be that large (a sparse one costs
 * no disk), and its tensors are read into host memory whatever the budget.
 * One that needs more than the store's whole host budget could never be held
 * under it: ZC_E_BUDGET, naming both, and the file is kept (it may be fine
 * for a store with a larger budget). */
static int check_restore_budget(const zc_store *s, const zc_file *f, const char *path)
{
    uint64_t budget = s->config.host_budget_bytes, need = 0, end = 0;
    if (budget == 0)
        return ZC_OK;
    for (uint32_t i = 0; i < zc_file_count(f); i++) {
        zc_file_tensor ft;
        if (zc_file_tensor_at(f, i, &ft) != ZC_OK)
            continue;
        if (ft.offset + ft.nbytes > end)
            end = ft.offset + ft.nbytes; /* the tensors tile the file: this is its size */
        if (strcmp(ft.name, ZC_FILE_LATENT_MARKER) != 0)
            need += ft.nbytes; /* tile the file: no overflow */
    }
    if (need <= budget)
        return ZC_OK;
    return zc__fail(ZC_E_BUDGET, "spill file \"%s\" holds %llu bytes of tensors (the file has "
                    "%llu bytes), more than the store's whole host budget of %llu bytes, so it "
                    "was not read and is kept; open the store with host_budget_bytes of at least "
                    "%llu to restore it, or move the file out of the spill folder", path,
                    (unsigned long long)need, (unsigned long long)end,
                    (unsigned long long)budget, (unsigned long long)need);
}

int zc__spill_restore(zc_store *s, const char *tag, uint64_t generation, zc_slot **out)
{
    char path[4096];
    zc_file *f = NULL;
    zc_bundle *b = NULL;
    int rc = zc__spill_path(s, tag, generation, path, sizeof path);
    if (rc != ZC_OK)
        return rc;
    rc = zc__spill_file_open(path, &f); /* never a link, a second name, another's file */
    zc_os_path_kind kind;
    if (rc == ZC_E_IO && zc_os_error_is(zc_os_stat(path, &kind, NULL), ZC_OS_NOT_FOUND))
        rc = zc__fail(ZC_E_NOT_FOUND, "spill file \"%s\" is gone (another process pruned, "
                      "rejected or dropped it)", path);
    if (rc == ZC_OK)
        rc = zc__spill_check_identity(f, path, tag, generation);
    if (rc == ZC_OK)
        rc = check_restore_budget(s, f, path);
    if (rc == ZC_OK)
        rc = zc_file_load_bundle(f, &b);
    if (rc == ZC_OK)
        zc__seam_attach_from_file(b, f); /* files of older engines have none */
    zc_file_close(f);
    if (rc != ZC_OK) {
        if (rc == ZC_E_CORRUPT) {
            char why[ZC__NOTE_BYTES];
            snprintf(why, sizeof why, "%s", zc_last_error());
            zc__spill_reject(s, tag, path, why);
            zc__fail(rc, "%s", why); /* the announce may have said something else meanwhile */
            zc__fail_context("restoring tag \"%s\" (file renamed to \"%s%s\")", tag, path,
                             ZC_REJECTED_SUFFIX);
        } else {
            zc__fail_context("restoring tag \"%s\"", tag);
        }
        zc_os_mutex_lock(&s->lock);
        zc_tag_entry *e = zc__tag_find(s, tag);
        /* Forget the file only if it is bad or gone; a transient I/O error keeps it. */
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
