/*
 * test_safetensors.c — the file format: JSON reader, safetensors writer and
 * hardened reader, crash safety, and the malformed regression corpus.
 * Run from the repository root (the corpora are found by relative path):
 *   make build/test_engine && ./build/test_engine safetensors
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "core/internal.h"
#include "format/json_reader.h"
#include "core/utf8.h"
#include "platform/platform_test.h"

#define MALFORMED_DIR "engine/tests/malformed"
#define SEED_DIR "engine/fuzz/corpus"

/* ---- helpers ---- */

/* Add a host tensor of the given dtype/shape filled from seed. */
static int add_tensor(zc_bundle *b, const char *name, int dtype, int32_t ndim, const int64_t *shape,
                      uint32_t seed)
{
    uint64_t nbytes;
    if (zc__shape_nbytes(ndim, shape, zc_dtype_size(dtype), &nbytes) != 0)
        return ZC_E_LIMIT;
    void *host = zc__host_alloc(nbytes);
    if (host == NULL)
        return ZC_E_NOMEM;
    fixture_fill(host, (size_t)nbytes, seed);
    int rc = zc__bundle_adopt_host(b, name, dtype, ndim, shape, host, nbytes, ZC_DIGEST_XXH3_64,
                                   zc_xxh3_64(host, (size_t)nbytes, 0));
    if (rc != ZC_OK)
        zc__host_free(host);
    return rc;
}

/* REQUIRE a new bundle in b (zc_bundle_create), then REQUIRE add_tensor(b, ...) on it. */
#define REQUIRE_BUNDLE_OF(b, ...)                                              \
    do {                                                                       \
        REQUIRE_OK(zc_bundle_create(&(b)));                                    \
        REQUIRE_OK(add_tensor((b), __VA_ARGS__));                              \
    } while (0)

/* REQUIRE writing b to path, then declare `zc_file *f` on the file and `zc_file_tensor t`, its
 * tensor 0, REQUIRE-ing each. */
#define REQUIRE_WRITTEN_AND_OPEN(path, b, f, t)                                \
    REQUIRE_OK(zc__safetensors_write(path, b, NULL, 0));                       \
    zc_file *f = NULL;                                                         \
    zc_file_tensor t;                                                          \
    REQUIRE_OK(zc_file_open(path, &f));                                        \
    REQUIRE_OK(zc_file_tensor_at(f, 0, &t))

/* The whole file, NUL-terminated, read through the platform layer. */
static uint8_t *slurp(const char *path, size_t *len)
{
    zc_os_file f = ZC_OS_FILE_CLOSED;
    uint8_t *buf = NULL;
    uint64_t size = 0;
    int regular = 0;
    size_t got = 0;
    if (zc_os_file_open_read(path, &f) != 0)
        return NULL;
    if (zc_os_file_info(f, &size, &regular) == 0 && regular && (buf = malloc(size + 1)) != NULL) {
        if (zc_os_file_read_at(f, buf, (size_t)size, 0, &got) != 0 || got != size) {
            free(buf);
            buf = NULL;
        } else {
            *len = got;
            buf[got] = '\0';
        }
    }
    zc_os_file_close(&f);
    return buf;
}

/* Number of entries in dir whose name starts with prefix. */
static int count_prefixed(const char *dir, const char *prefix)
{
    return zc_test_count(dir, prefix, "");
}

static int count_entries(const char *dir)
{
    return zc_test_count(dir, "", "");
}

/* The OS's words for a missing directory on a path, as messages quote them. */
static const char *missing_dir_text(char *buf, size_t cap)
{
#ifdef _WIN32
    return zc_os_error_text(3 /* ERROR_PATH_NOT_FOUND */, buf, cap);
#else
    return zc_os_error_text(ENOENT, buf, cap);
#endif
}

/* Flip bits of the byte at offset in the file (stdio: ASCII test paths). */
static int flip_byte(const char *path, uint64_t offset, int bits)
{
    FILE *fp = fopen(path, "r+b");
    int rc = -1;
    if (fp == NULL)
        return -1;
    if (fseek(fp, (long)offset, SEEK_SET) == 0) {
        int c = fgetc(fp);
        if (c != EOF && fseek(fp, (long)offset, SEEK_SET) == 0 && fputc(c ^ bits, fp) != EOF)
            rc = 0;
    }
    return fclose(fp) == 0 ? rc : -1;
}

/* The JSON header of a file image as a NUL-terminated copy. */
static char *header_text(const uint8_t *img, size_t len)
{
    uint64_t n = 0;
    if (len < 8)
        return NULL;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | img[i];
    if (n > len - 8)
        return NULL;
    return zc__strndup((const char *)img + 8, (size_t)n);
}

/* Check that every tensor of b is in f with the same description and bytes. */
static void check_file_matches_bundle(zc_file *f, const zc_bundle *b)
{
    for (uint32_t i = 0; i < b->count; i++) {
        const zc_tensor *t = &b->tensors[i];
        uint32_t idx;
        zc_file_tensor ft;
        REQUIRE_OK(zc_file_find(f, t->name, &idx));
        REQUIRE_OK(zc_file_tensor_at(f, idx, &ft));
        CHECK(strcmp(ft.name, t->name) == 0);
        CHECK(ft.dtype == t->dtype);
        CHECK(ft.ndim == t->ndim);
        for (int32_t d = 0; d < t->ndim; d++)
            CHECK(ft.shape[d] == t->shape[d]);
        CHECK(ft.nbytes == t->nbytes);
        CHECK(ft.has_digest == 1);
        CHECK(ft.recorded_digest == t->digest);
        uint8_t *buf = malloc(t->nbytes + 1);
        uint64_t d = 0;
        REQUIRE(buf != NULL);
        CHECK_OK(zc_file_read(f, idx, buf, (size_t)t->nbytes, &d));
        CHECK(d == t->digest);
        CHECK(t->nbytes == 0 || memcmp(buf, t->host, (size_t)t->nbytes) == 0);
        free(buf);
    }
}

