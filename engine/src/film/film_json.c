/* film_json.c — zc_film_describe: the film of a tag as JSON (see zc.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "film.h"

static void str_or_null(zc_jsonbuf *jb, const char *s)
{
    if (s)
        zc__jb_string(jb, s);
    else
        zc__jb_raw(jb, "null");
}

static void gen_list(zc_jsonbuf *jb, const uint64_t *g, size_t n)
{
    zc__jb_raw(jb, "[");
    for (size_t i = 0; i < n; i++) {
        zc__jb_raw(jb, i ? "," : "");
        zc__jb_u64(jb, g[i]);
    }
    zc__jb_raw(jb, "]");
}

static void put_shot(zc_jsonbuf *jb, const zc_film *film, const zc_film_shot *s)
{
    /* "shot": the place on the line, null for a shot that cannot be placed (take/takes 0) */
    zc__jb_printf(jb, "{\"generation\":%llu,\"shot\":", (unsigned long long)s->generation);
    if (s->placed)
        zc__jb_printf(jb, "%u", s->shot);
    else
        zc__jb_raw(jb, "null");
    zc__jb_printf(jb, ",\"depth\":%u,\"kind\":", s->depth);
    zc__jb_string(jb, s->start_image ? "start_image" : "shot");
    zc__jb_printf(jb, ",\"parent\":%llu,\"continues\":",
                  (unsigned long long)(s->parent >= 0 ? film->shots[s->parent].generation
                                       : s->lineage_ok && !s->external ? s->parent_generation
                                                                      : 0));
    if (s->external) {
        char text[ZC_MAX_TAG_LEN + 32];
        snprintf(text, sizeof text, "%s@%llu", s->parent_tag,
                 (unsigned long long)s->parent_generation);
        zc__jb_string(jb, text);
    } else {
        zc__jb_raw(jb, "null");
    }
    zc__jb_printf(jb, ",\"take\":%u,\"takes\":%u,\"state\":", s->take, s->takes);
    zc__jb_string(jb, zc__film_state_name(s->state));
    zc__jb_printf(jb, ",\"pinned\":%s,\"trim\":%llu,\"adapter\":", s->pinned ? "true" : "false",
                  (unsigned long long)s->trim);
    str_or_null(jb, s->adapter);
    zc__jb_printf(jb, ",\"tail_frames\":%llu,\"tail_digest\":", (unsigned long long)s->tail_frames);
    str_or_null(jb, s->tail_digest);
    zc__jb_raw(jb, ",\"used_digest\":");
    str_or_null(jb, s->used_digest);
    zc__jb_raw(jb, ",\"prompt\":");
    str_or_null(jb, s->prompt);
    zc__jb_raw(jb, ",\"seed\":");
    if (s->has_seed)
        zc__jb_u64(jb, s->seed);
    else
        zc__jb_raw(jb, "null");
    int axis = s->ndim == 5 ? 2 : s->ndim == 4 ? 0 : -1;
    zc__jb_printf(jb, ",\"frames\":%lld,\"shape\":[",
                  (long long)(s->has_latent && axis >= 0 ? s->shape[axis] : 0));
    for (int32_t i = 0; s->has_latent && i < s->ndim; i++)
        zc__jb_printf(jb, "%s%lld", i ? "," : "", (long long)s->shape[i]);
    zc__jb_raw(jb, "],\"digest\":");
    str_or_null(jb, s->digest[0] ? s->digest : NULL);
    zc__jb_raw(jb, ",\"file\":");
    zc__jb_string(jb, zc__film_file_name(s->file));
    zc__jb_raw(jb, ",\"hop\":");
    zc__jb_string(jb, zc__film_hop_name(s->hop));
    zc__jb_raw(jb, ",\"record\":");
    zc__jb_string(jb, zc__film_record_name(s->record));
    zc__jb_raw(jb, ",\"problem\":");
    char *problem = zc__film_problem_text(s);
    if (s->problem != NULL && problem == NULL)
        jb->failed = 1;
    str_or_null(jb, problem);
    free(problem);
    zc__jb_raw(jb, ",\"seam\":");
    zc__film_seam_json(jb, &s->seam);
    zc__jb_raw(jb, "}");
}

