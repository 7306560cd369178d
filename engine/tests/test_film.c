/*
 * test_film.c — the film of a tag from its spill files: takes, the chosen
 * line with and without pins, alternative and stale shots, hops verified
 * against the parent's tail (and a parent rewritten under its child),
 * broken lineage (cycle, missing parent, parent not older), the choices
 * file, retention that keeps a film's ancestors, pins and anchor, and the
 * seam of each hop read from version 2 lineage (the worst on the line).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "film/film.h"
#include "fixtures.h"
#include "harness.h"
#include "core/internal.h"
#include "platform/platform_test.h"

/* Latents [1, C, T, H, W] = [1, 2, 4, 2, 2] of float32. */
#define C_ 2
#define T_ 4
#define HW 4
#define NVAL (C_ * T_ * HW)

static void shot_values(float *d, uint32_t seed)
{
    for (int i = 0; i < NVAL; i++)
        d[i] = (float)(seed * 1000u + (uint32_t)i);
}

/* The digest text of the last frames of a latent with values of seed. */
static void tail_text(uint32_t seed, int frames, char out[ZC_DIGEST_TEXT_SIZE])
{
    float d[NVAL];
    shot_values(d, seed);
    int64_t shape[5] = {1, C_, frames, 2, 2};
    int64_t strides[5] = {NVAL, T_ * HW, HW, 2, 1};
    fixture_tensor ft; /* the last frames of the whole latent */
    fixture_f32_strided(&ft, d + (T_ - frames) * HW, 5, shape, strides);
    uint64_t dg = 0;
    zc_digest_tensor(&ft.dl, &dg);
    zc_digest_format(ZC_DIGEST_XXH3_64, dg, out, ZC_DIGEST_TEXT_SIZE);
}

static zc_store *open_keep(const char *dir, uint32_t keep)
{
    zc_store_config c;
    zc_store_config_init(&c);
    c.spill_dir = dir;
    c.disk_keep = keep;
    c.default_depth = 1;
    zc_store *s = NULL;
    return zc_store_open(&c, &s) == ZC_OK ? s : NULL;
}

/* Declare `zc_store *var`, open_keep(dir, keep), and REQUIRE it. */
#define OPEN_KEEP(var, dir, keep)                                              \
    zc_store *var = open_keep(dir, keep);                                      \
    REQUIRE(var != NULL)

/* Put generation gen of tag (values of seed) with optional lineage and kind. */
static int put_shot(zc_store *s, const char *tag, uint64_t gen, uint32_t seed,
                    const char *lineage, const char *kind)
{
    float d[NVAL];
    shot_values(d, seed);
    fixture_tensor ft;
    int64_t shape[5] = {1, C_, T_, 2, 2};
    fixture_f32(&ft, d, 5, shape);
    zc_bundle *b = NULL;
    int rc = zc_bundle_create(&b);
    if (rc == ZC_OK)
        rc = zc_bundle_add_copy(b, "latent_tensor", &ft.dl);
    if (rc == ZC_OK && lineage)
        rc = zc_bundle_set_meta(b, "lineage", lineage);
    if (rc == ZC_OK && kind)
        rc = zc_bundle_set_meta(b, "kind", kind);
    if (rc == ZC_OK)
        rc = zc_store_put_generation(s, tag, b, ZC_PUT_SPILL, gen);
    if (rc != ZC_OK)
        zc_bundle_free(b);
    return rc;
}

/* The lineage JSON of a shot continuing parent_gen of ptag (values pseed). */
static void lineage_of(char *out, size_t cap, const char *ptag, uint64_t pgen, uint32_t pseed)
{
    char tail[ZC_DIGEST_TEXT_SIZE];
    tail_text(pseed, 1, tail);
    snprintf(out, cap,
             "{\"adapter\":\"first_frame\",\"parent_generation\":%llu,\"parent_tag\":\"%s\","
             "\"prompt\":\"a shot\",\"seed\":42,\"tail_digest\":\"%s\",\"tail_frames\":1,"
             "\"trim\":4,\"used_digest\":\"%s\",\"version\":1}",
             (unsigned long long)pgen, ptag, tail, tail);
}

/* Put generation gen of tag (values of seed) continuing pgen of ptag (values of pseed). */
static int put_continuing(zc_store *s, const char *tag, uint64_t gen, uint32_t seed,
                          const char *ptag, uint64_t pgen, uint32_t pseed)
{
    char lin[512];
    lineage_of(lin, sizeof lin, ptag, pgen, pseed);
    return put_shot(s, tag, gen, seed, lin, NULL);
}

