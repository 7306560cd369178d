/* harness.h — a minimal self-registering test harness for the C unit tests.
 * Each TEST runs in order of registration; CHECK records a failure and goes
 * on, REQUIRE records it and leaves the test.  The runner prints one line per
 * failure and the summary "N passed, N failed". */
#ifndef ZC_TEST_HARNESS_H
#define ZC_TEST_HARNESS_H

#include <stdio.h>

typedef void (*zc_test_fn)(void);
void zc_test_register(const char *name, zc_test_fn fn);
void zc_test_failed(const char *file, int line, const char *expr);
int zc_test_run_all(const char *filter);

#define TEST(name)                                                             \
    static void name(void);                                                    \
    __attribute__((constructor)) static void register_##name(void)             \
    {                                                                          \
        zc_test_register(#name, name);                                         \
    }                                                                          \
    static void name(void)

#define CHECK(expr)                                                            \
    do {                                                                       \
        if (!(expr))                                                           \
            zc_test_failed(__FILE__, __LINE__, #expr);                         \
    } while (0)

#define REQUIRE(expr)                                                          \
    do {                                                                       \
        if (!(expr)) {                                                         \
            zc_test_failed(__FILE__, __LINE__, #expr);                         \
            return;                                                            \
        }                                                                      \
    } while (0)

/* CHECK that a zc call returned ZC_OK, printing zc_last_error() otherwise. */
#define CHECK_OK(call)                                                         \
    do {                                                                       \
        int zc_rc_ = (call);                                                   \
        if (zc_rc_ != 0) {                                                     \
            fprintf(stderr, "  %s -> %s: %s\n", #call, zc_status_name(zc_rc_), \
                    zc_last_error());                                          \
            zc_test_failed(__FILE__, __LINE__, #call " == ZC_OK");             \
        }                                                                      \
    } while (0)

#define REQUIRE_OK(call)                                                       \
    do {                                                                       \
        int zc_rc_ = (call);                                                   \
        if (zc_rc_ != 0) {                                                     \
            fprintf(stderr, "  %s -> %s: %s\n", #call, zc_status_name(zc_rc_), \
                    zc_last_error());                                          \
            zc_test_failed(__FILE__, __LINE__, #call " == ZC_OK");             \
            return;                                                            \
        }                                                                      \
    } while (0)

/* A fresh empty directory under $TMPDIR for one test; caller frees path. */
char *zc_test_tmpdir(const char *label);
/* Remove a directory tree made by zc_test_tmpdir. */
void zc_test_rmtree(const char *path);

#endif
