/*
 * test_spill.c — the disk tier through the public API, on every platform:
 * spill and restore in a new store, pruning to disk_keep, a corrupt file
 * renamed aside, crash leftovers removed at open (and foreign files kept),
 * a drop that takes the files along.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "core/internal.h"
#include "platform/platform_test.h"

TEST(spill_restores_every_generation_in_a_new_store)
{
    TEST_FOLDER(dir, "spill-restore");
    zc_store *s = fixture_store(dir, 0, 3, 0, 0);
    REQUIRE(s != NULL);
    uint64_t gen[3];
    for (int i = 0; i < 3; i++)
        CHECK_OK(fixture_put_spilled(s, "film", 4096, (float)(i + 1), &gen[i]));
    CHECK_OK(zc_store_flush(s));
    zc_store_close(s);
    CHECK(zc_test_count(dir, "film@", ".latent") == 3);

    REQUIRE((s = fixture_store(dir, 0, 3, 0, 0)) != NULL);
    for (int i = 0; i < 3; i++) {
        zc_view *v = NULL;
        zc_tensor_info ti;
        REQUIRE_OK(zc_store_get(s, "film", gen[i], &v));
        CHECK_OK(zc_view_verify(v));
        CHECK(zc_view_tensor(v, 0, &ti) == ZC_OK && ti.nbytes == 4096 * sizeof(float));
        CHECK(((const float *)ti.data)[4095] == 4095.0f * (float)(i + 1));
        zc_view_release(v);
    }
    /* The generation counter resumes after the newest file. */
    uint64_t next = 0;
    CHECK_OK(fixture_put_spilled(s, "film", 4096, 9.0f, &next));
    CHECK(next == gen[2] + 1);
    zc_store_stats st;
    CHECK_OK(zc_store_stats_get(s, &st));
    CHECK(st.restores == 3 && st.files_rejected == 0);
    zc_store_close(s);
}

TEST(spill_prunes_to_disk_keep_and_drop_removes_the_files)
{
    TEST_FOLDER(dir, "spill-prune");
    zc_store *s = fixture_store(dir, 0, 2, 0, 0);
    REQUIRE(s != NULL);
    for (int i = 0; i < 5; i++)
        CHECK_OK(fixture_put_spilled(s, "shot", 4096, (float)i, NULL));
    CHECK_OK(fixture_put_spilled(s, "other", 4096, 1.0f, NULL));
    CHECK_OK(zc_store_flush(s));
    CHECK(zc_test_count(dir, "shot@", ".latent") == 2);
    /* The newest two stay (generations 4 and 5); 1 to 3 were pruned. */
    CHECK(zc_test_count(dir, "shot@00000000000000000004.latent", "") == 1);
    CHECK(zc_test_count(dir, "shot@00000000000000000005.latent", "") == 1);
    CHECK_OK(zc_store_drop(s, "shot", ZC_DROP_DISK));
    CHECK_OK(zc_store_flush(s));
    CHECK(zc_test_count(dir, "shot@", "") == 0);
    CHECK(zc_test_count(dir, "other@", ".latent") == 1);
    zc_store_close(s);
}

TEST(spill_corrupt_file_is_renamed_aside_never_deleted)
{
    TEST_FOLDER(dir, "spill-corrupt");
    zc_store *s = fixture_store(dir, 0, 0, 0, 0);
    REQUIRE(s != NULL);
    CHECK_OK(fixture_put_spilled(s, "bad", 4096, 1.0f, NULL));
    CHECK_OK(zc_store_flush(s));
    zc_store_close(s);
    char path[4096];
    snprintf(path, sizeof path, "%s/bad@%020d.latent", dir, 1);
    FILE *fp = fopen(path, "r+b"); /* flip a byte near the end, inside the tensor */
    REQUIRE(fp != NULL);
    CHECK(fseek(fp, -16, SEEK_END) == 0);
    int ch = fgetc(fp);
    CHECK(fseek(fp, -16, SEEK_END) == 0 && fputc(ch ^ 0x40, fp) != EOF);
    fclose(fp);

    REQUIRE((s = fixture_store(dir, 0, 0, 0, 0)) != NULL);
    zc_view *v = NULL;
    CHECK(zc_store_get(s, "bad", 0, &v) == ZC_E_CORRUPT && v == NULL);
    CHECK(strstr(zc_last_error(), ".rejected") != NULL);
    zc_store_stats st;
    CHECK_OK(zc_store_stats_get(s, &st));
    CHECK(st.files_rejected == 1);
    CHECK(zc_test_count(dir, "bad@", ".latent.rejected") == 1);
    CHECK(zc_test_count(dir, "bad@", ".latent") == 0);
    CHECK(zc_store_get(s, "bad", 0, &v) == ZC_E_NOT_FOUND); /* forgotten, not retried */
    zc_store_close(s);
}

