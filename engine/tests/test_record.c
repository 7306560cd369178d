/*
 * test_record.c — the record digest (format/record.h): its canonical
 * serialisation (known text, independent of the order of tensors and keys,
 * the record's own key left out), the value the writer records, the check
 * that names what changed (a dtype, a shape, a metadata value, a key added
 * or removed, the record itself damaged, a newer version), and the reader,
 * restore and film with a real byte of a real file's header changed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "core/internal.h"
#include "format/record.h"

static const int64_t shape_a[5] = {1, 16, 13, 60, 104};
static const int64_t shape_b[1] = {0};

static void header(zc_record_tensor t[2], zc_meta_entry m[3])
{
    t[0] = (zc_record_tensor){"latent_tensor", ZC_F32, 5, shape_a};
    t[1] = (zc_record_tensor){"latent_format_version_0", ZC_F32, 1, shape_b};
    m[0] = (zc_meta_entry){"lineage", "{\"trim\":1}"};
    m[1] = (zc_meta_entry){"family", "wan21"};
    m[2] = (zc_meta_entry){(char *)ZC_FILE_META_RECORD, "anything: left out"};
}

TEST(record_canonical_serialisation_is_sorted_and_length_prefixed)
{
    zc_record_tensor t[2], u[2];
    zc_meta_entry m[3], n[3];
    header(t, m);
    zc_jsonbuf jb;
    zc__jb_init(&jb);
    REQUIRE_OK(zc__record_canonical(&jb, t, 2, m, 3));
    CHECK(strcmp(jb.data, "zc.record 1\n"
                          "tensor 23:latent_format_version_0 F32 [0]\n"
                          "tensor 13:latent_tensor F32 [1,16,13,60,104]\n"
                          "meta 6:family 5:wan21\n"
                          "meta 7:lineage 10:{\"trim\":1}\n") == 0);
    /* the same header listed in another order: the same text, the same record */
    u[0] = t[1];
    u[1] = t[0];
    n[0] = m[2];
    n[1] = m[0];
    n[2] = m[1];
    zc_jsonbuf other;
    zc__jb_init(&other);
    REQUIRE_OK(zc__record_canonical(&other, u, 2, n, 3));
    CHECK(strcmp(jb.data, other.data) == 0);
    char *a = zc__record_text(t, 2, m, 3), *b = zc__record_text(u, 2, n, 3);
    REQUIRE(a != NULL && b != NULL);
    CHECK(strcmp(a, b) == 0);
    /* its digest is XXH3-64 of the canonical text; tensors in clear, values by 8 hex digits */
    char want[128];
    snprintf(want, sizeof want, "{\"version\":1,\"digest\":\"xxh3:%016llx\",",
             (unsigned long long)zc_xxh3_64(jb.data, jb.len, 0));
    CHECK(strncmp(a, want, strlen(want)) == 0);
    CHECK(strstr(a, "\"tensors\":{\"latent_format_version_0\":\"F32 [0]\",\"latent_tensor\":"
                    "\"F32 [1,16,13,60,104]\"},\"meta\":{\"family\":\"") != NULL);
    snprintf(want, sizeof want, "\"lineage\":\"%08llx\"}}",
             (unsigned long long)(zc_xxh3_64("{\"trim\":1}", 10, 0) >> 32));
    CHECK(strstr(a, want) != NULL);
    /* no two headers share a text: a name and a value that swap bytes differ */
    zc_meta_entry swap[1] = {{"ab", "c"}}, swap2[1] = {{"a", "bc"}};
    zc_jsonbuf s1, s2;
    zc__jb_init(&s1);
    zc__jb_init(&s2);
    CHECK_OK(zc__record_canonical(&s1, NULL, 0, swap, 1));
    CHECK_OK(zc__record_canonical(&s2, NULL, 0, swap2, 1));
    CHECK(strcmp(s1.data, s2.data) != 0);
    free(a);
    free(b);
    zc__jb_free(&jb);
    zc__jb_free(&other);
    zc__jb_free(&s1);
    zc__jb_free(&s2);
}

