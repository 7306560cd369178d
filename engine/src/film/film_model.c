/*
 * film_model.c — the film of one tag from its spill files: each file's
 * lineage read from its metadata, parents linked within the tag, the
 * takes of every shot (siblings: one parent, or every root of the tag),
 * the chosen take of each (the one a pin chooses, a pin choosing its
 * ancestors too; else the one whose subtree holds the newest generation),
 * the chosen line from the chosen root down to a leaf, and each shot's
 * state.  Verification is film_verify.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "film.h"
#include "format/json_reader.h"
#include "format/spill_names.h"

static const zc_json_limits lineage_limits = {.max_depth = 4, .max_nodes = 256, .max_members = 64};

const char *zc__film_state_name(int state)
{
    static const char *const names[] = {"line", "alternative", "stale", "broken"};
    return state >= 0 && state <= FILM_BROKEN ? names[state] : "?";
}

const char *zc__film_hop_name(int hop)
{
    static const char *const names[] = {"unchecked", "ok", "bad", "root", "missing_parent",
                                        "cycle", "not_checked_external"};
    return hop >= 0 && hop <= FILM_HOP_EXTERNAL ? names[hop] : "?";
}

const char *zc__film_file_name(int file)
{
    static const char *const names[] = {"unchecked", "ok", "bad"};
    return file >= 0 && file <= FILM_FILE_BAD ? names[file] : "?";
}

const char *zc__film_record_name(int record)
{
    static const char *const names[] = {"unchecked", "ok", "bad", "not_covered"};
    return record >= 0 && record <= FILM_RECORD_NOT_COVERED ? names[record] : "?";
}

static void shot_free(zc_film_shot *s)
{
    free(s->parent_tag);
    free(s->tail_digest);
    free(s->used_digest);
    free(s->adapter);
    free(s->prompt);
    free(s->audio_tail_digest);
    free(s->problem);
    free(s->tail_mean); /* tail_std shares its block */
}

void zc__film_free(zc_film *f)
{
    for (size_t i = 0; f->shots && i < f->count; i++)
        shot_free(&f->shots[i]);
    free(f->shots);
    free(f->line);
    free(f->pins);
    free(f->dir);
    zc__jb_free(&f->problems);
    memset(f, 0, sizeof *f);
}

/* ---- reading one file's lineage ---- */

static int get_uint(const zc_json_doc *doc, const zc_json_node *obj, const char *key, uint64_t *out)
{
    const zc_json_node *n = zc__json_member(doc, obj, key);
    if (n == NULL || n->type != ZC_JSON_NUMBER || !n->is_uint)
        return -1;
    *out = n->num;
    return 0;
}

static int get_str(const zc_json_doc *doc, const zc_json_node *obj, const char *key, char **out)
{
    const zc_json_node *n = zc__json_member(doc, obj, key);
    if (n == NULL || n->type != ZC_JSON_STRING)
        return -1;
    *out = zc__strdup(zc__json_str(doc, n));
    return *out ? 0 : -1;
}

/* Fill the lineage fields from the JSON text; 0 when it is a lineage of
 * version 1 or 2 (2 adds the hop's seam) with every required field, else
 * -1 and why in *why. */
