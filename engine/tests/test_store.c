/* test_store.c — bundles, tags, rings, generations, budgets, views,
 * references and DLPack export (no disk). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"

static zc_store *open_store(uint32_t depth, uint64_t host_budget, uint64_t device_budget)
{
    return fixture_store(NULL, depth, 0, host_budget, device_budget);
}

TEST(tag_charset_and_length)
{
    CHECK(zc_tag_check("default_continuity") == ZC_OK);
    CHECK(zc_tag_check("shot-01.v2") == ZC_OK);
    CHECK(zc_tag_check("_x") == ZC_OK);
    CHECK(zc_tag_check("") == ZC_E_INVALID);
    CHECK(zc_tag_check(NULL) == ZC_E_INVALID);
    CHECK(zc_tag_check("../etc/passwd") == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "'/'") || strstr(zc_last_error(), "'.'"));
    CHECK(zc_tag_check("a/b") == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "'/' at character 2;") != NULL); /* counted from 1, as read */
    CHECK(zc_tag_check("a b") == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "has a space at character 2;") != NULL);
    CHECK(zc_tag_check("a@b") == ZC_E_INVALID);
    CHECK(zc_tag_check("caf\xc3\xa9") == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "has '\xc3\xa9' at character 4;") != NULL); /* one character, not byte 3 */
    CHECK(zc_tag_check("\xc3\xa9t\x01") == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "has '\xc3\xa9' at character 1;") != NULL);
    CHECK(zc_tag_check("ab\x01") == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "byte 0x01 at character 3;") != NULL);
    CHECK(zc_tag_check(".hidden") == ZC_E_INVALID);
    CHECK(zc_tag_check("-flag") == ZC_E_INVALID);
    char tag[ZC_MAX_TAG_LEN + 2];
    memset(tag, 'a', sizeof tag);
    tag[ZC_MAX_TAG_LEN] = '\0';
    CHECK(zc_tag_check(tag) == ZC_OK);
    tag[ZC_MAX_TAG_LEN] = 'a';
    tag[ZC_MAX_TAG_LEN + 1] = '\0';
    CHECK(zc_tag_check(tag) == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "expected 1 to 64") != NULL);
}

TEST(put_get_roundtrip_is_bit_identical_with_digest)
{
    zc_store *s = open_store(0, 0, 0);
    REQUIRE(s != NULL);
    float data[24];
    for (int i = 0; i < 24; i++)
        data[i] = (float)i * 0.5f - 3.0f;
    int64_t shape[3] = {2, 3, 4};
    fixture_tensor ft;
    fixture_f32(&ft, data, 3, shape);
    zc_bundle *b;
    REQUIRE_OK(zc_bundle_create(&b));
    REQUIRE_OK(zc_bundle_add_copy(b, "latent_tensor", &ft.dl));
    CHECK_OK(zc_bundle_set_meta(b, "family", "wan21"));
    uint64_t gen = 0;
    REQUIRE_OK(zc_store_put(s, "shot", b, 0, &gen));
    CHECK(gen == 1);
    data[0] = 999.0f; /* the store took a copy */
    zc_view *v;
    REQUIRE_OK(zc_store_get(s, "shot", 0, &v));
    zc_tensor_info ti;
    REQUIRE_OK(zc_view_tensor(v, 0, &ti));
    CHECK(strcmp(ti.name, "latent_tensor") == 0);
    CHECK(ti.dtype == ZC_F32 && ti.ndim == 3 && ti.shape[2] == 4 && ti.nbytes == 96);
    CHECK(ti.byte_strides[0] == 48 && ti.byte_strides[1] == 16 && ti.byte_strides[2] == 4);
    CHECK(ti.tier == ZC_TIER_HOST && ti.has_digest);
    CHECK(((uintptr_t)ti.data % 64) == 0);
    CHECK(((float *)ti.data)[0] == -3.0f && ((float *)ti.data)[23] == 8.5f);
    data[0] = -3.0f;
    CHECK(ti.digest == zc_xxh3_64(data, sizeof data, 0));
    CHECK(strcmp(zc_view_meta(v, "family"), "wan21") == 0);
    CHECK(zc_view_meta(v, "missing") == NULL);
    CHECK(zc_view_generation(v) == 1 && strcmp(zc_view_tag(v), "shot") == 0);
    CHECK_OK(zc_view_verify(v));
    zc_view_release(v);
    zc_store_close(s);
}

/* The 3x4 transpose of the row-major 4x3 buffer base, as a strided view reads it. */
static void transpose_4x3(const float *base, float out[12])
{
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 4; c++)
            out[r * 4 + c] = base[c * 3 + r];
}

/* A stored tensor holds that transpose, contiguous, with the digest of those bytes. */
static void check_transposed(const zc_tensor_info *ti, const float *base)
{
    float expect[12];
    transpose_4x3(base, expect);
    CHECK(ti->ndim == 2 && ti->shape[0] == 3 && ti->shape[1] == 4 && ti->nbytes == sizeof expect);
    CHECK(memcmp(ti->data, expect, sizeof expect) == 0);
    CHECK(ti->digest == zc_xxh3_64(expect, sizeof expect, 0));
}

