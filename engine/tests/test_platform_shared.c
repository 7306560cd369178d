/*
 * test_platform_shared.c — the promises of platform.h for files several
 * processes share: read-write opens with positional writes, the rename that
 * never replaces, and file locks (who holds them differs by platform, as
 * the header says; each build checks its own).  Locks between processes
 * are checked by shared_main.c with real child processes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "core/internal.h"
#include "platform/platform_test.h"

static int write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "wb");
    int ok = fp && fputs(text, fp) >= 0;
    if (fp)
        fclose(fp);
    return ok;
}

static int file_is(const char *path, const char *text)
{
    char buf[256];
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    return strcmp(buf, text) == 0;
}

TEST(platform_open_rw_creates_and_writes_at_offsets)
{
    TEST_FOLDER(dir, "plat-rw");
    char *path = zc_test_join(dir, "counter");
    zc_os_file f = ZC_OS_FILE_CLOSED, g = ZC_OS_FILE_CLOSED;
    REQUIRE(zc_os_file_open_rw(path, &f) == 0); /* created */
    CHECK(zc_os_file_write_at(f, "hello world", 11, 0) == 0);
    CHECK(zc_os_file_write_at(f, "W", 1, 6) == 0);
    char buf[16] = {0};
    size_t got = 0;
    CHECK(zc_os_file_read_at(f, buf, sizeof buf, 0, &got) == 0 && got == 11);
    CHECK(memcmp(buf, "hello World", 11) == 0);
    /* a second open of an existing file keeps its bytes; both see each other's writes */
    REQUIRE(zc_os_file_open_rw(path, &g) == 0);
    CHECK(zc_os_file_write_at(g, "H", 1, 0) == 0);
    CHECK(zc_os_file_read_at(f, buf, sizeof buf, 0, &got) == 0 && got == 11 && buf[0] == 'H');
    zc_os_file_close(&g);
    zc_os_file_close(&f);
    CHECK(file_is(path, "Hello World"));
    free(path);
}

TEST(platform_rename_noreplace_never_replaces)
{
    TEST_FOLDER(dir, "plat-noreplace");
    char *a = zc_test_join(dir, "a"), *b = zc_test_join(dir, "b"), *c = zc_test_join(dir, "c");
    REQUIRE(write_file(a, "first") && write_file(b, "second"));
    int err = zc_os_rename_noreplace(a, b);
    CHECK(err != 0 && zc_os_error_is(err, ZC_OS_EXISTS));
    CHECK(file_is(a, "first") && file_is(b, "second")); /* both as they were */
    CHECK(zc_os_rename_noreplace(a, c) == 0);
    CHECK(file_is(c, "first"));
    zc_os_path_kind kind;
    CHECK(zc_os_error_is(zc_os_stat(a, &kind, NULL), ZC_OS_NOT_FOUND)); /* from is gone */
    CHECK(zc_os_error_is(zc_os_rename_noreplace(a, b), ZC_OS_NOT_FOUND));
    CHECK(zc_os_sync_parent_dir(c) == 0);
    free(a);
    free(b);
    free(c);
}

TEST(platform_file_locks_as_each_platform_promises)
{
    TEST_FOLDER(dir, "plat-lock");
    char *path = zc_test_join(dir, "lockfile");
    zc_os_file f = ZC_OS_FILE_CLOSED, g = ZC_OS_FILE_CLOSED, r = ZC_OS_FILE_CLOSED;
    int got = -1;
    REQUIRE(zc_os_file_open_rw(path, &f) == 0 && zc_os_file_open_rw(path, &g) == 0);
    CHECK(zc_os_file_write_at(f, "data", 4, 0) == 0);
    REQUIRE(zc_os_file_lock(f, 1, 0, &got) == 0 && got == 1);
    /* The data stays readable and writable through another handle while the
     * lock is held (it covers one byte far past the data). */
    char buf[8] = {0};
    size_t n = 0;
    REQUIRE(zc_os_file_open_read(path, &r) == 0);
    CHECK(zc_os_file_read_at(r, buf, sizeof buf, 0, &n) == 0 && n == 4 && memcmp(buf, "data", 4) == 0);
    CHECK(zc_os_file_write_at(g, "D", 1, 0) == 0);
    got = -1;
    int err = zc_os_file_lock(g, 1, 0, &got);
#ifdef _WIN32
    CHECK(err == 0 && got == 0);   /* the handle holds it: another handle is excluded */
    CHECK(zc_os_file_lock(r, 0, 0, &got) == 0 && got == 0); /* shared is excluded too */
    CHECK(zc_os_file_unlock(f) == 0);
    CHECK(zc_os_file_lock(r, 0, 0, &got) == 0 && got == 1); /* now shared is granted */
    CHECK(zc_os_file_lock(g, 1, 0, &got) == 0 && got == 0); /* but not exclusive over it */
    CHECK(zc_os_file_unlock(r) == 0);
    CHECK(zc_os_file_lock(g, 1, 0, &got) == 0 && got == 1);
    CHECK(zc_os_file_unlock(g) == 0);
#else
    CHECK(err == 0 && got == 1);   /* the process holds it: granted again at once */
    CHECK(zc_os_file_unlock(g) == 0);
    CHECK(zc_os_file_lock(r, 0, 0, &got) == 0 && got == 1);
    CHECK(zc_os_file_unlock(r) == 0);
#endif
    CHECK(zc_os_file_unlock(f) == 0);
    CHECK(zc_os_file_unlock(f) == 0); /* unlocking what is not locked is a no-op */
    zc_os_file_close(&r);
    zc_os_file_close(&g);
    zc_os_file_close(&f);
    CHECK(file_is(path, "Data"));
    free(path);
}
