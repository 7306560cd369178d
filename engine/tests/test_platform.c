/*
 * test_platform.c — the promises of engine/src/platform/platform.h, held
 * against whichever implementation is built (POSIX here, Windows under
 * wine): threads and locks, aligned memory, clocks, files, and the file
 * semantics that differ most between systems: a file being read can be
 * renamed aside, removed and (where the OS can) replaced; long and
 * non-ASCII paths; both separators on Windows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "core/internal.h"
#include "platform/platform_test.h"

/* ---- threads ---- */

typedef struct {
    zc_os_mutex lock;
    zc_os_cond changed;
    int counter;   /* under lock */
    int produced;  /* under lock */
    int consumed;  /* under lock */
} shared_state;

#define INCREMENTS 20000
#define ITEMS 500

static void increment(void *arg)
{
    shared_state *st = arg;
    for (int i = 0; i < INCREMENTS; i++) {
        zc_os_mutex_lock(&st->lock);
        st->counter++;
        zc_os_mutex_unlock(&st->lock);
    }
}

static void consume(void *arg)
{
    shared_state *st = arg;
    zc_os_mutex_lock(&st->lock);
    while (st->consumed < ITEMS) {
        while (st->consumed == st->produced)
            zc_os_cond_wait(&st->changed, &st->lock);
        st->consumed++;
        zc_os_cond_broadcast(&st->changed);
    }
    zc_os_mutex_unlock(&st->lock);
}

static atomic_int once_calls;
static zc_os_once the_once = ZC_OS_ONCE_INIT;

static void count_once(void)
{
    zc_os_sleep_ms(5); /* long enough that the other threads arrive and must wait */
    atomic_fetch_add(&once_calls, 1);
}

static void run_once(void *arg)
{
    zc_os_once_run(&the_once, count_once);
    /* Whoever returns from zc_os_once_run sees the function's effect. */
    *(int *)arg = atomic_load(&once_calls);
}

TEST(platform_mutex_condition_variable_thread_and_once)
{
    shared_state st;
    memset(&st, 0, sizeof st);
    REQUIRE(zc_os_mutex_init(&st.lock) == 0);
    REQUIRE(zc_os_cond_init(&st.changed) == 0);
    zc_os_thread t[4];
    for (int i = 0; i < 4; i++)
        REQUIRE(zc_os_thread_start(&t[i], increment, &st) == 0);
    for (int i = 0; i < 4; i++)
        zc_os_thread_join(&t[i]);
    CHECK(st.counter == 4 * INCREMENTS);

    zc_os_thread consumer;
    REQUIRE(zc_os_thread_start(&consumer, consume, &st) == 0);
    for (int i = 0; i < ITEMS; i++) {
        zc_os_mutex_lock(&st.lock);
        while (st.produced - st.consumed >= 4) /* a bounded queue: both sides wait */
            zc_os_cond_wait(&st.changed, &st.lock);
        st.produced++;
        zc_os_cond_broadcast(&st.changed);
        zc_os_mutex_unlock(&st.lock);
    }
    zc_os_thread_join(&consumer);
    CHECK(st.consumed == ITEMS);
    zc_os_cond_destroy(&st.changed);
    zc_os_mutex_destroy(&st.lock);

    int seen[4] = {0};
    for (int i = 0; i < 4; i++)
        REQUIRE(zc_os_thread_start(&t[i], run_once, &seen[i]) == 0);
    for (int i = 0; i < 4; i++)
        zc_os_thread_join(&t[i]);
    zc_os_once_run(&the_once, count_once);
    CHECK(atomic_load(&once_calls) == 1);
    for (int i = 0; i < 4; i++)
        CHECK(seen[i] == 1);
}