TEST(strided_copy_is_made_contiguous)
{
    /* A transposed 3x4 view of a 4x3 buffer, and a broadcast (stride 0). */
    float base[12];
    for (int i = 0; i < 12; i++)
        base[i] = (float)i;
    fixture_tensor ft;
    int64_t shape[2] = {3, 4}, strides[2] = {1, 3};
    fixture_f32_strided(&ft, base, 2, shape, strides);
    zc_bundle *b;
    REQUIRE_OK(zc_bundle_create(&b));
    REQUIRE_OK(zc_bundle_add_copy(b, "t", &ft.dl));
    fixture_tensor bc;
    int64_t bshape[2] = {2, 3}, bstrides[2] = {0, 1};
    fixture_f32_strided(&bc, base, 2, bshape, bstrides);
    REQUIRE_OK(zc_bundle_add_copy(b, "b", &bc.dl));
    zc_store *s = open_store(0, 0, 0);
    REQUIRE_OK(zc_store_put(s, "t", b, 0, NULL));
    zc_view *v;
    REQUIRE_OK(zc_store_get(s, "t", 0, &v));
    zc_tensor_info ti;
    REQUIRE_OK(zc_view_tensor(v, 0, &ti));
    check_transposed(&ti, base);
    REQUIRE_OK(zc_view_tensor(v, 1, &ti));
    float bexp[6] = {0, 1, 2, 0, 1, 2};
    CHECK(memcmp(ti.data, bexp, sizeof bexp) == 0);
    zc_view_release(v);
    zc_store_close(s);
}

/* The plain-values entry points: the same copy, digest and errors as a
 * DLTensor, and a failed one-call put stores nothing. */
TEST(host_copy_from_plain_values_and_the_one_call_put)
{
    float base[12];
    for (int i = 0; i < 12; i++)
        base[i] = (float)i;
    int64_t dims[4] = {3, 4, 1, 3}; /* the transposed view of a 4x3 buffer: sizes, strides */
    zc_store *s = open_store(0, 0, 0);
    REQUIRE(s != NULL);
    uint64_t gen = 0;
    REQUIRE_OK(zc_store_put_host_copy(s, "t", "latent", base, ZC_F32, 2, dims, 0, &gen));
    CHECK(gen == 1);
    zc_view *v;
    REQUIRE_OK(zc_store_get(s, "t", 0, &v));
    zc_tensor_info ti;
    REQUIRE_OK(zc_view_tensor(v, 0, &ti));
    check_transposed(&ti, base);
    CHECK(ti.dtype == ZC_F32 && strcmp(ti.name, "latent") == 0);
    zc_view_release(v);
    /* rank 0 and an empty tensor (no data pointer) */
    zc_bundle *b;
    REQUIRE_OK(zc_store_bundle_create(s, &b));
    REQUIRE_OK(zc_bundle_add_host_copy(b, "scalar", base + 5, ZC_F32, 0, NULL));
    int64_t empty[2] = {0, 1};
    REQUIRE_OK(zc_bundle_add_host_copy(b, "empty", NULL, ZC_I64, 1, empty));
    CHECK(zc_bundle_count(b) == 2);
    /* bad input names the value */
    CHECK(zc_bundle_add_host_copy(b, "x", base, ZC_DTYPE_COUNT, 1, dims) == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "dtype") != NULL && strstr(zc_last_error(), "\"x\"") != NULL);
    CHECK(zc_bundle_add_host_copy(b, "y", base, ZC_F32, 2, NULL) == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "no dims") != NULL);
    int64_t negative[2] = {-1, 1};
    CHECK(zc_bundle_add_host_copy(b, "z", base, ZC_F32, 1, negative) == ZC_E_INVALID);
    CHECK(zc_bundle_count(b) == 2);
    /* the digest a copy carries, read before the put, is the one the store reports */
    int algo = 0;
    uint64_t digest = 0;
    REQUIRE_OK(zc_bundle_tensor_digest(b, 0, &algo, &digest));
    CHECK(algo == ZC_DIGEST_XXH3_64 && digest == zc_xxh3_64(base + 5, sizeof *base, 0));
    CHECK(zc_bundle_tensor_digest(b, 2, &algo, &digest) == ZC_E_NOT_FOUND);
    CHECK(strstr(zc_last_error(), "no tensor 2") != NULL);
    CHECK(zc_bundle_tensor_digest(b, 0, NULL, &digest) == ZC_E_INVALID);
    /* the plain-values digest equals the put's, strided included */
    uint64_t plain = 0;
    REQUIRE_OK(zc_digest_host_tensor(base, ZC_F32, 2, dims, &plain));
    float transposed[12];
    transpose_4x3(base, transposed);
    CHECK(plain == zc_xxh3_64(transposed, sizeof transposed, 0));
    CHECK(zc_digest_host_tensor(base, 99, 2, dims, &plain) == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "the tensor to digest") != NULL);
    REQUIRE_OK(zc_store_put(s, "two", b, 0, NULL));
    /* a one-call put that fails stores nothing and keeps what the tag held */
    CHECK(zc_store_put_host_copy(s, "bad tag", "latent", base, ZC_F32, 2, dims, 0, &gen) ==
          ZC_E_INVALID);
    CHECK(zc_store_put_host_copy(s, "t", "latent", base, -1, 2, dims, 0, &gen) == ZC_E_INVALID);
    uint64_t gens[4];
    size_t count = 0;
    REQUIRE_OK(zc_store_generations(s, "t", gens, 4, &count));
    CHECK(count == 1 && gens[0] == 1);
    zc_store_close(s);
}

