/*
 * film_choose.c — the tag's chosen takes, kept in the spill folder as
 * ZC_FILM_PREFIX<tag>ZC_FILM_SUFFIX = {"version":1,"tag":"..","chosen":[..]},
 * replaced atomically and durably on every change (a reader sees the old
 * choices or the new ones).  The name starts with '.', so no spill index,
 * refresh or owner scan takes it for a spill file; it is not a temporary
 * file either, so no scan removes it.
 *
 * A choice makes the chosen line pass through the chosen take: its
 * ancestors within the tag are chosen with it (the pins are one chain from
 * a root down), and the pins below it that the line followed stay; every
 * other pin goes.  A take whose lineage cannot be followed (broken, or
 * below a broken shot) cannot be on any line: its choice is refused with
 * the reason.  The read, the change and the write happen under the spill
 * folder's lock (ZC_FOLDER_LOCK, zc__folder_lock), so concurrent choices,
 * from threads or processes, are applied one after the other: the last one
 * wins and the line passes through it, and the pins are always one chain.
 *
 * The choices file is read only when it is a regular file with one name,
 * never through a link (zc__open_private): a choice renames any other file
 * in its place aside and is refused, saying so; a description of the film
 * ignores its pins and says why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "film.h"

static int write_pins(const char *dir, const char *tag, const uint64_t *pins, size_t count)
{
    char *path = zc__film_choices_path(dir, tag);
    if (path == NULL)
        return zc__fail(ZC_E_NOMEM, "out of host memory");
    zc_jsonbuf jb;
    zc__jb_init(&jb);
    zc__jb_raw(&jb, "{\"version\":1,\"tag\":");
    zc__jb_string(&jb, tag);
    zc__jb_raw(&jb, ",\"chosen\":[");
    for (size_t i = 0; i < count; i++) {
        zc__jb_raw(&jb, i ? "," : "");
        zc__jb_u64(&jb, pins[i]);
    }
    zc__jb_raw(&jb, "]}\n");
    int rc = jb.failed ? zc__fail(ZC_E_NOMEM, "out of host memory writing %s", path)
                       : zc__write_bytes(path, jb.data, jb.len);
    zc__jb_free(&jb);
    free(path);
    return rc;
}

/* 1 if shot d descends from shot a (a proper descendant), following parents. */
static int descends_from(const zc_film *film, long d, long a)
{
    for (long at = film->shots[d].parent, steps = 0; at >= 0 && steps <= (long)film->count;
         at = film->shots[at].parent, steps++)
        if (at == a)
            return 1;
    return 0;
}

/* The pins after choosing shot index at of film (its pins are the file's as
 * it stands): the chain from at's root down to at, then the pins below at
 * that the line followed (so the line below at stays as it was).  *out is
 * malloc'd.  @return ZC_OK, ZC_E_STATE (at cannot be on a line: the
 * message says why), ZC_E_NOMEM. */
static int chain_pins(const zc_film *film, long at, uint64_t **out, size_t *n)
{
    const zc_film_shot *chosen = &film->shots[at];
    size_t depth = 0;
    *out = NULL;
    *n = 0;
    for (long i = at; i >= 0 && depth <= film->count; i = film->shots[i].parent, depth++) {
        const zc_film_shot *s = &film->shots[i];
        if (s->state == FILM_BROKEN) {
            char *why = zc__film_problem_text(s);
            int rc = zc__fail(ZC_E_STATE, "generation %llu of tag \"%s\" cannot be on the chosen "
                              "line, so it was not chosen: %s%s; choose a take whose lineage "
                              "can be followed", (unsigned long long)chosen->generation,
                              film->tag, i == at ? "" : "it continues a broken shot: ",
                              why ? why : "its lineage cannot be followed");
            free(why);
            return rc;
        }
    }
    uint64_t *pins = calloc(depth + film->pin_count + 1, sizeof *pins);
    if (pins == NULL)
        return zc__fail(ZC_E_NOMEM, "out of host memory choosing a take of \"%s\"", film->tag);
    size_t k = depth;
    for (long i = at; i >= 0 && k > 0; i = film->shots[i].parent)
        pins[--k] = film->shots[i].generation; /* root first */
    size_t count = depth;
    for (size_t p = 0; p < film->pin_count; p++) {
        long j = zc__film_find(film, film->pins[p]);
        int dup = 0;
        for (size_t q = depth; q < count; q++)
            dup |= pins[q] == film->pins[p];
        if (j >= 0 && !dup && film->shots[j].on_line && descends_from(film, j, at))
            pins[count++] = film->pins[p];
    }
    *out = pins;
    *n = count;
    return ZC_OK;
}

