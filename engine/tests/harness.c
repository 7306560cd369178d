/* harness.c — runner for the self-registering C tests (see harness.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "harness.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TESTS 512

static struct {
    const char *name;
    zc_test_fn fn;
} tests[MAX_TESTS];
static int test_count;
static int current_failures;

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

int zc_test_run_all(const char *filter)
{
    int passed = 0, failed = 0;
    for (int i = 0; i < test_count; i++) {
        if (filter && !strstr(tests[i].name, filter))
            continue;
        current_failures = 0;
        tests[i].fn();
        if (current_failures) {
            failed++;
            fprintf(stderr, "FAILED %s\n", tests[i].name);
        } else {
            passed++;
            printf("ok %s\n", tests[i].name);
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

char *zc_test_tmpdir(const char *label)
{
    const char *base = getenv("TMPDIR");
    char *path = NULL;
    if (!base || !*base)
        base = "/tmp";
    if (asprintf(&path, "%s/zc-test-%s-XXXXXX", base, label) < 0)
        return NULL;
    if (!mkdtemp(path)) {
        free(path);
        return NULL;
    }
    return path;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

void zc_test_rmtree(const char *path)
{
    if (path)
        nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#ifndef ZC_TEST_NO_MAIN
int main(int argc, char **argv)
{
    return zc_test_run_all(argc > 1 ? argv[1] : NULL);
}
#endif
