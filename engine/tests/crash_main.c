/*
 * crash_main.c — the crash test in C, so that it runs wherever the engine
 * runs (Windows under wine included; tests/python/test_crash.py is its
 * Linux twin).  crash_child spills generation after generation; this parent
 * waits until the child has written one generation of its own, lets it go
 * on for a random 0-80 ms and then ends it as a crash would (SIGKILL, or
 * TerminateProcess), ATTEMPTS times over one spill directory.  After every
 * kill each file under a final name must be whole: it opens, every value of
 * its tensor equals its "fill" metadata and its digest verifies; a store
 * opened on the directory restores the newest generation, generations never
 * go backwards, and no temporary or rejected file is left.
 *   crash_test CRASH_CHILD ATTEMPTS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "platform/platform_test.h"
#include "zc.h"

#define FLOATS (1024 * 1024) /* crash_child's 4 MB */
#define WAIT_MS 30000

static const char *child_path;
static int attempts;

/* The highest generation with a final file in dir (0 if none). */
static uint64_t newest_on_disk(const char *dir)
{
    zc_os_dir *d = NULL;
    const char *name;
    uint64_t best = 0;
    if (zc_os_dir_open(dir, &d) != 0)
        return 0;
    while (zc_os_dir_next(d, &name) == 0 && name != NULL) {
        const char *at = strchr(name, '@');
        size_t len = strlen(name);
        if (name[0] == '.' || at == NULL || len < 7 || strcmp(name + len - 7, ".latent") != 0)
            continue;
        uint64_t g = strtoull(at + 1, NULL, 10);
        if (g > best)
            best = g;
    }
    zc_os_dir_close(d);
    return best;
}

/* 1 if every one of n floats equals want. */
static int all_equal(const float *v, size_t n, float want)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] != want)
            return 0;
    return 1;
}

/* Every final file of dir opens, reads back whole and matches its fill. */
static int check_final_files(const char *dir, float *buf)
{
    zc_os_dir *d = NULL;
    const char *name;
    int bad = 0;
    if (zc_os_dir_open(dir, &d) != 0)
        return 1;
    while (zc_os_dir_next(d, &name) == 0 && name != NULL) {
        size_t len = strlen(name);
        if (name[0] == '.' || len < 7 || strcmp(name + len - 7, ".latent") != 0)
            continue;
        char *path = zc_test_join(dir, name);
        zc_file *f = NULL;
        uint32_t idx = 0;
        zc_file_tensor t;
        const char *fill;
        int ok = path && zc_file_open(path, &f) == ZC_OK &&
                 zc_file_find(f, "latent_tensor", &idx) == ZC_OK &&
                 zc_file_tensor_at(f, idx, &t) == ZC_OK && t.nbytes == FLOATS * sizeof(float) &&
                 zc_file_read(f, idx, buf, FLOATS * sizeof(float), NULL) == ZC_OK &&
                 (fill = zc_file_meta(f, "fill")) != NULL &&
                 all_equal(buf, FLOATS, (float)strtod(fill, NULL));
        if (!ok) {
            fprintf(stderr, "  torn or unreadable: %s (%s)\n", name, zc_last_error());
            bad++;
        }
        zc_file_close(f);
        free(path);
    }
    zc_os_dir_close(d);
    return bad;
}

/* Start the child, wait for a generation newer than before, let it write
 * on for a moment, end it.  @return 0, or -1 (reported). */
static int run_and_kill(const char *spill, unsigned delay_ms)
{
    const char *argv[] = {child_path, spill, "4", NULL};
    uint64_t before = newest_on_disk(spill);
    zc_os_process child;
    int code = 0, err = zc_os_test_spawn(argv, 1, &child);
    if (err != 0) {
        fprintf(stderr, "  cannot start %s: %s\n", child_path, ZC_OS_WHY(err));
        return -1;
    }
    uint64_t start = zc_os_monotonic_ns();
    while (newest_on_disk(spill) <= before &&
           zc_os_monotonic_ns() - start < (uint64_t)WAIT_MS * 1000000u)
        zc_os_sleep_ms(2);
    zc_os_sleep_ms(delay_ms);
    zc_os_test_kill(&child);
    if ((err = zc_os_test_wait(&child, &code)) != 0 || code != -1) {
        fprintf(stderr, "  the child was not killed (it exited with %d%s%s)\n", code,
                err ? ": " : "", err ? ZC_OS_WHY(err) : "");
        return -1;
    }
    return 0;
}

TEST(killed_during_spill_never_leaves_a_torn_file)
{
    TEST_FOLDER(dir, "crash");
    char *spill = zc_test_join(dir, "spill");
    float *buf = malloc(FLOATS * sizeof(float));
    REQUIRE(spill != NULL && buf != NULL);
    unsigned seed = 2026;
    uint64_t last = 0;
    int restores = 0;
    for (int i = 0; i < attempts; i++) {
        seed = seed * 1103515245u + 12345u;
        if (run_and_kill(spill, (seed >> 8) % 81) != 0) {
            CHECK(!"the child ran and was killed");
            break;
        }
        CHECK(check_final_files(spill, buf) == 0);
        zc_store *s = NULL;
        REQUIRE_OK(fixture_store_open(spill, 0, 0, 0, 0, &s));
        zc_view *v = NULL;
        int rc = zc_store_get(s, "crash", 0, &v);
        if (rc != ZC_OK)
            fprintf(stderr, "  restore failed: %s\n", zc_last_error());
        CHECK(rc == ZC_OK);
        if (rc == ZC_OK) {
            zc_tensor_info ti;
            const char *fill = zc_view_meta(v, "fill");
            CHECK_OK(zc_view_verify(v));
            CHECK(zc_view_tensor(v, 0, &ti) == ZC_OK && fill != NULL &&
                  ti.nbytes == FLOATS * sizeof(float) &&
                  all_equal(ti.data, FLOATS, (float)strtod(fill, NULL)));
            CHECK(zc_view_generation(v) >= last);
            last = zc_view_generation(v);
            restores++;
            zc_view_release(v);
        }
        zc_store_close(s);
        /* Opening the store removed what the kill left half-written. */
        CHECK(zc_test_count(spill, ".zc-tmp-", "") == 0);
        CHECK(zc_test_count(spill, "", ".rejected") == 0);
    }
    CHECK(restores == attempts);
    printf("  %d kills, %d restores, newest generation %llu\n", attempts, restores,
           (unsigned long long)last);
    free(buf);
    free(spill);
}

int main(int argc, char **argv)
{
    if (argc != 3 || (attempts = atoi(argv[2])) <= 0) {
        fprintf(stderr, "usage: crash_test CRASH_CHILD ATTEMPTS\n");
        return 2;
    }
    child_path = argv[1];
    return zc_test_run_all(NULL);
}