static int parse_lineage(zc_film_shot *s, const char *text, char *why, size_t cap)
{
    zc_json_doc doc;
    zc_json_error err;
    uint64_t version = 0;
    int rc = zc__json_parse(text, strlen(text), &lineage_limits, &doc, &err);
    if (rc != 0) {
        snprintf(why, cap, "its lineage is not valid JSON (byte %zu: %s)", err.pos, err.msg);
        return -1;
    }
    const zc_json_node *root = zc__json_node(&doc, 0);
    rc = -1;
    if (root->type != ZC_JSON_OBJECT) {
        snprintf(why, cap, "its lineage is a JSON %s, not an object",
                 zc__json_type_name(root->type));
    } else if (get_uint(&doc, root, "version", &version) != 0 || version < 1 || version > 2) {
        snprintf(why, cap, "its lineage has no version 1 or 2");
    } else if (get_str(&doc, root, "parent_tag", &s->parent_tag) != 0 ||
               get_uint(&doc, root, "parent_generation", &s->parent_generation) != 0 ||
               get_uint(&doc, root, "tail_frames", &s->tail_frames) != 0 ||
               get_str(&doc, root, "tail_digest", &s->tail_digest) != 0 ||
               get_str(&doc, root, "used_digest", &s->used_digest) != 0 ||
               get_str(&doc, root, "adapter", &s->adapter) != 0 ||
               get_uint(&doc, root, "trim", &s->trim) != 0) {
        snprintf(why, cap, "its lineage lacks a valid parent_tag, parent_generation, "
                 "tail_frames, tail_digest, used_digest, adapter or trim");
    } else if (s->parent_generation == 0 || zc_tag_check(s->parent_tag) != ZC_OK) {
        snprintf(why, cap, "its lineage names no valid parent (tag \"%.80s\", generation %llu)",
                 s->parent_tag, (unsigned long long)s->parent_generation);
    } else {
        rc = 0;
        (void)get_str(&doc, root, "prompt", &s->prompt);
        s->has_seed = get_uint(&doc, root, "seed", &s->seed) == 0;
        (void)get_str(&doc, root, "audio_tail_digest", &s->audio_tail_digest);
        s->has_audio_span = get_uint(&doc, root, "audio_axis", &s->audio_axis) == 0 &&
                            get_uint(&doc, root, "audio_start", &s->audio_start) == 0 &&
                            get_uint(&doc, root, "audio_count", &s->audio_count) == 0;
        zc__film_seam_read(&doc, root, &s->seam);
    }
    zc__json_free(&doc);
    return rc;
}

int zc__film_lineage_parent(const char *lineage, const char *tag, uint64_t *parent)
{
    zc_film_shot s;
    char why[400];
    memset(&s, 0, sizeof s);
    *parent = 0;
    int ok = parse_lineage(&s, lineage, why, sizeof why) == 0;
    if (ok && strcmp(s.parent_tag, tag) == 0)
        *parent = s.parent_generation;
    shot_free(&s);
    return ok;
}

static void read_shot(zc_film *film, zc_film_shot *s)
{
    char path[4096];
    zc_file *f = NULL;
    s->parent = -1;
    int rc = zc__spill_path_in(film->dir, film->tag, s->generation, path, sizeof path);
    if (rc == ZC_OK)
        rc = zc__spill_file_open(path, &f); /* never a link or another's file */
    if (rc != ZC_OK) {
        s->file = FILM_FILE_BAD;
        s->state = FILM_BROKEN;
        zc__film_problem(s, "its file cannot be read (%s); delete it or restore it from a copy",
                         zc_last_error());
        return;
    }
    s->opened = 1;
    /* A header that differs from its record digest cannot be trusted: not its lineage (a parent
     * rewritten would move the shot to another place), not its trim or shape.  The shot is
     * broken, and its file bad, with or without verification (the check reads no tensor). */
    const char *changed = NULL;
    int record = zc_file_record(f, &changed);
    s->record = record == ZC_RECORD_OK    ? FILM_RECORD_OK
                : record == ZC_RECORD_BAD ? FILM_RECORD_BAD
                                          : FILM_RECORD_NOT_COVERED;
    if (s->record == FILM_RECORD_BAD) {
        s->file = FILM_FILE_BAD;
        s->state = FILM_BROKEN;
        zc__film_problem(s, "%s; its lineage cannot be trusted, so it is left off the film: "
                         "restore the file from a good copy, or delete it and render the shot "
                         "again", changed);
    }
    const char *kind = zc_file_meta(f, "kind");
    s->start_image = kind != NULL && strcmp(kind, "start_image") == 0;
    uint32_t idx;
    zc_file_tensor ft;
    if (zc_file_find(f, ZC_FILE_LATENT_TENSOR, &idx) == ZC_OK &&
        zc_file_tensor_at(f, idx, &ft) == ZC_OK) {
        s->has_latent = 1;
        s->ndim = ft.ndim;
        memcpy(s->shape, ft.shape, sizeof s->shape);
        if (ft.has_digest)
            zc__digest_text(ft.digest_algo, ft.recorded_digest, s->digest);
    }
    zc_seam_side *tail =
        zc__seam_side_parse(zc_file_meta(f, ZC_FILE_META_SEAM_PREFIX ZC_FILE_LATENT_TENSOR));
    if (tail != NULL && tail->frames > 0 && tail->channels > 0) {
        s->tail_mean = malloc(2 * (size_t)tail->channels * sizeof(double));
        if (s->tail_mean != NULL) {
            s->tail_std = s->tail_mean + tail->channels;
            s->tail_channels = tail->channels;
            (void)zc__seam_side_moments(tail, s->tail_mean, s->tail_std);
        }
    }
    zc__seam_side_free(tail);
    const char *lineage = zc_file_meta(f, "lineage");
    if (lineage != NULL) {
        char why[400];
        s->has_lineage = 1;
        if (parse_lineage(s, lineage, why, sizeof why) == 0) {
            s->lineage_ok = 1;
            if (!s->seam.present) /* measured after the put: the file's record */
                zc__film_seam_read_record(zc_file_meta(f, ZC_FILE_META_HOP_SEAM), &s->seam);
        } else {
            s->state = FILM_BROKEN;
            zc__film_problem(s, "%s; store the shot again through a Handoff, or delete its file",
                             why);
        }
    }
    zc_file_close(f);
}