void zc__film_json(zc_jsonbuf *jb, const zc_film *film)
{
    zc__jb_raw(jb, "{\"version\":1,\"tag\":");
    zc__jb_string(jb, film->tag);
    zc__jb_printf(jb, ",\"verified\":%s,\"ok\":%s,\"line\":", film->verified ? "true" : "false",
                  film->ok ? "true" : "false");
    gen_list(jb, film->line, film->line_count);
    zc__jb_printf(jb, ",\"newest\":%llu,\"end\":%llu,\"anchor\":%llu,\"pins\":",
                  (unsigned long long)film->newest,
                  (unsigned long long)(film->line_count ? film->line[film->line_count - 1] : 0),
                  (unsigned long long)film->anchor);
    gen_list(jb, film->pins, film->pin_count);
    long worst = zc__film_worst_seam(film);
    zc__jb_printf(jb, ",\"seam_thresholds\":{\"green_below\":%g,\"red_from\":%g},\"worst_seam\":",
                  ZC_FILM_SEAM_GREEN_BELOW, ZC_FILM_SEAM_RED_FROM);
    if (worst >= 0) {
        const zc_film_shot *w = &film->shots[worst];
        zc__jb_printf(jb, "{\"score\":%.4g,\"verdict\":", w->seam.score);
        zc__jb_string(jb, zc__film_seam_verdict(w->seam.score));
        zc__jb_printf(jb, ",\"generation\":%llu,\"shot\":%u}", (unsigned long long)w->generation,
                      w->shot);
    } else {
        zc__jb_raw(jb, "null");
    }
    zc__jb_raw(jb, ",\"drift\":");
    zc__film_drift_json(jb, film);
    zc__jb_raw(jb, ",\"problems\":[");
    int first = 1;
    for (size_t i = 0; i < film->count; i++) {
        if (film->shots[i].problem == NULL)
            continue;
        char *problem = zc__film_problem_text(&film->shots[i]);
        if (problem == NULL) {
            jb->failed = 1;
            continue;
        }
        zc__jb_raw(jb, first ? "" : ",");
        zc__jb_string(jb, problem);
        free(problem);
        first = 0;
    }
    const char *p = film->problems.data;
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char *one = zc__strndup(p, n);
        if (one) {
            zc__jb_raw(jb, first ? "" : ",");
            zc__jb_string(jb, one);
            first = 0;
            free(one);
        } else {
            jb->failed = 1;
        }
        p += n + (nl != NULL);
    }
    zc__jb_raw(jb, "],\"shots\":[");
    for (size_t i = 0; i < film->count; i++) {
        zc__jb_raw(jb, i ? "," : "");
        put_shot(jb, film, &film->shots[i]);
    }
    zc__jb_raw(jb, "]}");
}

int zc_film_describe(const char *spill_dir, const char *tag, uint32_t flags, char **json_out)
{
    if (json_out == NULL)
        return zc__fail(ZC_E_INVALID, "zc_film_describe: json_out is NULL");
    *json_out = NULL;
    zc_film film;
    int rc = zc__film_build(spill_dir, tag, flags, &film);
    if (rc != ZC_OK) {
        zc__film_free(&film);
        return rc;
    }
    zc_jsonbuf jb;
    zc__jb_init(&jb);
    zc__film_json(&jb, &film);
    zc__film_free(&film);
    if (jb.failed) {
        zc__jb_free(&jb);
        return zc__fail(ZC_E_NOMEM, "out of host memory describing the film of \"%s\"", tag);
    }
    *json_out = jb.data;
    return ZC_OK;
}

void zc_free(void *p)
{
    free(p);
}