/* Put generation gen of tag continuing pgen of the same tag (values of their numbers). */
static int put_child(zc_store *s, const char *tag, uint64_t gen, uint64_t pgen)
{
    return put_continuing(s, tag, gen, (uint32_t)gen, tag, pgen, (uint32_t)pgen);
}

/* Put each shot {generation, parent} of tag in order, CHECKing every put: a root (values of
 * its generation, no lineage) where parent is 0, else put_child. */
static void check_puts(zc_store *s, const char *tag, const uint64_t (*shots)[2], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t gen = shots[i][0], parent = shots[i][1];
        if (parent == 0)
            CHECK_OK(put_shot(s, tag, gen, (uint32_t)gen, NULL, NULL));
        else
            CHECK_OK(put_child(s, tag, gen, parent));
    }
}
#define CHECK_PUTS(s, tag, ...)                                                \
    check_puts(s, tag, (const uint64_t[][2]){__VA_ARGS__},                     \
               sizeof((const uint64_t[][2]){__VA_ARGS__}) / sizeof(uint64_t[2]))

/* The text of shot gen's object in the film JSON (a copy; caller frees). */
static char *shot_json(const char *json, uint64_t gen)
{
    char key[64];
    snprintf(key, sizeof key, "{\"generation\":%llu,", (unsigned long long)gen);
    const char *p = strstr(json, key);
    if (p == NULL)
        return NULL;
    const char *end = strstr(p + 1, "{\"generation\":");
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char *out = malloc(n + 1);
    memcpy(out, p, n);
    out[n] = '\0';
    return out;
}

/* 1 if shot gen's object contains text. */
static int shot_has(const char *json, uint64_t gen, const char *text)
{
    char *s = shot_json(json, gen);
    int ok = s != NULL && strstr(s, text) != NULL;
    if (!ok)
        fprintf(stderr, "  shot %llu lacks %s in %s\n", (unsigned long long)gen, text,
                s ? s : "(none)");
    free(s);
    return ok;
}

/* A text that shot generation's object in the film JSON must contain. */
typedef struct {
    uint64_t generation;
    const char *text;
} shot_text;

/* CHECK shot_has(json, generation, text) for each of the n wanted texts, in order. */
static void check_shots(const char *json, const shot_text *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        CHECK(shot_has(json, want[i].generation, want[i].text));
}
#define CHECK_SHOTS(json, ...)                                                 \
    check_shots(json, (const shot_text[]){__VA_ARGS__},                        \
                sizeof((const shot_text[]){__VA_ARGS__}) / sizeof(shot_text))

static char *describe(const char *dir, const char *tag, uint32_t flags)
{
    char *json = NULL;
    int rc = zc_film_describe(dir, tag, flags, &json);
    if (rc != ZC_OK)
        fprintf(stderr, "  zc_film_describe -> %s: %s\n", zc_status_name(rc), zc_last_error());
    return json;
}

/* Declare `char *json`, the film JSON describe(dir, tag, flags) gives, and REQUIRE it. */
#define DESCRIBED(json, dir, tag, flags)                                       \
    char *json = describe(dir, tag, flags);                                    \
    REQUIRE(json != NULL)

/* Flush the store and close it; the flush's status. */
static int flush_and_close(zc_store *s)
{
    int rc = zc_store_flush(s);
    zc_store_close(s);
    return rc;
}

/* A film of tag "film" by a store since closed: root 1 (of kind root_kind, or none), then each
 * hop {generation, parent} in order; stops at the first put that fails. */
static int store_film(const char *dir, uint32_t keep, const char *root_kind,
                      const uint64_t (*hops)[2], size_t nhops)
{
    zc_store *s = open_keep(dir, keep);
    if (s == NULL)
        return 0;
    int ok = put_shot(s, "film", 1, 1, NULL, root_kind) == ZC_OK;
    for (size_t i = 0; ok && i < nhops; i++)
        ok = put_child(s, "film", hops[i][0], hops[i][1]) == ZC_OK;
    ok = ok && zc_store_flush(s) == ZC_OK;
    zc_store_close(s);
    return ok;
}

/* Start image 1; shot 1 = 2; shot 2 takes 3 and 4; shot 3 = 5 (from take 4); shot 4 = 6. */
static int build_film(const char *dir, uint32_t keep)
{
    static const uint64_t hops[][2] = {{2, 1}, {3, 2}, {4, 2}, {5, 4}, {6, 5}};
    return store_film(dir, keep, "start_image", hops, sizeof hops / sizeof hops[0]);
}