/* ---- the directory ---- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int list_generations(zc_film *film, uint64_t **gens, size_t *count)
{
    zc_os_dir *d = NULL;
    int err = zc_os_dir_open(film->dir, &d);
    *gens = NULL;
    *count = 0;
    if (err != 0)
        return zc__fail(ZC_E_IO, "cannot read spill directory \"%s\": %s", film->dir,
                        ZC_OS_WHY(err));
    size_t n = 0, cap = 0;
    uint64_t *g = NULL;
    const char *name;
    char tag[ZC_MAX_TAG_LEN + 1];
    uint64_t gen;
    int rc = ZC_OK;
    while ((err = zc_os_dir_next(d, &name)) == 0 && name != NULL) {
        if (zc__spill_parse_name(name, tag, &gen) != 0 || strcmp(tag, film->tag) != 0)
            continue;
        if (n == cap) {
            size_t c = cap ? cap * 2 : 16;
            uint64_t *p = realloc(g, sizeof *p * c);
            if (p == NULL) {
                rc = zc__fail(ZC_E_NOMEM, "out of host memory listing \"%s\"", film->dir);
                break;
            }
            g = p;
            cap = c;
        }
        g[n++] = gen;
    }
    zc_os_dir_close(d);
    if (rc == ZC_OK && err != 0)
        rc = zc__fail(ZC_E_IO, "cannot read spill directory \"%s\": %s", film->dir,
                      ZC_OS_WHY(err));
    if (rc != ZC_OK) {
        free(g);
        return rc;
    }
    if (n > 0)
        qsort(g, n, sizeof *g, cmp_u64);
    *gens = g;
    *count = n;
    return ZC_OK;
}

long zc__film_find(const zc_film *film, uint64_t gen)
{
    size_t lo = 0, hi = film->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (film->shots[mid].generation < gen)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < film->count && film->shots[lo].generation == gen ? (long)lo : -1;
}

static int is_pinned(const zc_film *film, uint64_t gen)
{
    for (size_t i = 0; i < film->pin_count; i++)
        if (film->pins[i] == gen)
            return 1;
    return 0;
}

/* ---- links, takes, the line ---- */

/* Parents within the tag; what cannot be linked is broken (a missing
 * parent, a parent at or after the shot, a cycle). */
