/*
 * test_spill_hostile.c — the spill folder as hostile input: file
 * names planted to break a tag's numbering, counter files that say too much,
 * symbolic links planted in place of the engine's bookkeeping files, hard
 * links and FIFOs planted in place of its counter, its folder lock, a spill
 * file and a film's choices file (never written, locked or served: renamed
 * aside and said), and spill files whose headers promise more than the file
 * or the budget holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "core/internal.h"
#include "platform/platform_test.h"

static int put_one(zc_store *s, const char *tag, float scale, uint64_t *gen)
{
    *gen = 0;
    return fixture_put_spilled(s, tag, 1024, scale, gen);
}

/* Write n bytes (data, or n copies of 'x' when data is NULL) as dir/name. */
static int write_in(const char *dir, const char *name, const void *data, size_t n)
{
    char *p = zc_test_join(dir, name);
    FILE *fp = p ? fopen(p, "wb") : NULL;
    int ok = fp != NULL;
    for (size_t i = 0; ok && i < n; i++)
        ok = fputc(data ? ((const unsigned char *)data)[i] : 'x', fp) != EOF;
    if (fp && fclose(fp) != 0)
        ok = 0;
    free(p);
    return ok;
}

/* The whole file at path into buf (cap bytes); its length, or -1. */
static long read_all(const char *path, char *buf, size_t cap)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return -1;
    size_t n = fread(buf, 1, cap, fp);
    fclose(fp);
    return (long)n;
}

static int exists_in(const char *dir, const char *name)
{
    char *p = zc_test_join(dir, name);
    zc_os_path_kind kind;
    int there = p && zc_os_stat(p, &kind, NULL) == 0;
    free(p);
    return there;
}

/* ---- item 4: planted names and counters ---- */

TEST(planted_empty_name_at_uint64_max_is_renamed_aside_and_puts_go_on)
{
    TEST_FOLDER(dir, "hostile-u64max");
    /* Before the fix: indexed as generation 2^64 - 1, the next number wrapped
     * to 0 (the API's "newest"), every put returned 0 and no spill survived. */
    REQUIRE(write_in(dir, "film@18446744073709551615.latent", NULL, 0));
    zc_store *s = fixture_store(dir, 0, 0, 0, 0);
    REQUIRE(s != NULL);
    zc_store_stats st;
    CHECK_OK(zc_store_stats_get(s, &st));
    CHECK(st.files_rejected == 1);
    CHECK(!exists_in(dir, "film@18446744073709551615.latent"));
    CHECK(exists_in(dir, "film@18446744073709551615.latent" ZC_REJECTED_SUFFIX));
    uint64_t gen[3];
    for (int i = 0; i < 3; i++) {
        CHECK_OK(put_one(s, "film", (float)(i + 1), &gen[i]));
        CHECK(gen[i] == (uint64_t)i + 1);
    }
    CHECK_OK(zc_store_flush(s));
    zc_store_close(s);

    REQUIRE((s = fixture_store(dir, 0, 0, 0, 0)) != NULL);
    for (int i = 0; i < 3; i++) {
        zc_view *v = NULL;
        CHECK_OK(zc_store_get(s, "film", gen[i], &v));
        zc_view_release(v);
    }
    CHECK_OK(zc_store_stats_get(s, &st));
    CHECK(st.files_rejected == 0); /* a file renamed aside is no longer looked at */
    zc_store_close(s);
}

TEST(planted_names_out_of_range_or_too_small_never_use_up_a_tag)
{
    TEST_FOLDER(dir, "hostile-range");
    char big[4096];
    memset(big, 'x', sizeof big);
    /* Above ZC_MAX_GENERATION (2^63 - 1), with content: out of range. */
    REQUIRE(write_in(dir, "film@09223372036854775808.latent", big, sizeof big));
    REQUIRE(write_in(dir, "film@99999999999999999999.latent", big, sizeof big));
    /* Exactly ZC_MAX_GENERATION but empty, and generation 5 with 10 bytes: in
     * range, but too small to hold a spill file's header. */
    REQUIRE(write_in(dir, "film@09223372036854775807.latent", NULL, 0));
    REQUIRE(write_in(dir, "film@00000000000000000005.latent", big, 10));
    /* Generation 0, and a directory under a spill file's name. */
    REQUIRE(write_in(dir, "film@00000000000000000000.latent", big, sizeof big));
    char *sub = zc_test_join(dir, "film@00000000000000000009.latent");
    REQUIRE(sub != NULL && zc_os_mkdir(sub) == 0);
    free(sub);
    /* Not shaped like ours: left alone. */
    REQUIRE(write_in(dir, "-x@00000000000000000001.latent", NULL, 0));
    REQUIRE(write_in(dir, "film@1.latent", NULL, 0));
    REQUIRE(write_in(dir, "notes.txt", NULL, 0));

    zc_store *s = fixture_store(dir, 0, 0, 0, 0);
    REQUIRE(s != NULL);
    zc_store_stats st;
    CHECK_OK(zc_store_stats_get(s, &st));
    CHECK(st.files_rejected == 6);
    CHECK(zc_test_count(dir, "film@", ".latent") == 1); /* film@1.latent */
    CHECK(zc_test_count(dir, "film@", ".latent" ZC_REJECTED_SUFFIX) == 6);
    CHECK(exists_in(dir, "-x@00000000000000000001.latent"));
    CHECK(exists_in(dir, "film@1.latent"));
    CHECK(exists_in(dir, "notes.txt"));
    /* Before the fix: "tag has used every generation; use a new tag". */
    uint64_t g = 0, h = 0;
    CHECK_OK(put_one(s, "film", 1.0f, &g));
    CHECK(g == 1);
    CHECK_OK(put_one(s, "film", 2.0f, &h));
    CHECK(h == 2);
    CHECK_OK(zc_store_flush(s));
    zc_store_close(s);
}

