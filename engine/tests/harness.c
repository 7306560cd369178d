/* harness.c — runner for the self-registering C tests (see harness.h). */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform_test.h"

#define MAX_TESTS 512

static struct {
    const char *name;
    zc_test_fn fn;
} tests[MAX_TESTS];
static int test_count;
static int current_failures;
static const char *current_skip;
/* The running test's folders (zc_test_folder), removed when it ends. */
static char *current_folders[8];
static int current_folder_count;

void zc_test_register(const char *name, zc_test_fn fn)
{
    if (test_count < MAX_TESTS) {
        tests[test_count].name = name;
        tests[test_count].fn = fn;
        test_count++;
    }
}

void zc_test_failed(const char *file, int line, const char *expr)
{
    current_failures++;
    fprintf(stderr, "  FAIL %s:%d: %s\n", file, line, expr);
}

void zc_test_skipped(const char *reason)
{
    current_skip = reason;
}

static void remove_folders(void)
{
    for (int i = 0; i < current_folder_count; i++) {
        zc_test_rmtree(current_folders[i]);
        free(current_folders[i]);
    }
    current_folder_count = 0;
}

int zc_test_run_all(const char *filter)
{
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < test_count; i++) {
        if (filter && !strstr(tests[i].name, filter))
            continue;
        current_failures = 0;
        current_skip = NULL;
        tests[i].fn();
        remove_folders();
        if (current_failures) {
            failed++;
            fprintf(stderr, "FAILED %s\n", tests[i].name);
        } else if (current_skip) {
            skipped++;
            printf("skipped %s: %s\n", tests[i].name, current_skip);
        } else {
            passed++;
            printf("ok %s\n", tests[i].name);
        }
        fflush(stdout);
    }
    if (skipped)
        printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else
        printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

char *zc_test_join(const char *dir, const char *name)
{
    size_t n = strlen(dir), m = strlen(name);
    char *p = malloc(n + m + 2);
    if (p == NULL)
        return NULL;
    memcpy(p, dir, n);
    p[n] = '/';
    memcpy(p + n + 1, name, m + 1);
    return p;
}

char *zc_test_tmpdir(const char *label)
{
    static unsigned counter;
    char base[4096], name[160];
    if (zc_os_test_temp_dir(base, sizeof base) != 0)
        return NULL;
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(name, sizeof name, "zc-test-%s-%ld-%u-%llu", label, zc_os_pid(), counter++,
                 (unsigned long long)(zc_os_monotonic_ns() % 1000000u));
        char *path = zc_test_join(base, name);
        if (path == NULL)
            return NULL;
        int err = zc_os_mkdir(path);
        if (err == 0)
            return path;
        free(path);
        if (!zc_os_error_is(err, ZC_OS_EXISTS))
            return NULL;
    }
    return NULL;
}

char *zc_test_folder(const char *label)
{
    if (current_folder_count == (int)(sizeof current_folders / sizeof current_folders[0]))
        return NULL; /* more than a test needs: REQUIRE fails, saying so by its line */
    char *path = zc_test_tmpdir(label);
    if (path != NULL)
        current_folders[current_folder_count++] = path;
    return path;
}

int zc_test_count(const char *dir, const char *prefix, const char *suffix)
{
    zc_os_dir *d = NULL;
    const char *name;
    int n = 0;
    if (zc_os_dir_open(dir, &d) != 0)
        return -1;
    while (zc_os_dir_next(d, &name) == 0 && name != NULL) {
        size_t len = strlen(name), slen = strlen(suffix);
        n += strncmp(name, prefix, strlen(prefix)) == 0 && len >= slen &&
             strcmp(name + len - slen, suffix) == 0;
    }
    zc_os_dir_close(d);
    return n;
}

void zc_test_rmtree(const char *path)
{
    zc_os_path_kind kind;
    if (path == NULL || zc_os_stat(path, &kind, NULL) != 0)
        return;
    if (kind != ZC_OS_PATH_DIR) {
        zc_os_remove(path);
        return;
    }
    zc_os_dir *d = NULL;
    const char *name;
    if (zc_os_dir_open(path, &d) == 0) {
        while (zc_os_dir_next(d, &name) == 0 && name != NULL) {
            char *child = zc_test_join(path, name);
            if (child)
                zc_test_rmtree(child);
            free(child);
        }
        zc_os_dir_close(d);
    }
    zc_os_test_rmdir(path);
}

#ifndef ZC_TEST_NO_MAIN
int main(int argc, char **argv)
{
    return zc_test_run_all(argc > 1 ? argv[1] : NULL);
}
#endif