TEST(platform_timed_condition_wait_returns_without_a_signal)
{
    zc_os_mutex m;
    zc_os_cond c;
    REQUIRE(zc_os_mutex_init(&m) == 0);
    REQUIRE(zc_os_cond_init(&c) == 0);
    /* Nobody signals: the waits must time out (early or spurious returns are
     * allowed, so the loop waits for 30 ms of the monotonic clock to pass). */
    uint64_t start = zc_os_monotonic_ns();
    int waits = 0;
    zc_os_mutex_lock(&m);
    while (zc_os_monotonic_ns() - start < 30000000u && waits < 100000) {
        zc_os_cond_wait_ms(&c, &m, 10);
        waits++;
    }
    zc_os_mutex_unlock(&m);
    uint64_t took = zc_os_monotonic_ns() - start;
    CHECK(took >= 30000000u);
    CHECK(took < 5000000000u); /* timed out rather than slept on */
    CHECK(waits >= 1 && waits < 100000);
    zc_os_cond_destroy(&c);
    zc_os_mutex_destroy(&m);
}

/* ---- memory, time, process ---- */

TEST(platform_aligned_memory_and_huge_page_hint)
{
    size_t page = zc_os_page_size();
    CHECK(page >= 4096 && (page & (page - 1)) == 0);
    CHECK(zc_os_page_size() == page);
    size_t aligns[] = {sizeof(void *), 64, 4096, (size_t)2 << 20};
    for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
        size_t n = aligns[i] * 3 + 7;
        unsigned char *p = zc_os_alloc_aligned(n, aligns[i]);
        REQUIRE(p != NULL);
        CHECK((uintptr_t)p % aligns[i] == 0);
        memset(p, 0xa5, n); /* every byte is ours (ASan checks the bounds) */
        zc_os_free_aligned(p);
    }
    CHECK(zc_os_alloc_aligned(0, 64) == NULL);
    zc_os_free_aligned(NULL);
    /* The engine's large-buffer path: huge-page aligned where the hint exists. */
    size_t huge = zc_os_huge_page_size(), n = (size_t)34 << 20;
    unsigned char *big = zc__host_alloc(n);
    REQUIRE(big != NULL);
    CHECK((uintptr_t)big % (huge ? huge : page) == 0);
    memset(big, 1, n);
    zc_os_advise_huge_pages(big, n);
    CHECK(big[n - 1] == 1);
    zc__host_free(big);
}

TEST(platform_clocks_sleep_and_process_id)
{
    CHECK(zc_os_now_unix_ms() > 1700000000000ull); /* after November 2023 */
    uint64_t t0 = zc_os_monotonic_ns();
    zc_os_sleep_ms(30);
    uint64_t t1 = zc_os_monotonic_ns();
    CHECK(t1 >= t0 && t1 - t0 >= 25u * 1000000u && t1 - t0 < 5000u * 1000000u);
    CHECK(zc_os_pid() > 0 && zc_os_pid() == zc_os_pid());
}

/* ---- files ---- */

static int write_file(const char *path, const char *text)
{
    zc_os_file f = ZC_OS_FILE_CLOSED;
    int err = zc_os_file_create_new(path, &f);
    if (err == 0)
        err = zc_os_file_write_all(f, text, strlen(text));
    if (err == 0)
        err = zc_os_file_sync(f);
    int close_err = zc_os_file_close(&f);
    return err ? err : close_err;
}

