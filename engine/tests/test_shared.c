/*
 * test_shared.c — one spill folder shared by several stores, through the
 * public API and on every platform (two stores of one process take the same
 * paths through the folder as two processes; shared_main.c does it with
 * real processes): generations unique across stores, never reused, never
 * written over; what one store spilled seen by the other; a caller's own
 * generation; shots in and out as bytes; temporary files of live and dead
 * owners; counters lost to a power cut; a file system without locks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "platform/platform_test.h"
#include "store/store_internal.h"

static zc_store *open_at(const char *dir, uint32_t depth, uint32_t disk_keep)
{
    zc_store *s = fixture_store(dir, depth, disk_keep, 0, 0);
    if (s == NULL)
        fprintf(stderr, "  open: %s\n", zc_last_error());
    return s;
}

/* Declare `zc_store *var`, open_at(dir, depth, disk_keep), and REQUIRE it. */
#define OPEN_AT(var, dir, depth, disk_keep)                                    \
    zc_store *var = open_at(dir, depth, disk_keep);                            \
    REQUIRE(var != NULL)

/* A shot of 64 floats, every one equal to value, with "value" metadata. */
static zc_bundle *shot(float value)
{
    float data[64];
    for (int i = 0; i < 64; i++)
        data[i] = value;
    fixture_tensor ft;
    int64_t shape[1] = {64};
    fixture_f32(&ft, data, 1, shape);
    char text[32];
    snprintf(text, sizeof text, "%g", (double)value);
    zc_bundle *b = NULL;
    if (zc_bundle_create(&b) != ZC_OK || zc_bundle_add_copy(b, "latent_tensor", &ft.dl) != ZC_OK ||
        zc_bundle_set_meta(b, "value", text) != ZC_OK) {
        zc_bundle_free(b);
        return NULL;
    }
    return b;
}

static int put_value(zc_store *s, const char *tag, float value, uint32_t flags, uint64_t *gen)
{
    zc_bundle *b = shot(value);
    int rc = b ? zc_store_put(s, tag, b, flags, gen) : ZC_E_NOMEM;
    if (rc != ZC_OK) {
        fprintf(stderr, "  put: %s\n", zc_last_error());
        zc_bundle_free(b);
    }
    return rc;
}

/* Put shots of the values first..last under tag, spilled, then flush; the first failure's
 * status. */
static int put_values_and_flush(zc_store *s, const char *tag, int first, int last)
{
    for (int i = first; i <= last; i++) {
        int rc = put_value(s, tag, (float)i, ZC_PUT_SPILL, NULL);
        if (rc != ZC_OK)
            return rc;
    }
    return zc_store_flush(s);
}

/* The value tag@generation holds (get), or -1. */
static float value_of(zc_store *s, const char *tag, uint64_t generation, uint64_t *got_gen)
{
    zc_view *v = NULL;
    zc_tensor_info ti;
    float value = -1.0f;
    if (zc_store_get(s, tag, generation, &v) == ZC_OK && zc_view_verify(v) == ZC_OK &&
        zc_view_tensor(v, 0, &ti) == ZC_OK) {
        value = ((const float *)ti.data)[63];
        if (got_gen)
            *got_gen = zc_view_generation(v);
    }
    zc_view_release(v);
    return value;
}

static char *spill_name(const char *dir, const char *tag, uint64_t gen, const char *suffix)
{
    char name[160];
    snprintf(name, sizeof name, "%s@%020llu.latent%s", tag, (unsigned long long)gen, suffix);
    return zc_test_join(dir, name);
}

static int exists(const char *path)
{
    zc_os_path_kind kind;
    return zc_os_stat(path, &kind, NULL) == 0;
}

static int touch(const char *dir, const char *name)
{
    char *p = zc_test_join(dir, name);
    FILE *fp = p ? fopen(p, "wb") : NULL;
    int ok = fp && fputs("x", fp) >= 0;
    if (fp)
        fclose(fp);
    free(p);
    return ok;
}

static int present(const char *dir, const char *name)
{
    char *p = zc_test_join(dir, name);
    int e = p && exists(p);
    free(p);
    return e;
}

