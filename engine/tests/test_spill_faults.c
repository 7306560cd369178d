/*
 * test_spill_faults.c — spills that really fail, through the public API: a
 * shot whose spill failed is pinned in memory (no ring depth, budget or
 * release evicts it), says so in the stats and the description, and is
 * written by the next flush once the fault is gone; a spill folder removed
 * while the store runs is re-created.  The write failure is real: the
 * process's file-size limit (POSIX RLIMIT_FSIZE) makes the writer thread's
 * write fail with EFBIG; Windows has no such limit and skips those tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "core/internal.h"
#include "platform/platform_test.h"

#define SHOT_VALUES 4096 /* 16 KiB a shot: far above the 1 KiB limit below */
#define NO_LIMIT "this OS has no per-process file size limit to make a spill fail"

static zc_store *open_store(const char *spill, uint32_t depth, uint32_t disk_keep,
                            uint64_t host_budget)
{
    return fixture_store(spill, depth, disk_keep, host_budget, 0);
}

static int put_spilled(zc_store *s, const char *tag, float scale, uint64_t *gen)
{
    return fixture_put_spilled(s, tag, SHOT_VALUES, scale, gen);
}

/* The shot tag@gen is in memory with the values scale made. */
static int holds(zc_store *s, const char *tag, uint64_t gen, float scale)
{
    zc_view *v = NULL;
    zc_tensor_info ti;
    if (zc_store_get(s, tag, gen, &v) != ZC_OK)
        return 0;
    int ok = zc_view_tensor(v, 0, &ti) == ZC_OK &&
             ((const float *)ti.data)[SHOT_VALUES - 1] == (float)(SHOT_VALUES - 1) * scale;
    zc_view_release(v);
    return ok;
}