/* The check of a header against the record made of the original one. */
static int check_against(const char *recorded, const zc_record_tensor *t, uint32_t nt,
                         const zc_meta_entry *m, uint32_t nm, char *why)
{
    return zc__record_check(recorded, t, nt, m, nm, why, 1024);
}

TEST(record_check_names_what_changed)
{
    zc_record_tensor t[2];
    zc_meta_entry m[3];
    char why[1024];
    header(t, m);
    char *rec = zc__record_text(t, 2, m, 3);
    REQUIRE(rec != NULL);
    CHECK(check_against(rec, t, 2, m, 3, why) == ZC_RECORD_OK && why[0] == '\0');
    CHECK(check_against(NULL, t, 2, m, 3, why) == ZC_RECORD_NOT_COVERED);
    CHECK(strstr(why, "record not covered") != NULL);

    t[0].dtype = ZC_I32; /* F32 -> I32, same size */
    CHECK(check_against(rec, t, 2, m, 3, why) == ZC_RECORD_BAD);
    CHECK(strcmp(why, "the record (dtype, shape or metadata) changed since it was written: "
                      "tensor \"latent_tensor\" dtype is I32, was F32") == 0);
    t[0].dtype = ZC_F32;
    const int64_t other[5] = {1, 16, 13, 104, 60};
    t[0].shape = other;
    CHECK(check_against(rec, t, 2, m, 3, why) == ZC_RECORD_BAD);
    CHECK(strstr(why, "tensor \"latent_tensor\" shape is [1,16,13,104,60], was [1,16,13,60,104]"));
    t[0].shape = shape_a;

    m[0].value = "{\"trim\":7}";
    CHECK(check_against(rec, t, 2, m, 3, why) == ZC_RECORD_BAD);
    CHECK(strcmp(why, "the record (dtype, shape or metadata) changed since it was written: "
                      "metadata \"lineage\" changed") == 0);
    m[0].value = "{\"trim\":1}";
    CHECK(check_against(rec, t, 2, m, 2, why) == ZC_RECORD_OK); /* the record's own key is left out */
    CHECK(check_against(rec, t, 2, m + 1, 2, why) == ZC_RECORD_BAD);
    CHECK(strstr(why, "metadata \"lineage\" was removed") != NULL);
    zc_meta_entry more[4] = {m[0], m[1], m[2], {"seed", "7"}};
    CHECK(check_against(rec, t, 2, more, 4, why) == ZC_RECORD_BAD);
    CHECK(strstr(why, "metadata \"seed\" was added") != NULL);
    CHECK(check_against(rec, t, 1, m, 3, why) == ZC_RECORD_BAD);
    CHECK(strstr(why, "tensor \"latent_format_version_0\" was removed") != NULL);

    /* the record's own text damaged: its digest still matches, the rest of it does not */
    char *damaged = zc__strdup(rec);
    char *hint = strstr(damaged, "\"family\":\"") + strlen("\"family\":\"");
    *hint = *hint == '0' ? '1' : '0';
    CHECK(check_against(damaged, t, 2, m, 3, why) == ZC_RECORD_BAD);
    CHECK(strstr(why, "the rest of metadata \"zc.record\" itself changed") != NULL);
    CHECK(check_against("{not json", t, 2, m, 3, why) == ZC_RECORD_BAD);
    CHECK(strstr(why, "is damaged: not valid JSON") != NULL);
    CHECK(check_against("{\"version\":1}", t, 2, m, 3, why) == ZC_RECORD_BAD);
    CHECK(strstr(why, "not the object of version 1") != NULL);
    /* a newer version is not checked, and said */
    CHECK(check_against("{\"version\":2,\"digest\":\"x\"}", t, 2, m, 3, why) ==
          ZC_RECORD_NOT_COVERED);
    CHECK(strstr(why, "version 2") != NULL);
    /* many changes: the first few named, the rest counted */
    zc_meta_entry many[8] = {{"a", "1"}, {"b", "1"}, {"c", "1"}, {"d", "1"},
                             {"e", "1"}, {"f", "1"}, {"g", "1"}, {"h", "1"}};
    char *rec8 = zc__record_text(NULL, 0, many, 8);
    for (int i = 0; i < 8; i++)
        many[i].value = "2";
    CHECK(check_against(rec8, NULL, 0, many, 8, why) == ZC_RECORD_BAD);
    CHECK(strstr(why, "metadata \"d\" changed; and 4 more") != NULL);
    free(rec8);
    free(damaged);
    free(rec);
}

