/*
 * spill_prune.c — what a store prunes of a tag's spill files once it holds
 * more than disk_keep of them: its own files beyond the newest disk_keep,
 * except those a film still needs.  A shot's parent (its lineage's
 * parent_generation in the same tag) is read once per file: from the slot
 * when this store wrote it, else from the file's header the first time a
 * prune looks at it, and kept in the index.  Kept always: every file of
 * another store, the newest disk_keep of this store's, every ancestor
 * within the tag of a kept file, the pinned takes of the choices file and
 * their ancestors, and when the tag is a film (a file has a lineage or is
 * a start image) its anchor: the lowest-generation root, and when that is
 * a start image its lowest-generation child as well (the film's first
 * shot).  A tag without lineage prunes as before, oldest first.  When what
 * a film needs cannot be known this time (a file that cannot be opened for
 * a reason other than being gone or corrupt, a choices file that cannot be
 * read or parsed), nothing is pruned this time: a pinned take or an
 * ancestor is never lost to a transient error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "film/film.h"
#include "store_internal.h"

typedef struct {
    zc_disk_file f;
    int gone;      /* its file vanished (another process removed it) */
    int uncertain; /* its file could not be read now: its parent is unknown */
    int keep;
} candidate;

void zc__lineage_read(zc_disk_file *d, const char *tag, const char *lineage, const char *kind)
{
    d->lineage_known = 1;
    d->start_image = kind != NULL && strcmp(kind, "start_image") == 0;
    d->in_film = d->start_image || lineage != NULL;
    d->parent = 0;
    uint64_t p = 0;
    if (lineage != NULL && zc__film_lineage_parent(lineage, tag, &p) && p < d->generation)
        d->parent = p;
}

void zc__lineage_copy(zc_disk_file *to, const zc_disk_file *from)
{
    to->lineage_known = from->lineage_known;
    to->parent = from->parent;
    to->start_image = from->start_image;
    to->in_film = from->in_film;
}

static void read_lineage(const zc_store *s, const char *tag, candidate *c)
{
    char path[4096];
    zc_file *f = NULL;
    zc_os_path_kind kind;
    if (zc__spill_path(s, tag, c->f.generation, path, sizeof path) != ZC_OK)
        return;
    int rc = zc__spill_file_open(path, &f);
    if (rc != ZC_OK) {
        c->gone = zc_os_error_is(zc_os_stat(path, &kind, NULL), ZC_OS_NOT_FOUND);
        c->f.lineage_known = !c->gone && rc == ZC_E_CORRUPT; /* corrupt: a root outside any film */
        c->uncertain = !c->gone && rc != ZC_E_CORRUPT;        /* try again at the next prune */
        return;
    }
    zc__lineage_read(&c->f, tag, zc_file_meta(f, "lineage"), zc_file_meta(f, "kind"));
    zc_file_close(f);
}

static long find(const candidate *c, size_t n, uint64_t generation)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c[mid].f.generation < generation)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && c[lo].f.generation == generation && !c[lo].gone ? (long)lo : -1;
}

/* Marks what to keep; 0 when what the film needs cannot be known now (keep everything). */
static int choose_kept(const zc_store *s, const char *tag, candidate *c, size_t n)
{
    uint32_t mine_kept = 0;
    int film = 0;
    for (size_t i = n; i-- > 0;) {
        if (c[i].uncertain)
            return 0;
        if (c[i].gone)
            continue;
        film |= c[i].f.in_film;
        if (!c[i].f.mine)
            c[i].keep = 1;
        else if (mine_kept < s->config.disk_keep)
            c[i].keep = 1, mine_kept++;
    }
    uint64_t *pins = NULL;
    size_t npins = 0;
    int unreadable = 0;
    if (zc__film_read_pins(s->spill_dir, tag, &pins, &npins, &unreadable) != ZC_OK || unreadable) {
        free(pins);
        return 0; /* the chosen takes are unknown: none may be pruned */
    }
    for (size_t i = 0; i < npins; i++) {
        long j = find(c, n, pins[i]);
        if (j >= 0)
            c[j].keep = 1;
    }
    free(pins);
    for (size_t i = 0; film && i < n; i++) {
        if (c[i].gone || c[i].f.parent != 0)
            continue;
        c[i].keep = 1; /* the anchor: the lowest-generation root */
        for (size_t j = i + 1; c[i].f.start_image && j < n; j++) {
            if (!c[j].gone && c[j].f.parent == c[i].f.generation) {
                c[j].keep = 1; /* the film's first shot */
                break;
            }
        }
        break;
    }
    /* Parents are older than their children: one pass from the newest down. */
    for (size_t i = n; i-- > 0;) {
        long j = c[i].keep && c[i].f.parent ? find(c, n, c[i].f.parent) : -1;
        if (j >= 0)
            c[j].keep = 1;
    }
    return 1;
}

uint32_t zc__spill_plan_prune(zc_store *s, const char *tag, uint64_t *prune, uint32_t cap)
{
    zc_os_mutex_lock(&s->lock);
    zc_tag_entry *e = zc__tag_find(s, tag);
    size_t n = e ? e->disk_count : 0;
    candidate *c = n ? calloc(n, sizeof *c) : NULL;
    for (size_t i = 0; c && i < n; i++)
        c[i].f = e->disk[i];
    zc_os_mutex_unlock(&s->lock);
    if (c == NULL)
        return 0; /* out of memory: nothing is pruned this time */
    for (size_t i = 0; i < n; i++)
        if (!c[i].f.lineage_known)
            read_lineage(s, tag, &c[i]);
    int may_prune = choose_kept(s, tag, c, n);
    uint32_t count = 0;
    zc_os_mutex_lock(&s->lock);
    e = zc__tag_find(s, tag);
    /* One merge pass: the snapshot and the index both ascend (the index may have changed
     * meanwhile; a generation in only one of them is skipped). */
    uint32_t k = 0;
    for (size_t i = 0; e && i < n; i++) {
        while (k < e->disk_count && e->disk[k].generation < c[i].f.generation)
            k++;
        if (k == e->disk_count)
            break;
        zc_disk_file *d = &e->disk[k];
        if (d->generation != c[i].f.generation)
            continue;
        if (!d->lineage_known && c[i].f.lineage_known)
            zc__lineage_copy(d, &c[i].f);
        if (may_prune && d->mine && !c[i].gone && !c[i].keep && count < cap) {
            prune[count++] = d->generation;
            zc__disk_remove_at(e, k); /* the next entry moves down into index k */
        }
    }
    zc_os_mutex_unlock(&s->lock);
    free(c);
    return count;
}