static char *describe(zc_store *s)
{
    size_t need = 0;
    zc_store_describe_json(s, NULL, 0, &need);
    char *buf = malloc(need);
    if (buf && zc_store_describe_json(s, buf, need, NULL) != ZC_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

static int count_in(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* Limit this process's file sizes so that every spill fails; 0, or 1 when
 * the OS has no such limit (the caller skips). */
static int make_spills_fail(uint64_t *old)
{
    int err = zc_os_test_limit_file_size(1024, old);
    if (zc_os_error_is(err, ZC_OS_UNSUPPORTED))
        return 1;
    return err == 0 ? 0 : -1;
}

TEST(failed_spills_pin_their_shots_and_the_next_flush_writes_them)
{
    uint64_t old = 0;
    int limited = make_spills_fail(&old); /* before anything is made: a skip leaves nothing */
    if (limited == 1)
        SKIP(NO_LIMIT);
    REQUIRE(limited == 0);
    char *dir = zc_test_tmpdir("spill-fault-pin");
    REQUIRE(dir != NULL);
    zc_store *s = open_store(dir, 2, 8, 0); /* its bookkeeping files are far below the limit */
    REQUIRE(s != NULL);
    uint64_t gen[5];
    for (int i = 0; i < 5; i++)
        CHECK_OK(put_spilled(s, "film", (float)(i + 1), &gen[i]));
    int flushed = zc_store_flush(s);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", zc_last_error());
    zc_store_stats st;
    CHECK_OK(zc_store_stats_get(s, &st));
    char *json = describe(s);
    /* A second flush while the fault lasts fails again: retried, not forgotten. */
    int again = zc_store_flush(s);
    REQUIRE(zc_os_test_restore_file_size(old) == 0);

    CHECK(flushed == ZC_E_IO);
    CHECK(strstr(msg, "tag \"film\" generation 1") != NULL);
    CHECK(again == ZC_E_IO);
    CHECK(st.memory_only == 5);
    CHECK(st.slots == 5); /* the ring (depth 2) grew: none of the five exists elsewhere */
    CHECK(zc_test_count(dir, "film@", ".latent") == 0);
    for (int i = 0; i < 5; i++)
        CHECK(holds(s, "film", gen[i], (float)(i + 1)));
    REQUIRE(json != NULL);
    CHECK(count_in(json, "\"spill\":\"failed\"") == 5);
    CHECK(strstr(json, "\"spill_problem\":\"the spill of tag \\\"film\\\" generation") != NULL);
    CHECK(strstr(json, "\"memory_only\":5") != NULL);
    free(json);

    /* The fault is gone: the next flush writes all five, and the ring comes back to its depth. */
    CHECK_OK(zc_store_flush(s));
    CHECK_OK(zc_store_stats_get(s, &st));
    CHECK(st.memory_only == 0);
    CHECK(st.slots == 2);
    CHECK(zc_test_count(dir, "film@", ".latent") == 5);
    REQUIRE((json = describe(s)) != NULL);
    CHECK(strstr(json, "\"spill_problem\":null") != NULL);
    CHECK(count_in(json, "\"spill\":\"written\"") == 2);
    free(json);
    zc_store_close(s);

    REQUIRE((s = open_store(dir, 2, 8, 0)) != NULL); /* a restart finds every shot */
    for (int i = 0; i < 5; i++)
        CHECK(holds(s, "film", gen[i], (float)(i + 1)));
    zc_store_close(s);
    zc_test_rmtree(dir);
    free(dir);
}

TEST(a_budget_never_evicts_a_shot_that_is_not_on_disk)
{
    uint64_t old = 0, g = 0;
    int limited = make_spills_fail(&old);
    if (limited == 1)
        SKIP(NO_LIMIT);
    REQUIRE(limited == 0);
    char *dir = zc_test_tmpdir("spill-fault-budget");
    REQUIRE(dir != NULL);
    uint64_t shot = SHOT_VALUES * sizeof(float);
    zc_store *s = open_store(dir, 8, 8, 3 * shot); /* room for three shots */
    REQUIRE(s != NULL);
    for (int i = 0; i < 3; i++)
        CHECK_OK(put_spilled(s, "film", (float)(i + 1), &g));
    CHECK(zc_store_flush(s) == ZC_E_IO);
    int rc = put_spilled(s, "film", 4.0f, &g); /* needs an eviction; every candidate is pinned */
    char msg[1600];
    snprintf(msg, sizeof msg, "%s", zc_last_error());
    uint64_t released = 0;
    CHECK_OK(zc_store_trim(s, ZC_TIER_HOST, 3 * shot, &released));
    REQUIRE(zc_os_test_restore_file_size(old) == 0);
    CHECK(rc == ZC_E_BUDGET);
    CHECK(strstr(msg, "49152 bytes are shots not yet on disk") != NULL);
    CHECK(strstr(msg, "the spill of tag \"film\"") != NULL);
    for (int i = 0; i < 3; i++) /* release freed only what is on disk: nothing */
        CHECK(holds(s, "film", (uint64_t)i + 1, (float)(i + 1)));

    /* Once they are written, the same put evicts the least recently used one. */
    CHECK_OK(zc_store_flush(s));
    CHECK_OK(put_spilled(s, "film", 4.0f, &g));
    zc_store_stats st;
    CHECK_OK(zc_store_stats_get(s, &st));
    CHECK(st.evictions >= 1 && st.memory_only == 0 && st.slots == 3);
    CHECK(holds(s, "film", 1, 1.0f)); /* evicted from memory, restored from its file */
    zc_store_close(s);
    zc_test_rmtree(dir);
    free(dir);
}

TEST(a_budget_waits_for_pending_spills_instead_of_failing)
{
    TEST_FOLDER(dir, "spill-fault-wait");
    uint64_t shot = SHOT_VALUES * sizeof(float);
    zc_store_config c;
    zc_store_config_init(&c);
    c.spill_dir = dir;
    c.host_budget_bytes = 2 * shot;
    c.spill_delay_ms = 60000; /* nothing is written unless a put waits for it */
    zc_store *s = NULL;
    REQUIRE_OK(zc_store_open(&c, &s));
    uint64_t g = 0;
    for (int i = 0; i < 3; i++) /* the third waits for the first two to reach the disk */
        CHECK_OK(put_spilled(s, "film", (float)(i + 1), &g));
    CHECK(g == 3);
    CHECK(zc_test_count(dir, "film@", ".latent") == 2);
    CHECK(holds(s, "film", 1, 1.0f)); /* evicted, restored from its file */
    zc_store_close(s);
}

/* Remove every file of dir, then dir itself (the user's rm -rf). */
static void remove_folder(const char *dir)
{
    zc_os_dir *d = NULL;
    const char *name;
    char path[4096];
    if (zc_os_dir_open(dir, &d) != 0)
        return;
    while (zc_os_dir_next(d, &name) == 0 && name != NULL) {
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        zc_os_remove(path);
    }
    zc_os_dir_close(d);
    zc_os_test_rmdir(dir);
}

TEST(a_spill_folder_removed_while_the_store_runs_is_created_again)
{
    TEST_FOLDER(dir, "spill-fault-gone");
    char *spill = zc_test_join(dir, "spill");
    REQUIRE(spill != NULL);
    zc_store *s = open_store(spill, 4, 8, 0);
    REQUIRE(s != NULL);
    uint64_t g1 = 0, g2 = 0;
    CHECK_OK(put_spilled(s, "film", 1.0f, &g1));
    CHECK_OK(zc_store_flush(s));
    remove_folder(spill);
    zc_os_path_kind kind;
    if (zc_os_stat(spill, &kind, NULL) == 0) { /* Windows: the open store's owner file pins it */
        zc_store_close(s);
        free(spill);
        SKIP("the spill folder cannot be removed while a store has it open (Windows keeps its "
             "owner file open, and an open file's folder cannot be removed)");
    }
    CHECK_OK(put_spilled(s, "film", 2.0f, &g2));
    CHECK_OK(zc_store_flush(s));
    CHECK(g2 > g1);
    CHECK(zc_os_stat(spill, &kind, NULL) == 0 && kind == ZC_OS_PATH_DIR);
    CHECK(zc_test_count(spill, "film@", ".latent") == 1);
    zc_store_stats st;
    CHECK_OK(zc_store_stats_get(s, &st));
    CHECK(st.memory_only == 0 && st.spill_folder_recreated == 1);
    zc_store_close(s);

    REQUIRE((s = open_store(spill, 4, 8, 0)) != NULL); /* the newer shot survives a restart */
    CHECK(holds(s, "film", g2, 2.0f));
    zc_store_close(s);
    free(spill);
}

TEST(flush_tag_reports_its_own_tag_never_another_ones_failure)
{
    uint64_t old = 0;
    TEST_FOLDER(dir, "spill-fault-own-tag");
    zc_store *s = open_store(dir, 4, 8, 0);
    REQUIRE(s != NULL);
    uint64_t intact = 0, broken = 0, small = 0;
    CHECK_OK(fixture_put_spilled(s, "intact", 64, 1.0f, &intact));
    CHECK_OK(zc_store_flush(s));
    int err = zc_os_test_limit_file_size(8192, &old); /* the 16 KiB shot fails, 256 bytes pass */
    if (zc_os_error_is(err, ZC_OS_UNSUPPORTED)) {
        zc_store_close(s);
        SKIP(NO_LIMIT);
    }
    REQUIRE(err == 0);
    CHECK_OK(fixture_put_spilled(s, "broken", SHOT_VALUES, 2.0f, &broken));
    CHECK_OK(fixture_put_spilled(s, "intact", 64, 3.0f, &small));
    size_t nr = 9, nl = 9;
    int own = zc_store_flush_tag(s, "intact", NULL, 0, &nr, NULL, 0, &nl);
    char own_msg[1024];
    snprintf(own_msg, sizeof own_msg, "%s", zc_last_error());
    int theirs = zc_store_flush_tag(s, "broken", NULL, 0, NULL, NULL, 0, NULL);
    char theirs_msg[1024];
    snprintf(theirs_msg, sizeof theirs_msg, "%s", zc_last_error());
    int whole = zc_store_flush(s); /* the store's first error stays for the whole flush */
    REQUIRE(zc_os_test_restore_file_size(old) == 0);

    CHECK(own == ZC_OK);
    CHECK(nr == 0 && nl == 0);
    CHECK(zc_test_count(dir, "intact@", ".latent") == 2); /* its new shot was written meanwhile */
    CHECK(theirs == ZC_E_IO);
    CHECK(strstr(theirs_msg, "the spill of tag \"broken\" generation") != NULL);
    CHECK(strstr(own_msg, "broken") == NULL);
    CHECK(whole == ZC_E_IO);
    char *json = describe(s); /* the failed shot carries its own cause */
    REQUIRE(json != NULL);
    CHECK(count_in(json, "\"spill_problem\":\"the spill of tag \\\"broken\\\" generation") == 2);
    free(json);
    CHECK_OK(zc_store_flush_tag(s, "broken", NULL, 0, NULL, NULL, 0, NULL)); /* the fault is gone */
    CHECK(zc_test_count(dir, "broken@", ".latent") == 1);
    CHECK(zc_store_flush_tag(NULL, "intact", NULL, 0, NULL, NULL, 0, NULL) == ZC_E_INVALID);
    CHECK(zc_store_flush_tag(s, "intact", NULL, 3, NULL, NULL, 0, NULL) == ZC_E_INVALID);
    zc_store_close(s);
}

static char *shot_path(const char *dir, const char *tag, uint64_t gen)
{
    char name[128];
    snprintf(name, sizeof name, "%s@%020llu.latent", tag, (unsigned long long)gen);
    return zc_test_join(dir, name);
}

TEST(flush_tag_writes_again_a_vanished_or_changed_file_and_names_a_lost_one)
{
    char *dir = zc_test_tmpdir("spill-vanished");
    REQUIRE(dir != NULL);
    zc_store *s = open_store(dir, 2, 8, 0); /* the ring keeps the newest two */
    REQUIRE(s != NULL);
    uint64_t g[4];
    for (int i = 0; i < 4; i++)
        CHECK_OK(put_spilled(s, "film", (float)(i + 1), &g[i]));
    CHECK_OK(zc_store_flush(s));
    char *gone_old = shot_path(dir, "film", g[0]);   /* out of memory: lost */
    char *gone_new = shot_path(dir, "film", g[3]);   /* in memory: written again */
    char *changed = shot_path(dir, "film", g[2]);    /* in memory, cut short: aside, written again */
    REQUIRE(gone_old && gone_new && changed);
    CHECK(remove(gone_old) == 0);
    CHECK(remove(gone_new) == 0);
    FILE *f = fopen(changed, "wb");
    REQUIRE(f != NULL);
    fputs("short", f);
    fclose(f);

    uint64_t rewritten[4] = {0}, lost[4] = {0};
    size_t nr = 0, nl = 0;
    CHECK_OK(zc_store_flush_tag(s, "film", rewritten, 4, &nr, lost, 4, &nl));
    CHECK(nr == 2 && rewritten[0] == g[2] && rewritten[1] == g[3]);
    CHECK(nl == 1 && lost[0] == g[0]);
    CHECK(zc_test_count(dir, "film@", ".latent") == 3);
    CHECK(zc_test_count(dir, "film@", ".rejected") == 1);
    zc_os_path_kind kind;
    CHECK(zc_os_stat(gone_new, &kind, NULL) == 0);
    uint64_t gens[8];
    size_t n = 0;
    CHECK_OK(zc_store_generations(s, "film", gens, 8, &n));
    CHECK(n == 3 && gens[2] == g[1]); /* the lost one is no longer named */
    /* Nothing vanished since: a second look finds nothing to do. */
    CHECK_OK(zc_store_flush_tag(s, "film", rewritten, 4, &nr, lost, 4, &nl));
    CHECK(nr == 0 && nl == 0);
    zc_store_close(s);

    REQUIRE((s = open_store(dir, 2, 8, 0)) != NULL); /* a restart finds the rewritten shots */
    CHECK(holds(s, "film", g[3], 4.0f));
    CHECK(holds(s, "film", g[2], 3.0f));
    zc_store_close(s);
    zc_test_rmtree(dir);
    free(gone_old);
    free(gone_new);
    free(changed);
    free(dir);
}