TEST(packed_metadata_sets_every_entry_and_names_a_bad_one)
{
    zc_bundle *b = fixture_bundle(4, 1.0f);
    REQUIRE(b != NULL);
    static const char packed[] = "family\0wan21\0empty\0\0note\0caf\xc3\xa9\0";
    REQUIRE_OK(zc_bundle_set_meta_packed(b, packed, sizeof packed - 1));
    REQUIRE_OK(zc_bundle_set_meta_packed(b, NULL, 0));
    CHECK(zc_bundle_set_meta_packed(b, "key\0value", 9) == ZC_E_INVALID); /* no final NUL */
    CHECK(strstr(zc_last_error(), "byte 0") != NULL);
    CHECK(zc_bundle_set_meta_packed(b, "ok\0v\0key", 9) == ZC_E_INVALID); /* a key alone */
    CHECK(strstr(zc_last_error(), "byte 5") != NULL);
    static const char reserved[] = "fine\0yes\0zc.tag\0x\0";
    CHECK(zc_bundle_set_meta_packed(b, reserved, sizeof reserved - 1) == ZC_E_INVALID);
    CHECK(zc_bundle_set_meta_packed(b, NULL, 3) == ZC_E_INVALID);
    zc_store *s = open_store(0, 0, 0);
    REQUIRE(s != NULL);
    REQUIRE_OK(zc_store_put(s, "m", b, 0, NULL));
    zc_view *v;
    REQUIRE_OK(zc_store_get(s, "m", 0, &v));
    CHECK(zc_view_meta(v, "family") && strcmp(zc_view_meta(v, "family"), "wan21") == 0);
    CHECK(zc_view_meta(v, "empty") && zc_view_meta(v, "empty")[0] == '\0');
    CHECK(zc_view_meta(v, "note") && strcmp(zc_view_meta(v, "note"), "caf\xc3\xa9") == 0);
    CHECK(zc_view_meta(v, "ok") && strcmp(zc_view_meta(v, "ok"), "v") == 0); /* set before the bad one */
    CHECK(zc_view_meta(v, "fine") != NULL && zc_view_meta(v, "zc.tag") == NULL);
    /* read back packed: every entry in order, the size told also when the buffer is short */
    char out[256];
    size_t len = 0;
    REQUIRE_OK(zc_view_meta_packed(v, out, sizeof out, &len));
    size_t expect = 0;
    for (uint32_t i = 0; i < zc_view_meta_count(v); i++) {
        const char *key, *value;
        REQUIRE_OK(zc_view_meta_at(v, i, &key, &value));
        CHECK(expect + strlen(key) + strlen(value) + 2 <= len);
        CHECK(strcmp(out + expect, key) == 0);
        expect += strlen(key) + 1;
        CHECK(strcmp(out + expect, value) == 0);
        expect += strlen(value) + 1;
    }
    CHECK(len == expect && zc_view_meta_count(v) >= 5);
    memset(out, 'x', sizeof out);
    size_t short_len = 0;
    CHECK(zc_view_meta_packed(v, out, len - 1, &short_len) == ZC_E_LIMIT && short_len == len);
    CHECK(out[0] == 'x'); /* unchanged */
    CHECK(zc_view_meta_packed(v, NULL, 0, &short_len) == ZC_E_LIMIT && short_len == len);
    CHECK(zc_view_meta_packed(v, out, sizeof out, NULL) == ZC_E_INVALID);
    CHECK(zc_view_meta_packed(NULL, out, sizeof out, &short_len) == ZC_E_INVALID);
    zc_view_release(v);
    zc_store_close(s);
}

