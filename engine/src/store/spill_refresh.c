/*
 * spill_refresh.c — seeing the spill files other processes (and other
 * stores of this process) add to or remove from a shared folder, without a
 * directory scan.  Every change to a tag's files bumps the change count in
 * its counter file (generation_numbers.c).  A store remembers the count it last saw
 * per tag: while it stays the same, a look costs one small read.  When it
 * moved, the store probes by name the newest PROBE_WINDOW generations handed
 * out in the folder that it does not know on disk, and checks that the
 * files it knows are still there (another process may have pruned or
 * rejected them).
 */
#include <stdlib.h>

#include "store_internal.h"

/* Generations probed below the counter when a tag's files changed.  Each
 * process keeps at most its disk_keep files per tag, so the files of a few
 * processes lie well within it; an older file beyond it stays unseen until
 * it is asked for by number (zc_store_get probes that name directly). */
#define PROBE_WINDOW 64

typedef struct {
    uint64_t generation;
    int known;   /* in the index when the probe began */
    int present; /* a spill file of that name exists */
} probe;

/* The names to probe: unknown generations of the window, then every known one. */
static probe *plan(const zc_tag_entry *e, uint64_t last, size_t *count)
{
    uint64_t lo = last > PROBE_WINDOW ? last - PROBE_WINDOW : 0;
    size_t known = e ? e->disk_count : 0;
    probe *p = calloc(PROBE_WINDOW + known + 1, sizeof *p);
    size_t n = 0;
    if (p == NULL)
        return NULL;
    for (uint64_t g = last; g > lo; g--)
        if (e == NULL || !zc__disk_has(e, g))
            p[n++] = (probe){g, 0, 0};
    for (size_t i = 0; i < known; i++)
        p[n++] = (probe){e->disk[i].generation, 1, 0};
    *count = n;
    return p;
}

int zc__spill_refresh(zc_store *s, const char *tag)
{
    zc_gen_counter c;
    int exists = 0;
    if (s->spill_dir == NULL)
        return ZC_OK;
    int rc = zc__gen_read(s, tag, &c, &exists);
    if (rc != ZC_OK || !exists)
        return rc; /* no counter: no store of this engine version spilled the tag */
    zc_os_mutex_lock(&s->lock);
    zc_tag_entry *e = zc__tag_find(s, tag);
    if (e && c.last > e->last_generation) {
        e->last_generation = c.last;
        s->changes++;
    }
    if (e && e->seen_valid && e->seen_changes == c.changes) {
        zc_os_mutex_unlock(&s->lock);
        return ZC_OK;
    }
    size_t n = 0;
    probe *p = plan(e, c.last, &n);
    zc_os_mutex_unlock(&s->lock);
    if (p == NULL)
        return zc__fail(ZC_E_NOMEM, "out of host memory looking for spill files of tag \"%s\"",
                        tag);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        zc_os_path_kind kind;
        p[i].present = zc__spill_path(s, tag, p[i].generation, path, sizeof path) == ZC_OK &&
                       zc_os_stat(path, &kind, NULL) == 0 && kind == ZC_OS_PATH_FILE;
    }
    zc_os_mutex_lock(&s->lock);
    e = zc__tag_get_or_create(s, tag);
    int found_or_lost = 0; /* a file appeared or went, or the newest rose */
    for (size_t i = 0; e && rc == ZC_OK && i < n; i++) {
        /* Only what was known before the probe can be forgotten: a file this
         * store's writer added meanwhile was not looked at. */
        if (p[i].present && zc__disk_add(e, p[i].generation, 0) != 0)
            rc = zc__fail(ZC_E_NOMEM, "out of host memory indexing tag \"%s\"", tag);
        else if (p[i].present != p[i].known)
            found_or_lost = 1;
        if (!p[i].present && p[i].known)
            zc__disk_remove(e, p[i].generation);
    }
    if (e == NULL && rc == ZC_OK)
        rc = zc__fail(ZC_E_NOMEM, "out of host memory indexing tag \"%s\"", tag);
    if (e && rc == ZC_OK) {
        e->seen_changes = c.changes;
        e->seen_valid = 1;
        if (c.last > e->last_generation) {
            e->last_generation = c.last;
            found_or_lost = 1;
        }
    }
    if (found_or_lost)
        s->changes++;
    zc_os_mutex_unlock(&s->lock);
    free(p);
    return rc;
}
