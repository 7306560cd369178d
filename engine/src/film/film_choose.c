/*
 * film_choose.c — the tag's chosen takes, kept in the spill folder as
 * ZC_FILM_PREFIX<tag>ZC_FILM_SUFFIX = {"version":1,"tag":"..","chosen":[..]},
 * replaced atomically and durably on every change (a reader sees the old
 * choices or the new ones).  The name starts with '.', so no spill index,
 * refresh or owner scan takes it for a spill file; it is not a temporary
 * file either, so no scan removes it.  Two processes choosing at once:
 * the last one to write wins.
 *
 * The choices file is read only when it is a regular file with one name,
 * never through a link: a description of the film ignores the pins of any
 * other file in its place and says why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "film.h"
#include "format/json_reader.h"

#define CHOICES_MAX_BYTES (1u << 20)

static const zc_json_limits choices_limits = {.max_depth = 4, .max_nodes = 1u << 16,
                                              .max_members = 16};

char *zc__film_choices_path(const char *dir, const char *tag)
{
    size_t n = strlen(dir) + strlen(tag) + sizeof ZC_FILM_PREFIX + sizeof ZC_FILM_SUFFIX + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/" ZC_FILM_PREFIX "%s" ZC_FILM_SUFFIX, dir, tag);
    return p;
}

/* The file's bytes (NUL-terminated), or *missing 1 when there is none.  Only
 * a regular file with one name, never through a link: anything else is
 * ZC_E_CORRUPT (unreadable), and with aside (a choice, under the folder
 * lock) it is also renamed aside, *refused saying so. */
static int read_text(const char *path, int aside, char **text, size_t *len, int *missing,
                     zc_refusal *refused)
{
    zc_os_file f = ZC_OS_FILE_CLOSED;
    uint64_t size = 0, links = 0;
    int regular = 0, err;
    *text = NULL;
    *missing = 0;
    memset(refused, 0, sizeof *refused);
    if (aside) {
        err = zc__open_private(path, 0, &f, refused);
    } else if ((err = zc_os_file_open_read_nofollow(path, &f)) == 0 &&
               (err = zc_os_file_check_private(f, &links)) != 0) {
        zc_os_file_close(&f);
        refused->err = err;
        refused->links = links;
    }
    if (err != 0 || refused->err != 0) {
        if (refused->err == 0 && zc_os_error_is(err, ZC_OS_NOT_FOUND)) {
            *missing = 1;
            return ZC_OK;
        }
        if (refused->err != 0 || zc_os_error_is(err, ZC_OS_NOT_PRIVATE)) {
            int why = refused->err != 0 ? refused->err : err;
            char names[64] = "";
            if (why == ZC_OS_ERROR_HARD_LINKED)
                snprintf(names, sizeof names, " (it has %llu names)",
                         (unsigned long long)refused->links);
            if (refused->renamed) {
                char number[16] = "";
                if (refused->aside > 1)
                    snprintf(number, sizeof number, ".%d", refused->aside);
                return zc__fail(ZC_E_CORRUPT, "the choices file \"%s\" was refused: %s%s; it was "
                                "renamed to \"%s%s%s\" (kept, never deleted) and its choices "
                                "are not used", path, ZC_OS_WHY(why), names, path, number,
                                ZC_REJECTED_SUFFIX);
            }
            return zc__fail(ZC_E_CORRUPT, "the choices file \"%s\" is refused: %s%s%s", path,
                            ZC_OS_WHY(why), names,
                            why == ZC_OS_ERROR_LINK_REFUSED ? ""
                            : aside ? "; it could not be renamed aside: remove it"
                                    : "; a choice of a take replaces it with a file of its own");
        }
        return zc__fail(ZC_E_IO, "cannot open %s: %s", path, ZC_OS_WHY(err));
    }
    int rc = ZC_OK;
    if ((err = zc_os_file_info(f, &size, &regular)) != 0)
        rc = zc__fail(ZC_E_IO, "cannot stat %s: %s", path, ZC_OS_WHY(err));
    else if (!regular || size > CHOICES_MAX_BYTES)
        rc = zc__fail(ZC_E_CORRUPT, "%s is not a regular file of at most %u bytes", path,
                      CHOICES_MAX_BYTES);
    char *buf = rc == ZC_OK ? malloc((size_t)size + 1) : NULL;
    size_t got = 0;
    if (rc == ZC_OK && buf == NULL)
        rc = zc__fail(ZC_E_NOMEM, "out of host memory reading %s", path);
    if (rc == ZC_OK && (err = zc_os_file_read_at(f, buf, (size_t)size, 0, &got)) != 0)
        rc = zc__fail(ZC_E_IO, "cannot read %s: %s", path, ZC_OS_WHY(err));
    zc_os_file_close(&f);
    if (rc != ZC_OK) {
        free(buf);
        return rc;
    }
    buf[got] = '\0';
    *text = buf;
    *len = got;
    return ZC_OK;
}

