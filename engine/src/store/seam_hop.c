/*
 * seam_hop.c — the seam of the hop that made a shot, measured after its put,
 * off the put's path.  The put only names the parent (zc_bundle_seam_parent)
 * next to the summaries it plans (zc_bundle_seam_plan); the store's spill
 * writer measures the hop before it writes the shot's file, or the first
 * zc_store_hop_seam_json that asks does, whichever comes first: the shot's
 * head summaries against the parent's tail summaries (zc_store_seam, below),
 * for the video stream and, when both have one, the audio stream.  The record
 * is kept with the slot and written into the file ("zc.hop_seam").
 *
 * The record is tests/python/seam_reference.py's (_assemble, from_engine): the same
 * keys, the same score (the worst of the mean and std steps, the RMS step's
 * severity either way, and the audio level step at DB_PER_STEP dB a step),
 * every number at 4 significant digits.  tests/python/test_seam_engine.py
 * holds the two together.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/json_reader.h"
#include "core/jsonbuf.h"
#include "store_internal.h"

#define HOP_RECORD_VERSION 1   /* seam_reference.py VERSION */
#define HOP_DB_PER_STEP 3.0    /* seam_reference.py DB_PER_STEP */
#define HOP_AUDIO_TENSOR ZC_FILE_LATENT_TENSOR "_1" /* zc_continuity.bundle_layout.stream_key(1) */

int zc_bundle_seam_parent(zc_bundle *b, const char *tag, uint64_t generation)
{
    if (b == NULL || tag == NULL)
        return zc__fail(ZC_E_INVALID, "zc_bundle_seam_parent: bundle or tag is NULL");
    int rc = zc_tag_check(tag);
    if (rc != ZC_OK)
        return rc;
    if (generation == 0)
        return zc__fail(ZC_E_INVALID, "zc_bundle_seam_parent: parent generation 0; give the "
                        "parent's own generation number");
    snprintf(b->seam_parent, sizeof b->seam_parent, "%s", tag);
    b->seam_parent_generation = generation;
    return ZC_OK;
}

/* A frame-to-frame step far above the shots' own, or far below (a freeze), as seam_reference.py. */
static double severity(double rms_step)
{
    double inverse = zc__seam_ratio(1.0, rms_step);
    return rms_step > inverse ? rms_step : inverse;
}

static double level_db(double head, double tail)
{
    double db = head > 0.0 && tail > 0.0 ? 20.0 * log10(head / tail) : 0.0;
    return db < -120.0 ? -120.0 : db > 120.0 ? 120.0 : db;
}

static double worst(double a, double b)
{
    return a > b ? a : b;
}

static void put_num(zc_jsonbuf *jb, const char *key, double v)
{
    zc__jb_printf(jb, ",\"%s\":%.4g", key, isfinite(v) ? v : 0.0);
}

/* The record's JSON (a new string), from the video cut and, when audio is
 * non-NULL, the audio one; NULL when out of memory. */
static char *record_json(const zc_seam_stats *v, uint32_t skip, const zc_seam_stats *audio,
                         uint32_t audio_skip)
{
    double score = worst(worst(v->mean_step, v->std_step), severity(v->rms_step));
    zc_jsonbuf jb;
    zc__jb_init(&jb);
    zc__jb_printf(&jb, "{\"version\":%d,\"frames\":[%u,%u],\"skip\":%u", HOP_RECORD_VERSION,
                  v->parent_frames, v->shot_frames, skip);
    put_num(&jb, "mean_step", v->mean_step);
    put_num(&jb, "std_step", v->std_step);
    put_num(&jb, "rms_step", v->rms_step);
    put_num(&jb, "correlation", v->correlation);
    put_num(&jb, "within_correlation", v->within_correlation);
    if (audio != NULL) {
        double db = level_db(audio->shot_level, audio->parent_level);
        score = worst(score, worst(1.0 + fabs(db) / HOP_DB_PER_STEP, severity(audio->rms_step)));
        zc__jb_printf(&jb, ",\"audio\":{\"level_db\":%.4g", db);
        put_num(&jb, "rms_step", audio->rms_step);
        put_num(&jb, "correlation", audio->correlation);
        put_num(&jb, "within_correlation", audio->within_correlation);
        zc__jb_printf(&jb, ",\"skip\":%u}", audio_skip);
    }
    put_num(&jb, "score", score);
    zc__jb_raw(&jb, "}");
    if (jb.failed) {
        zc__jb_free(&jb);
        return NULL;
    }
    return jb.data; /* the buffer is the string: the caller frees it */
}