/* The serialized bytes of a one-tensor shot with a lineage, as a spill writes them. */
static uint8_t *shot_bytes(size_t *len)
{
    zc_bundle *b = fixture_bundle(24, 0.5f);
    if (b == NULL || zc_bundle_set_meta(b, "lineage", "{\"parent_generation\":2,\"trim\":1}") != ZC_OK)
        return NULL;
    zc_meta_entry extra[3] = {{(char *)ZC_FILE_META_FORMAT, (char *)ZC_FILE_FORMAT_VALUE},
                              {(char *)ZC_FILE_META_TAG, "rec"},
                              {(char *)ZC_FILE_META_GENERATION, "3"}};
    size_t need = 0;
    uint8_t *buf = NULL;
    if (zc__safetensors_serialize(b, extra, 3, NULL, 0, &need) == ZC_E_LIMIT &&
        (buf = malloc(need)) != NULL &&
        zc__safetensors_serialize(b, extra, 3, buf, need, len) != ZC_OK) {
        free(buf);
        buf = NULL;
    }
    zc_bundle_free(b);
    return buf;
}

/* Replace the first `from` in the header of buf (same length) by `to`. */
static int change(uint8_t *buf, size_t len, const char *from, const char *to)
{
    size_t n = strlen(from);
    for (size_t i = 8; i + n <= len; i++) {
        if (memcmp(buf + i, from, n) == 0) {
            memcpy(buf + i, to, n);
            return 1;
        }
    }
    return 0;
}

TEST(record_a_changed_header_opens_but_does_not_load)
{
    size_t len = 0;
    uint8_t *buf = shot_bytes(&len);
    REQUIRE(buf != NULL);
    zc_file *f = NULL;
    zc_bundle *b = NULL;
    const char *why = NULL;
    REQUIRE_OK(zc_file_open_memory(buf, len, &f));
    CHECK(zc_file_meta(f, ZC_FILE_META_RECORD) != NULL);
    CHECK(zc_file_record(f, &why) == ZC_RECORD_OK && strcmp(why, "") == 0);
    CHECK_OK(zc_file_load_bundle(f, &b));
    CHECK(b != NULL && b->record == ZC_RECORD_OK);
    zc_bundle_free(b);
    b = NULL;
    zc_file_close(f);

    /* one byte of the header: the tensor's dtype F32 -> I32, the file's size unchanged */
    REQUIRE(change(buf, len, "\"dtype\":\"F32\",\"shape\":[24]", "\"dtype\":\"I32\",\"shape\":[24]"));
    REQUIRE_OK(zc_file_open_memory(buf, len, &f));
    CHECK(zc_file_record(f, &why) == ZC_RECORD_BAD);
    CHECK(strstr(why, "tensor \"latent_tensor\" dtype is I32, was F32") != NULL);
    CHECK(zc_file_load_bundle(f, &b) == ZC_E_CORRUPT && b == NULL);
    CHECK(strstr(zc_last_error(), "<memory image>: the record (dtype, shape or metadata) changed "
                                  "since it was written: tensor \"latent_tensor\" dtype is I32, "
                                  "was F32") != NULL);
    /* its tensors still read against their digests (a tool shows them) */
    uint8_t out[24 * 4];
    CHECK_OK(zc_file_read(f, 0, out, sizeof out, NULL));
    zc_file_close(f);
    REQUIRE(change(buf, len, "\"dtype\":\"I32\",\"shape\":[24]", "\"dtype\":\"F32\",\"shape\":[24]"));

    /* a byte of the lineage: trim 1 -> 7 */
    REQUIRE(change(buf, len, "trim\\\":1", "trim\\\":7"));
    REQUIRE_OK(zc_file_open_memory(buf, len, &f));
    CHECK(zc_file_record(f, &why) == ZC_RECORD_BAD);
    CHECK(strstr(why, "metadata \"lineage\" changed") != NULL);
    CHECK(zc_file_load_bundle(f, &b) == ZC_E_CORRUPT);
    zc_file_close(f);
    free(buf);
}