TEST(every_dtype_and_rank_zero_and_empty)
{
    static const struct { uint8_t code, bits; int dtype; } types[] = {
        {ZC_DL_FLOAT, 32, ZC_F32}, {ZC_DL_FLOAT, 16, ZC_F16}, {ZC_DL_BFLOAT, 16, ZC_BF16},
        {ZC_DL_FLOAT, 64, ZC_F64}, {ZC_DL_FLOAT8_E4M3FN, 8, ZC_F8_E4M3FN},
        {ZC_DL_FLOAT8_E5M2, 8, ZC_F8_E5M2}, {ZC_DL_INT, 8, ZC_I8}, {ZC_DL_INT, 16, ZC_I16},
        {ZC_DL_INT, 32, ZC_I32}, {ZC_DL_INT, 64, ZC_I64}, {ZC_DL_UINT, 8, ZC_U8},
        {ZC_DL_BOOL, 8, ZC_BOOL},
    };
    uint8_t bytes[64];
    for (int i = 0; i < 64; i++)
        bytes[i] = (uint8_t)(i * 7 + 1);
    zc_bundle *b;
    REQUIRE_OK(zc_bundle_create(&b));
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        fixture_tensor ft;
        int64_t shape[1] = {64 / (types[k].bits / 8) / 2};
        fixture_f32(&ft, (float *)bytes, 1, shape);
        ft.dl.dtype.code = types[k].code;
        ft.dl.dtype.bits = types[k].bits;
        char name[16];
        snprintf(name, sizeof name, "t%zu", k);
        REQUIRE_OK(zc_bundle_add_copy(b, name, &ft.dl));
    }
    fixture_tensor scalar;
    fixture_f32(&scalar, (float *)bytes, 0, NULL);
    CHECK_OK(zc_bundle_add_copy(b, "scalar", &scalar.dl));
    fixture_tensor empty;
    int64_t eshape[2] = {0, 5};
    fixture_f32(&empty, NULL, 2, eshape);
    CHECK_OK(zc_bundle_add_copy(b, "empty", &empty.dl));
    CHECK(zc_bundle_count(b) == 14);
    zc_store *s = open_store(0, 0, 0);
    REQUIRE_OK(zc_store_put(s, "dtypes", b, 0, NULL));
    zc_view *v;
    REQUIRE_OK(zc_store_get(s, "dtypes", 0, &v));
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        zc_tensor_info ti;
        REQUIRE_OK(zc_view_tensor(v, (uint32_t)k, &ti));
        CHECK(ti.dtype == types[k].dtype);
        CHECK(ti.nbytes == 32);
        CHECK(memcmp(ti.data, bytes, 32) == 0);
    }
    zc_tensor_info ti;
    REQUIRE_OK(zc_view_tensor(v, 12, &ti));
    CHECK(ti.ndim == 0 && ti.nbytes == 4 && memcmp(ti.data, bytes, 4) == 0);
    REQUIRE_OK(zc_view_tensor(v, 13, &ti));
    CHECK(ti.nbytes == 0 && ti.digest == zc_xxh3_64(NULL, 0, 0));
    CHECK(zc_view_tensor(v, 14, &ti) == ZC_E_NOT_FOUND);
    zc_view_release(v);
    zc_store_close(s);
}

TEST(bad_input_is_refused_with_clear_errors)
{
    zc_bundle *b;
    REQUIRE_OK(zc_bundle_create(&b));
    float x[4] = {0};
    fixture_tensor ft;
    int64_t shape[1] = {4};
    fixture_f32(&ft, x, 1, shape);
    CHECK(zc_bundle_add_copy(b, "", &ft.dl) == ZC_E_INVALID);
    CHECK(zc_bundle_add_copy(b, "a\"b", &ft.dl) == ZC_E_INVALID);
    ft.dl.ndim = 9;
    CHECK(zc_bundle_add_copy(b, "x", &ft.dl) == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "rank 9") != NULL);
    ft.dl.ndim = 1;
    ft.dl.dtype.code = ZC_DL_COMPLEX;
    ft.dl.dtype.bits = 64;
    CHECK(zc_bundle_add_copy(b, "x", &ft.dl) == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "not supported") != NULL);
    ft.dl.dtype.code = ZC_DL_FLOAT;
    ft.dl.dtype.bits = 32;
    ft.shape[0] = -1;
    CHECK(zc_bundle_add_copy(b, "x", &ft.dl) == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "negative") != NULL);
    ft.shape[0] = 4;
    ft.dl.device.device_type = ZC_DL_CUDA;
    CHECK(zc_bundle_add_copy(b, "x", &ft.dl) == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "by reference") != NULL);
    ft.dl.device.device_type = ZC_DL_CPU;
    ft.shape[0] = INT64_MAX / 2;
    CHECK(zc_bundle_add_copy(b, "x", &ft.dl) == ZC_E_LIMIT);
    ft.shape[0] = 4;
    CHECK_OK(zc_bundle_add_copy(b, "x", &ft.dl));
    CHECK(zc_bundle_add_copy(b, "x", &ft.dl) == ZC_E_STATE);
    CHECK(strstr(zc_last_error(), "already has a tensor named \"x\"") != NULL);
    for (int i = 1; i < ZC_MAX_TENSORS; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        CHECK_OK(zc_bundle_add_copy(b, name, &ft.dl));
    }
    CHECK(zc_bundle_add_copy(b, "one_too_many", &ft.dl) == ZC_E_LIMIT);
    CHECK(zc_bundle_set_meta(b, "zc.digest.x", "nope") == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "reserves") != NULL);
    CHECK(zc_bundle_set_meta(b, "k", "\xff\xfe") == ZC_E_INVALID);
    CHECK_OK(zc_bundle_set_meta(b, "k", "v1"));
    CHECK_OK(zc_bundle_set_meta(b, "k", "v2 \xe2\x9c\x93"));
    zc_store *s = open_store(0, 0, 0);
    CHECK(zc_store_put(s, "bad/tag", b, 0, NULL) == ZC_E_INVALID);
    CHECK(zc_store_put(s, "t", b, ZC_PUT_SPILL, NULL) == ZC_E_UNSUPPORTED);
    CHECK(strstr(zc_last_error(), "no spill directory") != NULL);
    zc_bundle *empty;
    REQUIRE_OK(zc_bundle_create(&empty));
    CHECK(zc_store_put(s, "t", empty, 0, NULL) == ZC_E_INVALID);
    zc_bundle_free(empty);
    CHECK_OK(zc_store_put(s, "t", b, 0, NULL));
    zc_view *v = NULL;
    CHECK(zc_store_get(s, "nope", 0, &v) == ZC_E_NOT_FOUND);
    CHECK(strstr(zc_last_error(), "no latent is stored under tag \"nope\"") != NULL);
    CHECK(zc_store_get(s, "t", 7, &v) == ZC_E_NOT_FOUND);
    CHECK(strstr(zc_last_error(), "no generation 7") != NULL);
    zc_store_close(s);
}