/* A spill file's name, and its path in dir (freed by the caller). */
static void shot_name(char *out, size_t cap, const char *tag, uint64_t generation)
{
    snprintf(out, cap, "%s@%020llu.latent", tag, (unsigned long long)generation);
}

static char *shot_file(const char *dir, const char *tag, uint64_t generation)
{
    char name[96];
    shot_name(name, sizeof name, tag, generation);
    return zc_test_join(dir, name);
}

TEST(film_without_pins_ends_at_the_newest_take)
{
    TEST_FOLDER(dir, "film-line");
    REQUIRE(build_film(dir, 100));
    DESCRIBED(json, dir, "film", ZC_FILM_VERIFY);
    CHECK(strstr(json, "\"verified\":true,\"ok\":true,\"line\":[1,2,4,5,6],\"newest\":6,"
                       "\"end\":6,\"anchor\":1,\"pins\":[]") != NULL);
    CHECK_SHOTS(json,
                {1, "\"shot\":0,\"depth\":0,\"kind\":\"start_image\",\"parent\":0"},
                {1, "\"hop\":\"root\""},
                {2, "\"shot\":1,\"depth\":1,\"kind\":\"shot\",\"parent\":1"},
                {3, "\"take\":1,\"takes\":2,\"state\":\"alternative\""},
                {4, "\"shot\":2,"},
                {4, "\"take\":2,\"takes\":2,\"state\":\"line\""},
                {6, "\"shot\":4,\"depth\":4"},
                {6, "\"trim\":4,\"adapter\":\"first_frame\",\"tail_frames\":1"},
                {6, "\"seed\":42,\"frames\":4,\"shape\":[1,2,4,2,2]"},
                {6, "\"file\":\"ok\",\"hop\":\"ok\",\"record\":\"ok\",\"problem\":null"});
    zc_free(json);
    /* Without verification nothing is read but the headers. */
    REQUIRE((json = describe(dir, "film", 0)) != NULL);
    CHECK(strstr(json, "\"verified\":false,\"ok\":true") != NULL);
    CHECK(shot_has(json, 5, "\"file\":\"unchecked\",\"hop\":\"unchecked\""));
    zc_free(json);
    CHECK(zc_film_has_choices(dir, "film") == 0);
}

TEST(film_pinning_take_one_makes_the_later_shots_stale)
{
    TEST_FOLDER(dir, "film-pin");
    REQUIRE(build_film(dir, 100));
    CHECK_OK(zc_film_choose(dir, "film", 3));
    CHECK(zc_film_has_choices(dir, "film") == 1);
    CHECK(zc_test_count(dir, ".zc-film-film.json", "") == 1);
    DESCRIBED(json, dir, "film", ZC_FILM_VERIFY);
    /* The chosen take's ancestors are chosen with it: the pins are one chain. */
    CHECK(strstr(json, "\"line\":[1,2,3],\"newest\":6,\"end\":3,\"anchor\":1,\"pins\":[1,2,3]") !=
          NULL);
    CHECK_SHOTS(json,
                {3, "\"state\":\"line\",\"pinned\":true"},
                {4, "\"state\":\"alternative\",\"pinned\":false"},
                {5, "\"state\":\"stale\""},
                {6, "\"state\":\"stale\""});
    CHECK(strstr(json, "\"ok\":true") != NULL); /* stale is not broken */
    zc_free(json);
    /* Choosing a sibling replaces the pin; choosing an ancestor of the line's
     * pins keeps the pins below it that the line follows. */
    CHECK_OK(zc_film_choose(dir, "film", 4));
    CHECK_OK(zc_film_choose(dir, "film", 2));
    REQUIRE((json = describe(dir, "film", 0)) != NULL);
    CHECK(strstr(json, "\"pins\":[1,2,4]") != NULL);
    CHECK(strstr(json, "\"line\":[1,2,4,5,6]") != NULL);
    zc_free(json);
    /* The store's index does not take the choices file for a spill file. */
    OPEN_KEEP(s, dir, 100);
    uint64_t gens[16];
    size_t n = 0;
    CHECK_OK(zc_store_generations(s, "film", gens, 16, &n));
    CHECK(n == 6);
    zc_store_close(s);
    CHECK(zc_test_count(dir, ".zc-film-film.json", "") == 1);
    /* 0 clears every pin. */
    CHECK_OK(zc_film_choose(dir, "film", 0));
    CHECK(zc_film_has_choices(dir, "film") == 0);
    REQUIRE((json = describe(dir, "film", 0)) != NULL);
    CHECK(strstr(json, "\"pins\":[]") != NULL && strstr(json, "\"end\":6") != NULL);
    zc_free(json);
}