TEST(platform_files_directories_and_errors)
{
    TEST_FOLDER(dir, "plat-files");
    char *path = zc_test_join(dir, "a.bin"), *sub = zc_test_join(dir, "sub");
    char *missing = zc_test_join(dir, "no/such/file");
    REQUIRE(write_file(path, "0123456789") == 0);
    CHECK(zc_os_error_is(write_file(path, "x"), ZC_OS_EXISTS)); /* exclusive create */

    zc_os_file f = ZC_OS_FILE_CLOSED;
    uint64_t size = 0;
    int regular = -1;
    char buf[32] = {0};
    size_t got = 0;
    REQUIRE(zc_os_file_open_read(path, &f) == 0);
    CHECK(zc_os_file_info(f, &size, &regular) == 0 && size == 10 && regular == 1);
    CHECK(zc_os_file_read_at(f, buf, 4, 3, &got) == 0 && got == 4 && memcmp(buf, "3456", 4) == 0);
    CHECK(zc_os_file_read_at(f, buf, 8, 6, &got) == 0 && got == 4); /* short only at the end */
    CHECK(zc_os_file_read_at(f, buf, 8, 100, &got) == 0 && got == 0);
    zc_os_file_advise(f, 0, 10, ZC_OS_ADVISE_WILLNEED); /* a hint: no effect to check */
    CHECK(zc_os_file_close(&f) == 0 && f.handle == -1);
    CHECK(zc_os_file_close(&f) == 0);

    zc_os_path_kind kind = 0;
    CHECK(zc_os_stat(path, &kind, &size) == 0 && kind == ZC_OS_PATH_FILE && size == 10);
    CHECK(zc_os_mkdir(sub) == 0);
    CHECK(zc_os_error_is(zc_os_mkdir(sub), ZC_OS_EXISTS));
    CHECK(zc_os_stat(sub, &kind, NULL) == 0 && kind == ZC_OS_PATH_DIR);
    CHECK(zc_os_dir_writable(sub) == 0);
    CHECK(zc_os_file_open_read(sub, &f) != 0 ||
          (zc_os_file_info(f, &size, &regular) == 0 && regular == 0));
    zc_os_file_close(&f);

    int err = zc_os_stat(missing, &kind, NULL);
    char why[256];
    CHECK(zc_os_error_is(err, ZC_OS_NOT_FOUND));
    CHECK(strlen(zc_os_error_text(err, why, sizeof why)) > 0);
    CHECK(zc_os_error_is(zc_os_file_open_read(missing, &f), ZC_OS_NOT_FOUND));
    CHECK(zc_os_error_is(zc_os_remove(missing), ZC_OS_NOT_FOUND));

    CHECK(zc_os_sync_parent_dir(path) == 0);
    CHECK(zc_os_error_is(zc_os_sync_parent_dir(missing), ZC_OS_NOT_FOUND));

    /* Listing: every entry once, never "." or "..". */
    zc_os_dir *d = NULL;
    const char *name;
    int files = 0, dirs = 0, other = 0;
    REQUIRE(zc_os_dir_open(dir, &d) == 0);
    while (zc_os_dir_next(d, &name) == 0 && name != NULL) {
        if (strcmp(name, "a.bin") == 0)
            files++;
        else if (strcmp(name, "sub") == 0)
            dirs++;
        else
            other++;
    }
    zc_os_dir_close(d);
    CHECK(files == 1 && dirs == 1 && other == 0);
    CHECK(zc_os_error_is(zc_os_dir_open(missing, &d), ZC_OS_NOT_FOUND));
    free(missing);
    free(sub);
    free(path);
}

/* A safetensors file whose one tensor holds n values i*scale. */
static int write_version(const char *path, float scale)
{
    zc_bundle *b = fixture_bundle(1 << 16, scale);
    int rc = b ? zc__safetensors_write(path, b, NULL, 0) : ZC_E_NOMEM;
    zc_bundle_free(b);
    return rc;
}

/* 1 if the open file's tensor reads back whole (digest verified) with the
 * values of version scale. */
static int reads_version(zc_file *f, float scale)
{
    float *v = malloc(sizeof(float) << 16);
    uint32_t idx = 0;
    int ok = v != NULL && zc_file_find(f, ZC_FILE_LATENT_TENSOR, &idx) == ZC_OK &&
             zc_file_read(f, idx, v, sizeof(float) << 16, NULL) == ZC_OK;
    for (int i = 0; ok && i < 1 << 16; i++)
        ok = v[i] == (float)i * scale;
    free(v);
    return ok;
}

static int file_has_version(const char *path, float scale)
{
    zc_file *f = NULL;
    int ok = zc_file_open(path, &f) == ZC_OK && reads_version(f, scale);
    zc_file_close(f);
    return ok;
}

