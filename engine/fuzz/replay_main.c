/*
 * replay_main.c — runs LLVMFuzzerTestOneInput over stored inputs without
 * libFuzzer, so the seed and malformed corpora are regression tests under
 * gcc's ASan/UBSan (make test-c):
 *
 *   build/fuzz_replay engine/fuzz/corpus engine/tests/malformed
 *
 * Each input runs in a child process (this program again, with --one PATH,
 * so it works where there is no fork): a sanitizer report (which aborts)
 * fails that input only, and the others still run.  Leak checking happens at
 * the child's exit.  Prints "N passed, N failed"; exits 1 if any failed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h" /* built with ZC_TEST_NO_MAIN: zc_test_join only */
#include "platform/platform_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The whole file in a malloc'd buffer (exactly its size, so ASan sees any
 * read past the end). */
static uint8_t *slurp(const char *path, size_t *len)
{
    zc_os_file f = ZC_OS_FILE_CLOSED;
    uint64_t size = 0;
    int regular = 0;
    uint8_t *buf = NULL;
    if (zc_os_file_open_read(path, &f) != 0)
        return NULL;
    if (zc_os_file_info(f, &size, &regular) == 0 && regular &&
        (buf = malloc(size ? (size_t)size : 1)) != NULL &&
        (zc_os_file_read_at(f, buf, (size_t)size, 0, len) != 0 || *len != size)) {
        free(buf);
        buf = NULL;
    }
    zc_os_file_close(&f);
    return buf;
}

/* The child's side: one input, in this process. */
static int run_here(const char *path)
{
    size_t len = 0;
    uint8_t *buf = slurp(path, &len);
    if (buf == NULL) {
        fprintf(stderr, "cannot read %s\n", path);
        return 2;
    }
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0; /* return, not _exit: LeakSanitizer checks at exit */
}

/* Run one input in a child (this program with --one PATH); @return 1 if it
 * was handled cleanly. */
static int run_one(const char *self, const char *path)
{
    const char *argv[] = {self, "--one", path, NULL};
    zc_os_process child;
    int code = -1;
    fflush(NULL);
    int err = zc_os_test_spawn(argv, 0, &child);
    if (err != 0) {
        fprintf(stderr, "cannot start %s: %s\n", self, ZC_OS_WHY(err));
        return 0;
    }
    if (zc_os_test_wait(&child, &code) != 0)
        return 0;
    return code == 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file in dir, in name order. */
static void run_dir(const char *self, const char *dir, int *passed, int *failed)
{
    zc_os_dir *d = NULL;
    const char *name;
    char **names = NULL;
    size_t n = 0, cap = 0;
    if (zc_os_dir_open(dir, &d) != 0) {
        fprintf(stderr, "cannot open directory %s\n", dir);
        (*failed)++;
        return;
    }
    while (zc_os_dir_next(d, &name) == 0 && name != NULL) {
        if (name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **grown = realloc(names, cap * sizeof *names);
            if (grown == NULL)
                break;
            names = grown;
        }
        if ((names[n] = zc_test_join(dir, name)) == NULL)
            break;
        n++;
    }
    zc_os_dir_close(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        zc_os_path_kind kind;
        if (zc_os_stat(names[i], &kind, NULL) == 0 && kind == ZC_OS_PATH_FILE) {
            if (run_one(self, names[i])) {
                (*passed)++;
            } else {
                (*failed)++;
                fprintf(stderr, "FAILED %s\n", names[i]);
            }
        }
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    if (argc == 3 && strcmp(argv[1], "--one") == 0)
        return run_here(argv[2]);
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        run_dir(argv[0], argv[i], &passed, &failed);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