/* A film with two takes of shot 2: 1 -> 2 -> 3, and a second take 4 (from 1)
 * continued by 5. */
static int build_takes_film(const char *dir)
{
    static const uint64_t hops[][2] = {{2, 1}, {3, 2}, {4, 1}, {5, 4}};
    return store_film(dir, 100, NULL, hops, sizeof hops / sizeof hops[0]);
}

/* Write the choices file of tag in dir with the pins text (e.g. "3,4"). */
static int write_choices(const char *dir, const char *tag, const char *pins)
{
    char name[128], text[256];
    snprintf(name, sizeof name, ".zc-film-%s.json", tag);
    snprintf(text, sizeof text, "{\"version\":1,\"tag\":\"%s\",\"chosen\":[%s]}\n", tag, pins);
    char *p = zc_test_join(dir, name);
    FILE *fp = p ? fopen(p, "wb") : NULL;
    int ok = fp != NULL && fputs(text, fp) >= 0;
    if (fp && fclose(fp) != 0)
        ok = 0;
    free(p);
    return ok;
}

TEST(film_choosing_a_take_makes_the_line_pass_through_it)
{
    TEST_FOLDER(dir, "film-choose-chain");
    REQUIRE(build_takes_film(dir));
    DESCRIBED(json, dir, "film", 0);
    CHECK(strstr(json, "\"line\":[1,4,5],\"newest\":5,\"end\":5") != NULL); /* the newest */
    zc_free(json);
    /* Before: only 3 was pinned, and the line stayed [1, 4, 5]. */
    CHECK_OK(zc_film_choose(dir, "film", 3));
    REQUIRE((json = describe(dir, "film", 0)) != NULL);
    CHECK(strstr(json, "\"line\":[1,2,3],\"newest\":5,\"end\":3,\"anchor\":1,\"pins\":[1,2,3]") !=
          NULL);
    CHECK_SHOTS(json,
                {3, "\"state\":\"line\",\"pinned\":true"},
                {4, "\"state\":\"alternative\",\"pinned\":false"},
                {5, "\"state\":\"stale\""});
    CHECK(strstr(json, "\"problems\":[]") != NULL);
    zc_free(json);
    CHECK_OK(zc_film_choose(dir, "film", 4));
    REQUIRE((json = describe(dir, "film", 0)) != NULL);
    CHECK(strstr(json, "\"line\":[1,4,5],\"newest\":5,\"end\":5,\"anchor\":1,\"pins\":[1,4]") !=
          NULL);
    CHECK(shot_has(json, 2, "\"state\":\"alternative\""));
    CHECK(shot_has(json, 3, "\"state\":\"stale\",\"pinned\":false"));
    zc_free(json);
    /* A leaf below the chosen take: the chain grows. */
    CHECK_OK(zc_film_choose(dir, "film", 5));
    REQUIRE((json = describe(dir, "film", 0)) != NULL);
    CHECK(strstr(json, "\"line\":[1,4,5]") != NULL && strstr(json, "\"pins\":[1,4,5]") != NULL);
    zc_free(json);
}

TEST(film_pins_of_older_engines_choose_their_ancestors_and_the_newest_pin_wins)
{
    TEST_FOLDER(dir, "film-old-pins");
    REQUIRE(build_takes_film(dir));
    /* An older engine pinned only the chosen take. */
    REQUIRE(write_choices(dir, "film", "3"));
    DESCRIBED(json, dir, "film", 0);
    CHECK(strstr(json, "\"line\":[1,2,3]") != NULL && strstr(json, "\"pins\":[3]") != NULL);
    zc_free(json);
    /* Two pins the line cannot both pass through: the later one (listed last) wins, and
     * the other is said. */
    REQUIRE(write_choices(dir, "film", "3,4"));
    REQUIRE((json = describe(dir, "film", 0)) != NULL);
    CHECK(strstr(json, "\"line\":[1,4,5]") != NULL);
    CHECK(strstr(json, "generation 3 is pinned, but a later choice took generation 4") != NULL);
    zc_free(json);
    /* The next choice writes one chain. */
    CHECK_OK(zc_film_choose(dir, "film", 2));
    REQUIRE((json = describe(dir, "film", 0)) != NULL);
    CHECK(strstr(json, "\"line\":[1,2,3],") != NULL && strstr(json, "\"pins\":[1,2]") != NULL);
    CHECK(strstr(json, "\"problems\":[]") != NULL);
    zc_free(json);
}