/* zc_film_choose with the folder lock held. */
static int choose_locked(const char *spill_dir, const char *tag, uint64_t generation)
{
    zc_film film;
    uint64_t *old = NULL, *pins = NULL;
    size_t nold = 0, n = 0;
    int unreadable = 0;
    zc_refusal refused;
    /* The choices file as it stands: a file in its place that is not ours
     * is renamed aside and the choice refused, saying so. */
    int rc = zc__film_pins_read(spill_dir, tag, 1, &old, &nold, &unreadable, &refused);
    free(old);
    if (rc == ZC_OK && refused.err != 0) {
        char why[1024];
        snprintf(why, sizeof why, "%s", zc_last_error());
        rc = zc__fail(ZC_E_CORRUPT, "%s; the choice was not made: choose the take again", why);
    }
    if (rc != ZC_OK)
        return rc;
    if (generation == 0) { /* clear: an empty list where there is a file, else nothing to do */
        char *path = zc__film_choices_path(spill_dir, tag);
        if (path == NULL)
            return zc__fail(ZC_E_NOMEM, "out of host memory");
        zc_os_path_kind kind;
        int exists = zc_os_stat(path, &kind, NULL) == 0;
        free(path);
        return exists ? write_pins(spill_dir, tag, NULL, 0) : ZC_OK;
    }
    rc = zc__film_build(spill_dir, tag, 0, &film);
    if (rc != ZC_OK) {
        zc__film_free(&film);
        return rc;
    }
    long at = zc__film_find(&film, generation);
    if (at < 0) {
        rc = zc__fail(ZC_E_NOT_FOUND, "tag \"%s\" has no generation %llu in \"%s\" (its "
                        "generations run %llu..%llu); choose one that has a spill file", tag,
                        (unsigned long long)generation, spill_dir,
                        (unsigned long long)film.shots[0].generation,
                        (unsigned long long)film.newest);
        zc__film_free(&film);
        return rc;
    }
    rc = chain_pins(&film, at, &pins, &n);
    if (rc == ZC_OK)
        rc = write_pins(spill_dir, tag, pins, n);
    free(pins);
    zc__film_free(&film);
    return rc;
}

int zc_film_choose(const char *spill_dir, const char *tag, uint64_t generation)
{
    if (spill_dir == NULL || tag == NULL || spill_dir[0] == '\0')
        return zc__fail(ZC_E_INVALID, "zc_film_choose: spill_dir or tag is NULL or empty");
    int rc = zc_tag_check(tag);
    if (rc != ZC_OK)
        return rc;
    zc_folder_lock lock;
    zc_refusal refused;
    if ((rc = zc__folder_lock(spill_dir, &lock, &refused)) != ZC_OK)
        return rc;
    if (refused.err != 0) {
        /* A planted hard link or FIFO as the folder lock: renamed aside, a new
         * lock made and held.  Said by refusing this choice; the next one
         * goes through. */
        char *lock_path = malloc(strlen(spill_dir) + sizeof ZC_FOLDER_LOCK + 1);
        char why[1024] = "";
        if (lock_path != NULL) {
            sprintf(lock_path, "%s/%s", spill_dir, ZC_FOLDER_LOCK);
            zc__refusal_text(&refused, "the folder lock", lock_path, "a new one was made", why,
                             sizeof why);
        }
        free(lock_path);
        zc__folder_unlock(&lock);
        return zc__fail(ZC_E_CORRUPT, "%s; the choice was not made: choose the take again", why);
    }
    rc = choose_locked(spill_dir, tag, generation);
    zc__folder_unlock(&lock);
    return rc;
}

int zc_film_has_choices(const char *spill_dir, const char *tag)
{
    uint64_t *pins = NULL;
    size_t n = 0;
    int unreadable = 0;
    if (spill_dir == NULL || tag == NULL || zc_tag_check(tag) != ZC_OK)
        return 0;
    int rc = zc__film_read_pins(spill_dir, tag, &pins, &n, &unreadable);
    free(pins);
    return rc == ZC_OK && !unreadable && n > 0;
}
