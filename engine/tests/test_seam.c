/*
 * test_seam.c — the seam summaries at put time (zc_bundle_seam_summarize,
 * zc_store_seam): a known colour drift gives the known numbers (the same
 * the torch reference tests assert), the tail summary survives a spill, a
 * restore and a serialize, a summary text that is not one counts as none,
 * and bad input is refused with a code.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "core/internal.h"
#include "platform/platform_test.h"

#define C 4
#define T 5
#define H 8
#define W 8

/* Frames base + (first + t) * d[c] (+ extra[c]): each frame-to-frame step is the per-channel
 * offset d, as test_continuity_seam.py's ramp. */
static void ramp(float *x, int first, const float *base, const float *d, float extra_scale)
{
    for (int c = 0; c < C; c++)
        for (int t = 0; t < T; t++)
            for (int p = 0; p < H * W; p++)
                x[((size_t)c * T + t) * H * W + p] =
                    base[c * H * W + p] + (float)(first + t) * d[c] + extra_scale * d[c];
}

static zc_bundle *bundle_of(float *x, uint32_t skip)
{
    const int64_t shape[5] = {1, C, T, H, W};
    fixture_tensor ft;
    fixture_f32(&ft, x, 5, shape);
    zc_bundle *b = NULL;
    if (zc_bundle_create(&b) != ZC_OK)
        return NULL;
    zc_seam_layout lay = {.time_axis = 2, .head_skip = skip, .window = 4, .max_values = 4096};
    if (zc_bundle_add_copy(b, ZC_FILE_LATENT_TENSOR, &ft.dl) != ZC_OK ||
        zc_bundle_seam_summarize(b, 0, &lay) != ZC_OK) {
        zc_bundle_free(b);
        return NULL;
    }
    return b;
}

static zc_store *open_store(const char *dir)
{
    zc_store_config c;
    zc_store_config_init(&c);
    c.spill_dir = dir;
    zc_store *s = NULL;
    return zc_store_open(&c, &s) == ZC_OK ? s : NULL;
}

/* A fresh folder for the running test (TEST_FOLDER `dir`), `zc_store *s` spilling to it, and
 * REQUIRE both. */
#define SEAM_STORE(s, dir, label)                                              \
    TEST_FOLDER(dir, label);                                                   \
    zc_store *s = open_store(dir);                                             \
    REQUIRE(s != NULL)

static float base[C * H * W];
static const float drift[C] = {0.1f, -0.2f, 0.05f, 0.3f};

static void fill_base(void)
{
    uint32_t x = 12345;
    for (int i = 0; i < C * H * W; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        base[i] = (float)(x % 2000) / 1000.0f - 1.0f;
    }
}

/* The shots of the running test: a parent and the next shot after it. */
static float parent[C * T * H * W], next[C * T * H * W];

/* The parent shot (frames 0..T-1 of the drift over a fresh base) and a bundle of it with its
 * seam summaries (NULL on failure). */
static zc_bundle *parent_bundle(void)
{
    fill_base();
    ramp(parent, 0, base, drift, 0);
    return bundle_of(parent, 0);
}

/* The parent shot (frames 0..T-1 of the drift over a fresh base) and the next shot after it
 * (frames T..2T-1, every channel shifted next_shift drift steps more). */
static void parent_and_next(float next_shift)
{
    fill_base();
    ramp(parent, 0, base, drift, 0);
    ramp(next, T, base, drift, next_shift);
}

