/* harness.h — a minimal self-registering test harness for the C unit tests.
 * Each TEST runs in order of registration; CHECK records a failure and goes
 * on, REQUIRE records it and leaves the test, SKIP leaves it as skipped with
 * a reason (for a check this platform cannot make).  The runner prints one
 * line per failure or skip and the summary "N passed, N failed" (with
 * ", N skipped" when any were). */
#ifndef ZC_TEST_HARNESS_H
#define ZC_TEST_HARNESS_H

#include <stdio.h>

typedef void (*zc_test_fn)(void);
void zc_test_register(const char *name, zc_test_fn fn);
void zc_test_failed(const char *file, int line, const char *expr);
void zc_test_skipped(const char *reason);
int zc_test_run_all(const char *filter);

#define TEST(name)                                                             \
    static void name(void);                                                    \
    __attribute__((constructor)) static void register_##name(void)             \
    {                                                                          \
        zc_test_register(#name, name);                                         \
    }                                                                          \
    static void name(void)

/* Leave the test as skipped, saying why; only before any check failed. */
#define SKIP(reason)                                                           \
    do {                                                                       \
        zc_test_skipped(reason);                                               \
        return;                                                                \
    } while (0)

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

/* CHECK/REQUIRE that a zc call returned ZC_OK, printing zc_last_error()
 * otherwise (REQUIRE_OK then leaves the test). */
#define ZC_TEST_OK_(call, leave)                                               \
    do {                                                                       \
        int zc_rc_ = (call);                                                   \
        if (zc_rc_ != 0) {                                                     \
            fprintf(stderr, "  %s -> %s: %s\n", #call, zc_status_name(zc_rc_), \
                    zc_last_error());                                          \
            zc_test_failed(__FILE__, __LINE__, #call " == ZC_OK");             \
            leave;                                                             \
        }                                                                      \
    } while (0)
#define CHECK_OK(call) ZC_TEST_OK_(call, (void)0)
#define REQUIRE_OK(call) ZC_TEST_OK_(call, return)

/* A fresh empty directory under the temporary directory for one test;
 * caller frees path. */
char *zc_test_tmpdir(const char *label);
/* A fresh empty directory (zc_test_tmpdir) that the runner removes, with all
 * it holds, and frees when the running test ends, whether it passed, failed
 * or left early; NULL when none could be made. */
char *zc_test_folder(const char *label);
/* Declare `char *var`, a zc_test_folder for the running test, and REQUIRE it. */
#define TEST_FOLDER(var, label)                                                \
    char *var = zc_test_folder(label);                                         \
    REQUIRE(var != NULL)
/* "dir/name" in a new string (caller frees), or NULL. */
char *zc_test_join(const char *dir, const char *name);
/* Entries of dir whose name starts with prefix and ends with suffix ("" for
 * any), or -1 if dir cannot be listed. */
int zc_test_count(const char *dir, const char *prefix, const char *suffix);
/* Remove a directory tree made by zc_test_tmpdir. */
void zc_test_rmtree(const char *path);

#endif
