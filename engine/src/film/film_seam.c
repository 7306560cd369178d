/*
 * film_seam.c — the seam of each hop as the film shows it: read from the
 * shot file's "zc.hop_seam" record (the engine measures it after the put,
 * seam_hop.c) or, in files of the version before, the lineage's "seam"
 * object (tests/python/seam_reference.py), written into the film JSON, and the worst
 * seam of the chosen line.  The numbers are latent statistics, not perceptual
 * scores; their meaning is in docs/film.md.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "film.h"

/* The number at key of obj, or NaN when absent, not a number or not finite. */
static double get_num(const zc_json_doc *doc, const zc_json_node *obj, const char *key)
{
    const zc_json_node *n = obj ? zc__json_member(doc, obj, key) : NULL;
    char text[64];
    if (n == NULL || n->type != ZC_JSON_NUMBER || n->len == 0 || n->len >= sizeof text)
        return NAN;
    memcpy(text, doc->text + n->pos, n->len);
    text[n->len] = '\0';
    char *end = NULL;
    double v = strtod(text, &end);
    return end == text + n->len && isfinite(v) ? v : NAN;
}

/* The seam object seam_obj (NULL: none) into *seam. */
static void read_object(const zc_json_doc *doc, const zc_json_node *seam_obj, zc_film_seam *seam)
{
    memset(seam, 0, sizeof *seam);
    seam->score = seam->mean_step = seam->std_step = seam->rms_step = NAN;
    seam->correlation = seam->within_correlation = NAN;
    seam->audio_level_db = seam->audio_rms_step = seam->audio_correlation = NAN;
    seam->audio_within_correlation = NAN;
    if (seam_obj == NULL || seam_obj->type != ZC_JSON_OBJECT)
        return;
    seam->score = get_num(doc, seam_obj, "score");
    if (isnan(seam->score) || seam->score < 0)
        return;
    seam->present = 1;
    seam->mean_step = get_num(doc, seam_obj, "mean_step");
    seam->std_step = get_num(doc, seam_obj, "std_step");
    seam->rms_step = get_num(doc, seam_obj, "rms_step");
    seam->correlation = get_num(doc, seam_obj, "correlation");
    seam->within_correlation = get_num(doc, seam_obj, "within_correlation");
    const zc_json_node *audio = zc__json_member(doc, seam_obj, "audio");
    if (audio != NULL && audio->type == ZC_JSON_OBJECT) {
        seam->audio = 1;
        seam->audio_level_db = get_num(doc, audio, "level_db");
        seam->audio_rms_step = get_num(doc, audio, "rms_step");
        seam->audio_correlation = get_num(doc, audio, "correlation");
        seam->audio_within_correlation = get_num(doc, audio, "within_correlation");
    }
}

void zc__film_seam_read(const zc_json_doc *doc, const zc_json_node *root, zc_film_seam *seam)
{
    read_object(doc, zc__json_member(doc, root, "seam"), seam);
}

static const zc_json_limits record_limits = {.max_depth = 3, .max_nodes = 64, .max_members = 32};

void zc__film_seam_read_record(const char *text, zc_film_seam *seam)
{
    zc_json_doc doc;
    zc_json_error err;
    if (text == NULL || zc__json_parse(text, strlen(text), &record_limits, &doc, &err) != 0) {
        read_object(NULL, NULL, seam);
        return;
    }
    read_object(&doc, zc__json_node(&doc, 0), seam);
    zc__json_free(&doc);
}

const char *zc__film_seam_verdict(double score)
{
    return score < ZC_FILM_SEAM_GREEN_BELOW ? "green" : score < ZC_FILM_SEAM_RED_FROM ? "amber" : "red";
}

static void put_num(zc_jsonbuf *jb, const char *key, double v, int comma)
{
    zc__jb_raw(jb, comma ? ",\"" : "\"");
    zc__jb_raw(jb, key);
    if (isnan(v))
        zc__jb_raw(jb, "\":null");
    else
        zc__jb_printf(jb, "\":%.4g", v);
}

void zc__film_seam_json(zc_jsonbuf *jb, const zc_film_seam *s)
{
    if (!s->present) {
        zc__jb_raw(jb, "null");
        return;
    }
    zc__jb_raw(jb, "{");
    put_num(jb, "score", s->score, 0);
    zc__jb_raw(jb, ",\"verdict\":");
    zc__jb_string(jb, zc__film_seam_verdict(s->score));
    put_num(jb, "mean_step", s->mean_step, 1);
    put_num(jb, "std_step", s->std_step, 1);
    put_num(jb, "rms_step", s->rms_step, 1);
    put_num(jb, "correlation", s->correlation, 1);
    put_num(jb, "within_correlation", s->within_correlation, 1);
    zc__jb_raw(jb, ",\"audio\":");
    if (s->audio) {
        zc__jb_raw(jb, "{");
        put_num(jb, "level_db", s->audio_level_db, 0);
        put_num(jb, "rms_step", s->audio_rms_step, 1);
        put_num(jb, "correlation", s->audio_correlation, 1);
        put_num(jb, "within_correlation", s->audio_within_correlation, 1);
        zc__jb_raw(jb, "}");
    } else {
        zc__jb_raw(jb, "null");
    }
    zc__jb_raw(jb, "}");
}

long zc__film_worst_seam(const zc_film *film)
{
    long worst = -1;
    for (size_t i = 0; i < film->count; i++) {
        const zc_film_shot *s = &film->shots[i];
        if (s->on_line && s->seam.present &&
            (worst < 0 || s->seam.score > film->shots[worst].seam.score))
            worst = (long)i;
    }
    return worst;
}
