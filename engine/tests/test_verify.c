/*
 * test_verify.c — zc_view_verify re-hashes exactly when a writer could have
 * changed a tensor: a writable DLPack export live now, or deleted since the
 * last check.  Counted through the report and the store's
 * verify_hashed_bytes / verify_skipped_bytes statistics.  Also legacy
 * XXH64 slots (restored from an engine-0.2 file) verify with XXH64.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "core/internal.h"
#include "platform/platform_test.h"

#define N 4096 /* floats per tensor */

static zc_store *open_plain(void)
{
    return fixture_store(NULL, 0, 0, 0, 0);
}

static uint64_t hashed_bytes(zc_store *s)
{
    zc_store_stats st;
    return zc_store_stats_get(s, &st) == ZC_OK ? st.verify_hashed_bytes : UINT64_MAX;
}

static uint64_t skipped_bytes(zc_store *s)
{
    zc_store_stats st;
    return zc_store_stats_get(s, &st) == ZC_OK ? st.verify_skipped_bytes : UINT64_MAX;
}

/* Put two host tensors "a" and "b" of N floats under tag. */
static int put_two(zc_store *s, const char *tag)
{
    static float data[N];
    for (int i = 0; i < N; i++)
        data[i] = (float)i;
    int64_t shape[1] = {N};
    fixture_tensor ft;
    fixture_f32(&ft, data, 1, shape);
    zc_bundle *b = NULL;
    if (zc_bundle_create(&b) != ZC_OK || zc_bundle_add_copy(b, "a", &ft.dl) != ZC_OK ||
        zc_bundle_add_copy(b, "b", &ft.dl) != ZC_OK || zc_store_put(s, tag, b, 0, NULL) != ZC_OK) {
        zc_bundle_free(b);
        return -1;
    }
    return 0;
}

/* Declare `zc_store *s`, a plain store holding put_two(tag), and `zc_view *v` on it; REQUIRE
 * each step. */
#define STORE_WITH_TWO(s, v, tag)                                              \
    zc_store *s = open_plain();                                                \
    REQUIRE(s != NULL);                                                        \
    REQUIRE(put_two(s, tag) == 0);                                             \
    zc_view *v = NULL;                                                         \
    REQUIRE_OK(zc_store_get(s, tag, 0, &v))

static void delete_export(void *m)
{
    zc__managed_delete(m, 1);
}

TEST(verify_after_put_without_export_does_not_hash)
{
    STORE_WITH_TWO(s, v, "v");
    zc_verify_report r;
    CHECK_OK(zc_view_verify_ex(v, 0, &r));
    CHECK(r.hashed == 0 && r.unchanged == 3u && r.hashed_bytes == 0);
    CHECK(r.unchecked == 0 && r.device == 0);
    CHECK(hashed_bytes(s) == 0 && skipped_bytes(s) == 2u * N * sizeof(float));
    CHECK_OK(zc_view_verify(v));
    CHECK(hashed_bytes(s) == 0);
    /* ZC_VERIFY_REHASH hashes anyway. */
    CHECK_OK(zc_view_verify_ex(v, ZC_VERIFY_REHASH, &r));
    CHECK(r.hashed == 3u && r.unchanged == 0 && r.hashed_bytes == 2u * N * sizeof(float));
    CHECK(hashed_bytes(s) == 2u * N * sizeof(float));
    CHECK(zc_view_verify_ex(v, 2u, &r) == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "unknown bits") != NULL);
    CHECK(zc_view_verify_ex(NULL, 0, &r) == ZC_E_INVALID);
    zc_view_release(v);
    zc_store_close(s);
}

TEST(verify_hashes_while_an_export_is_live_and_detects_a_write)
{
    STORE_WITH_TWO(s, v, "w");
    void *m = NULL;
    REQUIRE_OK(zc_view_export_dlpack(v, 1, 1, &m)); /* tensor "b" only */
    zc_verify_report r;
    CHECK_OK(zc_view_verify_ex(v, 0, &r));
    CHECK(r.hashed == 2u && r.unchanged == 1u && r.hashed_bytes == N * sizeof(float));
    CHECK(hashed_bytes(s) == N * sizeof(float));
    /* Still live: hashed again, every time. */
    CHECK_OK(zc_view_verify_ex(v, 0, &r));
    CHECK(r.hashed == 2u && hashed_bytes(s) == 2u * N * sizeof(float));
    /* A write through the export is found. */
    float *p = ((zc_dl_managed_versioned *)m)->dl_tensor.data;
    p[N - 1] = -1.0f;
    CHECK(zc_view_verify_ex(v, 0, &r) == ZC_E_CORRUPT);
    CHECK(strstr(zc_last_error(), "tensor \"b\" changed since it was stored") != NULL);
    CHECK(strstr(zc_last_error(), "(digest xxh3:") != NULL);
    CHECK(r.unchanged == 1u && r.hashed == 0);
    /* ...and stays found after the export is gone: a failed check records nothing. */
    delete_export(m);
    CHECK(zc_view_verify(v) == ZC_E_CORRUPT);
    CHECK(zc_view_verify(v) == ZC_E_CORRUPT);
    zc_view_release(v);
    zc_store_close(s);
}