TEST(spill_open_removes_crash_leftovers_and_keeps_foreign_files)
{
    TEST_FOLDER(dir, "spill-open");
    const char *names[] = {".zc-tmp-123-0-film@00000000000000000001.latent", "notes.txt",
                           "film@1.latent" /* not 20 digits: not ours */};
    for (int i = 0; i < 3; i++) {
        char *p = zc_test_join(dir, names[i]);
        FILE *fp = p ? fopen(p, "wb") : NULL;
        CHECK(fp != NULL && fputs("x", fp) >= 0);
        if (fp)
            fclose(fp);
        free(p);
    }
    zc_store *s = fixture_store(dir, 0, 0, 0, 0);
    REQUIRE(s != NULL);
    CHECK(zc_test_count(dir, ".zc-tmp-", "") == 0);
    CHECK(zc_test_count(dir, "notes.txt", "") == 1);
    CHECK(zc_test_count(dir, "film@1.latent", "") == 1);
    zc_view *v = NULL;
    CHECK(zc_store_get(s, "film", 0, &v) == ZC_E_NOT_FOUND);
    zc_store_close(s);
}

TEST(spill_waits_out_its_delay_unless_flushed_or_closed)
{
    TEST_FOLDER(dir, "spill-delay");
    zc_store_config c;
    zc_store_config_init(&c);
    CHECK(c.spill_delay_ms == ZC_DEFAULT_SPILL_DELAY_MS);
    c.spill_dir = dir;
    c.spill_delay_ms = ZC_MAX_SPILL_DELAY_MS; /* a minute: nothing is written on its own here */
    zc_store *s = NULL;
    REQUIRE_OK(zc_store_open(&c, &s));
    uint64_t gen = 0;
    CHECK_OK(fixture_put_spilled(s, "late", 4096, 1.0f, &gen));
    zc_os_sleep_ms(20);
    zc_store_stats st;
    CHECK_OK(zc_store_stats_get(s, &st));
    CHECK(st.pending_spills == 1 && st.spills_written == 0);
    CHECK(zc_test_count(dir, "late@", ".latent") == 0);
    uint64_t start = zc_os_monotonic_ns();
    CHECK_OK(zc_store_flush(s)); /* writes at once */
    CHECK(zc_os_monotonic_ns() - start < 30000000000u);
    CHECK(zc_test_count(dir, "late@", ".latent") == 1);
    CHECK_OK(fixture_put_spilled(s, "late", 4096, 2.0f, &gen));
    zc_store_close(s); /* so does closing */
    CHECK(zc_test_count(dir, "late@", ".latent") == 2);

    c.spill_delay_ms = ZC_MAX_SPILL_DELAY_MS + 1;
    s = NULL;
    CHECK(zc_store_open(&c, &s) == ZC_E_INVALID && s == NULL);
    CHECK(strstr(zc_last_error(), "spill_delay_ms 60001") != NULL);
}

TEST(spill_dir_that_is_a_file_is_refused_with_its_name)
{
    TEST_FOLDER(dir, "spill-file");
    char *p = zc_test_join(dir, "plain");
    FILE *fp = p ? fopen(p, "wb") : NULL;
    REQUIRE(fp != NULL);
    fclose(fp);
    zc_store_config c;
    zc_store_config_init(&c);
    c.spill_dir = p;
    zc_store *s = NULL;
    CHECK(zc_store_open(&c, &s) == ZC_E_IO && s == NULL);
    CHECK(strstr(zc_last_error(), "plain") != NULL);
    char *under = zc_test_join(p, "child");
    c.spill_dir = under;
    CHECK(zc_store_open(&c, &s) == ZC_E_IO && s == NULL);
    CHECK(strstr(zc_last_error(), "plain") != NULL);
    free(under);
    free(p);
}