/* The counter file of tag "film" with these two 20-digit fields. */
static int write_counter(const char *dir, const char *last, const char *changes)
{
    char text[64];
    snprintf(text, sizeof text, "%s %s\n", last, changes);
    return write_in(dir, ZC_GEN_PREFIX "film", text, strlen(text));
}

TEST(counter_above_the_highest_generation_is_not_trusted)
{
    TEST_FOLDER(dir, "hostile-counter");
    /* Before the fix: last + 1 wrapped, and the put returned generation 0. */
    REQUIRE(write_counter(dir, "18446744073709551615", "00000000000000000003"));
    zc_store *s = fixture_store(dir, 0, 0, 0, 0);
    REQUIRE(s != NULL);
    uint64_t g = 0;
    CHECK_OK(put_one(s, "film", 1.0f, &g));
    CHECK(g == 1);
    CHECK_OK(zc_store_flush(s));
    /* Before the fix: every put failed, "used every generation". */
    REQUIRE(write_counter(dir, "09223372036854775808", "00000000000000000003"));
    CHECK_OK(put_one(s, "film", 2.0f, &g));
    CHECK(g == 2);
    /* A change count above the range is torn too (its + 1 could wrap). */
    REQUIRE(write_counter(dir, "00000000000000000002", "18446744073709551615"));
    CHECK_OK(put_one(s, "film", 3.0f, &g));
    CHECK(g == 3);
    CHECK_OK(zc_store_flush(s));
    char *counter = zc_test_join(dir, ZC_GEN_PREFIX "film");
    char text[64];
    REQUIRE(counter != NULL);
    long n = read_all(counter, text, sizeof text - 1);
    CHECK(n == 42);
    text[n > 0 ? n : 0] = '\0';
    CHECK(strncmp(text, "00000000000000000003 ", 21) == 0);
    free(counter);
    zc_store_close(s);
}

TEST(a_tag_at_the_highest_generation_says_so_and_never_wraps)
{
    TEST_FOLDER(dir, "hostile-top");
    zc_store *s = fixture_store(dir, 0, 0, 0, 0);
    REQUIRE(s != NULL);
    zc_bundle *b = fixture_bundle(64, 1.0f);
    REQUIRE(b != NULL);
    int rc = zc_store_put_generation(s, "film", b, ZC_PUT_SPILL, ZC_MAX_GENERATION);
    CHECK_OK(rc);
    if (rc != ZC_OK)
        zc_bundle_free(b);
    uint64_t g = 12345;
    CHECK(put_one(s, "film", 2.0f, &g) == ZC_E_LIMIT);
    CHECK(strstr(zc_last_error(), "every generation") != NULL);
    CHECK(g == 0);
    CHECK_OK(zc_store_flush(s));
    zc_store_close(s);
}

/* ---- item 5: planted symbolic links ---- */

#define VICTIM_TEXT "{\"victim\": \"these bytes must never change\", \"n\": 1234567890}\n"

/* A folder with a victim file outside its spill folder "spill", and a link
 * in the spill folder named link_name to target_name in the parent (the
 * victim, or a name that does not exist).  0, or a reason to skip. */
typedef struct {
    char *root, *spill, *victim, *link;
} planted;

/* p's folder (a zc_test_tmpdir of label), its spill folder and the victim file beside it; 0 when
 * any could not be made (p holds what was). */
static int plant_folders(planted *p, const char *label)
{
    memset(p, 0, sizeof *p);
    p->root = zc_test_tmpdir(label);
    p->spill = p->root ? zc_test_join(p->root, "spill") : NULL;
    p->victim = p->root ? zc_test_join(p->root, "victim.json") : NULL;
    return p->spill != NULL && p->victim != NULL && zc_os_mkdir(p->spill) == 0 &&
           write_in(p->root, "victim.json", VICTIM_TEXT, strlen(VICTIM_TEXT));
}