static const zc_tensor *planned_tensor(const zc_bundle *b, const char *name)
{
    for (uint32_t i = 0; i < b->count; i++)
        if (strcmp(b->tensors[i].name, name) == 0)
            return b->tensors[i].seam_planned ? &b->tensors[i] : NULL;
    return NULL;
}

/* The record of b's hop, or NULL and why. */
static char *measure(zc_store *s, zc_bundle *b, int on_writer, char *why, size_t cap)
{
    if (b->seam_parent[0] == '\0') {
        snprintf(why, cap, "it was stored without a parent to measure against (a root, or a put "
                 "that named none: zc_bundle_seam_parent)");
        return NULL;
    }
    const zc_tensor *video = planned_tensor(b, ZC_FILE_LATENT_TENSOR);
    if (video == NULL) {
        snprintf(why, cap, "its tensor \"%s\" was not planned for seam summaries, or cannot be "
                 "summarised (zc_bundle_seam_plan)", ZC_FILE_LATENT_TENSOR);
        return NULL;
    }
    zc_seam_stats v, a;
    if (zc__store_seam(s, b->seam_parent, b->seam_parent_generation, b, ZC_FILE_LATENT_TENSOR, &v,
                       on_writer) != ZC_OK) {
        snprintf(why, cap, "%s", zc_last_error());
        return NULL;
    }
    if (v.parent_start_image) {
        snprintf(why, cap, "its parent %s@%llu is the encoded start image: the first shot has no "
                 "cut to measure", b->seam_parent, (unsigned long long)b->seam_parent_generation);
        return NULL;
    }
    if (!v.measured) {
        snprintf(why, cap, "its first frames and its parent's last ones cannot be compared (shapes "
                 "that differ off the time axis, or neither side has two frames)");
        return NULL;
    }
    const zc_tensor *audio = planned_tensor(b, HOP_AUDIO_TENSOR);
    int with_audio = audio != NULL &&
                     zc__store_seam(s, b->seam_parent, b->seam_parent_generation, b, HOP_AUDIO_TENSOR,
                                    &a, on_writer) == ZC_OK && a.measured;
    char *made = record_json(&v, video->seam_layout.head_skip, with_audio ? &a : NULL,
                             with_audio ? audio->seam_layout.head_skip : 0);
    if (made == NULL)
        snprintf(why, cap, "out of host memory writing its record");
    return made;
}

const char *zc__seam_hop_record(zc_store *s, zc_bundle *b, int on_writer)
{
    if (b == NULL)
        return NULL;
    if (atomic_load(&b->seam_hop_state))
        return atomic_load(&b->seam_hop_record);
    char saved[1024]; /* a seam is a report: the caller's last error stays its own */
    snprintf(saved, sizeof saved, "%s", zc_last_error());
    char why[sizeof b->seam_hop_why];
    why[0] = '\0';
    char *made = measure(s, b, on_writer, why, sizeof why);
    char *expected = NULL;
    if (made != NULL && !atomic_compare_exchange_strong(&b->seam_hop_record, &expected, made)) {
        free(made); /* another thread published the same record first */
    } else if (made == NULL && !atomic_load(&b->seam_hop_state)) {
        snprintf(b->seam_hop_why, sizeof b->seam_hop_why, "%s", why);
    }
    atomic_store(&b->seam_hop_state, 1);
    zc__fail(saved[0] ? ZC_E_INVALID : ZC_OK, "%s", saved);
    return atomic_load(&b->seam_hop_record);
}

