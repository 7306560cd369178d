/*
 * spill_check.c — zc_store_flush_tag: one tag's spills written and its files
 * looked at, for a reader of that tag's film.  Another tag's failed spill is
 * neither retried nor reported here (zc_store_flush does both), and a file
 * that vanished or changed under the store is noticed: written again from
 * memory when the shot is still there, else forgotten and named as lost.
 * One stat per file of the tag: the cost follows the tag, not the tags held.
 */
#include <stdio.h>
#include <stdlib.h>

#include "store_internal.h"

enum { FILE_FINE = 0, FILE_VANISHED, FILE_CHANGED };

typedef struct {
    uint64_t generation;
    uint64_t bytes; /* the size this store wrote (0: unknown, or not in memory) */
    int found;      /* FILE_* */
} look;

/* The ring's slot of generation (lock held), or NULL. */
static zc_slot *ring_slot(const zc_tag_entry *e, uint64_t generation)
{
    for (uint32_t i = 0; i < e->count; i++)
        if (e->ring[i]->generation == generation)
            return e->ring[i];
    return NULL;
}

/* A slot whose file the store counts on: written by it, or restored from it. */
static int backed_by_file(const zc_slot *slot)
{
    return slot->spill_state == ZC__SPILL_WRITTEN ||
           (slot->spill_state == ZC__SPILL_OFF && slot->from_disk);
}

static void list_add(uint64_t *out, size_t cap, size_t *n, uint64_t generation)
{
    if (*n < cap)
        out[*n] = generation;
    (*n)++;
}

/* The tag's indexed files this store owns (it wrote them, or found them
 * alone on the folder), as it knows them (lock NOT held): a copy, so that
 * the stats run without the lock.  Only a hand, or another store's drop of
 * the tag, removes such a file: this store's own prunes leave its index
 * first, and other stores prune only their own files.  *out NULL with
 * *count 0: none. */
static int snapshot(zc_store *s, const char *tag, look **out, uint32_t *count)
{
    *out = NULL;
    *count = 0;
    zc_os_mutex_lock(&s->lock);
    zc_tag_entry *e = zc__tag_find(s, tag);
    uint32_t n = e ? e->disk_count : 0;
    look *looks = n ? calloc(n, sizeof *looks) : NULL;
    if (n && looks == NULL) {
        zc_os_mutex_unlock(&s->lock);
        return zc__fail(ZC_E_NOMEM, "out of host memory looking at the files of tag \"%s\"", tag);
    }
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!e->disk[i].mine)
            continue; /* another store's file: its owner prunes it, this store learns of it */
        zc_slot *slot = ring_slot(e, e->disk[i].generation);
        looks[kept].generation = e->disk[i].generation;
        looks[kept].bytes = slot && slot->spill_state == ZC__SPILL_WRITTEN ? slot->spill_bytes : 0;
        kept++;
    }
    zc_os_mutex_unlock(&s->lock);
    *out = looks;
    *count = kept;
    return ZC_OK;
}

/* Stat each file (lock NOT held); a changed one whose shot is in memory is
 * renamed aside, so that it can be written again under its name. */
static void look_at_files(zc_store *s, const char *tag, look *looks, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        char path[4096], why[256];
        zc_os_path_kind kind;
        uint64_t size = 0;
        if (zc__spill_path(s, tag, looks[i].generation, path, sizeof path) != ZC_OK)
            continue;
        int err = zc_os_stat(path, &kind, &size);
        if (zc_os_error_is(err, ZC_OS_NOT_FOUND)) {
            looks[i].found = FILE_VANISHED;
        } else if (err == 0 && looks[i].bytes && (kind != ZC_OS_PATH_FILE || size != looks[i].bytes)) {
            looks[i].found = FILE_CHANGED;
            snprintf(why, sizeof why, "it changed under the store (%llu bytes were written, %llu "
                     "are there); the shot is written again from memory",
                     (unsigned long long)looks[i].bytes, (unsigned long long)size);
            zc__spill_reject(s, tag, path, why);
        } /* another error (a folder that cannot be read) says nothing about the file */
    }
}

int zc_store_flush_tag(zc_store *s, const char *tag, uint64_t *rewritten, size_t rewritten_cap,
                       size_t *rewritten_count, uint64_t *lost, size_t lost_cap,
                       size_t *lost_count)
{
    if (s == NULL || (rewritten == NULL && rewritten_cap) || (lost == NULL && lost_cap))
        return zc__fail(ZC_E_INVALID, "zc_store_flush_tag: store is NULL, or an array is NULL "
                                      "with a cap above 0");
    int rc = zc_tag_check(tag);
    if (rc != ZC_OK)
        return rc;
    size_t nr = 0, nl = 0;
    look *looks = NULL;
    uint32_t nlooks = 0;
    if (s->spill_dir && s->writer_running) {
        if ((rc = snapshot(s, tag, &looks, &nlooks)) != ZC_OK)
            return rc;
        look_at_files(s, tag, looks, nlooks);
    }

    char problem[sizeof ((zc_slot *)0)->spill_problem] = "";
    zc_os_mutex_lock(&s->lock);
    zc_tag_entry *e = zc__tag_find(s, tag);
    for (uint32_t i = 0; e && i < nlooks; i++) {
        uint64_t g = looks[i].generation;
        if (looks[i].found == FILE_FINE || !zc__disk_has(e, g))
            continue; /* fine, or dropped or pruned meanwhile */
        zc_slot *slot = ring_slot(e, g);
        if (slot && backed_by_file(slot)) {
            zc__disk_remove(e, g); /* indexed again once written */
            zc__spill_enqueue(s, slot);
            list_add(rewritten, rewritten_cap, &nr, g);
        } else if (slot == NULL && looks[i].found == FILE_VANISHED) {
            zc__disk_remove(e, g);
            list_add(lost, lost_cap, &nl, g);
        }
    }
    for (uint32_t i = 0; e && s->spill_dir && s->writer_running && i < e->count; i++)
        if (e->ring[i]->spill_state == ZC__SPILL_FAILED)
            zc__spill_enqueue(s, e->ring[i]); /* this tag's only: a folder may be fine now */
    zc_os_mutex_unlock(&s->lock);
    free(looks);

    zc__worker_wait(s);
    zc_os_mutex_lock(&s->lock);
    if ((e = zc__tag_find(s, tag)) != NULL)
        for (uint32_t i = 0; i < e->count && !problem[0]; i++)
            if (e->ring[i]->spill_state == ZC__SPILL_FAILED)
                snprintf(problem, sizeof problem, "%s", e->ring[i]->spill_problem[0]
                         ? e->ring[i]->spill_problem : "the spill failed");
    zc_os_mutex_unlock(&s->lock);
    zc__release_deferred(s);
    if (rewritten_count)
        *rewritten_count = nr;
    if (lost_count)
        *lost_count = nl;
    if (problem[0])
        return zc__fail(ZC_E_IO, "%s", problem);
    return ZC_OK;
}