static const char *plant(planted *p, const char *label, const char *link_name,
                         const char *target_name)
{
    static char reason[512];
    if (!plant_folders(p, label))
        return "cannot set up the folders";
    char *target = zc_test_join(p->root, target_name);
    p->link = zc_test_join(p->spill, link_name);
    if (target == NULL || p->link == NULL) {
        free(target);
        return "out of memory setting up the test";
    }
    int err = zc_os_test_symlink(target, p->link);
    free(target);
    if (err != 0) {
        free(p->link);
        p->link = NULL;
        snprintf(reason, sizeof reason, "this system cannot make a symbolic link for the test "
                 "(%s), so the no-follow open is not checked here", ZC_OS_WHY(err));
        return reason;
    }
    return NULL;
}

static void unplant(planted *p)
{
    if (p->link)
        zc_os_remove(p->link); /* the link, before rmtree could follow it */
    zc_test_rmtree(p->root);
    free(p->root);
    free(p->spill);
    free(p->victim);
    free(p->link);
}

/* Declare `planted var` and plant it with how (plant or plant_hard, given the
 * arguments after the first), or leave the test as skipped with its reason. */
#define PLANT_OR_SKIP(var, how, ...)                                           \
    planted var;                                                               \
    do {                                                                       \
        const char *skip_ = how(&var, __VA_ARGS__);                            \
        if (skip_) {                                                           \
            unplant(&var);                                                     \
            SKIP(skip_);                                                       \
        }                                                                      \
    } while (0)

static int victim_unchanged(const planted *p)
{
    char buf[256];
    long n = read_all(p->victim, buf, sizeof buf);
    return n == (long)strlen(VICTIM_TEXT) && memcmp(buf, VICTIM_TEXT, (size_t)n) == 0;
}

/* A store on p's spill folder (NULL if it does not open) after one shot of "film" was put and
 * flushed: CHECKs that the put went on (its generation in *g) and that the flush failed with an
 * I/O error naming a symbolic link. */
static zc_store *put_past_the_link(const planted *p, uint64_t *g)
{
    zc_store *s = fixture_store(p->spill, 0, 0, 0, 0);
    *g = 0;
    if (s == NULL)
        return NULL;
    CHECK_OK(put_one(s, "film", 1.0f, g));
    CHECK(zc_store_flush(s) == ZC_E_IO);
    CHECK(strstr(zc_last_error(), "symbolic link") != NULL);
    return s;
}

/* Declare `planted p` with a link in place of tag "film"'s counter to target_name in the parent
 * (PLANT_OR_SKIP), then `zc_store *s` after one shot put past it (put_past_the_link, the
 * generation in `uint64_t g`), and REQUIRE the store. */
#define COUNTER_LINK_STORE(p, s, g, label, target_name)                        \
    PLANT_OR_SKIP(p, plant, label, ZC_GEN_PREFIX "film", target_name);         \
    uint64_t g;                                                                \
    zc_store *s = put_past_the_link(&p, &g);                                   \
    REQUIRE(s != NULL)

TEST(platform_no_follow_opens_refuse_a_symbolic_link)
{
    PLANT_OR_SKIP(p, plant, "hostile-link-plat", "link", "victim.json");
    zc_os_file f = ZC_OS_FILE_CLOSED;
    int err = zc_os_file_open_rw(p.link, &f);
    CHECK(err == ZC_OS_ERROR_LINK_REFUSED && zc_os_error_is(err, ZC_OS_LINK));
    CHECK(f.handle == -1);
    CHECK(strstr(ZC_OS_WHY(err), "symbolic link") != NULL);
    CHECK(strstr(ZC_OS_WHY(err), "remove the link") != NULL);
    err = zc_os_file_open_read_nofollow(p.link, &f);
    CHECK(err == ZC_OS_ERROR_LINK_REFUSED && f.handle == -1);
    zc_os_file_close(&f);
    /* The plain read still follows (a user's path may be a link), and a
     * regular file opens as before. */
    CHECK(zc_os_file_open_read(p.link, &f) == 0);
    zc_os_file_close(&f);
    CHECK(zc_os_file_open_rw(p.victim, &f) == 0);
    zc_os_file_close(&f);
    char *missing = zc_test_join(p.spill, "missing");
    REQUIRE(missing != NULL);
    err = zc_os_file_open_read_nofollow(missing, &f);
    CHECK(zc_os_error_is(err, ZC_OS_NOT_FOUND) && !zc_os_error_is(err, ZC_OS_LINK));
    free(missing);
    CHECK(victim_unchanged(&p));
    unplant(&p);
}