/* The same file without its record (a file of the previous format): read as before. */
TEST(record_a_file_without_one_reads_as_not_covered)
{
    zc_bundle *b = fixture_bundle(8, 1.0f), *back = NULL;
    REQUIRE(b != NULL);
    REQUIRE_OK(zc_bundle_set_meta(b, "family", "wan21"));
    /* written by hand without the record, as engines before it did */
    char *dir = zc_test_tmpdir("record-old");
    REQUIRE(dir != NULL);
    char *path = zc_test_join(dir, "old.latent");
    REQUIRE_OK(zc__safetensors_write(path, b, NULL, 0));
    size_t len = 0;
    zc_os_file fd = ZC_OS_FILE_CLOSED;
    uint64_t size = 0;
    int regular = 0;
    REQUIRE(zc_os_file_open_read(path, &fd) == 0 && zc_os_file_info(fd, &size, &regular) == 0);
    uint8_t *buf = malloc((size_t)size);
    REQUIRE(zc_os_file_read_at(fd, buf, (size_t)size, 0, &len) == 0 && len == size);
    zc_os_file_close(&fd);
    /* cut ,"zc.record":"..." (the last entry of __metadata__) out of the header, and pad the
     * header's end with spaces to its length: the rest stays valid, the size unchanged */
    char *at = strstr((char *)buf + 8, ",\"zc.record\":\"");
    REQUIRE(at != NULL);
    char *end = at + strlen(",\"zc.record\":\"");
    while (*end != '"')
        end += *end == '\\' ? 2 : 1;
    end++;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | buf[i];
    char *hend = (char *)buf + 8 + hlen;
    size_t cut = (size_t)(end - at);
    memmove(at, end, (size_t)(hend - end));
    memset(hend - cut, ' ', cut);
    zc_file *f = NULL;
    const char *why = NULL;
    REQUIRE_OK(zc_file_open_memory(buf, len, &f));
    CHECK(zc_file_meta(f, ZC_FILE_META_RECORD) == NULL);
    CHECK(zc_file_record(f, &why) == ZC_RECORD_NOT_COVERED);
    CHECK(strstr(why, "record not covered") != NULL);
    CHECK_OK(zc_file_load_bundle(f, &back));
    CHECK(back != NULL && back->record == ZC_RECORD_NOT_COVERED);
    CHECK(back != NULL && strcmp(zc__bundle_meta(back, "family"), "wan21") == 0);
    zc_bundle_free(back);
    zc_file_close(f);
    free(buf);
    free(path);
    zc_bundle_free(b);
    zc_test_rmtree(dir);
    free(dir);
}

/* ---- through a store and the film ---- */

static zc_store *open_store(const char *dir)
{
    zc_store_config cfg;
    zc_store_config_init(&cfg);
    cfg.spill_dir = dir;
    cfg.disk_keep = 100;
    cfg.spill_delay_ms = 0;
    zc_store *s = NULL;
    return zc_store_open(&cfg, &s) == ZC_OK ? s : NULL;
}

static int put(zc_store *s, uint64_t gen, const char *lineage)
{
    zc_bundle *b = fixture_bundle(12, (float)gen);
    if (b == NULL)
        return ZC_E_NOMEM;
    if (lineage != NULL && zc_bundle_set_meta(b, "lineage", lineage) != ZC_OK) {
        zc_bundle_free(b);
        return ZC_E_INVALID;
    }
    return zc_store_put_generation(s, "rec", b, ZC_PUT_SPILL, gen);
}