TEST(seam_known_colour_drift_gives_known_numbers)
{
    SEAM_STORE(s, dir, "seam-drift");
    zc_bundle *p = parent_bundle();
    REQUIRE(p != NULL);
    uint64_t gen = 0;
    REQUIRE_OK(zc_store_put(s, "film", p, ZC_PUT_SPILL, &gen));
    for (int k = 0; k <= 3; k++) { /* a colour shift of k within-shot steps: the cut steps 1 + k */
        ramp(next, T, base, drift, (float)k);
        zc_bundle *b = bundle_of(next, 0);
        REQUIRE(b != NULL);
        zc_seam_stats st;
        CHECK_OK(zc_store_seam(s, "film", gen, b, ZC_FILE_LATENT_TENSOR, &st));
        CHECK(st.measured == 1 && st.parent_frames == 4 && st.shot_frames == 4);
        CHECK(fabs(st.mean_step - (1 + k)) < 1e-4);
        CHECK(fabs(st.rms_step - (1 + k)) < 1e-4);
        CHECK(st.std_step < 1e-3);
        CHECK(st.parent_start_image == 0);
        zc_bundle_free(b);
    }
    /* a freeze: the first new frame is the parent's last */
    ramp(next, T - 1, base, drift, 0);
    zc_bundle *b = bundle_of(next, 0);
    zc_seam_stats st;
    REQUIRE(b != NULL);
    CHECK_OK(zc_store_seam(s, "film", gen, b, ZC_FILE_LATENT_TENSOR, &st));
    CHECK(st.measured == 1 && st.rms_step == 0.0 && fabs(st.correlation - 1.0) < 1e-6);
    /* the same shot with its repeated first frame skipped steps as a smooth continuation */
    zc_seam_layout lay = {.time_axis = 2, .head_skip = 1, .window = 4, .max_values = 4096};
    CHECK_OK(zc_bundle_seam_summarize(b, 0, &lay));
    CHECK_OK(zc_store_seam(s, "film", gen, b, ZC_FILE_LATENT_TENSOR, &st));
    CHECK(st.measured == 1 && st.shot_frames == 4 && fabs(st.rms_step - 1.0) < 1e-4);
    zc_bundle_free(b);
    zc_store_close(s);
}

TEST(seam_tail_survives_spill_restore_and_serialize)
{
    SEAM_STORE(s, dir, "seam-spill");
    parent_and_next(2.0f);
    zc_bundle *p = bundle_of(parent, 0);
    REQUIRE(p != NULL);
    uint64_t gen = 0;
    REQUIRE_OK(zc_store_put(s, "film", p, ZC_PUT_SPILL, &gen));
    zc_bundle *b = bundle_of(next, 0);
    REQUIRE(b != NULL);
    zc_seam_stats mem, file, restored;
    CHECK_OK(zc_store_seam(s, "film", gen, b, ZC_FILE_LATENT_TENSOR, &mem));
    CHECK_OK(zc_store_flush(s));
    zc_view *v = NULL;
    REQUIRE_OK(zc_store_get(s, "film", gen, &v));
    size_t need = 0;
    CHECK(zc_view_serialize(v, NULL, 0, &need) == ZC_E_LIMIT || need > 0);
    char *bytes = malloc(need);
    REQUIRE(bytes != NULL);
    CHECK_OK(zc_view_serialize(v, bytes, need, &need));
    zc_file *f = NULL;
    REQUIRE_OK(zc_file_open_memory(bytes, need, &f));
    const char *text = zc_file_meta(f, ZC_FILE_META_SEAM_PREFIX ZC_FILE_LATENT_TENSOR);
    CHECK(text != NULL && strstr(text, "\"version\":1") != NULL);
    zc_file_close(f);
    free(bytes);
    zc_view_release(v);
    zc_store_close(s);

    REQUIRE((s = open_store(dir)) != NULL); /* the parent now only on disk: read from its header */
    CHECK_OK(zc_store_seam(s, "film", gen, b, ZC_FILE_LATENT_TENSOR, &file));
    REQUIRE_OK(zc_store_get(s, "film", gen, &v)); /* restored: the summary comes along */
    zc_view_release(v);
    CHECK_OK(zc_store_seam(s, "film", gen, b, ZC_FILE_LATENT_TENSOR, &restored));
    CHECK(mem.measured && file.measured && restored.measured);
    CHECK(mem.mean_step == file.mean_step && mem.rms_step == file.rms_step &&
          mem.correlation == file.correlation && file.mean_step == restored.mean_step);
    CHECK(fabs(mem.mean_step - 3.0) < 1e-4);
    zc_bundle_free(b);
    zc_store_close(s);
}

