/* test_generations.c — what a tag holds, without restoring anything (the generation list,
 * the one-tag description), giving memory back (zc_store_trim), and which thread runs the
 * deleters of tensors held by reference. */
#include <stdio.h>
#include <string.h>

#include "fixtures.h"
#include "core/compiler.h"
#include "harness.h"

static zc_store *open_spilling(const char *dir, uint32_t depth, uint32_t disk_keep)
{
    return fixture_store(dir, depth, disk_keep, 0, 0);
}

/* Declare `zc_store *var`, open_spilling(dir, depth, disk_keep), and REQUIRE it. */
#define OPEN_SPILLING(var, dir, depth, disk_keep)                              \
    zc_store *var = open_spilling(dir, depth, disk_keep);                      \
    REQUIRE(var != NULL)

/* Put generations 1..count of "film", spilled, each a bundle of n values i * its number; the
 * first failure's status. */
static int put_film_shots(zc_store *s, int count, int64_t n)
{
    for (int i = 1; i <= count; i++) {
        int rc = zc_store_put(s, "film", fixture_bundle(n, (float)i), ZC_PUT_SPILL, NULL);
        if (rc != ZC_OK)
            return rc;
    }
    return ZC_OK;
}

TEST(generations_merge_memory_and_disk_newest_first)
{
    TEST_FOLDER(dir, "generations");
    /* depth 2 in memory, 5 files on disk: after 6 puts memory holds 5-6, disk 2-6 */
    OPEN_SPILLING(s, dir, 2, 5);
    REQUIRE_OK(put_film_shots(s, 6, 16));
    REQUIRE_OK(zc_store_flush(s));
    uint64_t gens[8];
    size_t n = 99;
    REQUIRE_OK(zc_store_generations(s, "film", gens, 8, &n));
    REQUIRE(n == 5);
    CHECK(gens[0] == 6 && gens[1] == 5 && gens[2] == 4 && gens[3] == 3 && gens[4] == 2);
    /* too small a buffer: the count, and as many as fit */
    CHECK(zc_store_generations(s, "film", gens, 2, &n) == ZC_E_LIMIT && n == 5);
    CHECK(gens[0] == 6 && gens[1] == 5);
    CHECK(strstr(zc_last_error(), "has 5 generations") != NULL);
    CHECK_OK(zc_store_generations(s, "nothing_here", gens, 8, &n));
    CHECK(n == 0);
    CHECK(zc_store_generations(s, "bad tag", gens, 8, &n) == ZC_E_INVALID);
    CHECK(zc_store_generations(s, "film", NULL, 8, &n) == ZC_E_INVALID);
    zc_store_close(s);
    /* after a restart only the files are known */
    s = open_spilling(dir, 2, 5);
    REQUIRE(s != NULL);
    REQUIRE_OK(zc_store_generations(s, "film", gens, 8, &n));
    CHECK(n == 5 && gens[0] == 6 && gens[4] == 2);
    zc_store_stats st;
    zc_store_stats_get(s, &st);
    CHECK(st.restores == 0); /* listing restored nothing */
    zc_store_close(s);
}

TEST(describe_one_tag_restores_nothing)
{
    TEST_FOLDER(dir, "describe-tag");
    OPEN_SPILLING(s, dir, 4, 0);
    REQUIRE_OK(zc_store_put(s, "a", fixture_bundle(16, 1), ZC_PUT_SPILL, NULL));
    REQUIRE_OK(zc_store_put(s, "b", fixture_bundle(16, 2), ZC_PUT_SPILL, NULL));
    REQUIRE_OK(zc_store_flush(s));
    char buf[4096];
    size_t needed = 0;
    REQUIRE_OK(zc_store_describe_tag_json(s, "a", buf, sizeof buf, &needed));
    CHECK(needed == strlen(buf) + 1);
    CHECK(strncmp(buf, "{\"tag\":\"a\"", 10) == 0 && strstr(buf, "\"tag\":\"b\"") == NULL);
    CHECK(strstr(buf, "\"disk_generations\":[1]") != NULL);
    REQUIRE_OK(zc_store_describe_tag_json(s, "nobody", buf, sizeof buf, &needed));
    CHECK(strcmp(buf, "null") == 0);
    CHECK(zc_store_describe_tag_json(s, "a", buf, 8, &needed) == ZC_E_LIMIT && needed > 8);
    zc_store_close(s);
    s = open_spilling(dir, 4, 0);
    REQUIRE(s != NULL);
    REQUIRE_OK(zc_store_describe_tag_json(s, "b", buf, sizeof buf, &needed));
    CHECK(strstr(buf, "\"slots\":[]") != NULL && strstr(buf, "\"disk_generations\":[1]") != NULL);
    zc_store_stats st;
    zc_store_stats_get(s, &st);
    CHECK(st.restores == 0);
    zc_store_close(s);
}