TEST(shared_two_stores_hand_out_every_generation_once)
{
    TEST_FOLDER(dir, "shared-unique");
    zc_store *a = open_at(dir, 4, 3), *b = open_at(dir, 4, 3);
    REQUIRE(a != NULL && b != NULL);
    uint64_t gens[40];
    for (int i = 0; i < 40; i++)
        REQUIRE_OK(put_value(i % 2 ? b : a, "film", (float)(i + 1), ZC_PUT_SPILL, &gens[i]));
    for (int i = 0; i < 40; i++)
        CHECK(gens[i] == (uint64_t)(i + 1)); /* one sequence, whoever asked */
    CHECK_OK(zc_store_flush(a));
    CHECK_OK(zc_store_flush(b));
    /* Each store prunes its own files only: the newest 3 of each stay. */
    CHECK(zc_test_count(dir, "film@", ".latent") == 6);
    for (int i = 34; i < 40; i++) {
        char *p = spill_name(dir, "film", gens[i], "");
        CHECK(p && exists(p));
        free(p);
    }
    /* Every file holds the shot its generation was given to. */
    OPEN_AT(c, dir, 4, 3);
    for (int i = 34; i < 40; i++)
        CHECK(value_of(c, "film", gens[i], NULL) == (float)(i + 1));
    zc_store_close(c);
    zc_store_close(a);
    zc_store_close(b);
    CHECK(zc_test_count(dir, ".zc-owner-", "") == 0); /* closed stores leave no owner file */
}

TEST(shared_store_sees_what_another_spilled)
{
    TEST_FOLDER(dir, "shared-see");
    zc_store *a = open_at(dir, 4, 2), *b = open_at(dir, 4, 2);
    REQUIRE(a != NULL && b != NULL);
    uint64_t g1 = 0, g2 = 0, got = 0;
    REQUIRE_OK(put_value(a, "shot", 1.0f, ZC_PUT_SPILL, &g1));
    REQUIRE_OK(zc_store_flush(a));
    CHECK(value_of(b, "shot", 0, &got) == 1.0f && got == g1); /* a tag b never had */
    REQUIRE_OK(put_value(b, "shot", 2.0f, ZC_PUT_SPILL, &g2));
    CHECK(g2 == g1 + 1);
    REQUIRE_OK(zc_store_flush(b));
    CHECK(value_of(a, "shot", 0, &got) == 2.0f && got == g2); /* newer than a's own slot */
    {   /* get_known: what b knows without a look at the counter; a's newer file stays unseen */
        uint64_t gb = 0;
        REQUIRE_OK(put_value(a, "known", 1.0f, ZC_PUT_SPILL, NULL));
        REQUIRE_OK(zc_store_flush(a));
        zc_view *v = NULL;
        CHECK(zc_store_get_known(b, "known", 0, &v) == ZC_E_NOT_FOUND && v == NULL);
        REQUIRE_OK(zc_store_get(b, "known", 0, &v)); /* the look finds it */
        gb = zc_view_generation(v);
        zc_view_release(v);
        REQUIRE_OK(put_value(a, "known", 2.0f, ZC_PUT_SPILL, NULL));
        REQUIRE_OK(zc_store_flush(a));
        REQUIRE_OK(zc_store_get_known(b, "known", 0, &v));
        CHECK(zc_view_generation(v) == gb); /* still the one it knew */
        zc_view_release(v);
        CHECK(zc_store_get_known(NULL, "known", 0, &v) == ZC_E_INVALID);
        CHECK(zc_store_get_known(b, "bad tag?", 0, &v) == ZC_E_INVALID);
    }
    uint64_t list[8];
    size_t n = 0;
    CHECK_OK(zc_store_generations(a, "shot", list, 8, &n));
    CHECK(n == 2 && list[0] == g2 && list[1] == g1);
    char json[8192];
    CHECK_OK(zc_store_describe_tag_json(b, "shot", json, sizeof json, NULL));
    CHECK(strstr(json, "\"disk_generations\":[1,2]") != NULL);
    /* Not spilled: only in a's memory, which b cannot see. */
    uint64_t g3 = 0;
    REQUIRE_OK(put_value(a, "shot", 3.0f, 0, &g3));
    CHECK(value_of(b, "shot", 0, &got) == 2.0f && got == g2);
    CHECK(value_of(a, "shot", 0, &got) == 3.0f && got == g3);
    /* a's pruning (disk_keep 2 of its own) removes g1; b forgets it when it looks */
    uint64_t g4 = 0, g5 = 0;
    REQUIRE_OK(put_value(a, "shot", 4.0f, ZC_PUT_SPILL, &g4));
    REQUIRE_OK(put_value(a, "shot", 5.0f, ZC_PUT_SPILL, &g5));
    REQUIRE_OK(zc_store_flush(a));
    CHECK_OK(zc_store_describe_tag_json(b, "shot", json, sizeof json, NULL));
    CHECK(strstr(json, "\"disk_generations\":[2,4,5]") != NULL);
    CHECK_OK(zc_store_generations(b, "shot", list, 8, &n));
    CHECK(n == 4 && list[0] == g5 && list[1] == g4 && list[2] == g2 && list[3] == g1);
    /* (g1 is still in b's memory: its first get restored it) */
    /* a file removed behind b's back (a drop elsewhere): get(0) falls back */
    char *p5 = spill_name(dir, "shot", g5, "");
    REQUIRE(p5 && zc_os_remove(p5) == 0);
    CHECK(value_of(b, "shot", 0, &got) == 4.0f && got == g4);
    free(p5);
    /* a drop with its files takes the other store's files too */
    CHECK_OK(zc_store_drop(b, "shot", ZC_DROP_DISK));
    CHECK(zc_test_count(dir, "shot@", ".latent") == 0);
    uint64_t g6 = 0;
    CHECK_OK(put_value(b, "shot", 6.0f, 0, &g6));
    CHECK(g6 == g5 + 1); /* never reused, a drop included */
    zc_store_close(a);
    zc_store_close(b);
}