TEST(seam_summaries_refuse_bad_input)
{
    zc_bundle *b = parent_bundle();
    REQUIRE(b != NULL);
    zc_seam_layout lay = {.time_axis = 1, .head_skip = 0, .window = 4, .max_values = 0};
    CHECK(zc_bundle_seam_summarize(b, 0, &lay) == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "time_axis 1") != NULL);
    lay.time_axis = 5;
    CHECK(zc_bundle_seam_summarize(b, 0, &lay) == ZC_E_INVALID);
    lay.time_axis = 2;
    lay.window = 0;
    CHECK(zc_bundle_seam_summarize(b, 0, &lay) == ZC_E_INVALID);
    lay.window = 4;
    CHECK(zc_bundle_seam_summarize(b, 1, &lay) == ZC_E_INVALID);
    CHECK(zc_bundle_seam_summarize(NULL, 0, &lay) == ZC_E_INVALID);

    int32_t ints[16] = {0};
    const int64_t dims[4] = {2, 8, 1, 1}; /* shape 2 x 8, strides 1 x 1 (as elements) */
    const int64_t plain[4] = {dims[0], dims[1], 8, 1};
    CHECK_OK(zc_bundle_add_host_copy(b, "ints", ints, ZC_I32, 2, plain));
    lay.time_axis = 0;
    CHECK(zc_bundle_seam_summarize(b, 1, &lay) == ZC_E_UNSUPPORTED);

    SEAM_STORE(s, dir, "seam-bad");
    zc_seam_stats st;
    CHECK(zc_store_seam(s, "film", 1, b, ZC_FILE_LATENT_TENSOR, &st) == ZC_E_NOT_FOUND); /* no parent */
    CHECK(zc_store_seam(s, "film", 0, b, ZC_FILE_LATENT_TENSOR, &st) == ZC_E_INVALID);
    CHECK(zc_store_seam(s, "bad tag", 1, b, ZC_FILE_LATENT_TENSOR, &st) == ZC_E_INVALID);
    CHECK(zc_store_seam(s, "film", 1, b, "ints", &st) == ZC_E_NOT_FOUND); /* no summary of it */
    /* a parent stored without a summary (an older engine's file) has none */
    zc_bundle *old = NULL;
    const int64_t shape[5] = {1, C, T, H, W};
    fixture_tensor ft;
    fixture_f32(&ft, parent, 5, shape);
    REQUIRE_OK(zc_bundle_create(&old));
    REQUIRE_OK(zc_bundle_add_copy(old, ZC_FILE_LATENT_TENSOR, &ft.dl));
    uint64_t gen = 0;
    REQUIRE_OK(zc_store_put(s, "film", old, ZC_PUT_SPILL, &gen));
    CHECK(zc_store_seam(s, "film", gen, b, ZC_FILE_LATENT_TENSOR, &st) == ZC_E_NOT_FOUND);
    CHECK(strstr(zc_last_error(), "no seam summary") != NULL);
    zc_bundle_free(b);
    zc_store_close(s);
}