TEST(film_choosing_a_shot_below_a_broken_one_is_refused_with_the_reason)
{
    TEST_FOLDER(dir, "film-choose-broken");
    OPEN_KEEP(s, dir, 100);
    /* 2's parent, 9, has no file: 2 is broken and 3, its child, cannot be on a line. */
    CHECK_PUTS(s, "film", {1, 0}, {2, 9}, {3, 2});
    CHECK_OK(flush_and_close(s));
    CHECK(zc_film_choose(dir, "film", 3) == ZC_E_STATE);
    CHECK(strstr(zc_last_error(), "generation 3 of tag \"film\" cannot be on the chosen line") !=
          NULL);
    CHECK(strstr(zc_last_error(), "it continues a broken shot") != NULL);
    CHECK(strstr(zc_last_error(), "generation 9") != NULL);
    CHECK(zc_film_choose(dir, "film", 2) == ZC_E_STATE);
    CHECK(zc_film_has_choices(dir, "film") == 0); /* nothing was written */
    CHECK_OK(zc_film_choose(dir, "film", 1));
}

TEST(film_choose_and_describe_refuse_bad_arguments_by_name)
{
    TEST_FOLDER(dir, "film-args");
    REQUIRE(build_film(dir, 100));
    CHECK(zc_film_choose(dir, "film", 77) == ZC_E_NOT_FOUND);
    CHECK(strstr(zc_last_error(), "77") != NULL);
    CHECK(zc_film_choose(dir, "bad/tag", 1) == ZC_E_INVALID);
    CHECK(zc_film_choose(dir, "nosuch", 1) == ZC_E_NOT_FOUND);
    CHECK(strstr(zc_last_error(), "nosuch") != NULL && strstr(zc_last_error(), dir) != NULL);
    char *json = NULL;
    CHECK(zc_film_describe(dir, "nosuch", 0, &json) == ZC_E_NOT_FOUND && json == NULL);
    CHECK(zc_film_describe(dir, "film", 0x80, &json) == ZC_E_INVALID);
    CHECK(zc_film_describe(NULL, "film", 0, &json) == ZC_E_INVALID);
    CHECK(zc_film_describe(dir, "film", 0, NULL) == ZC_E_INVALID);
    char *missing = zc_test_join(dir, "no-such-folder");
    CHECK(zc_film_describe(missing, "film", 0, &json) == ZC_E_IO);
    free(missing);
    CHECK(zc_film_has_choices(dir, "bad/tag") == 0);
}

TEST(film_parent_rewritten_with_another_tail_fails_its_hop)
{
    TEST_FOLDER(dir, "film-rewrite");
    REQUIRE(build_film(dir, 100));
    /* Generation 4 replaced by a file with other values; its own digests agree. */
    char *path = shot_file(dir, "film", 4);
    REQUIRE(path != NULL);
    CHECK(remove(path) == 0);
    free(path);
    OPEN_KEEP(s, dir, 100);
    CHECK_OK(put_continuing(s, "film", 4, 99, "film", 2, 2));
    CHECK_OK(flush_and_close(s));
    DESCRIBED(json, dir, "film", ZC_FILM_VERIFY);
    CHECK(strstr(json, "\"verified\":true,\"ok\":false") != NULL);
    CHECK_SHOTS(json,
                {4, "\"file\":\"ok\",\"hop\":\"ok\""},
                {5, "\"file\":\"ok\",\"hop\":\"bad\""},
                {5, "generation 5): the hop from generation 4: tail digest xxh3:"},
                {5, "\"problem\":\"shot "}, /* on the line: named by its place */
                {5, "does not match the parent's last 1 frame xxh3:"},
                {5, "\"state\":\"line\""}); /* a bad hop is not a broken lineage */
    zc_free(json);
    /* Without verification the film is not broken. */
    REQUIRE((json = describe(dir, "film", 0)) != NULL);
    CHECK(strstr(json, "\"ok\":true") != NULL);
    zc_free(json);
}