TEST(planted_counter_link_is_refused_and_its_target_never_touched)
{
    /* The put goes on with the store's own number (as for a folder that
     * cannot hand one out); the flush says which file and why. */
    COUNTER_LINK_STORE(p, s, g, "hostile-link-gen", "victim.json");
    CHECK(g == 1);
    CHECK(strstr(zc_last_error(), ZC_GEN_PREFIX "film") != NULL);
    CHECK(strstr(zc_last_error(), "remove the link") != NULL);
    zc_view *v = NULL;
    CHECK_OK(zc_store_get(s, "film", 0, &v)); /* the read of the counter is refused too */
    zc_view_release(v);
    zc_store_close(s);
    CHECK(victim_unchanged(&p));
    CHECK(exists_in(p.spill, "film@00000000000000000001.latent"));
    unplant(&p);
}

TEST(planted_dangling_counter_link_creates_nothing_outside_the_folder)
{
    COUNTER_LINK_STORE(p, s, g, "hostile-link-dangling", "made-by-zc");
    zc_store_close(s);
    CHECK(!exists_in(p.root, "made-by-zc")); /* O_CREAT through the link would have made it */
    unplant(&p);
}

TEST(planted_folder_lock_link_fails_the_open_and_keeps_the_target)
{
    PLANT_OR_SKIP(p, plant, "hostile-link-lock", ZC_FOLDER_LOCK, "victim.json");
    zc_store_config c;
    zc_store_config_init(&c);
    c.spill_dir = p.spill;
    zc_store *s = NULL;
    CHECK(zc_store_open(&c, &s) == ZC_E_IO && s == NULL);
    CHECK(strstr(zc_last_error(), ZC_FOLDER_LOCK) != NULL);
    CHECK(strstr(zc_last_error(), "symbolic link") != NULL);
    zc_store_close(s);
    CHECK(victim_unchanged(&p));
    unplant(&p);
}

/* ---- hard links and FIFOs planted in the folder ---- */

/* A victim outside the spill folder and a hard link to it named link_name in
 * the spill folder (p->link).  NULL, or a reason to skip. */
static const char *plant_hard(planted *p, const char *label, const char *link_name)
{
    static char reason[512];
    if (!plant_folders(p, label))
        return "cannot set up the folders";
    char *link = zc_test_join(p->spill, link_name);
    int err = link ? zc_os_test_hardlink(p->victim, link) : -1;
    free(link);
    if (err != 0) {
        snprintf(reason, sizeof reason, "this file system cannot make a hard link for the test "
                 "(%s)", ZC_OS_WHY(err));
        return reason;
    }
    return NULL; /* p->link stays NULL: a hard link is a plain name, rmtree takes it */
}

/* The store's describe JSON (caller frees), or NULL. */
static char *store_json(zc_store *s)
{
    size_t need = 0;
    if (zc_store_describe_json(s, NULL, 0, &need) != ZC_E_LIMIT)
        return NULL;
    char *buf = malloc(need);
    if (buf && zc_store_describe_json(s, buf, need, &need) != ZC_OK) {
        free(buf);
        buf = NULL;
    }
    return buf;
}

static uint64_t files_rejected(zc_store *s)
{
    zc_store_stats st;
    return zc_store_stats_get(s, &st) == ZC_OK ? st.files_rejected : 0;
}

TEST(platform_check_private_tells_hard_links_and_fifos_from_our_files)
{
    PLANT_OR_SKIP(p, plant_hard, "hostile-private-plat", "second-name");
    zc_os_file f = ZC_OS_FILE_CLOSED;
    uint64_t links = 0;
    char *second = zc_test_join(p.spill, "second-name");
    REQUIRE(second != NULL);
    REQUIRE(zc_os_file_open_read_nofollow(second, &f) == 0);
    int err = zc_os_file_check_private(f, &links);
    CHECK(err == ZC_OS_ERROR_HARD_LINKED && links == 2);
    CHECK(zc_os_error_is(err, ZC_OS_NOT_PRIVATE) && !zc_os_error_is(err, ZC_OS_LINK));
    CHECK(strstr(ZC_OS_WHY(err), "more than one name (a hard link)") != NULL);
    int same = 0;
    CHECK(zc_os_file_is_at(f, second, &same) == 0 && same == 1);
    CHECK(zc_os_file_is_at(f, p.victim, &same) == 0 && same == 1); /* the same file */
    zc_os_file_close(&f);
    /* Once the other name is gone it is a file of one name again. */
    REQUIRE(zc_os_remove(p.victim) == 0);
    REQUIRE(zc_os_file_open_rw(second, &f) == 0);
    CHECK(zc_os_file_check_private(f, &links) == 0 && links == 1);
    CHECK(zc_os_file_is_at(f, p.victim, &same) == 0 && same == 0); /* nothing there */
    zc_os_file_close(&f);
    CHECK(zc_os_error_is(ZC_OS_ERROR_LINK_REFUSED, ZC_OS_NOT_PRIVATE));
    /* A FIFO opens without blocking and is no regular file. */
    char *fifo = zc_test_join(p.spill, "fifo");
    REQUIRE(fifo != NULL);
    err = zc_os_test_mkfifo(fifo);
    if (err == 0) {
        REQUIRE(zc_os_file_open_rw(fifo, &f) == 0); /* O_NONBLOCK: returns at once */
        err = zc_os_file_check_private(f, NULL);
        CHECK(err == ZC_OS_ERROR_NOT_REGULAR && zc_os_error_is(err, ZC_OS_NOT_PRIVATE));
        CHECK(strstr(ZC_OS_WHY(err), "not a regular file") != NULL);
        zc_os_file_close(&f);
    } else {
        CHECK(zc_os_error_is(err, ZC_OS_UNSUPPORTED)); /* Windows: no FIFO in the file system */
    }
    free(fifo);
    free(second);
    unplant(&p);
}

