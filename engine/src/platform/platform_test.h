/*
 * platform_test.h — operating-system services only the test programs need
 * (temporary directories, processes, fault injection).  Compiled into the
 * tests, never into libzc; implemented by posix_test.c and win32_test.c.
 * Same conventions as platform.h: UTF-8 paths, 0 or an OS error code.
 */
#ifndef ZC_PLATFORM_TEST_H
#define ZC_PLATFORM_TEST_H

#include <stdint.h>

#include "platform.h"

/* Where temporary files go: $TMPDIR or /tmp; Windows: GetTempPathW.  Into
 * buf (cap bytes), without a trailing separator. */
int zc_os_test_temp_dir(char *buf, size_t cap);

/* Remove an empty directory. */
int zc_os_test_rmdir(const char *path);

/* Cut or extend a file to size bytes. */
int zc_os_test_truncate(const char *path, uint64_t size);

/* Make a symbolic link at link_path whose target is target (a path, as
 * symlink(2) takes it).  Windows: CreateSymbolicLinkW, unprivileged where
 * Developer Mode allows it; fails with ZC_OS_UNSUPPORTED or ZC_OS_ACCESS
 * where links cannot be made (no privilege, or a Windows layer such as wine
 * that makes a link the Win32 API does not report as a reparse point), so a
 * test can say it skipped the check rather than pretend. */
int zc_os_test_symlink(const char *target, const char *link_path);

/* Give the existing file target a second name link_path (a hard link, on
 * the same file system).  POSIX link(2); Windows CreateHardLinkW (NTFS).
 * A file system without hard links fails with its error, so a test can say
 * it skipped. */
int zc_os_test_hardlink(const char *target, const char *link_path);

/* Make a FIFO (named pipe) at path, mode 0644.  Windows has no FIFO in the
 * file system: a ZC_OS_UNSUPPORTED error. */
int zc_os_test_mkfifo(const char *path);

/* The current directory into buf, and changing it. */
int zc_os_test_getcwd(char *buf, size_t cap);
int zc_os_test_chdir(const char *path);

/* A child process running argv[0] (a path) with argv (NULL-terminated),
 * its standard output discarded when quiet, standard error inherited. */
typedef struct {
    intptr_t handle; /* Windows: the process HANDLE */
    long pid;
} zc_os_process;
int zc_os_test_spawn(const char *const *argv, int quiet, zc_os_process *p);

/* End the child at once, as a crash would: SIGKILL, or TerminateProcess. */
int zc_os_test_kill(zc_os_process *p);

/* Wait for the child; *exit_code is its exit status, or -1 when it was
 * ended by a signal or by zc_os_test_kill. */
int zc_os_test_wait(zc_os_process *p, int *exit_code);

/* Fault injection for the "write fails part-way" test: limit the size of
 * files this process writes (POSIX RLIMIT_FSIZE, with SIGXFSZ ignored so the
 * write fails with EFBIG instead of killing the test).  old receives the
 * previous limit for the restore.  Windows has no such limit: it returns a
 * ZC_OS_UNSUPPORTED error. */
int zc_os_test_limit_file_size(uint64_t bytes, uint64_t *old);
int zc_os_test_restore_file_size(uint64_t old);

/* Make a directory read-only (or writable again) through its permission
 * bits; ZC_OS_UNSUPPORTED on Windows, where that takes an ACL. */
int zc_os_test_set_dir_readonly(const char *path, int readonly);

/* 1 when permission bits do not bind this process (root); Windows 0. */
int zc_os_test_is_superuser(void);

#endif