TEST(ring_keeps_depth_and_generations_grow)
{
    zc_store *s = open_store(3, 0, 0);
    REQUIRE(s != NULL);
    for (int i = 1; i <= 7; i++) {
        uint64_t gen;
        REQUIRE_OK(zc_store_put(s, "ring", fixture_bundle(8, (float)i), 0, &gen));
        CHECK(gen == (uint64_t)i);
    }
    zc_store_stats st;
    zc_store_stats_get(s, &st);
    CHECK(st.slots == 3 && st.tags == 1 && st.host_bytes == 3 * 32);
    zc_view *v;
    CHECK(zc_store_get(s, "ring", 4, &v) == ZC_E_NOT_FOUND);
    REQUIRE_OK(zc_store_get(s, "ring", 5, &v));
    zc_tensor_info ti;
    zc_view_tensor(v, 0, &ti);
    CHECK(((float *)ti.data)[1] == 5.0f);
    zc_view_release(v);
    REQUIRE_OK(zc_store_get(s, "ring", 0, &v));
    CHECK(zc_view_generation(v) == 7);
    zc_view_release(v);
    CHECK_OK(zc_store_set_depth(s, "ring", 1));
    zc_store_stats_get(s, &st);
    CHECK(st.slots == 1);
    CHECK(zc_store_set_depth(s, "ring", 0) == ZC_E_INVALID);
    CHECK_OK(zc_store_drop(s, "ring", 0));
    CHECK(zc_store_drop(s, "ring", 0) == ZC_E_NOT_FOUND);
    uint64_t gen;
    REQUIRE_OK(zc_store_put(s, "ring", fixture_bundle(8, 1), 0, &gen));
    CHECK(gen == 8); /* generations never repeat, even after a drop */
    zc_store_close(s);
}

TEST(view_outlives_eviction_and_drop)
{
    zc_store *s = open_store(1, 0, 0);
    REQUIRE_OK(zc_store_put(s, "a", fixture_bundle(1024, 2.0f), 0, NULL));
    zc_view *v;
    REQUIRE_OK(zc_store_get(s, "a", 0, &v));
    REQUIRE_OK(zc_store_put(s, "a", fixture_bundle(1024, 3.0f), 0, NULL)); /* ring pushes it out */
    zc_store_stats st;
    zc_store_stats_get(s, &st);
    CHECK(st.retained_bytes == 4096);
    zc_tensor_info ti;
    zc_view_tensor(v, 0, &ti);
    CHECK(((float *)ti.data)[1023] == 2046.0f); /* ASan would flag a use after free here */
    void *m;
    REQUIRE_OK(zc_view_export_dlpack(v, 0, 1, &m));
    zc_view_release(v);
    CHECK_OK(zc_store_drop(s, "a", 0));
    zc_dl_managed_versioned *mv = m;
    CHECK(mv->version.major == 1 && mv->dl_tensor.ndim == 1 && mv->dl_tensor.shape[0] == 1024);
    CHECK(((float *)mv->dl_tensor.data)[1023] == 2046.0f);
    zc_store_stats_get(s, &st);
    CHECK(st.retained_bytes == 4096 && st.slots == 0);
    zc_store_close(s); /* the exported tensor even outlives the store */
    CHECK(((float *)mv->dl_tensor.data)[10] == 20.0f);
    mv->deleter(mv);
}