/* The spill tier renames a bad file aside, prunes old ones and replaces
 * files, each while a reader may have the file open (Windows refuses all
 * three unless the reader shares deletion, as zc_os_file_open_read does). */
TEST(platform_open_file_can_be_renamed_aside_removed_and_replaced)
{
    TEST_FOLDER(dir, "plat-open");
    char *a = zc_test_join(dir, "a.latent"), *aside = zc_test_join(dir, "a.latent.rejected");
    char *b = zc_test_join(dir, "b.latent"), *c = zc_test_join(dir, "c.latent");
    zc_os_path_kind kind;
    zc_file *f = NULL;

    /* Renamed aside while open: the reader keeps reading its bytes. */
    REQUIRE_OK(write_version(a, 1.0f));
    REQUIRE_OK(zc_file_open(a, &f));
    CHECK(zc_os_replace(a, aside) == 0);
    CHECK(reads_version(f, 1.0f));
    zc_file_close(f);
    CHECK(zc_os_error_is(zc_os_stat(a, &kind, NULL), ZC_OS_NOT_FOUND));
    CHECK(file_has_version(aside, 1.0f));

    /* Removed while open (pruning): reads go on; the name is gone once the
     * reader closes (at once on POSIX and on Windows 10 1709+ NTFS). */
    REQUIRE_OK(write_version(c, 3.0f));
    REQUIRE_OK(zc_file_open(c, &f));
    CHECK(zc_os_remove(c) == 0);
    CHECK(reads_version(f, 3.0f));
    zc_file_close(f);
    CHECK(zc_os_error_is(zc_os_stat(c, &kind, NULL), ZC_OS_NOT_FOUND));

    /* Replaced while open: POSIX always can; Windows can with the POSIX
     * rename semantics of Windows 10 1709+ on NTFS, and otherwise must refuse
     * cleanly, leaving the old file whole and saying why. */
    REQUIRE_OK(write_version(b, 1.0f));
    REQUIRE_OK(zc_file_open(b, &f));
    int rc = write_version(b, 2.0f);
    CHECK(reads_version(f, 1.0f)); /* the reader's bytes never change */
    zc_file_close(f);
    if (rc == ZC_OK) {
        CHECK(file_has_version(b, 2.0f));
        printf("  replace while open: replaced\n");
    } else {
        printf("  replace while open: refused: %s\n", zc_last_error());
#ifdef _WIN32
        CHECK(rc == ZC_E_IO && strstr(zc_last_error(), "open in another program") != NULL);
#else
        CHECK(!"POSIX rename replaces a file that is open");
#endif
        CHECK(file_has_version(b, 1.0f));
        CHECK_OK(write_version(b, 2.0f)); /* the reader gone, the replace goes through */
        CHECK(file_has_version(b, 2.0f));
    }
    /* No temporary file is left behind either way. */
    CHECK(zc_test_count(dir, ZC_TMP_PREFIX, "") == 0);
    free(a);
    free(aside);
    free(b);
    free(c);
}

/* ---- paths ---- */

TEST(platform_paths_longer_than_max_path)
{
    TEST_FOLDER(dir, "plat-long");
    char part[101], *path = zc__strdup(dir);
    memset(part, 'p', 100);
    part[100] = '\0';
    for (int i = 0; i < 3 && path; i++) { /* three 100-byte components: > 300 bytes */
        char *longer = zc_test_join(path, part);
        free(path);
        path = longer;
    }
    REQUIRE(path != NULL);
    CHECK(strlen(path) > 300);
    /* The spill tier makes the missing directories, writes, indexes and
     * restores under it. */
    CHECK(fixture_spill_roundtrip(path, "long_path", 5000, 0.5f));
    CHECK(zc_test_count(path, "long_path@", ".latent") == 1);
    free(path);
}