TEST(seam_summary_text_round_trips_and_hostile_text_is_none)
{
    zc_bundle *b = parent_bundle();
    REQUIRE(b != NULL);
    const zc_seam_side *tail = b->tensors[0].seam_tail;
    REQUIRE(tail != NULL && tail->frames == 4 && tail->channels == C && tail->values == H * W);
    char *text = zc__seam_side_text(tail);
    REQUIRE(text != NULL);
    zc_seam_side *back = zc__seam_side_parse(text);
    REQUIRE(back != NULL);
    CHECK(back->frames == tail->frames && back->stride == tail->stride && back->axis == 2);
    CHECK(memcmp(back->mean, tail->mean, 2 * 4 * C * sizeof(double)) == 0);
    CHECK(memcmp(back->edge, tail->edge, C * H * W * sizeof(float)) == 0);
    double mean[C], std[C];
    CHECK(zc__seam_side_moments(back, mean, std) == 0);
    CHECK(fabs(mean[3] - tail->mean[3 + C]) > 0); /* the pooled mean is not one frame's */
    zc__seam_side_free(back);
    /* truncated, wrong version, wrong lengths, not JSON: none */
    const char *bad[] = {"", "null", "{\"version\":2}", "[1,2]", "{\"version\":1,\"axis\":2}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(zc__seam_side_parse(bad[i]) == NULL);
    size_t n = strlen(text);
    char *cut = zc__strndup(text, n / 2);
    CHECK(zc__seam_side_parse(cut) == NULL);
    free(cut);
    char *edited = zc__strdup(text);
    char *stats = strstr(edited, "\"stats\":\"");
    REQUIRE(stats != NULL);
    stats[9] = '!'; /* not base64 */
    CHECK(zc__seam_side_parse(edited) == NULL);
    char *frames = strstr(edited, "\"frames\":4");
    REQUIRE(frames != NULL);
    frames[9] = '3'; /* the stats no longer have the length the header says */
    stats[9] = 'A';
    CHECK(zc__seam_side_parse(edited) == NULL);
    free(edited);
    free(text);
    zc_bundle_free(b);
}

TEST(seam_plan_takes_the_head_at_add_and_the_tail_off_the_put)
{
    SEAM_STORE(s, dir, "seam-plan");
    parent_and_next(1.0f);
    const int64_t shape[5] = {1, C, T, H, W};
    zc_seam_layout lay = {.time_axis = 2, .head_skip = 0, .window = 4, .max_values = 4096};
    zc_bundle *p = NULL, *b = NULL;
    fixture_tensor ft;
    REQUIRE_OK(zc_bundle_create(&p));
    CHECK_OK(zc_bundle_seam_plan(p, ZC_FILE_LATENT_TENSOR, &lay));
    fixture_f32(&ft, parent, 5, shape);
    REQUIRE_OK(zc_bundle_add_copy(p, ZC_FILE_LATENT_TENSOR, &ft.dl));
    /* the put's path reads nothing: both summaries are made later, on first need */
    CHECK(p->tensors[0].seam_planned && atomic_load(&p->tensors[0].seam_head) == NULL &&
          atomic_load(&p->tensors[0].seam_tail) == NULL);
    uint64_t gen = 0;
    REQUIRE_OK(zc_store_put(s, "film", p, 0, &gen)); /* no spill: the tail is made on first need */
    REQUIRE_OK(zc_bundle_create(&b));
    CHECK_OK(zc_bundle_seam_plan(b, ZC_FILE_LATENT_TENSOR, &lay));
    fixture_f32(&ft, next, 5, shape);
    REQUIRE_OK(zc_bundle_add_copy(b, ZC_FILE_LATENT_TENSOR, &ft.dl));
    zc_seam_stats st;
    CHECK_OK(zc_store_seam(s, "film", gen, b, ZC_FILE_LATENT_TENSOR, &st));
    CHECK(st.measured == 1 && fabs(st.mean_step - 2.0) < 1e-4 && fabs(st.rms_step - 2.0) < 1e-4);
    CHECK(zc_bundle_seam_parent(b, "film", 0) == ZC_E_INVALID);
    CHECK(zc_bundle_seam_parent(b, "bad tag!", gen) == ZC_E_INVALID);
    CHECK_OK(zc_bundle_seam_parent(b, "film", gen));
    uint64_t gen2 = 0;
    REQUIRE_OK(zc_store_put(s, "film", b, ZC_PUT_SPILL, &gen2)); /* spilled: the writer measures */
    CHECK_OK(zc_store_flush(s));
    char record[1024];
    size_t needed = 0;
    CHECK(zc_store_hop_seam_json(s, "film", gen2, record, 4, &needed) == ZC_E_LIMIT && needed > 4);
    CHECK_OK(zc_store_hop_seam_json(s, "film", gen2, record, sizeof record, &needed));
    CHECK(strstr(record, "\"mean_step\":2,") != NULL && strstr(record, "\"score\":") != NULL);
    CHECK(zc_store_hop_seam_json(s, "film", gen, record, sizeof record, NULL) == ZC_E_NOT_FOUND);
    CHECK(strstr(zc_last_error(), "without a parent") != NULL);
    CHECK(zc_store_hop_seam_json(s, "film", 99, record, sizeof record, NULL) == ZC_E_NOT_FOUND);
    char path[4096];
    snprintf(path, sizeof path, "%s/film@%020llu.latent", dir, (unsigned long long)gen2);
    zc_file *f = NULL;
    REQUIRE_OK(zc_file_open(path, &f));
    CHECK(zc_file_meta(f, ZC_FILE_META_SEAM_PREFIX ZC_FILE_LATENT_TENSOR) != NULL);
    CHECK(zc_file_meta(f, ZC_FILE_META_HOP_SEAM) != NULL &&
          strcmp(zc_file_meta(f, ZC_FILE_META_HOP_SEAM), record) == 0); /* gen2's record */
    zc_file_close(f);
    /* bad plans are refused; an unsummarisable planned tensor is still added */
    CHECK(zc_bundle_seam_plan(NULL, "x", &lay) == ZC_E_INVALID);
    zc_seam_layout bad = lay;
    bad.time_axis = 1;
    REQUIRE_OK(zc_bundle_create(&b));
    CHECK(zc_bundle_seam_plan(b, "x", &bad) == ZC_E_INVALID);
    bad.time_axis = 3; /* rank 2 below: out of range there */
    CHECK_OK(zc_bundle_seam_plan(b, "x", &bad));
    float small[4] = {1, 2, 3, 4};
    const int64_t two[2] = {2, 2};
    fixture_f32(&ft, small, 2, two);
    CHECK_OK(zc_bundle_add_copy(b, "x", &ft.dl));
    CHECK(b->count == 1 && atomic_load(&b->tensors[0].seam_head) == NULL && !b->tensors[0].seam_planned);
    zc_bundle_free(b);
    zc_store_close(s);
}
