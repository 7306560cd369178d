/* win32_test.c — the test programs' own OS services (platform_test.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "platform_test.h"
#include "win32_internal.h"

/* The exit code zc_os_test_kill gives a terminated child, which
 * zc_os_test_wait reports as -1 ("ended, did not exit"). */
#define KILLED_EXIT_CODE 0x4B494C4Cu

int zc_os_test_temp_dir(char *buf, size_t cap)
{
    wchar_t w[MAX_PATH + 2];
    DWORD n = GetTempPathW(MAX_PATH + 1, w);
    if (n == 0 || n > MAX_PATH + 1)
        return n == 0 ? (int)GetLastError() : ERROR_FILENAME_EXCED_RANGE;
    while (n > 3 && (w[n - 1] == L'\\' || w[n - 1] == L'/'))
        w[--n] = L'\0';
    return zc__win_utf8(w, buf, cap);
}

int zc_os_test_rmdir(const char *path)
{
    int err = 0;
    wchar_t *w = zc__win_path(path, NULL, &err);
    if (w != NULL && !RemoveDirectoryW(w))
        err = (int)GetLastError();
    free(w);
    return err;
}

int zc_os_test_truncate(const char *path, uint64_t size)
{
    int err = 0;
    wchar_t *w = zc__win_path(path, NULL, &err);
    if (w == NULL)
        return err;
    HANDLE h = CreateFileW(w, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
    free(w);
    if (h == INVALID_HANDLE_VALUE)
        return (int)GetLastError();
    LARGE_INTEGER at;
    at.QuadPart = (LONGLONG)size;
    if (!SetFilePointerEx(h, at, NULL, FILE_BEGIN) || !SetEndOfFile(h))
        err = (int)GetLastError();
    CloseHandle(h);
    return err;
}

#ifndef SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE
#define SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE 0x2
#endif

int zc_os_test_symlink(const char *target, const char *link_path)
{
    int err = 0;
    wchar_t *t = zc__win_path(target, NULL, &err), *l = t ? zc__win_path(link_path, NULL, &err)
                                                          : NULL;
    if (l != NULL) {
        /* Windows 10 1703+ in Developer Mode without elevation; older ones
         * refuse the flag (ERROR_INVALID_PARAMETER) and need the privilege. */
        BOOLEAN made = CreateSymbolicLinkW(l, t, SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE);
        if (!made && GetLastError() == ERROR_INVALID_PARAMETER)
            made = CreateSymbolicLinkW(l, t, 0);
        if (!made) {
            err = (int)GetLastError();
        } else {
            /* A link the Win32 API does not show as a reparse point cannot
             * test a no-follow open (wine 8 reports success and makes
             * nothing): remove what was made and say links are unsupported. */
            DWORD attrs = GetFileAttributesW(l);
            if (attrs == INVALID_FILE_ATTRIBUTES || (attrs & FILE_ATTRIBUTE_REPARSE_POINT) == 0) {
                DeleteFileW(l);
                err = ERROR_NOT_SUPPORTED;
            }
        }
    }
    free(t);
    free(l);
    return err;
}

int zc_os_test_hardlink(const char *target, const char *link_path)
{
    int err = 0;
    wchar_t *t = zc__win_path(target, NULL, &err), *l = t ? zc__win_path(link_path, NULL, &err)
                                                          : NULL;
    if (l != NULL && !CreateHardLinkW(l, t, NULL))
        err = (int)GetLastError();
    free(t);
    free(l);
    return err;
}

int zc_os_test_mkfifo(const char *path)
{
    (void)path;
    return ERROR_NOT_SUPPORTED;
}

int zc_os_test_getcwd(char *buf, size_t cap)
{
    wchar_t w[32768];
    DWORD n = GetCurrentDirectoryW(sizeof w / sizeof w[0], w);
    if (n == 0 || n >= sizeof w / sizeof w[0])
        return n == 0 ? (int)GetLastError() : ERROR_FILENAME_EXCED_RANGE;
    return zc__win_utf8(w, buf, cap);
}

int zc_os_test_chdir(const char *path)
{
    int err = 0;
    wchar_t *w = zc__win_path(path, NULL, &err);
    if (w != NULL && !SetCurrentDirectoryW(w))
        err = (int)GetLastError();
    free(w);
    return err;
}

/* Append arg to the command line as the C runtime's argv parser reads it
 * back: quoted when it has a space, tab or quote (or is empty), with each
 * run of backslashes doubled where it precedes a quote. */
static void append_arg(wchar_t *cmd, size_t *at, const wchar_t *arg)
{
    int quote = arg[0] == L'\0' || wcspbrk(arg, L" \t\"") != NULL;
    if (!quote) {
        size_t n = wcslen(arg);
        memcpy(cmd + *at, arg, n * sizeof *cmd);
        *at += n;
        return;
    }
    cmd[(*at)++] = L'"';
    for (const wchar_t *p = arg;; p++) {
        size_t slashes = 0;
        while (*p == L'\\') {
            slashes++;
            p++;
        }
        if (*p == L'\0' || *p == L'"') {
            slashes *= 2; /* before the closing quote, or an escaped quote */
        }
        for (size_t i = 0; i < slashes; i++)
            cmd[(*at)++] = L'\\';
        if (*p == L'\0')
            break;
        if (*p == L'"')
            cmd[(*at)++] = L'\\';
        cmd[(*at)++] = *p;
    }
    cmd[(*at)++] = L'"';
}

int zc_os_test_spawn(const char *const *argv, int quiet, zc_os_process *p)
{
    size_t cap = 1, count = 0;
    int err = 0;
    for (; argv[count]; count++)
        cap += strlen(argv[count]) * 2 * 2 + 3; /* worst case: every char escaped, quotes, space */
    wchar_t *cmd = malloc(cap * sizeof *cmd), *exe = NULL;
    if (cmd == NULL)
        return ERROR_NOT_ENOUGH_MEMORY;
    size_t at = 0;
    for (size_t i = 0; i < count && err == 0; i++) {
        int n = MultiByteToWideChar(CP_UTF8, 0, argv[i], -1, NULL, 0);
        wchar_t *w = n > 0 ? malloc((size_t)n * sizeof *w) : NULL;
        if (w == NULL) {
            err = n > 0 ? ERROR_NOT_ENOUGH_MEMORY : (int)GetLastError();
            break;
        }
        MultiByteToWideChar(CP_UTF8, 0, argv[i], -1, w, n);
        if (i > 0)
            cmd[at++] = L' ';
        append_arg(cmd, &at, w);
        free(w);
    }
    cmd[at] = L'\0';
    if (err == 0)
        exe = zc__win_path(argv[0], NULL, &err);
    HANDLE null_out = INVALID_HANDLE_VALUE;
    STARTUPINFOW si;
    PROCESS_INFORMATION pi;
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    if (err == 0 && quiet) {
        SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
        null_out = CreateFileW(L"NUL", GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, &sa,
                               OPEN_EXISTING, 0, NULL);
        si.dwFlags = STARTF_USESTDHANDLES;
        si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
        si.hStdOutput = null_out;
        si.hStdError = GetStdHandle(STD_ERROR_HANDLE);
    }
    /* A start that fails with ERROR_INTERNAL_ERROR says nothing about the
     * program: Wine's process creation does it now and then on a loaded
     * machine (a CI run saw it once).  Try again a few times, saying so
     * on stderr; any other error, or the fourth, is returned. */
    for (int attempt = 1; err == 0; attempt++) {
        if (CreateProcessW(exe, cmd, NULL, NULL, quiet ? TRUE : FALSE, 0, NULL, NULL, &si, &pi))
            break;
        DWORD why = GetLastError();
        if (why != ERROR_INTERNAL_ERROR || attempt == 4) {
            err = (int)why;
            break;
        }
        fprintf(stderr, "  (starting %s failed with Windows error %lu; try %d of 4 in %d ms)\n",
                argv[0], (unsigned long)why, attempt + 1, 250 * attempt);
        Sleep(250u * (DWORD)attempt);
    }
    if (null_out != INVALID_HANDLE_VALUE)
        CloseHandle(null_out);
    free(exe);
    free(cmd);
    if (err != 0)
        return err;
    CloseHandle(pi.hThread);
    p->handle = (intptr_t)pi.hProcess;
    p->pid = (long)pi.dwProcessId;
    return 0;
}

int zc_os_test_kill(zc_os_process *p)
{
    return TerminateProcess((HANDLE)p->handle, KILLED_EXIT_CODE) ? 0 : (int)GetLastError();
}

int zc_os_test_wait(zc_os_process *p, int *exit_code)
{
    HANDLE h = (HANDLE)p->handle;
    DWORD code = 0;
    if (WaitForSingleObject(h, INFINITE) != WAIT_OBJECT_0 || !GetExitCodeProcess(h, &code))
        return (int)GetLastError();
    CloseHandle(h);
    p->handle = -1;
    *exit_code = code == KILLED_EXIT_CODE ? -1 : (int)code;
    return 0;
}

int zc_os_test_limit_file_size(uint64_t bytes, uint64_t *old)
{
    (void)bytes;
    *old = 0;
    return ERROR_NOT_SUPPORTED;
}

int zc_os_test_restore_file_size(uint64_t old)
{
    (void)old;
    return ERROR_NOT_SUPPORTED;
}

int zc_os_test_set_dir_readonly(const char *path, int readonly)
{
    (void)path;
    (void)readonly;
    return ERROR_NOT_SUPPORTED;
}

int zc_os_test_is_superuser(void)
{
    return 0;
}