static void link_parents(zc_film *film)
{
    for (size_t i = 0; i < film->count; i++) {
        zc_film_shot *s = &film->shots[i];
        if (s->state == FILM_BROKEN || !s->lineage_ok) {
            if (s->state != FILM_BROKEN)
                s->hop = FILM_HOP_ROOT;
            continue;
        }
        if (strcmp(s->parent_tag, film->tag) != 0) {
            s->external = 1;
            s->hop = FILM_HOP_EXTERNAL;
            continue;
        }
        long p = zc__film_find(film, s->parent_generation);
        if (p < 0) {
            s->state = FILM_BROKEN;
            s->hop = FILM_HOP_MISSING_PARENT;
            /* nothing older than the lost parent is left: the film's beginning is gone */
            int first_gone = film->count == 0 || film->shots[0].generation > s->parent_generation;
            if (first_gone)
                zc__film_problem(s, "it continues generation %llu of tag \"%s\", which has no "
                                 "spill file (pruned or deleted), and no older shot of the film is "
                                 "left: start the film again: store a new first shot under tag "
                                 "\"%s\" (a sampler from an empty latent or a start image, then "
                                 "ZeroCopyLatentStore) and continue from it, or delete this "
                                 "shot's file", (unsigned long long)s->parent_generation,
                                 film->tag, film->tag);
            else
                zc__film_problem(s, "it continues generation %llu of tag \"%s\", which has no "
                                 "spill file (pruned or deleted); render this shot again through "
                                 "a Handoff from a shot on the line, or delete its file",
                                 (unsigned long long)s->parent_generation, film->tag);
            continue;
        }
        s->parent = p;
    }
    /* Cycles: a walk up the raw links that comes back to where it began. */
    for (size_t i = 0; i < film->count; i++) {
        zc_film_shot *s = &film->shots[i];
        if (s->parent < 0)
            continue;
        long at = s->parent;
        for (size_t steps = 0; at >= 0 && steps <= film->count; steps++) {
            if (at == (long)i) {
                s->state = FILM_BROKEN;
                s->hop = FILM_HOP_CYCLE;
                zc__film_problem(s, "its lineage is a cycle (it descends from itself through "
                                 "generation %llu); delete the shots of the cycle or store them "
                                 "again", (unsigned long long)s->parent_generation);
                break;
            }
            at = film->shots[at].parent;
        }
    }
    for (size_t i = 0; i < film->count; i++) {
        zc_film_shot *s = &film->shots[i];
        if (s->parent >= 0 && s->hop != FILM_HOP_CYCLE && s->parent_generation >= s->generation) {
            s->state = FILM_BROKEN;
            s->hop = FILM_HOP_BAD;
            zc__film_problem(s, "its lineage names parent generation %llu, which is not older "
                             "than the shot itself; its lineage is wrong: store the shot again "
                             "through a Handoff", (unsigned long long)s->parent_generation);
        }
    }
    for (size_t i = 0; i < film->count; i++) /* broken links are cut */
        if (film->shots[i].hop == FILM_HOP_BAD || film->shots[i].hop == FILM_HOP_CYCLE)
            film->shots[i].parent = -1;
}

/* 1 if shot i belongs to the tree: not broken, and its parent (if any) too. */
/* Every pass below is one walk forward or back: a shot that is not broken has
 * its parent at a lower index (link_parents breaks any other link).  A sibling
 * group is named by its parent's index + 1 (0: the roots). */
typedef struct {
    int *tree;            /* per shot: linked down to a root, nothing broken on the way */
    uint32_t *takes;      /* per group: its members in the tree */
    uint32_t *seen;       /* per group: members met so far (the take number) */
    long *best, *pinned;  /* per group: the newest subtree, the member the pins choose */
} line_work;

/* Which member of each group the pins choose (w->pinned; -1: none).  A pin
 * chooses its shot and every ancestor of it, so the line passes through it.
 * Pins are taken newest first (the file lists them in the order they were
 * chosen); a pin whose path up to its root goes through a group a newer pin
 * chose otherwise is not followed, and is said in the problems.  The pins
 * zc_film_choose writes are one chain, so every one of them is followed;
 * older engines' files (one pin per place) are read the same way. */
static void choose_pinned(zc_film *film, line_work *w)
{
    for (size_t k = film->pin_count; k-- > 0;) {
        long p = zc__film_find(film, film->pins[k]), clash = -1;
        if (p < 0)
            continue; /* no file: load_pins said so */
        if (!w->tree[p]) {
            zc__jb_printf(&film->problems, "generation %llu is pinned but cannot be on the line: "
                          "its lineage, or an ancestor's, cannot be followed; choose another take "
                          "or clear the choices\n", (unsigned long long)film->pins[k]);
            continue;
        }
        for (long at = p; at >= 0 && clash < 0; at = film->shots[at].parent) {
            long g = film->shots[at].parent + 1, chosen = w->pinned[g];
            if (chosen >= 0 && chosen != at)
                clash = chosen;
        }
        if (clash >= 0) {
            zc__jb_printf(&film->problems, "generation %llu is pinned, but a later choice took "
                          "generation %llu at its place or above it, so the line does not pass "
                          "through it; choose it again to follow it\n",
                          (unsigned long long)film->pins[k],
                          (unsigned long long)film->shots[clash].generation);
            continue;
        }
        for (long at = p; at >= 0; at = film->shots[at].parent)
            w->pinned[film->shots[at].parent + 1] = at;
    }
}