/* zc__film_read_pins; aside: rename a file that is not private aside
 * (*refused says so). */
static int read_pins(const char *dir, const char *tag, int aside, uint64_t **pins, size_t *count,
                     int *unreadable, zc_refusal *refused)
{
    char *path = zc__film_choices_path(dir, tag), *text = NULL;
    size_t len = 0;
    int missing = 0;
    *pins = NULL;
    *count = 0;
    *unreadable = 0;
    memset(refused, 0, sizeof *refused);
    if (path == NULL)
        return zc__fail(ZC_E_NOMEM, "out of host memory");
    int rc = read_text(path, aside, &text, &len, &missing, refused);
    if (rc != ZC_OK || missing) {
        if (rc == ZC_E_CORRUPT) {
            *unreadable = 1;
            rc = ZC_OK;
        }
        free(path);
        return rc;
    }
    zc_json_doc doc;
    zc_json_error err;
    if (zc__json_parse(text, len, &choices_limits, &doc, &err) != 0) {
        *unreadable = 1;
        rc = zc__fail(ZC_E_CORRUPT, "%s is not JSON (byte %zu: %s)", path, err.pos, err.msg);
        free(text);
        free(path);
        return ZC_OK;
    }
    const zc_json_node *root = zc__json_node(&doc, 0);
    const zc_json_node *version = zc__json_member(&doc, root, "version"),
                       *ftag = zc__json_member(&doc, root, "tag"),
                       *chosen = zc__json_member(&doc, root, "chosen");
    int ok = version && version->type == ZC_JSON_NUMBER && version->is_uint && version->num == 1 &&
             ftag && ftag->type == ZC_JSON_STRING && strcmp(zc__json_str(&doc, ftag), tag) == 0 &&
             chosen && chosen->type == ZC_JSON_ARRAY;
    for (uint32_t k = ok ? chosen->child : ZC_JSON_NONE; k != ZC_JSON_NONE; k = doc.nodes[k].next)
        if (doc.nodes[k].type != ZC_JSON_NUMBER || !doc.nodes[k].is_uint || doc.nodes[k].num == 0)
            ok = 0;
    if (!ok) {
        *unreadable = 1;
        zc__fail(ZC_E_CORRUPT, "%s is not {\"version\":1,\"tag\":\"%s\",\"chosen\":[generations]}",
                 path, tag);
    } else if (chosen->count > 0) {
        *pins = malloc(sizeof **pins * chosen->count);
        if (*pins == NULL) {
            rc = zc__fail(ZC_E_NOMEM, "out of host memory reading %s", path);
        } else {
            for (uint32_t k = chosen->child; k != ZC_JSON_NONE; k = doc.nodes[k].next)
                (*pins)[(*count)++] = doc.nodes[k].num;
        }
    }
    zc__json_free(&doc);
    free(text);
    free(path);
    return rc;
}

int zc__film_read_pins(const char *dir, const char *tag, uint64_t **pins, size_t *count,
                       int *unreadable)
{
    zc_refusal refused;
    return read_pins(dir, tag, 0, pins, count, unreadable, &refused);
}

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

/* The sibling group of shot index i: its parent's index, -1 for the roots. */
int zc_film_choose(const char *spill_dir, const char *tag, uint64_t generation)
{
    zc_film film;
    if (generation == 0) { /* clear: an empty list where there is a file, else nothing to do */
        if (spill_dir == NULL || tag == NULL)
            return zc__fail(ZC_E_INVALID, "zc_film_choose: spill_dir or tag is NULL");
        int rc = zc_tag_check(tag);
        if (rc != ZC_OK)
            return rc;
        char *path = zc__film_choices_path(spill_dir, tag);
        if (path == NULL)
            return zc__fail(ZC_E_NOMEM, "out of host memory");
        zc_os_path_kind kind;
        int exists = zc_os_stat(path, &kind, NULL) == 0;
        free(path);
        return exists ? write_pins(spill_dir, tag, NULL, 0) : ZC_OK;
    }
    int rc = zc__film_build(spill_dir, tag, 0, &film);
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
    uint64_t *pins = calloc(film.pin_count + 1, sizeof *pins);
    size_t n = 0;
    if (pins == NULL) {
        zc__film_free(&film);
        return zc__fail(ZC_E_NOMEM, "out of host memory");
    }
    for (size_t i = 0; i < film.pin_count; i++) {
        long j = zc__film_find(&film, film.pins[i]);
        /* Pins of files that are gone are dropped; a sibling's pin (same parent) is replaced. */
        if (j < 0 || j == at || film.shots[j].parent == film.shots[at].parent)
            continue;
        pins[n++] = film.pins[i];
    }
    pins[n++] = generation;
    rc = write_pins(spill_dir, tag, pins, n);
    free(pins);
    zc__film_free(&film);
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