TEST(verify_after_an_export_released_without_writing_hashes_once_then_skips)
{
    STORE_WITH_TWO(s, v, "r");
    void *m1 = NULL, *m2 = NULL;
    REQUIRE_OK(zc_view_export_dlpack(v, 0, 1, &m1));
    REQUIRE_OK(zc_view_export_dlpack(v, 0, 0, &m2));
    delete_export(m1);
    zc__managed_delete(m2, 0);
    zc_verify_report r;
    CHECK_OK(zc_view_verify_ex(v, 0, &r));
    CHECK(r.hashed == 1u && r.unchanged == 2u);
    CHECK(hashed_bytes(s) == N * sizeof(float));
    CHECK_OK(zc_view_verify_ex(v, 0, &r));
    CHECK(r.hashed == 0 && r.unchanged == 3u);
    CHECK(hashed_bytes(s) == N * sizeof(float));
    /* Another view of the same slot shares what was checked. */
    zc_view *v2 = NULL;
    REQUIRE_OK(zc_store_get(s, "r", 0, &v2));
    CHECK_OK(zc_view_verify_ex(v2, 0, &r));
    CHECK(r.hashed == 0 && r.unchanged == 3u);
    /* An export made and released after the check: hashed once more. */
    REQUIRE_OK(zc_view_export_dlpack(v2, 0, 1, &m1));
    delete_export(m1);
    CHECK_OK(zc_view_verify_ex(v, 0, &r));
    CHECK(r.hashed == 1u);
    CHECK_OK(zc_view_verify_ex(v, 0, &r));
    CHECK(r.hashed == 0);
    /* A write made through an export that is then released is still found. */
    REQUIRE_OK(zc_view_export_dlpack(v2, 1, 1, &m1));
    ((float *)((zc_dl_managed_versioned *)m1)->dl_tensor.data)[0] = 42.0f;
    delete_export(m1);
    CHECK(zc_view_verify(v) == ZC_E_CORRUPT);
    zc_view_release(v2);
    zc_view_release(v);
    zc_store_close(s);
}

TEST(verify_of_device_tensors_checks_only_their_host_copy)
{
    zc_store *s = open_plain();
    REQUIRE(s != NULL);
    static float device_bytes[8], host[8];
    for (int i = 0; i < 8; i++)
        host[i] = device_bytes[i] = (float)i;
    int64_t shape[1] = {8};
    int deleted = 0;
    fixture_tensor shadow;
    fixture_f32(&shadow, host, 1, shape);
    zc_bundle *b = NULL;
    REQUIRE_OK(zc_bundle_create(&b));
    REQUIRE_OK(zc_bundle_add_reference(b, "with_copy",
                                       fixture_managed_new(device_bytes, ZC_DL_CUDA, 1, shape, &deleted),
                                       1, &shadow.dl));
    REQUIRE_OK(zc_bundle_add_reference(b, "bare",
                                       fixture_managed_new(device_bytes, ZC_DL_CUDA, 1, shape, &deleted),
                                       1, NULL));
    REQUIRE_OK(zc_store_put(s, "dev", b, 0, NULL));
    zc_view *v = NULL;
    void *m = NULL;
    REQUIRE_OK(zc_store_get(s, "dev", 0, &v));
    /* The export is of the device address, which cannot write the host copy. */
    REQUIRE_OK(zc_view_export_dlpack(v, 0, 1, &m));
    CHECK(((zc_dl_managed_versioned *)m)->dl_tensor.data == device_bytes);
    zc_verify_report r;
    CHECK_OK(zc_view_verify_ex(v, 0, &r));
    CHECK(r.device == 3u && r.unchecked == 2u && r.unchanged == 1u && r.hashed == 0);
    CHECK_OK(zc_view_verify_ex(v, ZC_VERIFY_REHASH, &r));
    CHECK(r.hashed == 1u && r.hashed_bytes == sizeof host);
    delete_export(m);
    zc_view_release(v);
    zc_store_close(s);
    CHECK(deleted == 2);
}