TEST(export_legacy_and_versioned_dlpack)
{
    zc_store *s = open_store(0, 0, 0);
    float data[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    fixture_tensor ft;
    fixture_f32(&ft, data, 2, shape);
    zc_bundle *b;
    zc_bundle_create(&b);
    zc_bundle_add_copy(b, "x", &ft.dl);
    REQUIRE_OK(zc_store_put(s, "e", b, 0, NULL));
    zc_view *v;
    REQUIRE_OK(zc_store_get(s, "e", 0, &v));
    void *m1, *m2;
    REQUIRE_OK(zc_view_export_dlpack(v, 0, 0, &m1));
    REQUIRE_OK(zc_view_export_dlpack(v, 0, 1, &m2));
    CHECK(zc_view_export_dlpack(v, 1, 1, &m2) == ZC_E_NOT_FOUND);
    zc_dl_managed *legacy = m1;
    zc_dl_managed_versioned *ver = m2;
    CHECK(legacy->dl_tensor.strides[0] == 3 && legacy->dl_tensor.strides[1] == 1);
    CHECK(legacy->dl_tensor.dtype.code == ZC_DL_FLOAT && legacy->dl_tensor.dtype.bits == 32);
    CHECK(legacy->dl_tensor.data == ver->dl_tensor.data);
    CHECK(legacy->dl_tensor.device.device_type == ZC_DL_CPU);
    zc_view_release(v);
    zc_store_close(s);
    legacy->deleter(legacy);
    ver->deleter(ver);
}

TEST(reference_tensors_call_their_deleter_exactly_once)
{
    int deleted = 0;
    float fake_device[8] = {0};
    int64_t shape[1] = {8};
    zc_store *s = open_store(2, 0, 0);
    for (int i = 0; i < 3; i++) {
        zc_bundle *b;
        zc_bundle_create(&b);
        void *m = fixture_managed_new(fake_device, ZC_DL_CUDA, 1, shape, &deleted);
        REQUIRE_OK(zc_bundle_add_reference(b, "video", m, 1, NULL));
        REQUIRE_OK(zc_store_put(s, "ref", b, 0, NULL));
    }
    CHECK(deleted == 1); /* the ring of depth 2 let the first go */
    zc_view *v;
    REQUIRE_OK(zc_store_get(s, "ref", 0, &v));
    zc_tensor_info ti;
    zc_view_tensor(v, 0, &ti);
    CHECK(ti.tier == ZC_TIER_DEVICE && ti.device_type == ZC_DL_CUDA && ti.data == fake_device);
    CHECK(!ti.has_digest);
    zc_store_stats st;
    zc_store_stats_get(s, &st);
    CHECK(st.device_bytes == 64 && st.host_bytes == 0);
    /* Spilling a device tensor without a host copy is refused up front. */
    zc_bundle *b;
    zc_bundle_create(&b);
    REQUIRE_OK(zc_bundle_add_reference(b, "video",
                                       fixture_managed_new(fake_device, ZC_DL_CUDA, 1, shape, &deleted),
                                       1, NULL));
    zc_bundle_free(b);
    CHECK(deleted == 2);
    /* A failing add still consumes the managed tensor. */
    zc_bundle_create(&b);
    int64_t bad[1] = {-3};
    CHECK(zc_bundle_add_reference(b, "video", fixture_managed_new(fake_device, ZC_DL_CUDA, 1, bad,
                                  &deleted), 1, NULL) == ZC_E_INVALID);
    CHECK(deleted == 3);
    /* With a host copy the tensor gets a digest. */
    float host[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    fixture_tensor hc;
    fixture_f32(&hc, host, 1, shape);
    REQUIRE_OK(zc_bundle_add_reference(b, "video",
                                       fixture_managed_new(fake_device, ZC_DL_CUDA, 1, shape, &deleted),
                                       1, &hc.dl));
    int64_t other[1] = {4};
    fixture_tensor mismatch;
    fixture_f32(&mismatch, host, 1, other);
    CHECK(zc_bundle_add_reference(b, "audio", fixture_managed_new(fake_device, ZC_DL_CUDA, 1, shape,
                                  &deleted), 1, &mismatch.dl) == ZC_E_INVALID);
    CHECK(deleted == 4);
    REQUIRE_OK(zc_store_put(s, "ref", b, 0, NULL));
    CHECK(deleted == 5); /* generation 2 left the ring of depth 2 */
    zc_view *v2;
    REQUIRE_OK(zc_store_get(s, "ref", 0, &v2));
    zc_view_tensor(v2, 0, &ti);
    CHECK(ti.has_digest && ti.digest == zc_xxh3_64(host, sizeof host, 0));
    zc_view_release(v2);
    zc_store_close(s);
    CHECK(deleted == 6); /* generation 4 went; generation 3 is still viewed */
    zc_view_release(v);
    CHECK(deleted == 7);
}

TEST(budget_evicts_lru_across_tags_but_not_held_or_newest)
{
    /* Each bundle is 400 bytes (100 floats); the host budget holds 3. */
    zc_store *s = open_store(4, 1200, 0);
    REQUIRE_OK(zc_store_put(s, "a", fixture_bundle(100, 1), 0, NULL)); /* a1 */
    REQUIRE_OK(zc_store_put(s, "a", fixture_bundle(100, 2), 0, NULL)); /* a2 */
    REQUIRE_OK(zc_store_put(s, "b", fixture_bundle(100, 3), 0, NULL)); /* b1 */
    zc_view *v;
    REQUIRE_OK(zc_store_get(s, "a", 1, &v)); /* a1 is now most recently used and held */
    zc_bundle *held = fixture_bundle(100, 4);
    /* a1 is held, a2 is a's newest and b1 is b's newest: nothing can go. */
    CHECK(zc_store_put(s, "c", held, 0, NULL) == ZC_E_BUDGET);
    CHECK(strstr(zc_last_error(), "only 0 can be evicted") != NULL);
    zc_store_stats st;
    zc_store_stats_get(s, &st);
    CHECK(st.evictions == 0 && st.host_bytes == 1200 && st.slots == 3);
    zc_view_release(v);
    REQUIRE_OK(zc_store_put(s, "c", held, 0, NULL)); /* released: a1 can go now */
    zc_store_stats_get(s, &st);
    CHECK(st.evictions == 1 && st.host_bytes == 1200);
    zc_store_close(s);

    s = open_store(4, 1200, 0);
    REQUIRE_OK(zc_store_put(s, "a", fixture_bundle(100, 1), 0, NULL));
    REQUIRE_OK(zc_store_put(s, "a", fixture_bundle(100, 2), 0, NULL));
    REQUIRE_OK(zc_store_put(s, "b", fixture_bundle(100, 3), 0, NULL));
    REQUIRE_OK(zc_store_put(s, "c", fixture_bundle(100, 4), 0, NULL));
    zc_store_stats_get(s, &st);
    CHECK(st.evictions == 1 && st.host_bytes == 1200 && st.slots == 3);
    CHECK(zc_store_get(s, "a", 1, &v) == ZC_E_NOT_FOUND); /* the LRU non-newest slot went */
    CHECK(zc_store_get(s, "a", 2, &v) == ZC_OK);
    zc_view_release(v);
    /* Now every slot is a tag's newest: a new tag cannot fit without permission. */
    zc_bundle *b = fixture_bundle(100, 5);
    CHECK(zc_store_put(s, "d", b, 0, NULL) == ZC_E_BUDGET);
    CHECK(strstr(zc_last_error(), "host budget exceeded for tag \"d\"") != NULL);
    CHECK(strstr(zc_last_error(), "needs 400 bytes, the budget is 1200") != NULL);
    zc_store_stats_get(s, &st);
    CHECK(st.slots == 3 && st.host_bytes == 1200); /* nothing lost */
    REQUIRE_OK(zc_store_put(s, "d", b, ZC_PUT_MAY_EVICT_NEWEST, NULL));
    zc_store_stats_get(s, &st);
    CHECK(st.slots == 3 && st.evictions == 2);
    CHECK(zc_store_get(s, "b", 0, &v) == ZC_E_NOT_FOUND); /* b was least recently used */
    /* A bundle larger than the whole budget is refused outright. */
    b = fixture_bundle(1000, 1);
    CHECK(zc_store_put(s, "e", b, ZC_PUT_MAY_EVICT_NEWEST, NULL) == ZC_E_BUDGET);
    zc_bundle_free(b);
    zc_store_close(s);
}

TEST(device_budget_counts_references)
{
    int deleted = 0;
    float fake[25];
    int64_t shape[1] = {25};
    zc_store *s = open_store(4, 0, 200);
    for (int i = 0; i < 3; i++) {
        zc_bundle *b;
        zc_bundle_create(&b);
        zc_bundle_add_reference(b, "v", fixture_managed_new(fake, ZC_DL_CUDA, 1, shape, &deleted), 1,
                                NULL);
        REQUIRE_OK(zc_store_put(s, "dev", b, 0, NULL));
    }
    zc_store_stats st;
    zc_store_stats_get(s, &st);
    CHECK(st.device_bytes == 200 && st.evictions == 1 && deleted == 1);
    zc_store_close(s);
    CHECK(deleted == 3);
}

TEST(describe_json_lists_tags)
{
    zc_store *s = open_store(0, 0, 0);
    zc_bundle *b = fixture_bundle(4, 1);
    zc_bundle_set_meta(b, "note", "quote \" backslash \\ newline \n");
    REQUIRE_OK(zc_store_put(s, "described", b, 0, NULL));
    size_t need = 0;
    CHECK(zc_store_describe_json(s, NULL, 0, &need) == ZC_E_LIMIT);
    REQUIRE(need > 10);
    char *buf = malloc(need);
    REQUIRE_OK(zc_store_describe_json(s, buf, need, NULL));
    CHECK(strstr(buf, "\"tag\":\"described\"") != NULL);
    CHECK(strstr(buf, "\"dtype\":\"F32\",\"shape\":[4]") != NULL);
    CHECK(strstr(buf, "quote \\\" backslash \\\\ newline \\n") != NULL);
    CHECK(strstr(buf, "\"digest\":\"xxh3:") != NULL);
    free(buf);
    zc_store_close(s);
}

TEST(abi_description_is_whole_json_with_this_builds_layout)
{
    size_t need = 0;
    CHECK(zc_abi_describe(NULL, 0, &need) == ZC_E_LIMIT);
    REQUIRE(need > 1000);
    char *buf = malloc(need);
    CHECK(zc_abi_describe(buf, need - 1, NULL) == ZC_E_LIMIT);
    REQUIRE_OK(zc_abi_describe(buf, need, NULL));
    CHECK(strlen(buf) + 1 == need && buf[0] == '{' && buf[need - 2] == '}');
    char expect[128];
    snprintf(expect, sizeof expect,
             "\"zc_store_config\":{\"size\":%zu,\"fields\":[[\"default_depth\",0,4],",
             sizeof(zc_store_config));
    CHECK(strstr(buf, expect) != NULL);
    snprintf(expect, sizeof expect, "[\"spill_delay_ms\",%zu,4]",
             offsetof(zc_store_config, spill_delay_ms));
    CHECK(strstr(buf, expect) != NULL);
    CHECK(strstr(buf, "\"ZC_E_EXISTS\":-10") != NULL);
    CHECK(strstr(buf, "\"ZC_MAX_GENERATION\":9223372036854775807") != NULL);
    CHECK(strstr(buf, "{\"code\":4,\"name\":\"F8_E4M3\",\"size\":1,\"dlpack_code\":10,"
                      "\"dlpack_bits\":8}") != NULL);
    free(buf);
}

TEST(many_tags_lookup)
{
    zc_store *s = open_store(1, 0, 0);
    char tag[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(tag, sizeof tag, "tag_%d", i);
        REQUIRE_OK(zc_store_put(s, tag, fixture_bundle(2, (float)i), 0, NULL));
    }
    for (int i = 0; i < 3000; i += 7) {
        zc_view *v;
        snprintf(tag, sizeof tag, "tag_%d", i);
        REQUIRE_OK(zc_store_get(s, tag, 0, &v));
        zc_tensor_info ti;
        zc_view_tensor(v, 0, &ti);
        CHECK(((float *)ti.data)[1] == (float)i);
        zc_view_release(v);
    }
    zc_store_stats st;
    zc_store_stats_get(s, &st);
    CHECK(st.tags == 3000);
    zc_store_close(s);
}

TEST(store_bundles_recycle_buffers_of_evicted_slots)
{
    zc_store *s = open_store(1, 0, 0);
    float data[1024];
    for (int i = 0; i < 1024; i++)
        data[i] = (float)i;
    int64_t shape[1] = {1024};
    fixture_tensor ft;
    fixture_f32(&ft, data, 1, shape);
    void *seen[3] = {NULL, NULL, NULL};
    for (int round = 0; round < 3; round++) {
        zc_bundle *b;
        REQUIRE_OK(zc_store_bundle_create(s, &b));
        REQUIRE_OK(zc_bundle_add_copy(b, "latent_tensor", &ft.dl));
        REQUIRE_OK(zc_store_put(s, "pool", b, 0, NULL));
        zc_view *v;
        REQUIRE_OK(zc_store_get(s, "pool", 0, &v));
        zc_tensor_info ti;
        zc_view_tensor(v, 0, &ti);
        seen[round] = ti.data;
        CHECK(memcmp(ti.data, data, sizeof data) == 0);
        CHECK(ti.digest == zc_xxh3_64(data, sizeof data, 0));
        zc_view_release(v);
    }
    /* Depth 1: each put evicts the previous slot, whose buffer the next put reuses. */
    CHECK(seen[2] == seen[0]);
    zc_store_stats st;
    zc_store_stats_get(s, &st);
    CHECK(st.pooled_bytes == sizeof data);
    zc_store_close(s);
}

static void *put_filled(zc_store *s, const char *tag, size_t floats)
{
    static float data[16384];
    for (size_t i = 0; i < floats; i++)
        data[i] = (float)i;
    int64_t shape[1] = {(int64_t)floats};
    fixture_tensor ft;
    fixture_f32(&ft, data, 1, shape);
    zc_bundle *b;
    if (zc_store_bundle_create(s, &b) != ZC_OK || zc_bundle_add_copy(b, "latent_tensor", &ft.dl) != ZC_OK ||
        zc_store_put(s, tag, b, 0, NULL) != ZC_OK)
        return NULL;
    zc_view *v;
    if (zc_store_get(s, tag, 0, &v) != ZC_OK)
        return NULL;
    zc_tensor_info ti;
    zc_view_tensor(v, 0, &ti);
    void *where = ti.data;
    zc_view_release(v);
    return where;
}

TEST(buffer_pool_makes_room_for_the_newest_buffer)
{
    /* host budget 256 KiB -> pool cap 64 KiB. A 16 KiB buffer is pooled first; the 64 KiB
     * buffer returned after it does not fit beside it, so the older one is freed, and the
     * next 64 KiB put reuses the newest buffer instead of faulting in fresh pages. */
    zc_store *s = open_store(1, 256 << 10, 0);
    REQUIRE(s != NULL);
    REQUIRE(put_filled(s, "small", 4096) != NULL);
    REQUIRE_OK(zc_store_drop(s, "small", 0));
    zc_store_stats st;
    zc_store_stats_get(s, &st);
    CHECK(st.pooled_bytes == 16 << 10);
    void *first = put_filled(s, "large", 16384);
    REQUIRE(first != NULL);
    REQUIRE_OK(zc_store_drop(s, "large", 0));
    zc_store_stats_get(s, &st);
    CHECK(st.pooled_bytes == 64 << 10);
    CHECK(put_filled(s, "large", 16384) == first);
    zc_store_stats_get(s, &st);
    CHECK(st.pooled_bytes == 0);
    zc_store_close(s);
}

TEST(budget_lets_a_tag_replace_its_own_newest_slot)
{
    /* The budget holds one 400-byte bundle: a film on one tag must still go on. */
    zc_store *s = open_store(4, 500, 0);
    REQUIRE_OK(zc_store_put(s, "film", fixture_bundle(100, 1), 0, NULL));
    REQUIRE_OK(zc_store_put(s, "film", fixture_bundle(100, 2), 0, NULL));
    zc_store_stats st;
    zc_store_stats_get(s, &st);
    CHECK(st.slots == 1 && st.evictions == 1 && st.host_bytes == 400);
    /* Another tag's newest is still protected. */
    zc_bundle *b = fixture_bundle(100, 3);
    CHECK(zc_store_put(s, "other", b, 0, NULL) == ZC_E_BUDGET);
    zc_bundle_free(b);
    zc_store_close(s);
}
