/*
 * film_pins.c — reading the tag's choices file (film_choose.c says what it
 * holds and writes it): its path, and the pins it lists, through
 * zc__open_private only.
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
                                    : "; the next choice of a take renames it aside");
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

int zc__film_pins_read(const char *dir, const char *tag, int aside, uint64_t **pins, size_t *count,
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
    return zc__film_pins_read(dir, tag, 0, pins, count, unreadable, &refused);
}