/* ---- JSON reader ---- */

static const zc_json_limits test_limits = {16, 1u << 16, 1024};

static int parse(const char *text, zc_json_doc *doc, zc_json_error *err)
{
    return zc__json_parse(text, strlen(text), &test_limits, doc, err);
}

TEST(safetensors_json_decodes_escapes_and_surrogate_pairs)
{
    zc_json_doc doc;
    zc_json_error err;
    const char *text = "[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\", \"\\u00e9\\u65E5\", \"\\ud83d\\ude00\", "
                       "\"raw \xc3\xa9 \xf0\x9f\x98\x80\"]";
    REQUIRE(parse(text, &doc, &err) == 0);
    const zc_json_node *root = zc__json_node(&doc, 0);
    REQUIRE(root->type == ZC_JSON_ARRAY && root->count == 4);
    const zc_json_node *s0 = zc__json_node(&doc, root->child);
    const zc_json_node *s1 = zc__json_node(&doc, s0->next);
    const zc_json_node *s2 = zc__json_node(&doc, s1->next);
    const zc_json_node *s3 = zc__json_node(&doc, s2->next);
    CHECK(strcmp(zc__json_str(&doc, s0), "a\"b\\c/d\b\f\n\r\t") == 0);
    CHECK(s0->len == 12);
    CHECK(strcmp(zc__json_str(&doc, s1), "\xc3\xa9\xe6\x97\xa5") == 0);
    CHECK(strcmp(zc__json_str(&doc, s2), "\xf0\x9f\x98\x80") == 0);
    CHECK(strcmp(zc__json_str(&doc, s3), "raw \xc3\xa9 \xf0\x9f\x98\x80") == 0);
    CHECK(s3->next == ZC_JSON_NONE);
    zc__json_free(&doc);
}