TEST(shared_caller_generation_is_refused_when_taken)
{
    TEST_FOLDER(dir, "shared-chosen");
    zc_store *a = open_at(dir, 3, 0), *b = open_at(dir, 3, 0);
    REQUIRE(a != NULL && b != NULL);
    zc_bundle *x = shot(7.0f);
    REQUIRE_OK(zc_store_put_generation(a, "farm", x, ZC_PUT_SPILL, 100));
    REQUIRE_OK(zc_store_flush(a));
    x = shot(8.0f);
    CHECK(zc_store_put_generation(a, "farm", x, 0, 100) == ZC_E_EXISTS);        /* in a's memory */
    CHECK(strstr(zc_last_error(), "100") != NULL);
    CHECK(zc_store_put_generation(b, "farm", x, 0, 100) == ZC_E_EXISTS);        /* on disk */
    CHECK(zc_store_put_generation(b, "farm", x, 0, 0) == ZC_E_INVALID);
    CHECK(zc_store_put_generation(b, "farm", x, 0, ZC_MAX_GENERATION + 1) == ZC_E_INVALID);
    zc_bundle_free(x); /* every refusal left it with the caller */
    uint64_t next = 0;
    REQUIRE_OK(put_value(b, "farm", 9.0f, 0, &next));
    CHECK(next == 101); /* local allocation continues above it */
    CHECK(value_of(b, "farm", 100, NULL) == 7.0f);
    /* an older generation goes in order; the newest stays the newest */
    REQUIRE_OK(zc_store_put_generation(b, "farm", shot(5.0f), 0, 50));
    uint64_t got = 0;
    CHECK(value_of(b, "farm", 0, &got) == 9.0f && got == 101);
    CHECK(value_of(b, "farm", 50, NULL) == 5.0f);
    /* ring of depth 3 now full (50, 60, 101): older than all of it is refused */
    REQUIRE_OK(zc_store_put_generation(b, "farm", shot(6.0f), 0, 60));
    x = shot(1.0f);
    CHECK(zc_store_put_generation(b, "farm", x, 0, 10) == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "zc_store_import") != NULL);
    zc_bundle_free(x);
    /* a store without a spill folder checks its memory */
    zc_store *m = NULL;
    REQUIRE_OK(zc_store_open(NULL, &m));
    REQUIRE_OK(zc_store_put_generation(m, "t", shot(1.0f), 0, 5));
    x = shot(2.0f);
    CHECK(zc_store_put_generation(m, "t", x, 0, 5) == ZC_E_EXISTS);
    zc_bundle_free(x);
    REQUIRE_OK(zc_store_put(m, "t", shot(3.0f), 0, &next));
    CHECK(next == 6);
    zc_store_close(m);
    zc_store_close(a);
    zc_store_close(b);
}