TEST(platform_non_ascii_paths_round_trip_as_utf8)
{
    TEST_FOLDER(dir, "plat-utf8");
    const char *leaf = "t\xc3\xa9l\xc3\xa9-\xe6\x97\xa5\xe6\x9c\xac-\xf0\x9f\x8e\xac"; /* télé-日本-🎬 */
    char *spill = zc_test_join(dir, leaf);
    REQUIRE(spill != NULL);
    CHECK(fixture_spill_roundtrip(spill, "utf8_path", 3000, 2.0f));
    /* The name comes back from a listing byte for byte (through UTF-16 on
     * Windows, a surrogate pair included): the one entry is it, whole. */
    CHECK(zc_test_count(dir, leaf, leaf) == 1 && zc_test_count(dir, "", "") == 1);
    /* Dropping the tag with its files removes them under that name too. */
    zc_store_config c;
    zc_store_config_init(&c);
    c.spill_dir = spill;
    zc_store *s = NULL;
    REQUIRE_OK(zc_store_open(&c, &s));
    CHECK(zc_test_count(spill, "utf8_path@", ".latent") == 1);
    CHECK_OK(zc_store_drop(s, "utf8_path", ZC_DROP_DISK));
    CHECK_OK(zc_store_flush(s));
    zc_store_close(s);
    CHECK(zc_test_count(spill, "utf8_path@", "") == 0);
    free(spill);
}

TEST(platform_path_separators)
{
    TEST_FOLDER(dir, "plat-sep");
    CHECK(zc_os_is_separator('/'));
    CHECK(zc_os_last_separator("a/b/c") != NULL && strcmp(zc_os_last_separator("a/b/c"), "/c") == 0);
    CHECK(zc_os_last_separator("bare") == NULL);
    char *slash = zc_test_join(dir, "x.latent");
    REQUIRE(slash != NULL);
#ifdef _WIN32
    /* Windows: '\' separates too; both spellings name one file. */
    char *back = zc__strdup(slash);
    REQUIRE(back != NULL);
    for (char *p = back; *p; p++)
        if (*p == '/')
            *p = '\\';
    CHECK(zc_os_is_separator('\\'));
    CHECK(strcmp(zc_os_last_separator("a/b\\c"), "\\c") == 0);
    CHECK_OK(write_version(back, 4.0f));
    CHECK(file_has_version(slash, 4.0f));
    char *mixed = zc_test_join(dir, "sub\\deeper");
    CHECK(fixture_spill_roundtrip(mixed, "mixed_separators", 100, 1.0f));
    free(mixed);
    free(back);
#else
    /* POSIX: '\' is an ordinary byte of a file name. */
    CHECK(!zc_os_is_separator('\\'));
    CHECK(strcmp(zc_os_last_separator("a/b\\c"), "/b\\c") == 0);
    char *odd = zc_test_join(dir, "back\\slash.latent");
    CHECK_OK(write_version(odd, 4.0f));
    CHECK(file_has_version(odd, 4.0f));
    zc_os_path_kind kind;
    CHECK(zc_os_stat(odd, &kind, NULL) == 0 && kind == ZC_OS_PATH_FILE);
    free(odd);
#endif
    free(slash);
}

TEST(prefer_huge_pages_is_a_hint_that_changes_no_byte)
{
    size_t n = (size_t)9 << 20;
    unsigned char *p = zc_os_alloc_aligned(n, 64);
    REQUIRE(p != NULL);
    for (size_t i = 0; i < n; i += 4096)
        p[i] = (unsigned char)(i >> 12);
    zc_host_prefer_huge_pages(p + 3, n - 5); /* unaligned ends: only whole huge pages inside */
    zc_host_prefer_huge_pages(NULL, n);
    zc_host_prefer_huge_pages(p, 0);
    int same = 1;
    for (size_t i = 0; i < n; i += 4096)
        same &= p[i] == (unsigned char)(i >> 12);
    CHECK(same);
    zc_os_free_aligned(p);
}
