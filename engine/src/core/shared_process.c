/*
 * shared_process.c — what every store of one process shares when spill
 * folders are shared between processes: the process token that names this
 * process's temporary and owner files, and the process-wide mutexes that
 * POSIX record locks need (an fcntl lock belongs to the process, so it does
 * not exclude the process's own threads, and closing any descriptor of a
 * file drops the process's lock on it; see zc_os_file_lock).
 *
 * This is the engine's only process-wide mutable state besides the
 * once-initialised page size.  It is created once, on first use, and never
 * freed (a few mutexes; they must outlive every store).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Counter-file work is serialised per tag, striped so that puts of
 * different tags rarely wait for each other. */
#define TAG_STRIPES 16

static zc_os_once once = ZC_OS_ONCE_INIT;
static zc_os_mutex tag_mutex[TAG_STRIPES];
static zc_os_mutex folder_mutex; /* folder locks and owner files (store open and close) */
static zc_os_mutex token_mutex;
static char token[17];
static long token_pid; /* the process the token was made for (0: none yet) */
static unsigned long token_salt;

int zc__shared_locks_disabled_for_tests;

static void init(void)
{
    /* Mutex initialisation cannot fail on Windows and does not on Linux or
     * macOS with default attributes; nothing could report it here. */
    for (int i = 0; i < TAG_STRIPES; i++)
        zc_os_mutex_init(&tag_mutex[i]);
    zc_os_mutex_init(&folder_mutex);
    zc_os_mutex_init(&token_mutex);
}

zc_os_mutex *zc__shared_tag_mutex(const char *tag)
{
    zc_os_once_run(&once, init);
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)tag; *p; p++)
        h = (h ^ *p) * 16777619u;
    return &tag_mutex[h % TAG_STRIPES];
}

zc_os_mutex *zc__shared_folder_mutex(void)
{
    zc_os_once_run(&once, init);
    return &folder_mutex;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A token no other process should have: the pid, both clocks and two
 * addresses (randomised by ASLR) mixed.  Uniqueness is not left to chance:
 * owner files are created exclusively (a collision picks another name), and
 * a collision of two live processes' tokens only makes each keep the
 * other's temporary files. */
static void make_token(long pid)
{
    int local = 0;
    uint64_t x = (uint64_t)pid ^ zc_os_monotonic_ns() ^ (zc_os_now_unix_ms() << 20) ^
                 (uint64_t)(uintptr_t)&local ^ ((uint64_t)(uintptr_t)&token << 7) ^
                 (uint64_t)++token_salt;
    uint64_t v = splitmix64(&x) ^ splitmix64(&x);
    snprintf(token, sizeof token, "%016llx", (unsigned long long)v);
    token_pid = pid;
}

void zc__process_token(char out[17])
{
    zc_os_once_run(&once, init);
    long pid = zc_os_pid();
    zc_os_mutex_lock(&token_mutex);
    if (token_pid != pid) /* first use, or a child made by fork: a token of its own */
        make_token(pid);
    memcpy(out, token, 17);
    zc_os_mutex_unlock(&token_mutex);
}