TEST(film_corrupt_file_is_bad_under_verification)
{
    TEST_FOLDER(dir, "film-corrupt");
    REQUIRE(build_film(dir, 100));
    char *path = shot_file(dir, "film", 6);
    FILE *fp = path ? fopen(path, "r+b") : NULL;
    REQUIRE(fp != NULL);
    CHECK(fseek(fp, -8, SEEK_END) == 0);
    int ch = fgetc(fp);
    CHECK(fseek(fp, -8, SEEK_END) == 0 && fputc(ch ^ 0x40, fp) != EOF);
    fclose(fp);
    free(path);
    DESCRIBED(json, dir, "film", ZC_FILM_VERIFY);
    CHECK(strstr(json, "\"ok\":false") != NULL);
    CHECK_SHOTS(json,
                {6, "\"file\":\"bad\""},
                {6, "fails verification"},
                {6, "generation 6): its file fails verification"});
    zc_free(json);
}

TEST(film_broken_lineage_cycle_missing_parent_and_parent_not_older)
{
    TEST_FOLDER(dir, "film-broken");
    OPEN_KEEP(s, dir, 100);
    /* 9 continues the cycle 7 <-> 8: stale, not on the line */
    CHECK_PUTS(s, "cyc", {1, 0}, {7, 8}, {8, 7}, {9, 8});
    /* 7 has no file; 10's parent 11 is not older */
    CHECK_PUTS(s, "gap", {5, 0}, {9, 7}, {10, 11}, {11, 0});
    CHECK_OK(put_shot(s, "gap", 12, 12, "{not json", NULL));
    CHECK_OK(put_child(s, "ext", 3, 1)); /* tag "ext" continues tag "film"? no: itself */
    CHECK_OK(put_continuing(s, "ext", 4, 4, "other", 5, 5));
    CHECK_OK(flush_and_close(s));

    DESCRIBED(json, dir, "cyc", ZC_FILM_VERIFY);
    CHECK(strstr(json, "\"ok\":false,\"line\":[1],\"newest\":9,\"end\":1") != NULL);
    CHECK_SHOTS(json,
                {7, "\"state\":\"broken\""},
                {7, "\"hop\":\"cycle\""},
                {8, "\"hop\":\"cycle\""},
                {7, "generation 7 (not on the line): its lineage is a cycle"},
                {9, "\"state\":\"stale\""});
    zc_free(json);

    REQUIRE((json = describe(dir, "gap", 0)) != NULL);
    CHECK(strstr(json, "\"ok\":false") != NULL);
    CHECK_SHOTS(json,
                {9, "\"parent\":7,"},
                {9, "\"state\":\"broken\""},
                {9, "\"hop\":\"missing_parent\""},
                {9, "generation 9 (not on the line): it continues generation 7 of tag"},
                {9, "\"shot\":null,"}, /* no place: not "shot 1", and no take */
                {9, "\"take\":0,\"takes\":0"},
                {10, "\"state\":\"broken\""},
                {10, "parent generation 11, which is not older"},
                {12, "\"state\":\"broken\""},
                {12, "generation 12 (not on the line): its lineage is not valid JSON"});
    /* Roots 5 and 11 are the two takes of the first shot. */
    CHECK(shot_has(json, 5, "\"take\":1,\"takes\":2"));
    CHECK(strstr(json, "\"line\":[11]") != NULL && strstr(json, "\"anchor\":5") != NULL);
    zc_free(json);

    REQUIRE((json = describe(dir, "ext", ZC_FILM_VERIFY)) != NULL);
    CHECK_SHOTS(json,
                {4, "\"continues\":\"other@5\""},
                {4, "\"hop\":\"not_checked_external\""},
                {3, "\"hop\":\"missing_parent\""});
    zc_free(json);
}

/* 1 if exactly the generations in want (0-terminated) of tag have files. */
static int files_are(const char *dir, const char *tag, const uint64_t *want)
{
    int ok = 1, n = 0;
    for (; want[n]; n++) {
        char name[96];
        shot_name(name, sizeof name, tag, want[n]);
        if (zc_test_count(dir, name, "") != 1) {
            fprintf(stderr, "  %s is missing\n", name);
            ok = 0;
        }
    }
    char prefix[96];
    snprintf(prefix, sizeof prefix, "%s@", tag);
    int have = zc_test_count(dir, prefix, ".latent");
    if (have != n) {
        fprintf(stderr, "  %d files of %s, expected %d\n", have, tag, n);
        ok = 0;
    }
    return ok;
}

TEST(film_retention_keeps_ancestors_and_the_start_image_prunes_abandoned_takes)
{
    TEST_FOLDER(dir, "film-keep");
    REQUIRE(build_film(dir, 1)); /* disk_keep 1: take 3 goes when take 4 lands */
    CHECK(files_are(dir, "film", (const uint64_t[]){1, 2, 4, 5, 6, 0}));
    DESCRIBED(json, dir, "film", ZC_FILM_VERIFY);
    CHECK(strstr(json, "\"ok\":true,\"line\":[1,2,4,5,6]") != NULL);
    zc_free(json);
}