/* The bytes of file path (caller frees), *len their count. */
static void *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    void *buf = n > 0 ? malloc((size_t)n) : NULL;
    if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    *len = buf ? (size_t)n : 0;
    return buf;
}

TEST(shared_shot_bytes_export_and_import)
{
    TEST_FOLDER(src, "shared-export");
    TEST_FOLDER(dst, "shared-import");
    zc_store *a = open_at(src, 4, 0), *b = open_at(dst, 4, 1);
    REQUIRE(a != NULL && b != NULL);
    uint64_t g = 0;
    REQUIRE_OK(put_value(a, "pub", 42.0f, ZC_PUT_SPILL, &g));
    REQUIRE_OK(zc_store_flush(a));
    zc_view *v = NULL;
    REQUIRE_OK(zc_store_get(a, "pub", g, &v));
    size_t need = 0;
    CHECK(zc_view_serialize(v, NULL, 0, &need) == ZC_E_LIMIT && need > 64 * sizeof(float));
    uint8_t *bytes = malloc(need);
    REQUIRE(bytes != NULL);
    CHECK(zc_view_serialize(v, bytes, need - 1, NULL) == ZC_E_LIMIT);
    REQUIRE_OK(zc_view_serialize(v, bytes, need, &need));
    zc_view_release(v);
    /* the same bytes as the spill file */
    char *file = spill_name(src, "pub", g, "");
    size_t flen = 0;
    uint8_t *fbytes = slurp(file, &flen);
    CHECK(fbytes && flen == need && memcmp(fbytes, bytes, need) == 0);
    free(fbytes);
    free(file);

    /* bad bytes: refused, nothing written */
    CHECK(zc_store_import(b, "pub", g + 1, bytes, need) == ZC_E_CORRUPT); /* says another generation */
    CHECK(strstr(zc_last_error(), "generation") != NULL);
    CHECK(zc_store_import(b, "other", g, bytes, need) == ZC_E_CORRUPT);   /* says another tag */
    CHECK(zc_store_import(b, "pub", g, bytes, need - 5) == ZC_E_CORRUPT); /* truncated */
    bytes[need - 3] ^= 0x20;                                               /* a tensor byte */
    CHECK(zc_store_import(b, "pub", g, bytes, need) == ZC_E_CORRUPT);
    CHECK(strstr(zc_last_error(), "nothing written") != NULL);
    bytes[need - 3] ^= 0x20;
    CHECK(zc_store_import(b, "pub", g, bytes, 3) == ZC_E_CORRUPT);
    CHECK(zc_store_import(b, "pub", 0, bytes, need) == ZC_E_INVALID);
    CHECK(zc_store_import(b, "pub", g, NULL, need) == ZC_E_INVALID);
    CHECK(zc_test_count(dst, "pub@", "") == 0 && zc_test_count(dst, ".zc-tmp-", "") == 0);
    zc_store *nodisk = NULL;
    REQUIRE_OK(zc_store_open(NULL, &nodisk));
    CHECK(zc_store_import(nodisk, "pub", g, bytes, need) == ZC_E_UNSUPPORTED);
    zc_store_close(nodisk);

    /* good bytes: written as the spill file, and a get restores them */
    REQUIRE_OK(zc_store_import(b, "pub", g, bytes, need));
    CHECK(zc_store_import(b, "pub", g, bytes, need) == ZC_E_EXISTS);
    file = spill_name(dst, "pub", g, "");
    fbytes = slurp(file, &flen);
    CHECK(fbytes && flen == need && memcmp(fbytes, bytes, need) == 0);
    free(fbytes);
    free(file);
    uint64_t got = 0;
    CHECK(value_of(b, "pub", 0, &got) == 42.0f && got == g);
    /* its own puts go above it and do not prune the import (disk_keep 1) */
    uint64_t mine1 = 0, mine2 = 0;
    REQUIRE_OK(put_value(b, "pub", 1.0f, ZC_PUT_SPILL, &mine1));
    REQUIRE_OK(put_value(b, "pub", 2.0f, ZC_PUT_SPILL, &mine2));
    REQUIRE_OK(zc_store_flush(b));
    CHECK(mine1 == g + 1 && mine2 == g + 2);
    CHECK(zc_test_count(dst, "pub@", ".latent") == 2); /* the import and b's newest */
    CHECK(value_of(b, "pub", g, NULL) == 42.0f);
    free(bytes);
    zc_store_close(a);
    zc_store_close(b);
}

