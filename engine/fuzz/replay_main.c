/*
 * replay_main.c — runs LLVMFuzzerTestOneInput over stored inputs without
 * libFuzzer, so the seed and malformed corpora are regression tests under
 * gcc's ASan/UBSan (make test-c):
 *
 *   build/fuzz_replay engine/fuzz/corpus engine/tests/malformed
 *
 * Each input runs in a child process: a sanitizer report (which aborts)
 * fails that input only, and the others still run.  Leak checking happens at
 * the child's exit.  Prints "N passed, N failed"; exits 1 if any failed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf */
#endif
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The whole file in a malloc'd buffer (exactly its size, so ASan sees any
 * read past the end). */
static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    struct stat st;
    uint8_t *buf = NULL;
    if (fp == NULL)
        return NULL;
    if (fstat(fileno(fp), &st) == 0 && st.st_size >= 0) {
        *len = (size_t)st.st_size;
        buf = malloc(*len ? *len : 1);
        if (buf && fread(buf, 1, *len, fp) != *len) {
            free(buf);
            buf = NULL;
        }
    }
    fclose(fp);
    return buf;
}

/* Run one input in a child; @return 1 if it was handled cleanly. */
static int run_one(const char *path)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 0;
    }
    if (pid == 0) {
        size_t len = 0;
        uint8_t *buf = slurp(path, &len);
        if (buf == NULL) {
            fprintf(stderr, "cannot read %s\n", path);
            exit(2);
        }
        LLVMFuzzerTestOneInput(buf, len);
        free(buf);
        exit(0); /* exit, not _exit: LeakSanitizer checks here */
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        ;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file in dir, in name order. */
static void run_dir(const char *dir, int *passed, int *failed)
{
    DIR *d = opendir(dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    if (d == NULL) {
        fprintf(stderr, "cannot open directory %s\n", dir);
        (*failed)++;
        return;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **grown = realloc(names, cap * sizeof *names);
            if (grown == NULL)
                break;
            names = grown;
        }
        if (asprintf(&names[n], "%s/%s", dir, e->d_name) < 0)
            break;
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_one(names[i])) {
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
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        run_dir(argv[i], &passed, &failed);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