TEST(planted_counter_hard_link_is_renamed_aside_and_its_victim_never_written)
{
    PLANT_OR_SKIP(p, plant_hard, "hostile-hard-gen", ZC_GEN_PREFIX "film");
    zc_store *s = fixture_store(p.spill, 0, 0, 0, 0);
    REQUIRE(s != NULL);
    /* Before: the victim's first 42 bytes became "00000000000000000000 0000...1\n". */
    uint64_t g = 0;
    CHECK_OK(put_one(s, "film", 1.0f, &g));
    CHECK(g == 1);
    CHECK_OK(zc_store_flush(s)); /* a new counter was made: the put is as any other */
    CHECK(victim_unchanged(&p));
    CHECK(exists_in(p.spill, ZC_GEN_PREFIX "film" ZC_REJECTED_SUFFIX));
    CHECK(exists_in(p.spill, ZC_GEN_PREFIX "film"));
    CHECK(files_rejected(s) == 1);
    char *json = store_json(s);
    REQUIRE(json != NULL);
    CHECK(strstr(json, "\"last_rejected\":\"the generation counter") != NULL);
    CHECK(strstr(json, ZC_GEN_PREFIX "film" ZC_REJECTED_SUFFIX) != NULL);
    CHECK(strstr(json, "hard link") != NULL && strstr(json, "it had 2 names") != NULL);
    CHECK(strstr(json, "a new counter was made") != NULL);
    free(json);
    CHECK_OK(put_one(s, "film", 2.0f, &g));
    CHECK(g == 2);
    /* Planted again while the store runs: the look at the counter (a get) refuses it too. */
    char *counter = zc_test_join(p.spill, ZC_GEN_PREFIX "film");
    REQUIRE(counter != NULL);
    CHECK(zc_os_remove(counter) == 0);
    CHECK(zc_os_test_hardlink(p.victim, counter) == 0);
    zc_view *v = NULL;
    CHECK_OK(zc_store_get(s, "film", 0, &v));
    zc_view_release(v);
    CHECK(victim_unchanged(&p));
    CHECK(files_rejected(s) == 2);
    CHECK(exists_in(p.spill, ZC_GEN_PREFIX "film.2" ZC_REJECTED_SUFFIX)); /* the first one kept */
    CHECK(exists_in(p.spill, ZC_GEN_PREFIX "film" ZC_REJECTED_SUFFIX));
    CHECK_OK(put_one(s, "film", 3.0f, &g));
    CHECK(g == 3); /* above every spill file, though the counter is new */
    CHECK_OK(zc_store_flush(s));
    CHECK(victim_unchanged(&p));
    zc_store_close(s);
    free(counter);
    unplant(&p);
}

TEST(planted_counter_fifo_is_refused_without_blocking)
{
    char *dir = zc_test_tmpdir("hostile-fifo-gen");
    REQUIRE(dir != NULL);
    char *fifo = zc_test_join(dir, ZC_GEN_PREFIX "film");
    REQUIRE(fifo != NULL);
    int err = zc_os_test_mkfifo(fifo);
    if (err != 0) {
        free(fifo);
        zc_test_rmtree(dir);
        free(dir);
        SKIP("this system has no FIFO in the file system (Windows)");
    }
    zc_store *s = fixture_store(dir, 0, 0, 0, 0);
    REQUIRE(s != NULL);
    uint64_t g = 0;
    CHECK_OK(put_one(s, "film", 1.0f, &g)); /* before: used as the counter, no warning */
    CHECK(g == 1);
    CHECK_OK(zc_store_flush(s));
    zc_os_path_kind kind;
    char *aside = zc_test_join(dir, ZC_GEN_PREFIX "film" ZC_REJECTED_SUFFIX);
    REQUIRE(aside != NULL);
    CHECK(zc_os_stat(aside, &kind, NULL) == 0 && kind == ZC_OS_PATH_OTHER); /* the FIFO, aside */
    CHECK(zc_os_stat(fifo, &kind, NULL) == 0 && kind == ZC_OS_PATH_FILE); /* a new counter */
    char *json = store_json(s);
    REQUIRE(json != NULL);
    CHECK(strstr(json, "not a regular file") != NULL && strstr(json, ZC_GEN_PREFIX "film") != NULL);
    free(json);
    CHECK(files_rejected(s) == 1);
    zc_store_close(s);
    free(aside);
    free(fifo);
    zc_test_rmtree(dir);
    free(dir);
}