TEST(safetensors_json_numbers)
{
    zc_json_doc doc;
    zc_json_error err;
    REQUIRE(parse(" [0, 18446744073709551615, 18446744073709551616, -1, 1.5, 1e3, -0] ", &doc,
                  &err) == 0);
    const zc_json_node *n = zc__json_node(&doc, zc__json_node(&doc, 0)->child);
    CHECK(n->is_uint && n->num == 0);
    n = zc__json_node(&doc, n->next);
    CHECK(n->is_uint && n->num == UINT64_MAX);
    for (int i = 0; i < 5; i++) { /* too large, negative, fraction, exponent, -0 */
        n = zc__json_node(&doc, n->next);
        CHECK(n->type == ZC_JSON_NUMBER && !n->is_uint);
    }
    zc__json_free(&doc);
    const char *bad[] = {"01", "-", "1.", ".5", "1e", "+1", "0x10", "1.e3", "--1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(parse(bad[i], &doc, &err) == -1);
}

TEST(safetensors_json_rejects_hostile_text)
{
    zc_json_doc doc;
    zc_json_error err;
    struct {
        const char *text;
        const char *fragment;
    } cases[] = {
        {"\"\\ud800\"", "high surrogate"},
        {"\"\\udfff\"", "lone low surrogate"},
        {"\"\\ud800\\ud800\"", "not a low surrogate"},
        {"\"\\u0000\"", "\\u0000"},
        {"\"a\x01\"", "raw control character"},
        {"\"\xff\"", "invalid UTF-8"},
        {"\"\xc0\x80\"", "invalid UTF-8"},
        {"\"\xed\xbf\xbf\"", "invalid UTF-8"},
        {"\"\xf4\x90\x80\x80\"", "invalid UTF-8"},
        {"\"abc", "unterminated string"},
        {"\"\\", "unterminated escape"},
        {"{\"a\":1,\"a\":2}", "duplicate key \"a\""},
        {"{\"a\":1,\"\\u0061\":2}", "duplicate key \"a\""},
        {"[1,]", "expected a JSON value"},
        {"{} {}", "after the JSON value"},
        {"", "expected a JSON value"},
        {"   ", "expected a JSON value"},
        {"tru", "expected a JSON value"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = parse(cases[i].text, &doc, &err);
        CHECK(rc == -1);
        CHECK(doc.nodes == NULL && doc.strings == NULL);
        if (rc == -1 && strstr(err.msg, cases[i].fragment) == NULL) {
            fprintf(stderr, "  case %zu: \"%s\" lacks \"%s\"\n", i, err.msg, cases[i].fragment);
            CHECK(!"message names the fault");
        }
    }
}

TEST(safetensors_json_limits_bound_depth_nodes_and_members)
{
    zc_json_doc doc;
    zc_json_error err;
    zc_json_limits lim = {4, 10, 3};
    size_t n = 200000;
    char *deep = malloc(2 * n + 1);
    REQUIRE(deep != NULL);
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    deep[2 * n] = '\0';
    CHECK(zc__json_parse(deep, 2 * n, &lim, &doc, &err) == -1);
    CHECK(strstr(err.msg, "nested deeper than 4") != NULL);
    CHECK(zc__json_parse(deep + n - 4, 8, &lim, &doc, &err) == 0); /* exactly 4 deep */
    zc__json_free(&doc);
    free(deep);
    CHECK(zc__json_parse("[1,2,3,4,5,6,7,8,9,10]", 22, &lim, &doc, &err) == -1);
    CHECK(strstr(err.msg, "more than 10 JSON values") != NULL);
    CHECK(zc__json_parse("{\"a\":1,\"b\":2,\"c\":3,\"d\":4}", 25, &lim, &doc, &err) == -1);
    CHECK(strstr(err.msg, "more than 3 members") != NULL);
}

TEST(safetensors_json_quote_keeps_messages_printable)
{
    char out[16];
    zc__json_quote("a\"b\\c\n", 6, out, sizeof out);
    CHECK(strcmp(out, "a\\\"b\\\\c\\x0a") == 0);
    zc__json_quote("abcdefghijklmnopqrstuvwxyz", 26, out, sizeof out);
    CHECK(strcmp(out, "abcdefghijkl...") == 0);
    /* Never cut a UTF-8 sequence: 8 two-byte characters do not all fit. */
    zc__json_quote("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 16, out, sizeof out);
    CHECK(strcmp(out, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9...") == 0);
    CHECK(zc__utf8_valid(out, strlen(out)) == 0);
    zc__json_quote("\xff", 1, out, sizeof out);
    CHECK(strcmp(out, "\\xff") == 0);
}

/* ---- round trips ---- */

TEST(safetensors_roundtrip_every_dtype_and_rank)
{
    TEST_FOLDER(dir, "st-dtypes");
    for (int dtype = 0; dtype < ZC_DTYPE_COUNT; dtype++) {
        zc_bundle *b = NULL;
        REQUIRE_OK(zc_bundle_create(&b));
        /* Ranks 0..8 plus zero-size tensors of ranks 1..3. */
        for (int32_t r = 0; r <= ZC_MAX_RANK; r++) {
            int64_t shape[ZC_MAX_RANK];
            char name[32];
            for (int32_t d = 0; d < r; d++)
                shape[d] = 1 + (d + r + dtype) % 3;
            snprintf(name, sizeof name, "rank%d", (int)r);
            CHECK_OK(add_tensor(b, name, dtype, r, shape, (uint32_t)(dtype * 16 + r)));
        }
        for (int32_t r = 1; r <= 3; r++) {
            int64_t shape[3] = {2, 3, 4};
            char name[32];
            shape[r - 1] = 0;
            snprintf(name, sizeof name, "empty%d", (int)r);
            CHECK_OK(add_tensor(b, name, dtype, r, shape, 0));
        }
        char fname[64];
        snprintf(fname, sizeof fname, "%s.safetensors", zc_dtype_name(dtype));
        char *path = zc_test_join(dir, fname);
        CHECK_OK(zc__safetensors_write(path, b, NULL, 0));
        zc_file *f = NULL;
        CHECK_OK(zc_file_open(path, &f));
        if (f) {
            CHECK(zc_file_count(f) == b->count);
            check_file_matches_bundle(f, b);
            zc_file_close(f);
        }
        /* The same checks through the in-memory reader. */
        size_t len = 0;
        uint8_t *img = slurp(path, &len);
        CHECK(img != NULL);
        if (img && zc_file_open_memory(img, len, &f) == ZC_OK) {
            check_file_matches_bundle(f, b);
            zc_file_close(f);
        } else {
            CHECK(!"open_memory");
        }
        free(img);
        free(path);
        zc_bundle_free(b);
    }
    CHECK(count_prefixed(dir, ZC_TMP_PREFIX) == 0);
}

TEST(safetensors_roundtrip_load_bundle_and_large_tensor)
{
    TEST_FOLDER(dir, "st-load");
    char *path = zc_test_join(dir, "big.latent");
    zc_bundle *b = NULL, *back = NULL;
    REQUIRE_OK(zc_bundle_create(&b));
    /* Many read chunks, an odd tail, and past the writer's writeback step. */
    int64_t big[2] = {3, (1 << 22) + 5};
    int64_t small[1] = {7};
    REQUIRE_OK(add_tensor(b, "latent_tensor", ZC_F32, 2, big, 1));
    REQUIRE_OK(add_tensor(b, "mask", ZC_U8, 1, small, 2));
    REQUIRE_OK(zc_bundle_set_meta(b, "family", "wan21"));
    REQUIRE_OK(zc__safetensors_write(path, b, NULL, 0));
    zc_file *f = NULL;
    REQUIRE_OK(zc_file_open(path, &f));
    CHECK(zc_file_count(f) == 3); /* plus the marker */
    CHECK_OK(zc_file_load_bundle(f, &back));
    zc_file_close(f);
    REQUIRE(back != NULL);
    CHECK(back->count == 2); /* the marker is skipped */
    for (uint32_t i = 0; i < b->count && i < back->count; i++) {
        const zc_tensor *x = &b->tensors[i], *y = &back->tensors[i];
        CHECK(strcmp(x->name, y->name) == 0);
        CHECK(x->dtype == y->dtype && x->ndim == y->ndim && x->nbytes == y->nbytes);
        CHECK(memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->ndim) == 0);
        CHECK(memcmp(x->host, y->host, (size_t)x->nbytes) == 0);
        CHECK(y->has_digest && y->digest == x->digest);
        CHECK(y->tier == ZC_TIER_HOST);
    }
    /* "zc." keys are the engine's: not copied into the bundle. */
    CHECK(back->meta_count == 1);
    CHECK(back->meta_count == 1 && strcmp(back->meta[0].key, "family") == 0 &&
          strcmp(back->meta[0].value, "wan21") == 0);
    zc_bundle_free(back);
    zc_bundle_free(b);
    free(path);
}

TEST(safetensors_marker_follows_latent_tensor)
{
    TEST_FOLDER(dir, "st-marker");
    char *path = zc_test_join(dir, "m.latent");
    zc_bundle *b = NULL;
    int64_t shape[2] = {2, 3};
    REQUIRE_BUNDLE_OF(b, "noise", ZC_F16, 2, shape, 1);
    REQUIRE_OK(add_tensor(b, "latent_tensor", ZC_F32, 2, shape, 2));
    REQUIRE_OK(add_tensor(b, "extra", ZC_I64, 2, shape, 3));
    REQUIRE_OK(zc__safetensors_write(path, b, NULL, 0));
    size_t len = 0;
    uint8_t *img = slurp(path, &len);
    REQUIRE(img != NULL);
    char *hdr = header_text(img, len);
    REQUIRE(hdr != NULL);
    /* Bundle order, the marker right after latent_tensor. */
    char *p_noise = strstr(hdr, "\"noise\":"), *p_lat = strstr(hdr, "\"latent_tensor\":");
    char *p_mark = strstr(hdr, "\"latent_format_version_0\":"), *p_extra = strstr(hdr, "\"extra\":");
    CHECK(p_noise && p_lat && p_mark && p_extra);
    CHECK(p_noise < p_lat && p_lat < p_mark && p_mark < p_extra);
    /* Exactly what ComfyUI's SaveLatent writes for torch.tensor([]). */
    CHECK(strstr(hdr, "\"latent_format_version_0\":{\"dtype\":\"F32\",\"shape\":[0],"
                      "\"data_offsets\":[36,36]}") != NULL);
    zc_file *f = NULL;
    uint32_t idx;
    zc_file_tensor t;
    REQUIRE_OK(zc_file_open_memory(img, len, &f));
    CHECK(zc_file_count(f) == 4);
    CHECK_OK(zc_file_find(f, ZC_FILE_LATENT_MARKER, &idx));
    CHECK_OK(zc_file_tensor_at(f, idx, &t));
    CHECK(t.dtype == ZC_F32 && t.ndim == 1 && t.shape[0] == 0 && t.nbytes == 0 && !t.has_digest);
    CHECK_OK(zc_file_read(f, idx, NULL, 0, NULL));
    zc_file_close(f);
    free(hdr);
    free(img);

    /* No latent_tensor, no marker. */
    zc_bundle *plain = NULL;
    REQUIRE_BUNDLE_OF(plain, "x", ZC_F32, 2, shape, 4);
    REQUIRE_OK(zc__safetensors_write(path, plain, NULL, 0));
    REQUIRE_OK(zc_file_open(path, &f));
    CHECK(zc_file_count(f) == 1);
    CHECK(zc_file_find(f, ZC_FILE_LATENT_MARKER, &idx) == ZC_E_NOT_FOUND);
    zc_file_close(f);
    zc_bundle_free(plain);
    zc_bundle_free(b);
    free(path);
}

TEST(safetensors_header_is_padded_deterministic_and_metadata_first)
{
    TEST_FOLDER(dir, "st-det");
    char *p1 = zc_test_join(dir, "a.latent"), *p2 = zc_test_join(dir, "b.latent");
    zc_bundle *b = NULL;
    int64_t shape[1] = {5};
    REQUIRE_BUNDLE_OF(b, "t", ZC_U8, 1, shape, 9); /* 5 bytes: header needs padding */
    REQUIRE_OK(zc_bundle_set_meta(b, "k", "v"));
    zc_meta_entry extra[1] = {{(char *)ZC_FILE_META_TAG, (char *)"shot"}};
    REQUIRE_OK(zc__safetensors_write(p1, b, extra, 1));
    REQUIRE_OK(zc__safetensors_write(p2, b, extra, 1));
    size_t n1 = 0, n2 = 0;
    uint8_t *a = slurp(p1, &n1), *c = slurp(p2, &n2);
    REQUIRE(a && c);
    CHECK(n1 == n2 && memcmp(a, c, n1) == 0);
    char *hdr = header_text(a, n1);
    REQUIRE(hdr != NULL);
    size_t hl = strlen(hdr);
    CHECK(hl % 8 == 0);
    CHECK(strncmp(hdr, "{\"__metadata__\":{\"k\":\"v\",\"zc.tag\":\"shot\",\"zc.digest.t\":\"xxh3:", 61) == 0);
    size_t end = hl;
    while (end > 0 && hdr[end - 1] == ' ')
        end--;
    CHECK(end > 0 && hdr[end - 1] == '}' && hl - end < 8);
    CHECK(n1 == 8 + hl + 5);
    free(hdr);
    free(a);
    free(c);
    zc_bundle_free(b);
    free(p1);
    free(p2);
}

TEST(safetensors_metadata_escaping_roundtrip)
{
    TEST_FOLDER(dir, "st-meta");
    char *path = zc_test_join(dir, "meta.latent");
    zc_bundle *b = NULL;
    int64_t shape[1] = {3};
    static const struct {
        const char *key;
        const char *value;
    } entries[] = {
        {"quotes", "say \"hi\" and 'bye'"},
        {"backslashes", "C:\\path\\to\\file \\u0041 \\n"},
        {"unicode", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 \xe2\x80\xa8"},
        {"control", "tab\there\nnewline\rcr\bbs\fff\x01\x1f\x7f end"},
        {"slash/key", "a/b</script>"},
        {"empty", ""},
        {"k\xc3\xa9y", "utf-8 key"},
        {"json", "{\"3\": {\"inputs\": {\"text\": \"a \\\"quoted\\\" prompt\"}}}"},
    };
    REQUIRE_BUNDLE_OF(b, "t\xc3\xa9nsor \xf0\x9f\x98\x80", ZC_F32, 1, shape, 1);
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        REQUIRE_OK(zc_bundle_set_meta(b, entries[i].key, entries[i].value));
    /* A stale digest entry and a key the extras override must not be
     * written twice (a reader refuses duplicate keys). */
    REQUIRE_OK(zc__bundle_set_meta_internal(b, "zc.digest.t\xc3\xa9nsor \xf0\x9f\x98\x80",
                                            "xxh64:0000000000000000"));
    REQUIRE_OK(zc__bundle_set_meta_internal(b, ZC_FILE_META_TAG, "old"));
    zc_meta_entry extra[2] = {{(char *)ZC_FILE_META_FORMAT, (char *)ZC_FILE_FORMAT_VALUE},
                              {(char *)ZC_FILE_META_TAG, (char *)"new"}};
    REQUIRE_OK(zc__safetensors_write(path, b, extra, 2));
    zc_file *f = NULL;
    REQUIRE_OK(zc_file_open(path, &f));
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        const char *v = zc_file_meta(f, entries[i].key);
        CHECK(v != NULL && strcmp(v, entries[i].value) == 0);
    }
    /* + format, tag, the digest made here, and the record digest */
    CHECK(zc_file_meta_count(f) == sizeof entries / sizeof entries[0] + 4);
    CHECK(zc_file_record(f, NULL) == ZC_RECORD_OK);
    CHECK(zc_file_meta(f, ZC_FILE_META_TAG) &&
          strcmp(zc_file_meta(f, ZC_FILE_META_TAG), "new") == 0);
    CHECK(zc_file_meta(f, ZC_FILE_META_FORMAT) &&
          strcmp(zc_file_meta(f, ZC_FILE_META_FORMAT), ZC_FILE_FORMAT_VALUE) == 0);
    check_file_matches_bundle(f, b); /* the recorded digest is the real one */
    zc_bundle *back = NULL;
    CHECK_OK(zc_file_load_bundle(f, &back));
    if (back) {
        CHECK(back->meta_count == sizeof entries / sizeof entries[0]);
        zc_bundle_free(back);
    }
    zc_file_close(f);
    zc_bundle_free(b);
    free(path);
}

TEST(safetensors_metadata_only_and_empty_bundles)
{
    TEST_FOLDER(dir, "st-empty");
    char *path = zc_test_join(dir, "e.safetensors");
    zc_bundle *b = NULL;
    zc_file *f = NULL;
    REQUIRE_OK(zc_bundle_create(&b));
    REQUIRE_OK(zc__safetensors_write(path, b, NULL, 0));
    REQUIRE_OK(zc_file_open(path, &f));
    /* the only metadata of an empty bundle's file is its record digest */
    CHECK(zc_file_count(f) == 0 && zc_file_meta_count(f) == 1);
    CHECK(zc_file_meta(f, ZC_FILE_META_RECORD) != NULL && zc_file_record(f, NULL) == ZC_RECORD_OK);
    zc_file_close(f);
    REQUIRE_OK(zc_bundle_set_meta(b, "only", "metadata"));
    REQUIRE_OK(zc__safetensors_write(path, b, NULL, 0));
    REQUIRE_OK(zc_file_open(path, &f));
    CHECK(zc_file_count(f) == 0 && zc_file_meta_count(f) == 2);
    CHECK(zc_file_meta(f, "only") && strcmp(zc_file_meta(f, "only"), "metadata") == 0);
    zc_file_close(f);
    zc_bundle_free(b);
    free(path);
}

/* ---- writer failures ---- */

TEST(safetensors_reference_without_host_copy_is_unsupported)
{
    TEST_FOLDER(dir, "st-ref");
    char *path = zc_test_join(dir, "ref.latent");
    int deleted = 0;
    int64_t shape[1] = {4};
    float device_bytes[4] = {0};
    zc_bundle *b = NULL;
    REQUIRE_BUNDLE_OF(b, "host", ZC_F32, 1, shape, 1);
    REQUIRE_OK(zc_bundle_add_reference(b, "audio",
                                       fixture_managed_new(device_bytes, ZC_DL_CUDA, 1, shape, &deleted),
                                       1, NULL));
    int rc = zc__safetensors_write(path, b, NULL, 0);
    CHECK(rc == ZC_E_UNSUPPORTED);
    CHECK(strstr(zc_last_error(), "\"audio\"") != NULL);
    CHECK(strstr(zc_last_error(), "without a host copy") != NULL);
    CHECK(count_entries(dir) == 0);
    zc_bundle_free(b);
    CHECK(deleted == 1);
    free(path);
}

TEST(safetensors_failed_writes_leave_no_temp_file)
{
    TEST_FOLDER(dir, "st-fail");
    zc_bundle *b = NULL;
    int64_t shape[1] = {16};
    REQUIRE_BUNDLE_OF(b, "x", ZC_F32, 1, shape, 1);

    /* The directory does not exist. */
    char *missing = zc_test_join(dir, "no/such/dir/x.latent");
    CHECK(zc__safetensors_write(missing, b, NULL, 0) == ZC_E_IO);
    char why[256];
    CHECK(strstr(zc_last_error(), "no/such/dir") != NULL);
    CHECK(strstr(zc_last_error(), missing_dir_text(why, sizeof why)) != NULL);

    /* The destination is a directory: everything succeeds but the rename. */
    char *sub = zc_test_join(dir, "taken");
    REQUIRE(zc_os_mkdir(sub) == 0);
    char *inner = zc_test_join(sub, "keep");
    FILE *fp = fopen(inner, "w");
    REQUIRE(fp != NULL);
    fclose(fp);
    CHECK(zc__safetensors_write(sub, b, NULL, 0) == ZC_E_IO);
    CHECK(strstr(zc_last_error(), "rename") != NULL);
    CHECK(count_prefixed(dir, ZC_TMP_PREFIX) == 0);
    CHECK(count_entries(dir) == 1);

    /* A tensor the reader would take for the metadata object. */
    zc_bundle *meta_named = NULL;
    REQUIRE_BUNDLE_OF(meta_named, "__metadata__", ZC_F32, 1, shape, 2);
    char *p2 = zc_test_join(dir, "m.latent");
    CHECK(zc__safetensors_write(p2, meta_named, NULL, 0) == ZC_E_INVALID);
    CHECK(strstr(zc_last_error(), "__metadata__") != NULL);
    CHECK(count_entries(dir) == 1);
    zc_bundle_free(meta_named);
    free(p2);

    zc_bundle_free(b);
    free(inner);
    free(sub);
    free(missing);
}

/* A write that fails part-way (file size limit) removes its temporary file
 * and leaves the previous file untouched.  Works as root, unlike a
 * read-only directory.  Windows has no per-process file size limit to
 * inject the failure with: skipped there. */
TEST(safetensors_failed_overwrite_keeps_previous_file)
{
    TEST_FOLDER(dir, "st-keep");
    char *path = zc_test_join(dir, "slot.latent");
    zc_bundle *small = NULL, *big = NULL;
    int64_t s1[1] = {4}, s2[1] = {1 << 16};
    REQUIRE_OK(zc_bundle_create(&small));
    REQUIRE_OK(zc_bundle_create(&big));
    REQUIRE_OK(add_tensor(small, "latent_tensor", ZC_F32, 1, s1, 1));
    REQUIRE_OK(add_tensor(big, "latent_tensor", ZC_F32, 1, s2, 2));
    REQUIRE_OK(zc__safetensors_write(path, small, NULL, 0));
    size_t before_len = 0;
    uint8_t *before = slurp(path, &before_len);
    REQUIRE(before != NULL);

    uint64_t old_limit = 0;
    int err = zc_os_test_limit_file_size(4096, &old_limit);
    if (zc_os_error_is(err, ZC_OS_UNSUPPORTED)) {
        free(before);
        zc_bundle_free(small);
        zc_bundle_free(big);
        free(path);
        SKIP("this OS has no per-process file size limit to make a write fail part-way");
    }
    REQUIRE(err == 0);
    int rc = zc__safetensors_write(path, big, NULL, 0);
    char msg[1024], why[256];
    snprintf(msg, sizeof msg, "%s", zc_last_error());
    REQUIRE(zc_os_test_restore_file_size(old_limit) == 0);

    CHECK(rc == ZC_E_IO);
    CHECK(strstr(msg, path) != NULL);
    CHECK(strstr(msg, zc_os_error_text(EFBIG, why, sizeof why)) != NULL);
    CHECK(count_prefixed(dir, ZC_TMP_PREFIX) == 0);
    size_t after_len = 0;
    uint8_t *after = slurp(path, &after_len);
    CHECK(after && after_len == before_len && memcmp(after, before, before_len) == 0);
    free(after);
    free(before);

    /* A read-only directory: only meaningful when permissions apply. */
    if (!zc_os_test_is_superuser() && zc_os_test_set_dir_readonly(dir, 1) == 0) {
        CHECK(zc__safetensors_write(path, big, NULL, 0) == ZC_E_IO);
        CHECK(strstr(zc_last_error(), zc_os_error_text(EACCES, why, sizeof why)) != NULL);
        zc_os_test_set_dir_readonly(dir, 0);
        zc_file *f = NULL;
        CHECK_OK(zc_file_open(path, &f));
        check_file_matches_bundle(f, small);
        zc_file_close(f);
    }
    CHECK(count_entries(dir) == 1);
    zc_bundle_free(small);
    zc_bundle_free(big);
    free(path);
}

TEST(safetensors_long_basename_and_bare_relative_path)
{
    TEST_FOLDER(dir, "st-long");
    char name[251];
    memset(name, 'n', 250);
    name[250] = '\0';
    memcpy(name + 243, ".latent", 7);
    char *path = zc_test_join(dir, name);
    zc_bundle *b = NULL;
    int64_t shape[1] = {2};
    REQUIRE_BUNDLE_OF(b, "x", ZC_I32, 1, shape, 1);
    /* The temporary name would pass NAME_MAX; it is shortened. */
    CHECK_OK(zc__safetensors_write(path, b, NULL, 0));
    zc_file *f = NULL;
    CHECK_OK(zc_file_open(path, &f));
    zc_file_close(f);
    /* A bare file name writes in (and syncs) the current directory. */
    char cwd[4096];
    REQUIRE(zc_os_test_getcwd(cwd, sizeof cwd) == 0);
    REQUIRE(zc_os_test_chdir(dir) == 0);
    CHECK_OK(zc__safetensors_write("bare.latent", b, NULL, 0));
    CHECK_OK(zc__fsync_parent_dir("bare.latent"));
    CHECK(zc_os_test_chdir(cwd) == 0);
    CHECK(count_entries(dir) == 2);
    CHECK(zc__fsync_parent_dir("/no/such/dir/x") == ZC_E_IO);
    zc_bundle_free(b);
    free(path);
}

/* ---- reader ---- */

TEST(safetensors_digest_mismatch_detected_on_read)
{
    TEST_FOLDER(dir, "st-digest");
    char *path = zc_test_join(dir, "d.latent");
    zc_bundle *b = NULL, *back = NULL;
    int64_t shape[1] = {300000};
    REQUIRE_BUNDLE_OF(b, "latent_tensor", ZC_F32, 1, shape, 5);
    REQUIRE_WRITTEN_AND_OPEN(path, b, f, t);
    REQUIRE(strcmp(t.name, "latent_tensor") == 0);
    zc_file_close(f);
    /* Flip one bit in the last byte of the tensor. */
    REQUIRE(flip_byte(path, t.offset + t.nbytes - 1, 0x10) == 0);
    REQUIRE_OK(zc_file_open(path, &f)); /* the header is still fine */
    void *buf = malloc((size_t)t.nbytes);
    REQUIRE(buf != NULL);
    CHECK(zc_file_read(f, 0, buf, (size_t)t.nbytes, NULL) == ZC_E_CORRUPT);
    CHECK(strstr(zc_last_error(), "\"latent_tensor\"") != NULL);
    CHECK(strstr(zc_last_error(), "reads back as xxh3:") != NULL);
    CHECK(zc_file_load_bundle(f, &back) == ZC_E_CORRUPT);
    CHECK(back == NULL);
    free(buf);
    zc_file_close(f);
    zc_bundle_free(b);
    free(path);
}

TEST(safetensors_file_truncated_after_open)
{
    TEST_FOLDER(dir, "st-trunc");
    char *path = zc_test_join(dir, "t.latent");
    zc_bundle *b = NULL;
    int64_t shape[1] = {1 << 19};
    REQUIRE_BUNDLE_OF(b, "x", ZC_F32, 1, shape, 5);
    REQUIRE_WRITTEN_AND_OPEN(path, b, f, t);
    REQUIRE(zc_os_test_truncate(path, t.offset + t.nbytes / 2) == 0);
    void *buf = malloc((size_t)t.nbytes);
    REQUIRE(buf != NULL);
    CHECK(zc_file_read(f, 0, buf, (size_t)t.nbytes, NULL) == ZC_E_CORRUPT);
    CHECK(strstr(zc_last_error(), "truncated after it was opened") != NULL);
    zc_file_close(f);
    /* Opened afresh, the header no longer matches the size. */
    CHECK(zc_file_open(path, &f) == ZC_E_CORRUPT);
    CHECK(strstr(zc_last_error(), "run past the end") != NULL);
    free(buf);
    zc_bundle_free(b);
    free(path);
}

TEST(safetensors_api_arguments)
{
    static const char img[] = "\x50\0\0\0\0\0\0\0"
                              "{\"__metadata__\":{\"a\":\"b\"},\"x\":{\"dtype\":\"I16\",\"shape\":[2],"
                              "\"data_offsets\":[0,4]}} "
                              "\x01\x02\x03\x04";
    zc_file *f = NULL;
    uint32_t idx = 99;
    zc_file_tensor t;
    const char *k = NULL, *v = NULL;
    uint8_t buf[4];
    uint64_t d = 0;
    REQUIRE(sizeof img - 1 == 8 + 0x50 + 4);
    REQUIRE_OK(zc_file_open_memory(img, sizeof img - 1, &f));
    CHECK(zc_file_count(f) == 1 && zc_file_meta_count(f) == 1);
    CHECK(zc_file_find(f, "y", &idx) == ZC_E_NOT_FOUND && idx == 99);
    CHECK(zc_file_find(f, NULL, &idx) == ZC_E_INVALID);
    CHECK(zc_file_tensor_at(f, 1, &t) == ZC_E_NOT_FOUND);
    CHECK(zc_file_tensor_at(f, 0, NULL) == ZC_E_INVALID);
    CHECK_OK(zc_file_tensor_at(f, 0, &t));
    CHECK(t.offset == 88 && t.nbytes == 4 && t.dtype == ZC_I16 && t.shape[0] == 2);
    CHECK(zc_file_meta_at(f, 1, &k, &v) == ZC_E_NOT_FOUND);
    CHECK_OK(zc_file_meta_at(f, 0, &k, &v));
    CHECK(strcmp(k, "a") == 0 && strcmp(v, "b") == 0);
    CHECK(zc_file_meta(f, "zz") == NULL && zc_file_meta(f, NULL) == NULL);
    CHECK(zc_file_read(f, 0, buf, 3, NULL) == ZC_E_LIMIT);
    CHECK(strstr(zc_last_error(), "has 4 bytes but the buffer holds 3") != NULL);
    CHECK(zc_file_read(f, 0, NULL, 4, NULL) == ZC_E_INVALID);
    CHECK(zc_file_read(f, 1, buf, 4, NULL) == ZC_E_NOT_FOUND);
    CHECK_OK(zc_file_read(f, 0, buf, sizeof buf, &d));
    CHECK(memcmp(buf, "\x01\x02\x03\x04", 4) == 0 && d == zc_xxh3_64(buf, 4, 0));
    zc_file_close(f);
    zc_file_close(NULL);
    CHECK(zc_file_count(NULL) == 0 && zc_file_meta_count(NULL) == 0);
    CHECK(zc_file_open_memory(img, sizeof img - 1, NULL) == ZC_E_INVALID);
    CHECK(zc_file_open_memory(NULL, 8, &f) == ZC_E_INVALID && f == NULL);
    CHECK(zc_file_open_memory(NULL, 0, &f) == ZC_E_CORRUPT && f == NULL);
    CHECK(zc_file_open(NULL, &f) == ZC_E_INVALID);
    CHECK(zc_file_open("/no/such/file.latent", &f) == ZC_E_IO && f == NULL);
    CHECK(strstr(zc_last_error(), "/no/such/file.latent") != NULL);
    CHECK(zc_file_open("/", &f) == ZC_E_IO);
    CHECK(strstr(zc_last_error(), "not a regular file") != NULL);
    CHECK(zc_file_load_bundle(NULL, NULL) == ZC_E_INVALID);
}

/* ---- corpora ---- */

/* Run a file through every stage; @return the first error (or ZC_OK). */
static int full_read(zc_file *f)
{
    int rc = ZC_OK;
    for (uint32_t i = 0; i < zc_file_count(f) && rc == ZC_OK; i++) {
        zc_file_tensor t;
        if ((rc = zc_file_tensor_at(f, i, &t)) != ZC_OK)
            break;
        void *buf = malloc(t.nbytes ? (size_t)t.nbytes : 1);
        if (buf == NULL)
            return ZC_E_NOMEM;
        rc = zc_file_read(f, i, buf, (size_t)t.nbytes, NULL);
        free(buf);
    }
    if (rc == ZC_OK) {
        zc_bundle *b = NULL;
        rc = zc_file_load_bundle(f, &b);
        zc_bundle_free(b);
    }
    return rc;
}

/* Open path from disk and from memory; both must agree. */
static int check_malformed(const char *path, char *msg, size_t cap)
{
    zc_file *f = NULL;
    size_t len = 0;
    int rc = zc_file_open(path, &f);
    if (rc == ZC_OK) {
        rc = full_read(f);
        zc_file_close(f);
    }
    snprintf(msg, cap, "%s", zc_last_error());
    uint8_t *img = slurp(path, &len);
    if (img == NULL)
        return ZC_E_IO;
    int rc2 = zc_file_open_memory(img, len, &f);
    if (rc2 == ZC_OK) {
        rc2 = full_read(f);
        zc_file_close(f);
    }
    free(img);
    return rc == rc2 ? rc : ZC_E_STATE;
}

TEST(safetensors_malformed_corpus_is_refused)
{
    char *manifest = zc_test_join(MALFORMED_DIR, "expected_messages.tsv");
    size_t len = 0;
    char *text = (char *)slurp(manifest, &len);
    int listed = 0;
    if (text == NULL)
        fprintf(stderr, "  cannot read %s (run from the repository root)\n", manifest);
    REQUIRE(text != NULL);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *tab = strchr(line, '\t');
        if (line[0] == '#' || tab == NULL)
            continue;
        *tab = '\0';
        char *path = zc_test_join(MALFORMED_DIR, line), msg[1024];
        int rc = check_malformed(path, msg, sizeof msg);
        listed++;
        if (rc != ZC_E_CORRUPT || strstr(msg, tab + 1) == NULL || strstr(msg, path) == NULL) {
            fprintf(stderr, "  %s: %s \"%s\"; expected ZC_E_CORRUPT mentioning \"%s\"\n", line,
                    zc_status_name(rc), msg, tab + 1);
            CHECK(!"malformed file refused with a message naming the fault");
        }
        free(path);
    }
    CHECK(listed >= 90);
    free(text);
    free(manifest);

    /* Files added from fuzzing have no manifest line: ZC_E_CORRUPT suffices. */
    zc_os_dir *d = NULL;
    const char *name;
    REQUIRE(zc_os_dir_open(MALFORMED_DIR, &d) == 0);
    int all = 0;
    while (zc_os_dir_next(d, &name) == 0 && name != NULL) {
        if (name[0] == '.' || strcmp(name, "expected_messages.tsv") == 0)
            continue;
        char *path = zc_test_join(MALFORMED_DIR, name), msg[1024];
        int rc = check_malformed(path, msg, sizeof msg);
        all++;
        if (rc != ZC_E_CORRUPT) {
            fprintf(stderr, "  %s: %s \"%s\"; expected ZC_E_CORRUPT\n", name,
                    zc_status_name(rc), msg);
            CHECK(!"malformed file refused");
        }
        free(path);
    }
    zc_os_dir_close(d);
    CHECK(all >= listed);
}

TEST(safetensors_seed_corpus_reads)
{
    zc_os_dir *d = NULL;
    const char *name;
    REQUIRE(zc_os_dir_open(SEED_DIR, &d) == 0);
    int n = 0;
    while (zc_os_dir_next(d, &name) == 0 && name != NULL) {
        if (name[0] == '.')
            continue;
        char *path = zc_test_join(SEED_DIR, name);
        zc_file *f = NULL;
        int rc = zc_file_open(path, &f);
        if (rc != ZC_OK)
            fprintf(stderr, "  %s: %s\n", path, zc_last_error());
        CHECK(rc == ZC_OK);
        for (uint32_t i = 0; f && i < zc_file_count(f); i++) {
            zc_file_tensor t;
            CHECK_OK(zc_file_tensor_at(f, i, &t));
            void *buf = malloc(t.nbytes + 1);
            CHECK_OK(zc_file_read(f, i, buf, (size_t)t.nbytes, NULL));
            free(buf);
        }
        zc_file_close(f);
        free(path);
        n++;
    }
    zc_os_dir_close(d);
    CHECK(n >= 5);
    /* The engine-style seeds record digests that the reads verified: XXH64
     * as engine 0.2 wrote them, XXH3 as the engine writes them now. */
    static const struct {
        const char *path;
        int algo;
    } seeds[] = {{SEED_DIR "/engine_spill.latent", ZC_DIGEST_XXH64},
                 {SEED_DIR "/engine_spill_xxh3.latent", ZC_DIGEST_XXH3_64}};
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
        zc_file *f = NULL;
        uint32_t idx;
        zc_file_tensor t;
        REQUIRE_OK(zc_file_open(seeds[s].path, &f));
        REQUIRE_OK(zc_file_find(f, "latent_tensor", &idx));
        REQUIRE_OK(zc_file_tensor_at(f, idx, &t));
        CHECK(t.has_digest && t.digest_algo == seeds[s].algo && t.dtype == ZC_BF16 && t.ndim == 5);
        void *buf = malloc((size_t)t.nbytes);
        uint64_t got = 0;
        REQUIRE(buf != NULL);
        CHECK_OK(zc_file_read(f, idx, buf, (size_t)t.nbytes, &got));
        CHECK(got == t.recorded_digest);
        zc_bundle *b = NULL;
        CHECK_OK(zc_file_load_bundle(f, &b));
        for (uint32_t k = 0; b != NULL && k < b->count; k++)
            CHECK(b->tensors[k].has_digest && b->tensors[k].digest_algo == seeds[s].algo);
        zc_bundle_free(b);
        free(buf);
        zc_file_close(f);
    }
}