static const zc_json_limits record_limits = {.max_depth = 3, .max_nodes = 64, .max_members = 32};

/* 1 when text is a JSON object with a number "score": a record this engine wrote. */
static int is_record(const char *text)
{
    zc_json_doc doc;
    zc_json_error err;
    if (text == NULL || zc__json_parse(text, strlen(text), &record_limits, &doc, &err) != 0)
        return 0;
    const zc_json_node *root = zc__json_node(&doc, 0);
    const zc_json_node *score = root->type == ZC_JSON_OBJECT ? zc__json_member(&doc, root, "score") : NULL;
    int ok = score != NULL && score->type == ZC_JSON_NUMBER;
    zc__json_free(&doc);
    return ok;
}

void zc__seam_hop_attach(zc_bundle *b, const char *text)
{
    char *copy = is_record(text) ? zc__strdup(text) : NULL;
    free(atomic_exchange(&b->seam_hop_record, copy));
    if (copy == NULL)
        snprintf(b->seam_hop_why, sizeof b->seam_hop_why, "its spill file records none (a root, "
                 "a first shot, or a file of an older engine)");
    atomic_store(&b->seam_hop_state, 1);
}

int zc_store_hop_seam_json(zc_store *s, const char *tag, uint64_t generation, char *buf, size_t cap,
                           size_t *needed)
{
    if (s == NULL)
        return zc__fail(ZC_E_INVALID, "zc_store_hop_seam_json: store is NULL");
    int rc = zc_tag_check(tag);
    if (rc != ZC_OK)
        return rc;
    zc_slot *slot = zc__store_slot_ref(s, tag, generation);
    char *from_file = NULL;
    const char *record = NULL;
    char why[sizeof ((zc_bundle *)0)->seam_hop_why + 64];
    if (slot != NULL) {
        record = zc__seam_hop_record(s, slot->bundle, 0);
        if (record == NULL)
            snprintf(why, sizeof why, "%s", slot->bundle->seam_hop_why);
    } else {
        zc_file *f = zc__spill_open_shot(s, tag, generation);
        if (f == NULL)
            return zc__fail(ZC_E_NOT_FOUND, "tag \"%s\" generation %llu is neither in the store's "
                            "memory nor a readable spill file of that shot", tag,
                            (unsigned long long)generation);
        const char *text = zc_file_meta(f, ZC_FILE_META_HOP_SEAM);
        from_file = is_record(text) ? zc__strdup(text) : NULL;
        zc_file_close(f);
        record = from_file;
        snprintf(why, sizeof why, "its spill file records none (a root, a first shot, or a file "
                 "of an older engine)");
    }
    if (record == NULL) {
        rc = zc__fail(ZC_E_NOT_FOUND, "tag \"%s\" generation %llu has no seam: %s", tag,
                      (unsigned long long)generation, why);
    } else {
        size_t len = strlen(record);
        if (needed)
            *needed = len + 1;
        if (buf == NULL || cap < len + 1) {
            rc = zc__fail(ZC_E_LIMIT, "the seam record needs %zu bytes; the buffer has %zu", len + 1,
                          cap);
        } else {
            memcpy(buf, record, len + 1);
            rc = ZC_OK;
        }
    }
    free(from_file);
    if (slot != NULL)
        zc__slot_unref(slot);
    return rc;
}

void zc__seam_attach_from_file(zc_bundle *b, const zc_file *f)
{
    for (uint32_t i = 0; i < b->count; i++) {
        char key[sizeof ZC_FILE_META_SEAM_PREFIX + ZC_MAX_NAME_LEN];
        snprintf(key, sizeof key, "%s%s", ZC_FILE_META_SEAM_PREFIX, b->tensors[i].name);
        zc_seam_side *s = zc__seam_side_parse(zc_file_meta(f, key));
        if (s != NULL) {
            zc__seam_side_free(atomic_load(&b->tensors[i].seam_tail));
            atomic_store(&b->tensors[i].seam_tail, s);
        }
    }
    zc__seam_hop_attach(b, zc_file_meta(f, ZC_FILE_META_HOP_SEAM));
}