TEST(planted_folder_lock_hard_link_is_renamed_aside_and_the_store_opens)
{
    PLANT_OR_SKIP(p, plant_hard, "hostile-hard-lock", ZC_FOLDER_LOCK);
    zc_store *s = fixture_store(p.spill, 0, 0, 0, 0);
    REQUIRE(s != NULL);
    CHECK(exists_in(p.spill, ZC_FOLDER_LOCK ZC_REJECTED_SUFFIX));
    CHECK(files_rejected(s) == 1);
    char *json = store_json(s);
    REQUIRE(json != NULL);
    CHECK(strstr(json, "\"last_rejected\":\"the folder lock") != NULL);
    CHECK(strstr(json, "hard link") != NULL && strstr(json, "the store opened") != NULL);
    free(json);
    uint64_t g = 0;
    CHECK_OK(put_one(s, "film", 1.0f, &g));
    CHECK_OK(zc_store_flush(s));
    zc_store_close(s);
    CHECK(victim_unchanged(&p));
    /* A choice takes the folder lock too: planted again, the choice is refused, said. */
    char *lock = zc_test_join(p.spill, ZC_FOLDER_LOCK);
    REQUIRE(lock != NULL);
    CHECK(zc_os_remove(lock) == 0);
    CHECK(zc_os_test_hardlink(p.victim, lock) == 0);
    CHECK(zc_film_choose(p.spill, "film", 1) == ZC_E_CORRUPT);
    CHECK(strstr(zc_last_error(), "the folder lock") != NULL);
    CHECK(strstr(zc_last_error(), "choose the take again") != NULL);
    CHECK_OK(zc_film_choose(p.spill, "film", 1));
    CHECK(victim_unchanged(&p));
    free(lock);
    unplant(&p);
}

TEST(hard_linked_spill_file_from_another_folder_is_not_served)
{
    char *root = zc_test_tmpdir("hostile-hard-shot");
    REQUIRE(root != NULL);
    char *other = zc_test_join(root, "other"), *spill = zc_test_join(root, "spill");
    REQUIRE(other != NULL && spill != NULL);
    REQUIRE(zc_os_mkdir(other) == 0 && zc_os_mkdir(spill) == 0);
    /* A valid shot of another folder, its spill file hard-linked into ours. */
    zc_store *s = fixture_store(other, 0, 0, 0, 0);
    REQUIRE(s != NULL);
    uint64_t g = 0;
    REQUIRE_OK(put_one(s, "secret", 7.0f, &g));
    REQUIRE_OK(zc_store_flush(s));
    zc_store_close(s);
    const char *name = "secret@00000000000000000001.latent";
    char *theirs = zc_test_join(other, name), *ours = zc_test_join(spill, name);
    REQUIRE(theirs != NULL && ours != NULL);
    char before[8192], after[8192];
    long nbefore = read_all(theirs, before, sizeof before);
    REQUIRE(nbefore > 0);
    int err = zc_os_test_hardlink(theirs, ours);
    if (err != 0) {
        zc_test_rmtree(root);
        free(root), free(other), free(spill), free(theirs), free(ours);
        SKIP("this file system cannot make a hard link for the test");
    }
    /* The film refuses it (before: verify ok), and says why. */
    char *json = NULL;
    REQUIRE_OK(zc_film_describe(spill, "secret", ZC_FILM_VERIFY, &json));
    CHECK(strstr(json, "\"ok\":false") != NULL);
    CHECK(strstr(json, "\"state\":\"broken\"") != NULL);
    CHECK(strstr(json, "hard link") != NULL);
    zc_free(json);
    /* The store does not serve it (before: restored, preview 200): ZC_E_CORRUPT, aside. */
    REQUIRE((s = fixture_store(spill, 0, 0, 0, 0)) != NULL);
    zc_view *v = NULL;
    CHECK(zc_store_get(s, "secret", 1, &v) == ZC_E_CORRUPT && v == NULL);
    CHECK(strstr(zc_last_error(), "is not served") != NULL);
    CHECK(strstr(zc_last_error(), "hard link") != NULL);
    CHECK(strstr(zc_last_error(), "it has 2 names") != NULL);
    CHECK(strstr(zc_last_error(), "a copy, not a link") != NULL);
    CHECK(strstr(zc_last_error(), "renamed to") != NULL);
    CHECK(files_rejected(s) == 1);
    CHECK(!exists_in(spill, name));
    CHECK(zc_test_count(spill, name, ZC_REJECTED_SUFFIX) == 1);
    CHECK(zc_store_get(s, "secret", 0, &v) == ZC_E_NOT_FOUND);
    zc_store_close(s);
    /* Their file: the same bytes, still there. */
    CHECK(read_all(theirs, after, sizeof after) == nbefore && memcmp(before, after, (size_t)nbefore) == 0);
    zc_test_rmtree(root);
    free(root), free(other), free(spill), free(theirs), free(ours);
}