TEST(shared_open_removes_only_dead_owners_temp_files)
{
    TEST_FOLDER(dir, "shared-owner");
    OPEN_AT(a, dir, 4, 0);
    CHECK(zc_test_count(dir, ".zc-owner-", ".lock") == 1);
    char token[ZC_TOKEN_LEN + 1], mine[128];
    zc__process_token(token);
    snprintf(mine, sizeof mine, ".zc-tmp-%s-999-x@00000000000000000001.latent", token);
    const char *dead_owner = ".zc-owner-00000000deadbeef-0.lock";
    const char *dead_tmp = ".zc-tmp-00000000deadbeef-3-x@00000000000000000002.latent";
    const char *orphan_tmp = ".zc-tmp-0123456789abcdef-0-x@00000000000000000003.latent";
    const char *legacy_tmp = ".zc-tmp-4242-0-x@00000000000000000004.latent";
    REQUIRE(touch(dir, mine) && touch(dir, dead_owner) && touch(dir, dead_tmp) &&
            touch(dir, orphan_tmp) && touch(dir, legacy_tmp));
    OPEN_AT(b, dir, 4, 0);
    CHECK(present(dir, mine));          /* this process is alive (store a, and b) */
    CHECK(!present(dir, dead_tmp));     /* its owner file is not locked: gone */
    CHECK(!present(dir, dead_owner));
    CHECK(!present(dir, orphan_tmp));   /* no owner file at all */
    CHECK(!present(dir, legacy_tmp));   /* an older engine's: a pid, no owner */
    CHECK(zc_test_count(dir, ".zc-owner-", ".lock") == 2); /* a's and b's */
    zc_store_close(b);
    zc_store_close(a);
    CHECK(zc_test_count(dir, ".zc-owner-", "") == 0);
}

TEST(shared_files_found_at_open_are_pruned_only_when_alone)
{
    TEST_FOLDER(dir, "shared-adopt");
    OPEN_AT(a, dir, 4, 2);
    REQUIRE_OK(put_values_and_flush(a, "p", 1, 2));
    /* b opens beside a: a's files are not b's to prune */
    OPEN_AT(b, dir, 4, 2);
    REQUIRE_OK(put_values_and_flush(b, "p", 3, 5));
    CHECK(zc_test_count(dir, "p@", ".latent") == 4); /* a's 1, 2 and b's 4, 5 */
    zc_store_close(a);
    zc_store_close(b);
    /* alone, c inherits them all */
    OPEN_AT(c, dir, 4, 2);
    uint64_t g = 0;
    REQUIRE_OK(put_value(c, "p", 6.0f, ZC_PUT_SPILL, &g));
    REQUIRE_OK(zc_store_flush(c));
    CHECK(g == 6);
    CHECK(zc_test_count(dir, "p@", ".latent") == 2);
    zc_store_close(c);
}