static void line_work_free(line_work *w)
{
    free(w->tree);
    free(w->takes);
    free(w->seen);
    free(w->best);
    free(w->pinned);
}

static int build_line(zc_film *film)
{
    size_t n = film->count;
    line_work w = {calloc(n + 1, sizeof *w.tree), calloc(n + 1, sizeof *w.takes),
                   calloc(n + 1, sizeof *w.seen), malloc((n + 1) * sizeof *w.best),
                   malloc((n + 1) * sizeof *w.pinned)};
    film->line = calloc(n ? n : 1, sizeof *film->line);
    if (!w.tree || !w.takes || !w.seen || !w.best || !w.pinned || film->line == NULL) {
        line_work_free(&w);
        return zc__fail(ZC_E_NOMEM, "out of host memory building the film of \"%s\"", film->tag);
    }
    int *tree = w.tree;
    for (size_t i = 0; i < n; i++) {
        zc_film_shot *s = &film->shots[i];
        tree[i] = s->state != FILM_BROKEN &&
                  (s->parent < 0 || ((size_t)s->parent < i && tree[s->parent]));
        s->placed = tree[i];
        s->pinned = is_pinned(film, s->generation);
        s->subtree_newest = s->generation;
        if (s->hop == FILM_HOP_UNCHECKED && s->parent < 0 && s->state != FILM_BROKEN)
            s->hop = FILM_HOP_ROOT;
    }
    /* Parents are older than their children: one pass from the newest up. */
    for (size_t i = n; i-- > 0;) {
        zc_film_shot *s = &film->shots[i];
        if (tree[i] && s->parent >= 0 &&
            s->subtree_newest > film->shots[s->parent].subtree_newest)
            film->shots[s->parent].subtree_newest = s->subtree_newest;
    }
    /* Depth and shot number along the raw links (older first). */
    for (size_t i = 0; i < n; i++) {
        zc_film_shot *s = &film->shots[i];
        if (s->parent >= 0 && (size_t)s->parent < i) {
            const zc_film_shot *p = &film->shots[s->parent];
            s->depth = p->depth + 1;
            s->shot = p->shot + 1;
        } else {
            s->depth = 0;
            s->shot = s->start_image ? 0 : 1;
        }
    }
    /* Takes: position by generation within the sibling group; and each group's chosen
     * member: the one the pins choose (choose_pinned), else the one with the newest
     * subtree (the first of equals). */
    for (size_t g = 0; g <= n; g++)
        w.best[g] = w.pinned[g] = -1;
    for (size_t i = 0; i < n; i++) {
        if (!tree[i])
            continue;
        const zc_film_shot *s = &film->shots[i];
        size_t g = (size_t)(s->parent + 1);
        w.takes[g]++;
        if (w.best[g] < 0 || s->subtree_newest > film->shots[w.best[g]].subtree_newest)
            w.best[g] = (long)i;
    }
    choose_pinned(film, &w);
    for (size_t i = 0; i < n; i++) {
        if (!tree[i])
            continue;
        size_t g = (size_t)(film->shots[i].parent + 1);
        film->shots[i].take = ++w.seen[g];
        film->shots[i].takes = w.takes[g];
    }
    for (long g = 0, at; (at = w.pinned[g] >= 0 ? w.pinned[g] : w.best[g]) >= 0; g = at + 1) {
        film->shots[at].on_line = 1;
        film->line[film->line_count++] = film->shots[at].generation;
    }
    for (size_t i = 0; i < n; i++) {
        zc_film_shot *s = &film->shots[i];
        if (s->state == FILM_BROKEN)
            continue;
        if (s->on_line)
            s->state = FILM_LINE;
        else if (tree[i] && (s->parent < 0 || film->shots[s->parent].on_line))
            s->state = FILM_ALTERNATIVE;
        else
            s->state = FILM_STALE;
        if (tree[i] && s->parent < 0 && film->anchor == 0)
            film->anchor = s->generation;
    }
    line_work_free(&w);
    return ZC_OK;
}