TEST(planted_choices_hard_link_is_ignored_by_the_film_and_renamed_aside_by_a_choice)
{
    PLANT_OR_SKIP(p, plant_hard, "hostile-hard-choices", ".zc-film-film.json");
    zc_store *s = fixture_store(p.spill, 0, 0, 0, 0);
    REQUIRE(s != NULL);
    uint64_t g = 0;
    CHECK_OK(put_one(s, "film", 1.0f, &g));
    CHECK_OK(zc_store_flush(s));
    zc_store_close(s);
    char *json = NULL;
    REQUIRE_OK(zc_film_describe(p.spill, "film", 0, &json));
    CHECK(strstr(json, "\"pins\":[]") != NULL);
    CHECK(strstr(json, "the choices file") != NULL && strstr(json, "hard link") != NULL);
    CHECK(strstr(json, "the next choice of a take renames it aside") != NULL);
    zc_free(json);
    CHECK(zc_film_has_choices(p.spill, "film") == 0);
    /* A choice: refused, the file renamed aside, said; the next one goes through. */
    CHECK(zc_film_choose(p.spill, "film", 1) == ZC_E_CORRUPT);
    CHECK(strstr(zc_last_error(), "was renamed to") != NULL);
    CHECK(strstr(zc_last_error(), ".zc-film-film.json" ZC_REJECTED_SUFFIX) != NULL);
    CHECK(strstr(zc_last_error(), "the choice was not made") != NULL);
    CHECK(exists_in(p.spill, ".zc-film-film.json" ZC_REJECTED_SUFFIX));
    CHECK(victim_unchanged(&p));
    CHECK_OK(zc_film_choose(p.spill, "film", 1));
    CHECK(zc_film_has_choices(p.spill, "film") == 1);
    CHECK(victim_unchanged(&p));
    unplant(&p);
}

/* ---- item 7: bounded restores ---- */

/* A spill file of tag@1 whose header says it holds one float32 tensor of
 * promised bytes (with a recorded digest, so it passes the identity check),
 * followed by 16 bytes of data; *whole is the size it promises in all. */