/* An engine-0.2 spill file records XXH64: it restores, keeps XXH64 (named
 * so everywhere), and verifies with XXH64. */
TEST(legacy_xxh64_slot_restores_and_verifies_with_xxh64)
{
    char *dir = zc_test_tmpdir("verify-legacy");
    REQUIRE(dir != NULL);
    char *path = zc_test_join(dir, "old@00000000000000000003.latent");
    REQUIRE(path != NULL);
    float *host = zc__host_alloc(N * sizeof(float));
    REQUIRE(host != NULL);
    for (int i = 0; i < N; i++)
        host[i] = (float)i * 0.25f;
    int64_t shape[1] = {N};
    zc_bundle *b = NULL;
    REQUIRE_OK(zc_bundle_create(&b));
    REQUIRE_OK(zc__bundle_adopt_host(b, "latent_tensor", ZC_F32, 1, shape, host,
                                     N * sizeof(float), ZC_DIGEST_XXH64,
                                     zc_xxh64(host, N * sizeof(float), 0)));
    zc_meta_entry extra[3] = {{(char *)ZC_FILE_META_FORMAT, (char *)ZC_FILE_FORMAT_VALUE},
                              {(char *)ZC_FILE_META_TAG, (char *)"old"},
                              {(char *)ZC_FILE_META_GENERATION, (char *)"3"}};
    REQUIRE_OK(zc__safetensors_write(path, b, extra, 3));
    zc_bundle_free(b);
    zc_file *f = NULL;
    REQUIRE_OK(zc_file_open(path, &f));
    const char *recorded = zc_file_meta(f, "zc.digest.latent_tensor");
    CHECK(recorded != NULL && strncmp(recorded, "xxh64:", 6) == 0);
    char recorded_text[ZC_DIGEST_TEXT_SIZE];
    snprintf(recorded_text, sizeof recorded_text, "%s", recorded ? recorded : "");
    zc_file_tensor ft;
    REQUIRE_OK(zc_file_tensor_at(f, 0, &ft));
    CHECK(ft.has_digest && ft.digest_algo == ZC_DIGEST_XXH64);
    zc_file_close(f);

    zc_store *s = NULL;
    REQUIRE_OK(fixture_store_open(dir, 0, 0, 0, 0, &s));
    zc_view *v = NULL;
    REQUIRE_OK(zc_store_get(s, "old", 0, &v));
    zc_tensor_info ti;
    REQUIRE_OK(zc_view_tensor(v, 0, &ti));
    CHECK(ti.has_digest && ti.digest_algo == ZC_DIGEST_XXH64);
    CHECK(ti.digest == zc_xxh64(ti.data, (size_t)ti.nbytes, 0));
    zc_verify_report r;
    CHECK_OK(zc_view_verify_ex(v, 0, &r));
    CHECK(r.unchanged == 1u); /* checked while it was read */
    CHECK_OK(zc_view_verify_ex(v, ZC_VERIFY_REHASH, &r));
    CHECK(r.hashed == 1u);
    char buf[4096];
    CHECK_OK(zc_store_describe_tag_json(s, "old", buf, sizeof buf, NULL));
    CHECK(strstr(buf, "\"digest\":\"xxh64:") != NULL);
    /* Saved again, the slot's file keeps its XXH64 digest. */
    char *again = zc_test_join(dir, "again.latent");
    REQUIRE(again != NULL);
    CHECK_OK(zc_view_save(v, again));
    REQUIRE_OK(zc_file_open(again, &f));
    const char *saved = zc_file_meta(f, "zc.digest.latent_tensor");
    CHECK(saved != NULL && strcmp(saved, recorded_text) == 0);
    zc_file_close(f);
    /* A write through an export is found with XXH64 too. */
    void *m = NULL;
    REQUIRE_OK(zc_view_export_dlpack(v, 0, 1, &m));
    ((float *)((zc_dl_managed_versioned *)m)->dl_tensor.data)[7] = 1e9f;
    CHECK(zc_view_verify(v) == ZC_E_CORRUPT);
    CHECK(strstr(zc_last_error(), "(digest xxh64:") != NULL);
    delete_export(m);
    zc_view_release(v);
    zc_store_close(s);
    zc_test_rmtree(dir);
    free(again);
    free(path);
    free(dir);
}