static void load_pins(zc_film *film)
{
    int unreadable = 0;
    if (zc__film_read_pins(film->dir, film->tag, &film->pins, &film->pin_count, &unreadable) !=
            ZC_OK || unreadable) {
        zc__jb_printf(&film->problems, "the choices file %s%s%s of tag \"%s\" cannot be read "
                      "(%s); its pins are ignored: choose the takes again\n", ZC_FILM_PREFIX,
                      film->tag, ZC_FILM_SUFFIX, film->tag, zc_last_error());
        free(film->pins);
        film->pins = NULL;
        film->pin_count = 0;
        return;
    }
    for (size_t i = 0; i < film->pin_count; i++)
        if (zc__film_find(film, film->pins[i]) < 0)
            zc__jb_printf(&film->problems, "generation %llu is pinned but has no spill file; "
                          "choose another take or clear the choices\n",
                          (unsigned long long)film->pins[i]);
}

static void judge(zc_film *film)
{
    film->ok = 1;
    for (size_t i = 0; i < film->count; i++) {
        const zc_film_shot *s = &film->shots[i];
        if (s->state == FILM_BROKEN)
            film->ok = 0;
        if (film->verified && (s->file != FILM_FILE_OK ||
                               (s->hop != FILM_HOP_OK && s->hop != FILM_HOP_ROOT &&
                                s->hop != FILM_HOP_EXTERNAL)))
            film->ok = 0;
    }
}

int zc__film_build(const char *dir, const char *tag, uint32_t flags, zc_film *film)
{
    memset(film, 0, sizeof *film);
    zc__jb_init(&film->problems);
    if (dir == NULL || dir[0] == '\0')
        return zc__fail(ZC_E_INVALID, "the spill directory is NULL or empty; pass the folder "
                        "that holds the tag's .latent files");
    if (tag == NULL)
        return zc__fail(ZC_E_INVALID, "the tag is NULL; pass the film's tag");
    int rc = zc_tag_check(tag);
    if (rc != ZC_OK)
        return rc;
    if ((flags & ~(uint32_t)ZC_FILM_VERIFY) != 0)
        return zc__fail(ZC_E_INVALID, "unknown film flags 0x%x; the only flag is ZC_FILM_VERIFY",
                        (unsigned)(flags & ~(uint32_t)ZC_FILM_VERIFY));
    snprintf(film->tag, sizeof film->tag, "%s", tag);
    if ((film->dir = zc__strdup(dir)) == NULL)
        return zc__fail(ZC_E_NOMEM, "out of host memory");
    uint64_t *gens = NULL;
    size_t n = 0;
    if ((rc = list_generations(film, &gens, &n)) != ZC_OK)
        return rc;
    if (n == 0) {
        free(gens);
        return zc__fail(ZC_E_NOT_FOUND, "tag \"%s\" has no spill files in \"%s\" (no "
                        "%s@<generation>.latent); check the tag and the folder", tag, dir, tag);
    }
    film->shots = calloc(n, sizeof *film->shots);
    if (film->shots == NULL) {
        free(gens);
        return zc__fail(ZC_E_NOMEM, "out of host memory reading the film of \"%s\"", tag);
    }
    film->count = n;
    for (size_t i = 0; i < n; i++) {
        film->shots[i].generation = gens[i];
        film->shots[i].state = FILM_LINE; /* until judged */
    }
    free(gens);
    film->newest = film->shots[n - 1].generation;
    for (size_t i = 0; i < n; i++)
        read_shot(film, &film->shots[i]);
    load_pins(film);
    link_parents(film);
    if ((rc = build_line(film)) != ZC_OK)
        return rc;
    if (flags & ZC_FILM_VERIFY) {
        film->verified = 1;
        if ((rc = zc__film_verify(film)) != ZC_OK)
            return rc;
    }
    judge(film);
    if (film->problems.failed)
        return zc__fail(ZC_E_NOMEM, "out of host memory describing the film of \"%s\"", tag);
    return ZC_OK;
}