/* A start image, shot 1, and two takes of shot 2 (generations 3 and 4), by a store since closed. */
static int store_two_takes(const char *dir)
{
    static const uint64_t hops[][2] = {{2, 1}, {3, 2}, {4, 2}};
    return store_film(dir, 100, "start_image", hops, sizeof hops / sizeof hops[0]);
}

TEST(film_retention_keeps_pinned_takes_and_their_ancestors)
{
    TEST_FOLDER(dir, "film-keep-pin");
    REQUIRE(store_two_takes(dir));
    zc_store *s = NULL;
    CHECK_OK(zc_film_choose(dir, "film", 3));
    REQUIRE((s = open_keep(dir, 1)) != NULL); /* alone at open: the files are its to prune */
    CHECK_OK(put_child(s, "film", 5, 4));
    CHECK_OK(put_child(s, "film", 6, 5));
    CHECK_OK(zc_store_flush(s));
    CHECK(files_are(dir, "film", (const uint64_t[]){1, 2, 3, 4, 5, 6, 0}));
    CHECK_OK(put_child(s, "film", 7, 3)); /* shot 3 on the pinned take */
    CHECK_OK(flush_and_close(s));
    CHECK(files_are(dir, "film", (const uint64_t[]){1, 2, 3, 7, 0}));
    DESCRIBED(json, dir, "film", ZC_FILM_VERIFY);
    CHECK(strstr(json, "\"ok\":true,\"line\":[1,2,3,7]") != NULL);
    zc_free(json);
}

TEST(film_retention_prunes_nothing_while_the_choices_file_is_unreadable)
{
    TEST_FOLDER(dir, "film-keep-badpins");
    REQUIRE(store_two_takes(dir));
    zc_store *s = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/.zc-film-film.json", dir);
    FILE *pins = fopen(path, "wb");
    REQUIRE(pins != NULL);
    fputs("{\"version\":1,\"tag\":\"film\",\"chosen\":[3", pins); /* torn: the pins are unknown */
    fclose(pins);
    REQUIRE((s = open_keep(dir, 1)) != NULL);
    CHECK_OK(put_child(s, "film", 5, 4));
    CHECK_OK(flush_and_close(s));
    /* take 3 may be the chosen one: with disk_keep 1 it would go, but nothing is pruned */
    CHECK(files_are(dir, "film", (const uint64_t[]){1, 2, 3, 4, 5, 0}));
}

TEST(film_retention_keeps_the_lowest_root_of_a_film)
{
    TEST_FOLDER(dir, "film-keep-anchor");
    OPEN_KEEP(s, dir, 1);
    CHECK_PUTS(s, "film", {1, 0}, {2, 1}, {3, 0}, {4, 3}); /* 3: a new first shot */
    CHECK_OK(flush_and_close(s));
    /* 4 and its parent 3 are the line; 1 is the anchor (not a start image: 2 may go). */
    CHECK(files_are(dir, "film", (const uint64_t[]){1, 3, 4, 0}));
    /* A tag without any lineage prunes oldest first, as ever. */
    REQUIRE((s = open_keep(dir, 1)) != NULL);
    for (uint64_t g = 1; g <= 3; g++)
        CHECK_OK(put_shot(s, "plain", g, (uint32_t)g, NULL, NULL));
    CHECK_OK(flush_and_close(s));
    CHECK(files_are(dir, "plain", (const uint64_t[]){3, 0}));
}

/* A lineage of version 2 continuing pgen with the seam object seam_json (or none for NULL). */
static void lineage_v2(char *out, size_t cap, uint64_t pgen, const char *seam_json)
{
    char tail[ZC_DIGEST_TEXT_SIZE];
    tail_text((uint32_t)pgen, 1, tail);
    snprintf(out, cap,
             "{\"adapter\":\"temporal_inpaint\",\"parent_generation\":%llu,\"parent_tag\":\"seams\","
             "%s%s\"tail_digest\":\"%s\",\"tail_frames\":1,\"trim\":1,\"used_digest\":\"%s\","
             "\"version\":2}",
             (unsigned long long)pgen, seam_json ? "\"seam\":" : "", seam_json ? seam_json : "",
             tail, tail);
}

/* Root 1; 2 green (with audio), 3 red, 4 version 1 without a seam, 5 a seam whose numbers are
 * not finite or not numbers (its score absent: no seam). */