TEST(shared_lost_counter_never_reuses_a_generation)
{
    TEST_FOLDER(dir, "shared-rollback");
    OPEN_AT(a, dir, 4, 8);
    REQUIRE_OK(put_values_and_flush(a, "r", 1, 3));
    /* a power cut: the counter zeroed, and a rejected file beyond the others */
    char *counter = zc_test_join(dir, ".zc-gen-r");
    FILE *fp = fopen(counter, "wb");
    REQUIRE(fp != NULL);
    fclose(fp);
    REQUIRE(touch(dir, "r@00000000000000000004.latent.rejected"));
    OPEN_AT(b, dir, 4, 8); /* a new store knows only the files, as after a restart */
    uint64_t g = 0;
    REQUIRE_OK(put_value(b, "r", 9.0f, ZC_PUT_SPILL, &g));
    CHECK(g == 5);
    /* garbage in the counter reads as zero too */
    fp = fopen(counter, "wb");
    REQUIRE(fp != NULL);
    fputs("not a counter at all, nothing like it\n", fp);
    fclose(fp);
    REQUIRE_OK(zc_store_flush(b));
    REQUIRE_OK(put_value(a, "r", 10.0f, ZC_PUT_SPILL, &g));
    CHECK(g == 6); /* above a's own 3, past the rejected 4 and b's 5 */
    REQUIRE_OK(zc_store_flush(a));
    CHECK(value_of(b, "r", 5, NULL) == 9.0f && value_of(b, "r", 6, NULL) == 10.0f);
    free(counter);
    zc_store_close(a);
    zc_store_close(b);
}

TEST(shared_spill_never_writes_over_a_file)
{
    TEST_FOLDER(dir, "shared-nooverwrite");
    OPEN_AT(b, dir, 4, 0);
    REQUIRE_OK(zc_store_put_generation(b, "w", shot(2.0f), ZC_PUT_SPILL, 1));
    REQUIRE_OK(zc_store_flush(b));
    /* A writer that got the same number anyway (what a mixed-up counter
     * would cause) cannot replace the file: spills and imports take the
     * name exclusively. */
    char *p = spill_name(dir, "w", 1, "");
    char gen[32];
    zc_meta_entry extra[3];
    zc_bundle *y = shot(4.0f);
    REQUIRE(p != NULL && y != NULL);
    zc__spill_identity("w", 1, gen, extra);
    CHECK(zc__safetensors_write_new(p, y, extra, 3) == ZC_E_EXISTS);
    CHECK(strstr(zc_last_error(), "nothing was overwritten") != NULL);
    zc_bundle_free(y);
    OPEN_AT(c, dir, 4, 0);
    CHECK(value_of(c, "w", 1, NULL) == 2.0f); /* b's shot, untouched */
    CHECK(zc_test_count(dir, ".zc-tmp-", "") == 0);
    free(p);
    zc_store_close(c);
    zc_store_close(b);
}

TEST(shared_without_file_locks_removes_no_one_elses_files)
{
    TEST_FOLDER(dir, "shared-nolocks");
    const char *orphan_tmp = ".zc-tmp-0123456789abcdef-0-x@00000000000000000003.latent";
    REQUIRE(touch(dir, orphan_tmp));
    zc__shared_locks_disabled_for_tests = 1;
    zc_store *a = open_at(dir, 4, 0), *b = open_at(dir, 4, 0);
    zc__shared_locks_disabled_for_tests = 0;
    REQUIRE(a != NULL && b != NULL);
    CHECK(present(dir, orphan_tmp)); /* nobody can tell whether its writer lives */
    CHECK(zc_test_count(dir, ".zc-owner-", "") == 0);
    char json[4096];
    CHECK_OK(zc_store_describe_json(a, json, sizeof json, NULL));
    CHECK(strstr(json, "\"spill_locks\":false") != NULL);
    uint64_t g1 = 0, g2 = 0;
    CHECK_OK(put_value(a, "n", 1.0f, ZC_PUT_SPILL, &g1));
    CHECK_OK(put_value(b, "n", 2.0f, ZC_PUT_SPILL, &g2));
    CHECK(g1 == 1 && g2 == 2); /* within one process the counter still serves */
    CHECK_OK(zc_store_flush(a));
    CHECK_OK(zc_store_flush(b));
    zc_store_close(a);
    zc_store_close(b);
    OPEN_AT(c, dir, 4, 0);
    CHECK_OK(zc_store_describe_json(c, json, sizeof json, NULL));
    CHECK(strstr(json, "\"spill_locks\":true") != NULL);
    CHECK(!present(dir, orphan_tmp)); /* with locks, it is known dead */
    zc_store_close(c);
}