/* ---- the seam of a hop ---- */

static const zc_tensor *bundle_tensor(const zc_bundle *b, const char *name)
{
    for (uint32_t i = 0; i < b->count; i++)
        if (strcmp(b->tensors[i].name, name) == 0)
            return &b->tensors[i];
    return NULL;
}

int zc_store_seam(zc_store *s, const char *tag, uint64_t generation, const zc_bundle *b,
                  const char *name, zc_seam_stats *out)
{
    return zc__store_seam(s, tag, generation, b, name, out, 0);
}

int zc__store_seam(zc_store *s, const char *tag, uint64_t generation, const zc_bundle *b,
                   const char *name, zc_seam_stats *out, int on_writer)
{
    if (s == NULL || b == NULL || name == NULL || out == NULL)
        return zc__fail(ZC_E_INVALID, "zc_store_seam: store, bundle, name or out is NULL");
    int rc = zc_tag_check(tag);
    if (rc != ZC_OK)
        return rc;
    if (generation == 0)
        return zc__fail(ZC_E_INVALID, "zc_store_seam: parent generation 0; give the parent's "
                        "own generation number");
    memset(out, 0, sizeof *out);
    const zc_tensor *t = bundle_tensor(b, name);
    const zc_seam_side *head = t ? zc__seam_head((zc_tensor *)t) : NULL; /* made now if need be */
    if (head == NULL)
        return zc__fail(ZC_E_NOT_FOUND, "zc_store_seam: the new shot has %s \"%s\"; plan it "
                        "(zc_bundle_seam_plan) before adding it, or call zc_bundle_seam_summarize "
                        "on it", t ? "no seam summary of tensor" : "no tensor", name);
    zc_slot *slot = zc__store_slot_ref(s, tag, generation);
    zc_seam_side *from_file = NULL;
    const zc_seam_side *tail = NULL;
    if (slot != NULL) {
        const zc_tensor *pt = bundle_tensor(slot->bundle, name);
        tail = pt ? zc__seam_tail((zc_tensor *)pt) : NULL; /* made now if the writer has not yet */
        const char *kind = zc__bundle_meta(slot->bundle, "kind");
        out->parent_start_image = kind != NULL && strcmp(kind, "start_image") == 0;
    } else {
        zc_file *f = zc__spill_open_shot(s, tag, generation);
        if (f == NULL)
            return zc__fail(ZC_E_NOT_FOUND, "zc_store_seam: the parent %s@%llu is neither in the "
                            "store's memory nor a readable spill file of that shot", tag,
                            (unsigned long long)generation);
        char key[sizeof ZC_FILE_META_SEAM_PREFIX + ZC_MAX_NAME_LEN];
        snprintf(key, sizeof key, "%s%s", ZC_FILE_META_SEAM_PREFIX, name);
        from_file = zc__seam_side_parse(zc_file_meta(f, key));
        const char *kind = zc_file_meta(f, "kind");
        out->parent_start_image = kind != NULL && strcmp(kind, "start_image") == 0;
        zc_file_close(f);
        tail = from_file;
    }
    int start_image = out->parent_start_image;
    if (tail == NULL) {
        rc = zc__fail(ZC_E_NOT_FOUND, "zc_store_seam: the parent %s@%llu has no seam summary of "
                      "tensor \"%s\" (stored without one, or by an older engine); measure the "
                      "seam from the tensors", tag, (unsigned long long)generation, name);
    } else {
        rc = zc__seam_compare(tail, head, out);
    }
    out->parent_start_image = start_image;
    zc__seam_side_free(from_file);
    if (slot != NULL && on_writer)
        zc__spill_release_from_writer(s, slot); /* its deleters never run on the writer */
    else if (slot != NULL)
        zc__slot_unref(slot);
    return rc;
}