static int build_seam_film(const char *dir)
{
    static const char *const seams[] = {
        "{\"version\":1,\"frames\":[4,4],\"skip\":1,\"score\":1.25,\"mean_step\":1.1,\"std_step\":0.9,"
        "\"rms_step\":1.25,\"correlation\":0.98,\"within_correlation\":0.99,\"audio\":{\"level_db\":-0.5,"
        "\"rms_step\":1.02,\"correlation\":0.95,\"within_correlation\":0.96,\"skip\":4}},",
        "{\"version\":1,\"score\":14.5,\"mean_step\":14.5,\"std_step\":2,\"rms_step\":3,"
        "\"correlation\":-0.03,\"within_correlation\":0.99},",
        NULL,
        "{\"score\":\"high\",\"mean_step\":1e999},",
    };
    zc_store *s = open_keep(dir, 100);
    if (s == NULL)
        return 0;
    int ok = put_shot(s, "seams", 1, 1, NULL, NULL) == ZC_OK;
    for (uint64_t g = 2; ok && g <= 5; g++) {
        char lin[1024];
        if (g == 4)
            lineage_of(lin, sizeof lin, "seams", 3, 3);
        else
            lineage_v2(lin, sizeof lin, g - 1, seams[g - 2]);
        /* the seam text ends in ',': it precedes "tail_digest" */
        ok = put_shot(s, "seams", g, (uint32_t)g, lin, NULL) == ZC_OK;
    }
    ok = ok && zc_store_flush(s) == ZC_OK;
    zc_store_close(s);
    return ok;
}

TEST(film_seams_are_read_from_version_2_lineage_and_the_worst_is_named)
{
    TEST_FOLDER(dir, "film-seams");
    REQUIRE(build_seam_film(dir));
    DESCRIBED(json, dir, "seams", ZC_FILM_VERIFY);
    CHECK(strstr(json, "\"ok\":true") != NULL); /* version 1 and 2 lineage side by side */
    CHECK(shot_has(json, 1, "\"seam\":null"));  /* a root has none */
    CHECK(shot_has(json, 2, "\"seam\":{\"score\":1.25,\"verdict\":\"green\",\"mean_step\":1.1,"
                            "\"std_step\":0.9,\"rms_step\":1.25,\"correlation\":0.98,"
                            "\"within_correlation\":0.99,\"audio\":{\"level_db\":-0.5,"
                            "\"rms_step\":1.02,\"correlation\":0.95,\"within_correlation\":0.96}}"));
    CHECK_SHOTS(json,
                {3, "\"seam\":{\"score\":14.5,\"verdict\":\"red\""},
                {3, "\"audio\":null}"},
                {4, "\"seam\":null"}, /* version 1: none recorded */
                {5, "\"hop\":\"ok\""},
                {5, "\"seam\":null"}); /* a score that is no number: no seam */
    CHECK(strstr(json, "\"seam_thresholds\":{\"green_below\":2,\"red_from\":4},\"worst_seam\":"
                       "{\"score\":14.5,\"verdict\":\"red\",\"generation\":3,\"shot\":3}") != NULL);
    zc_free(json);
    /* The worst is over the chosen line only: pin another take of shot 3 (amber). */
    OPEN_KEEP(s, dir, 100);
    char lin[1024];
    lineage_v2(lin, sizeof lin, 2, "{\"score\":3.5,\"mean_step\":3.5},");
    CHECK_OK(put_shot(s, "seams", 6, 6, lin, NULL));
    CHECK_OK(flush_and_close(s));
    CHECK_OK(zc_film_choose(dir, "seams", 6));
    REQUIRE((json = describe(dir, "seams", 0)) != NULL);
    CHECK(strstr(json, "\"line\":[1,2,6]") != NULL);
    CHECK(strstr(json, "\"worst_seam\":{\"score\":3.5,\"verdict\":\"amber\",\"generation\":6,"
                       "\"shot\":3}") != NULL);
    CHECK(shot_has(json, 6, "\"std_step\":null"));
    zc_free(json);
    zc_film film;
    CHECK_OK(zc__film_build(dir, "seams", 0, &film));
    long w = zc__film_worst_seam(&film);
    CHECK(w >= 0 && film.shots[w].generation == 6);
    CHECK(strcmp(zc__film_seam_verdict(1.999), "green") == 0 &&
          strcmp(zc__film_seam_verdict(2.0), "amber") == 0 &&
          strcmp(zc__film_seam_verdict(4.0), "red") == 0);
    zc__film_free(&film);
}