static int write_promising(const char *dir, const char *tag, uint64_t promised, char **path_out,
                           uint64_t *whole)
{
    char header[512], name[128];
    int n = snprintf(header, sizeof header,
                     "{\"__metadata__\":{\"%s\":\"%s\",\"%s\":\"%s\",\"%s\":\"1\",\"%s%s\":"
                     "\"xxh3:0123456789abcdef\"},\"%s\":{\"dtype\":\"F32\",\"shape\":[%llu],"
                     "\"data_offsets\":[0,%llu]}}",
                     ZC_FILE_META_FORMAT, ZC_FILE_FORMAT_VALUE, ZC_FILE_META_TAG, tag,
                     ZC_FILE_META_GENERATION,
                     ZC_FILE_META_DIGEST_PREFIX, ZC_FILE_LATENT_TENSOR, ZC_FILE_LATENT_TENSOR,
                     (unsigned long long)(promised / 4), (unsigned long long)promised);
    while (n % 8 != 0)
        header[n++] = ' ';
    unsigned char image[8 + sizeof header + 16];
    for (int i = 0; i < 8; i++)
        image[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(image + 8, header, (size_t)n);
    memset(image + 8 + n, 0, 16);
    snprintf(name, sizeof name, "%s@00000000000000000001.latent", tag);
    if (!write_in(dir, name, image, 8 + (size_t)n + 16))
        return 0;
    *path_out = zc_test_join(dir, name);
    *whole = 8 + (uint64_t)n + promised;
    return *path_out != NULL;
}

TEST(restore_refuses_a_sparse_file_over_the_host_budget_before_reading_it)
{
    TEST_FOLDER(dir, "hostile-sparse");
    /* A real file of 1 GiB of tensor (sparse: no disk) under a 1 MiB budget.
     * Before the fix it was read whole into host memory, then failed its
     * digest and was renamed aside. */
    const uint64_t promised = (uint64_t)1 << 30, budget = (uint64_t)1 << 20;
    char *path = NULL;
    uint64_t whole = 0;
    REQUIRE(write_promising(dir, "big", promised, &path, &whole));
    REQUIRE(zc_os_test_truncate(path, whole) == 0);
    zc_store *s = fixture_store(dir, 0, 0, budget, 0);
    REQUIRE(s != NULL);
    for (int attempt = 0; attempt < 2; attempt++) {
        zc_view *v = NULL;
        uint64_t t0 = zc_os_monotonic_ns();
        int rc = zc_store_get(s, "big", 1, &v);
        uint64_t ms = (zc_os_monotonic_ns() - t0) / 1000000u;
        CHECK(rc == ZC_E_BUDGET && v == NULL);
        CHECK(ms < 2000); /* a header parse, not a 1 GiB read */
        const char *msg = zc_last_error();
        CHECK(strstr(msg, "big@00000000000000000001.latent") != NULL);
        CHECK(strstr(msg, "1073741824 bytes of tensors") != NULL);
        CHECK(strstr(msg, "1048576") != NULL);
        CHECK(strstr(msg, "host_budget_bytes") != NULL);
        if (rc != ZC_E_BUDGET)
            fprintf(stderr, "  got %s: %s\n", zc_status_name(rc), msg);
        zc_view_release(v);
    }
    zc_store_stats st;
    CHECK_OK(zc_store_stats_get(s, &st));
    CHECK(st.files_rejected == 0 && st.restores == 0 && st.host_bytes == 0);
    CHECK(exists_in(dir, "big@00000000000000000001.latent")); /* kept: it may be fine */
    zc_store_close(s);
    free(path);
}

TEST(restore_refuses_a_header_promising_more_than_the_file_holds)
{
    TEST_FOLDER(dir, "hostile-promise");
    char *path = NULL;
    uint64_t whole = 0;
    REQUIRE(write_promising(dir, "liar", (uint64_t)4 << 30, &path, &whole));
    zc_store *s = fixture_store(dir, 0, 0, 0, 0); /* no budget: the file's own size bounds it */
    REQUIRE(s != NULL);
    zc_view *v = NULL;
    uint64_t t0 = zc_os_monotonic_ns();
    int rc = zc_store_get(s, "liar", 1, &v);
    CHECK(rc == ZC_E_CORRUPT && v == NULL);
    CHECK((zc_os_monotonic_ns() - t0) / 1000000u < 2000);
    CHECK(strstr(zc_last_error(), "run past the end") != NULL);
    CHECK(strstr(zc_last_error(), "liar@00000000000000000001.latent") != NULL);
    zc_store_stats st;
    CHECK_OK(zc_store_stats_get(s, &st));
    CHECK(st.files_rejected == 1 && st.host_bytes == 0);
    CHECK(exists_in(dir, "liar@00000000000000000001.latent" ZC_REJECTED_SUFFIX));
    zc_store_close(s);
    free(path);
}

TEST(import_refuses_bytes_over_the_host_budget_and_writes_nothing)
{
    char *src_dir = zc_test_tmpdir("hostile-import-src");
    char *dst_dir = zc_test_tmpdir("hostile-import-dst");
    REQUIRE(src_dir != NULL && dst_dir != NULL);
    zc_store *src = fixture_store(src_dir, 0, 0, 0, 0);
    REQUIRE(src != NULL);
    zc_bundle *b = fixture_bundle(16384, 1.0f); /* 64 KiB */
    uint64_t g = 0;
    REQUIRE(b != NULL);
    REQUIRE_OK(zc_store_put(src, "shot", b, 0, &g));
    zc_view *v = NULL;
    REQUIRE_OK(zc_store_get(src, "shot", g, &v));
    size_t need = 0;
    CHECK(zc_view_serialize(v, NULL, 0, &need) == ZC_E_LIMIT);
    void *bytes = malloc(need);
    REQUIRE(bytes != NULL);
    CHECK_OK(zc_view_serialize(v, bytes, need, &need));
    zc_view_release(v);

    zc_store *small = fixture_store(dst_dir, 0, 0, 16384, 0);
    REQUIRE(small != NULL);
    CHECK(zc_store_import(small, "shot", g, bytes, need) == ZC_E_BUDGET);
    CHECK(strstr(zc_last_error(), "65536 bytes of tensors") != NULL);
    CHECK(strstr(zc_last_error(), "host_budget_bytes") != NULL);
    CHECK(zc_test_count(dst_dir, "shot@", "") == 0);
    zc_store_close(small);
    /* A store whose budget holds it takes the same bytes. */
    REQUIRE((small = fixture_store(dst_dir, 0, 0, 1u << 20, 0)) != NULL);
    CHECK_OK(zc_store_import(small, "shot", g, bytes, need));
    zc_store_close(small);
    free(bytes);
    zc_store_close(src);
    zc_test_rmtree(src_dir);
    zc_test_rmtree(dst_dir);
    free(src_dir);
    free(dst_dir);
}