TEST(changes_grow_with_a_newer_generation_or_a_drop_only)
{
    TEST_FOLDER(dir, "changes");
    zc_store *a = open_spilling(dir, 4, 0), *b = open_spilling(dir, 4, 0);
    REQUIRE(a != NULL && b != NULL);
    uint64_t c0 = 99, c1 = 0, c2 = 0, c3 = 0, c4 = 0;
    REQUIRE_OK(zc_store_changes(a, &c0));
    CHECK(c0 == 0);
    REQUIRE_OK(zc_store_put(a, "a", fixture_bundle(16, 1), ZC_PUT_SPILL, NULL));
    REQUIRE_OK(zc_store_changes(a, &c1));
    CHECK(c1 > c0);
    /* reading, listing, flushing and describing change nothing */
    zc_view *v = NULL;
    REQUIRE_OK(zc_store_get(a, "a", 0, &v));
    zc_view_release(v);
    REQUIRE_OK(zc_store_flush(a));
    char buf[4096];
    REQUIRE_OK(zc_store_describe_tag_json(a, "a", buf, sizeof buf, NULL));
    REQUIRE_OK(zc_store_changes(a, &c2));
    CHECK(c2 == c1);
    /* another store's new shot, once a look at the folder finds it */
    REQUIRE_OK(zc_store_put(b, "a", fixture_bundle(16, 2), ZC_PUT_SPILL, NULL));
    REQUIRE_OK(zc_store_flush(b));
    REQUIRE_OK(zc_store_describe_tag_json(a, "a", buf, sizeof buf, NULL));
    REQUIRE_OK(zc_store_changes(a, &c3));
    CHECK(c3 > c2);
    REQUIRE_OK(zc_store_drop(a, "a", 0));
    REQUIRE_OK(zc_store_changes(a, &c4));
    CHECK(c4 > c3);
    CHECK(zc_store_changes(NULL, &c4) == ZC_E_INVALID && zc_store_changes(a, NULL) == ZC_E_INVALID);
    zc_store_close(b);
    zc_store_close(a);
}

TEST(release_frees_the_pool_then_spilled_slots_and_loses_nothing)
{
    TEST_FOLDER(dir, "release");
    OPEN_SPILLING(s, dir, 4, 0);
    REQUIRE_OK(put_film_shots(s, 3, 1024));
    REQUIRE_OK(zc_store_put(s, "memory_only", fixture_bundle(1024, 9.0f), 0, NULL));
    REQUIRE_OK(zc_store_flush(s));
    zc_view *held;
    REQUIRE_OK(zc_store_get(s, "film", 1, &held)); /* a reader: generation 1 must stay */
    uint64_t freed = 0;
    CHECK(zc_store_trim(s, 7, 1, &freed) == ZC_E_INVALID);
    REQUIRE_OK(zc_store_trim(s, ZC_TIER_HOST, UINT64_MAX, &freed));
    zc_store_stats st;
    zc_store_stats_get(s, &st);
    /* generations 2 and 3 left (spilled, unread); 1 is held, memory_only has no file */
    CHECK(freed == 2 * 4096u && st.slots == 2);
    zc_view_release(held);
    zc_view *v;
    REQUIRE_OK(zc_store_get(s, "film", 3, &v)); /* restored from its file, verified */
    zc_tensor_info ti;
    REQUIRE_OK(zc_view_tensor(v, 0, &ti));
    CHECK(((const float *)ti.data)[5] == 5.0f * 3.0f);
    zc_view_release(v);
    zc_store_stats_get(s, &st);
    CHECK(st.restores == 1);
    REQUIRE_OK(zc_store_trim(s, ZC_TIER_DEVICE, 1 << 20, &freed));
    CHECK(freed == 0); /* nothing on the device */
    zc_store_close(s);
}

/* Set on the test's own thread only: a deleter that finds it unset ran on another (the writer). */
static ZC_THREAD_LOCAL int on_test_thread;
static int deletes_elsewhere;

static void deleter_on_which_thread(zc_dl_managed_versioned *m)
{
    if (!on_test_thread)
        deletes_elsewhere++;
    fixture_managed_delete(m);
}

TEST(reference_deleters_never_run_on_the_writer_thread)
{
    on_test_thread = 1;
    deletes_elsewhere = 0;
    char *dir = zc_test_tmpdir("deferred");
    REQUIRE(dir != NULL);
    OPEN_SPILLING(s, dir, 1, 2); /* depth 1: each put pushes the previous slot out */
    static float device_bytes[64 * 1024]; /* stands in for device memory held by reference */
    float host[64 * 1024];
    for (int i = 0; i < 64 * 1024; i++)
        host[i] = (float)i;
    int64_t shape[1] = {64 * 1024};
    fixture_tensor copy;
    fixture_f32(&copy, host, 1, shape);
    int deleted = 0;
    const int puts = 24;
    for (int i = 0; i < puts; i++) {
        zc_dl_managed_versioned *m = fixture_managed_new(device_bytes, 2 /* kDLCUDA */, 1, shape, &deleted);
        m->deleter = deleter_on_which_thread;
        zc_bundle *b;
        REQUIRE_OK(zc_bundle_create(&b));
        REQUIRE_OK(zc_bundle_add_reference(b, "latent_tensor", m, 1, &copy.dl));
        REQUIRE_OK(zc_store_put(s, "film", b, ZC_PUT_SPILL, NULL));
    }
    REQUIRE_OK(zc_store_flush(s)); /* waits for the writer and runs what it deferred */
    CHECK(deleted == puts - 1);    /* all but the one still in the ring */
    CHECK(deletes_elsewhere == 0);
    zc_store_close(s);
    CHECK(deleted == puts && deletes_elsewhere == 0);
    zc_test_rmtree(dir);
    free(dir);
}