/* Change the first `from` in the header of dir's file of generation gen to `to` (same length). */
static int tamper(const char *dir, uint64_t gen, const char *from, const char *to)
{
    char name[96];
    snprintf(name, sizeof name, "rec@%020llu.latent", (unsigned long long)gen);
    char *path = zc_test_join(dir, name);
    FILE *fp = path ? fopen(path, "r+b") : NULL;
    free(path);
    if (fp == NULL)
        return 0;
    uint8_t buf[4096];
    size_t n = fread(buf, 1, sizeof buf, fp);
    int done = change(buf, n, from, to) && fseek(fp, 0, SEEK_SET) == 0 &&
               fwrite(buf, 1, n, fp) == n;
    fclose(fp);
    return done;
}

TEST(record_a_rewritten_parent_breaks_the_shot_in_the_film_and_its_restore)
{
    TEST_FOLDER(dir, "record-film");
    zc_store *s = open_store(dir);
    REQUIRE(s != NULL);
    /* lineage that names no tail digests: the hops are unchecked, the line is 1-2-3 */
    const char *lin2 = "{\"adapter\":\"a\",\"parent_generation\":1,\"parent_tag\":\"rec\","
                       "\"tail_digest\":\"\",\"tail_frames\":1,\"trim\":1,\"used_digest\":\"\","
                       "\"version\":1}";
    const char *lin3 = "{\"adapter\":\"a\",\"parent_generation\":2,\"parent_tag\":\"rec\","
                       "\"tail_digest\":\"\",\"tail_frames\":1,\"trim\":1,\"used_digest\":\"\","
                       "\"version\":1}";
    CHECK_OK(put(s, 1, NULL));
    CHECK_OK(put(s, 2, lin2));
    CHECK_OK(put(s, 3, lin3));
    CHECK_OK(zc_store_flush(s));
    zc_store_close(s);
    char *json = NULL;
    REQUIRE_OK(zc_film_describe(dir, "rec", 0, &json));
    CHECK(strstr(json, "\"line\":[1,2,3]") != NULL);
    CHECK(strstr(json, "\"record\":\"ok\"") != NULL);
    zc_free(json);

    /* parent_generation 2 -> 1: without the record, shot 3 would become a take of shot 2 */
    REQUIRE(tamper(dir, 3, "parent_generation\\\":2", "parent_generation\\\":1"));
    REQUIRE_OK(zc_film_describe(dir, "rec", 0, &json));
    CHECK(strstr(json, "\"ok\":false,\"line\":[1,2]") != NULL);
    CHECK(strstr(json, "\"generation\":3,") != NULL);
    CHECK(strstr(json, "\"state\":\"broken\"") != NULL);
    CHECK(strstr(json, "\"file\":\"bad\",\"hop\":\"unchecked\",\"record\":\"bad\"") != NULL);
    CHECK(strstr(json, "generation 3 (not on the line): the record (dtype, shape or metadata) changed since it was "
                       "written: metadata \\\"lineage\\\" changed") != NULL);
    zc_free(json);
    REQUIRE_OK(zc_film_describe(dir, "rec", ZC_FILM_VERIFY, &json));
    CHECK(strstr(json, "\"verified\":true,\"ok\":false,\"line\":[1,2]") != NULL);
    CHECK(strstr(json, "\"record\":\"bad\"") != NULL);
    zc_free(json);

    /* a restore refuses it, naming the field, and renames it aside; the newest is then 2 */
    s = open_store(dir);
    REQUIRE(s != NULL);
    zc_view *v = NULL;
    CHECK(zc_store_get(s, "rec", 3, &v) == ZC_E_CORRUPT);
    CHECK(strstr(zc_last_error(), "metadata \"lineage\" changed") != NULL);
    CHECK(zc_test_count(dir, "rec@00000000000000000003.latent.rejected", "") == 1);
    REQUIRE_OK(zc_store_get(s, "rec", 0, &v));
    CHECK(zc_view_generation(v) == 2 && zc_view_record(v) == ZC_RECORD_OK);
    zc_view_release(v);
    zc_store_close(s);
}
