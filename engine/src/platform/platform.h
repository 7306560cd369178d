/*
 * platform.h — every operating-system service the engine uses, and the
 * promises its callers rely on.  Implemented twice: platform/posix_*.c
 * (Linux, macOS and other POSIX systems) and platform/win32_*.c (Windows);
 * the build compiles one set.  No file outside engine/src/platform/ includes
 * an OS header: the store, the spill tier, the parser and the CLI are plain
 * C11 over this header.  A new platform is one new set of files held to the
 * same promises and run through the same tests (engine/tests/test_platform.c).
 *
 * Conventions
 * - Paths are UTF-8.  '/' separates components everywhere; on Windows '\'
 *   does too.  Windows converts paths to UTF-16 and adds the \\?\ prefix to
 *   long ones, so paths longer than MAX_PATH (260) work.
 * - A call that can fail returns 0, or a positive OS error code: errno on
 *   POSIX, GetLastError() on Windows.  zc_os_error_text() words it and
 *   zc_os_error_is() classifies it; callers never compare raw codes.
 * - Every handle type is a plain value the caller owns and may embed in its
 *   own structures (no allocation, no OS type in this header).
 */
#ifndef ZC_PLATFORM_H
#define ZC_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

/* ---- errors ---- */

typedef enum {
    ZC_OS_NOT_FOUND,    /* the path, or a directory on it, does not exist */
    ZC_OS_EXISTS,       /* the path exists (exclusive create, mkdir) */
    ZC_OS_ACCESS,       /* permission denied, read-only, or in use (Windows sharing) */
    ZC_OS_NO_SPACE,     /* the file system is full */
    ZC_OS_UNSUPPORTED,  /* this file system or OS version cannot do it */
    ZC_OS_LINK,         /* a no-follow open found a symbolic link (Windows: a symbolic
                           link, junction or other name-surrogate reparse point) */
    ZC_OS_NOT_PRIVATE,  /* the file is not the engine's alone: a symbolic link (as
                           ZC_OS_LINK), a file with more than one name (a hard link), or no
                           regular file (a FIFO, device, socket, directory); see
                           zc_os_file_check_private */
} zc_os_error_class;

/* The error a no-follow open (zc_os_file_open_rw, zc_os_file_open_read_nofollow)
 * returns for a link at its path, on every platform: an application code (bit 29
 * set, never an errno nor a Windows system code), in class ZC_OS_LINK, worded by
 * zc_os_error_text as a symbolic link the engine will not follow and to remove. */
#define ZC_OS_ERROR_LINK_REFUSED ((int)0x20000002)

/* The errors of zc_os_file_check_private, on every platform: application codes
 * like ZC_OS_ERROR_LINK_REFUSED, in class ZC_OS_NOT_PRIVATE, each worded by
 * zc_os_error_text as what the file is and why the engine will not use it. */
#define ZC_OS_ERROR_NOT_REGULAR ((int)0x20000003) /* a FIFO, device, socket or directory */
#define ZC_OS_ERROR_HARD_LINKED ((int)0x20000004) /* a file with more than one name */

/* 1 if the OS error code err belongs to class cls, else 0. */
int zc_os_error_is(int err, zc_os_error_class cls);

/* The OS's wording of err (UTF-8, never NULL) written into buf, which it
 * returns; truncated to cap bytes. */
const char *zc_os_error_text(int err, char *buf, size_t cap);

/* The wording of err in a buffer that lives until the end of the enclosing
 * full expression's block, for message arguments:
 *   zc__fail(ZC_E_IO, "cannot open %s: %s", path, ZC_OS_WHY(err)); */
#define ZC_OS_WHY(err) zc_os_error_text((err), (char[256]){0}, 256)

/* ---- threads, locks, condition variables, once ---- */

/* Storage big and aligned enough for any implementation's object; each
 * implementation checks its fit at compile time. */
#define ZC_OS_OPAQUE(bytes)                                                    \
    union {                                                                    \
        unsigned char bytes_[bytes];                                           \
        long long align_ll_;                                                   \
        void *align_p_;                                                        \
        double align_d_;                                                       \
    }

typedef struct { ZC_OS_OPAQUE(64) u; } zc_os_mutex;
typedef struct { ZC_OS_OPAQUE(64) u; } zc_os_cond;
typedef struct { ZC_OS_OPAQUE(16) u; } zc_os_thread;

/* A mutex that is not recursive.  init returns 0 or an OS error; lock and
 * unlock cannot fail on a valid, initialised mutex (unlock by its owner). */
int zc_os_mutex_init(zc_os_mutex *m);
void zc_os_mutex_destroy(zc_os_mutex *m);
void zc_os_mutex_lock(zc_os_mutex *m);
void zc_os_mutex_unlock(zc_os_mutex *m);

/* A condition variable.  wait atomically releases m (held by the caller),
 * sleeps, and re-acquires m before it returns; it may wake spuriously, so
 * callers wait in a loop over their predicate. */
int zc_os_cond_init(zc_os_cond *c);
void zc_os_cond_destroy(zc_os_cond *c);
void zc_os_cond_wait(zc_os_cond *c, zc_os_mutex *m);
/* zc_os_cond_wait for at most about ms milliseconds (on a clock that does not
 * follow wall-clock changes); it too may return early or spuriously. */
void zc_os_cond_wait_ms(zc_os_cond *c, zc_os_mutex *m, unsigned ms);
void zc_os_cond_signal(zc_os_cond *c);
void zc_os_cond_broadcast(zc_os_cond *c);

/* Start a thread running fn(arg).  @return 0 (t then names the thread until
 * it is joined) or an OS error.  Every started thread must be joined. */
int zc_os_thread_start(zc_os_thread *t, void (*fn)(void *), void *arg);
void zc_os_thread_join(zc_os_thread *t);
/* Let other threads run (a hint). */
void zc_os_thread_yield(void);

/* Run a function exactly once per zc_os_once object, whichever thread gets
 * there first; every other caller returns only after it has finished.  A
 * zc_os_once starts as ZC_OS_ONCE_INIT (static or automatic storage). */
typedef struct {
    _Atomic int state;
} zc_os_once;
#define ZC_OS_ONCE_INIT {0}
void zc_os_once_run(zc_os_once *once, void (*fn)(void));

/* ---- memory ---- */

/* nbytes (> 0) aligned to align (a power of two, at least sizeof(void *)),
 * or NULL.  Free it with zc_os_free_aligned and nothing else (on Windows it
 * comes from _aligned_malloc, which free() must not see). */
void *zc_os_alloc_aligned(size_t nbytes, size_t align);
void zc_os_free_aligned(void *p);

/* The virtual-memory page size in bytes (queried once). */
size_t zc_os_page_size(void);

/* The alignment at which zc_os_advise_huge_pages can help (2 MiB where the
 * OS has transparent huge pages), or 0 where it is a no-op. */
size_t zc_os_huge_page_size(void);

/* Ask for huge pages behind [p, p + nbytes): best effort, never an error.
 * Linux: madvise(MADV_HUGEPAGE) (transparent huge pages) where the headers
 * have it.  macOS and Windows: a no-op (Windows large pages need the "Lock
 * pages in memory" privilege, which ordinary users lack). */
void zc_os_advise_huge_pages(void *p, size_t nbytes);

/* ---- files ---- */

typedef struct {
    intptr_t handle; /* a file descriptor, or a Windows HANDLE; -1 when closed */
} zc_os_file;
#define ZC_OS_FILE_CLOSED ((zc_os_file){-1})

/* Open an existing file for reading.  Never blocks on a FIFO or device (the
 * caller checks zc_os_file_info and refuses what is not a regular file).
 * Windows: the file is shared for reading, writing and deletion, so while
 * it is open another handle or process can still replace it, remove it or
 * rename it aside; this handle goes on reading the bytes it opened. */
int zc_os_file_open_read(const char *path, zc_os_file *out);

/* Create a new file for writing; fails with ZC_OS_EXISTS if path exists.
 * POSIX mode 0644 (less the umask).  Never follows a symbolic link: a link
 * at path, dangling or not, exists (O_CREAT | O_EXCL; Windows CREATE_NEW). */
int zc_os_file_create_new(const char *path, zc_os_file *out);

/* Size in bytes and whether it is a regular file (1) or not (0). */
int zc_os_file_info(zc_os_file f, uint64_t *size, int *is_regular);

/* Read up to n bytes at offset off into buf, retrying interrupted and short
 * reads; *got < n only at end of file.  Reads never depend on a file
 * position, so they mix freely with each other (not with writes: a file is
 * either read or written through this layer). */
int zc_os_file_read_at(zc_os_file f, void *buf, size_t n, uint64_t off, size_t *got);

/* Write all n bytes at the current position (retrying short writes). */
int zc_os_file_write_all(zc_os_file f, const void *buf, size_t n);

/* Make everything written to f durable: on stable storage when this returns
 * 0, surviving power loss (Linux, BSD: fsync; macOS: fcntl(F_FULLFSYNC),
 * since its fsync stops at the drive's cache, falling back to fsync where
 * the file system refuses; Windows: FlushFileBuffers). */
int zc_os_file_sync(zc_os_file f);

/* Close f (sets it to ZC_OS_FILE_CLOSED); closing a closed file is a no-op.
 * A nonzero return means buffered data may be lost. */
int zc_os_file_close(zc_os_file *f);

/* Reserve total bytes for f up front (contiguous extents, an early ENOSPC).
 * Linux: fallocate.  Elsewhere, or where the file system cannot, a no-op
 * returning 0; only a real failure such as a full disk is an error. */
int zc_os_file_preallocate(zc_os_file f, uint64_t total);

/* Start writing [from, to) back now so a later sync waits less (Linux:
 * sync_file_range).  A hint: no effect on correctness, never an error. */
void zc_os_file_start_writeback(zc_os_file f, uint64_t from, uint64_t to);

typedef enum {
    ZC_OS_ADVISE_SEQUENTIAL, /* the whole file will be read front to back */
    ZC_OS_ADVISE_WILLNEED,   /* [off, off + len) will be read soon */
} zc_os_advice;

/* A readahead hint (posix_fadvise where the system has it); never an error. */
void zc_os_file_advise(zc_os_file f, uint64_t off, uint64_t len, zc_os_advice advice);

/* ---- files shared between processes: read-write opens, positional
 * writes, advisory locks ---- */

/* Open path for reading and writing, creating it empty (POSIX mode 0644 less
 * the umask) if it is missing.  Shared like zc_os_file_open_read: other
 * handles and processes may open, replace or remove it meanwhile.  Reads
 * and writes of such a file are positional only (zc_os_file_read_at,
 * zc_os_file_write_at).
 *
 * Never follows a symbolic link at path (only its last component: the
 * directories above it may be links): the engine writes and locks its
 * bookkeeping files in a spill folder that others may write to, where a link
 * planted in a file's place would make it overwrite or lock a file elsewhere.
 * A link there, dangling or not, fails with ZC_OS_ERROR_LINK_REFUSED, and
 * neither the link nor its target is touched.  POSIX: O_NOFOLLOW (POSIX
 * 2008; where a system lacks it, an lstat first, which a link swapped in
 * between can defeat).  Windows: FILE_FLAG_OPEN_REPARSE_POINT, so a link is
 * opened itself, and a handle whose attributes have FILE_ATTRIBUTE_REPARSE_POINT
 * with a name-surrogate tag (symbolic link, junction, mount point) is refused;
 * another reparse point (a cloud-sync placeholder, deduplicated data) is
 * opened again through its filter, and kept only if that is the same file. */
int zc_os_file_open_rw(const char *path, zc_os_file *out);
/* (zc_os_file_open_rw never blocks on a FIFO or device either: POSIX opens
 * with O_NONBLOCK, which changes nothing for a regular file.  What it opened
 * may still be no regular file, or have another name: callers that write,
 * lock or trust the file check zc_os_file_check_private before anything.) */

/* zc_os_file_open_read (an existing file, shared the same way) that never
 * follows a symbolic link at path, exactly as zc_os_file_open_rw: for files
 * the engine locks (a lock through a planted link would lock a file
 * elsewhere) or whose bytes it trusts as its own. */
int zc_os_file_open_read_nofollow(const char *path, zc_os_file *out);

/* Whether the open file f is the engine's alone, checked on the open handle
 * (not on a name, which could be swapped in between): a regular file with
 * one name.  A hard link planted under a bookkeeping file's name (ln
 * victim .zc-gen-film) opens as an ordinary file, and writing, locking or
 * serving it would write, lock or serve the victim, wherever its other name
 * lies; a FIFO or device would block a reader or feed it endless bytes.
 * @return 0 when f is a regular file with exactly one name, or with none
 * (removed or renamed aside since it was opened: its bytes are nobody
 * else's); ZC_OS_ERROR_NOT_REGULAR; ZC_OS_ERROR_HARD_LINKED (*links, when
 * links is not NULL, receives how many names it has); or an OS error.
 * POSIX: fstat, S_ISREG and st_nlink.  Windows: GetFileType (a disk file),
 * GetFileInformationByHandle's attributes (no directory or device; the
 * no-follow opens already refused links and junctions) and nNumberOfLinks. */
int zc_os_file_check_private(zc_os_file f, uint64_t *links);

/* Whether path names the very file f has open (*same 1) or something else or
 * nothing (*same 0), without following a link at path: renaming a refused
 * file aside only while its name still names it, never a file another
 * process put there meanwhile.  POSIX: lstat and fstat (device and inode);
 * Windows: the volume serial number and file index of both.  @return 0 or
 * an OS error (not for a missing path: that is *same 0). */
int zc_os_file_is_at(zc_os_file f, const char *path, int *same);

/* The owner and permission bits of the file at path (a link itself, not
 * followed), for a message that says why a file cannot be read.  POSIX:
 * lstat's st_uid and the permission bits of st_mode.  Windows has ACLs,
 * not these: a ZC_OS_UNSUPPORTED error. */
int zc_os_path_owner(const char *path, long *uid, unsigned *mode);

/* Write all n bytes at offset off (retrying short writes), without moving
 * or using a file position.  Not durable until zc_os_file_sync. */
int zc_os_file_write_at(zc_os_file f, const void *buf, size_t n, uint64_t off);

/* A lock on a whole file between processes: exclusive (f open for writing)
 * or shared (f open for reading or writing).  wait: block until granted;
 * otherwise *acquired is 0 when another holder has it.  *acquired is 1 when
 * granted.  The lock is advisory: it binds only callers of these functions,
 * and never blocks reads or writes of the file's bytes (it covers one byte
 * at ZC_OS_LOCK_OFFSET, far past any data, because Windows locks are
 * mandatory for the bytes they cover).  The OS releases it when its holder
 * ends, however it ends (a crash or a kill included); on Windows that may
 * take a moment after the process is gone.
 *
 * Who holds it differs, so callers must allow for both:
 * - POSIX (fcntl record locks): the PROCESS holds it.  A second lock by
 *   the same process, on any descriptor of the file, is granted at once
 *   (it does not exclude another thread or another store of the process),
 *   and closing ANY descriptor of the file in the process releases it.
 *   Callers serialise lockers of one file within the process themselves
 *   and never open the file elsewhere in the process while it is locked.
 * - Windows (LockFileEx): the HANDLE holds it; another handle of the same
 *   process is excluded like another process.
 * A file system without locks (some network and FUSE file systems, NFS
 * without its lock service) fails with a ZC_OS_UNSUPPORTED error.  Network
 * file systems: NFSv3 (with lockd) and NFSv4 carry fcntl locks to the
 * server, SMB carries LockFileEx; neither is tested here. */
#define ZC_OS_LOCK_OFFSET ((uint64_t)1 << 30)
int zc_os_file_lock(zc_os_file f, int exclusive, int wait, int *acquired);
/* Release a lock f holds (a no-op when it holds none). */
int zc_os_file_unlock(zc_os_file f);

/* ---- paths and directories ---- */

/* Rename from over to, replacing to if it exists: atomic (a reader of `to`
 * sees the old file or the new one, never neither, never a mix).  Also used
 * to rename a file aside while it is open for reading.
 * POSIX: rename(2); durable once zc_os_sync_parent_dir(to) returns 0.
 * Windows: MoveFileExW(MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH),
 * durable when it returns.  When `to` is held open by a reader (which
 * MoveFileExW refuses), the POSIX-semantics rename of Windows 10 1709+ on
 * NTFS is used; where that is missing, too, the call fails with a
 * ZC_OS_ACCESS error and leaves both files as they were. */
int zc_os_replace(const char *from, const char *to);

/* Rename from to to only if nothing is at to: otherwise a ZC_OS_EXISTS
 * error, and both stay as they were.  Atomic against another writer of to
 * where the file system can say so: POSIX link(2) then unlink(2) of from
 * (after a crash from may survive as a second name of the same complete
 * file), Windows MoveFileExW without MOVEFILE_REPLACE_EXISTING (with
 * MOVEFILE_WRITE_THROUGH, durable when it returns).  POSIX file systems
 * without hard links (FAT, exFAT, some SMB mounts) fall back to a check
 * then rename(2), which two writers racing for one name in that instant
 * can defeat.  POSIX: durable once zc_os_sync_parent_dir(to) returns 0.
 * Linux tries renameat2(RENAME_NOREPLACE) first, atomic and never a second
 * name; link + unlink only where the kernel or file system lacks it.  The
 * moment between that link and unlink (or a crash inside it) shows the file
 * with two names, which zc_os_file_check_private reports as
 * ZC_OS_ERROR_HARD_LINKED: readers of files that may be in that moment allow
 * for it. */
int zc_os_rename_noreplace(const char *from, const char *to);

/* Make the last rename or removal in path's directory durable.  POSIX:
 * fsync of the directory (file systems that cannot sync a directory count
 * as done).  Windows has no directory sync and needs none (see
 * zc_os_replace): it only checks that the directory exists. */
int zc_os_sync_parent_dir(const char *path);

/* Remove a file.  Works while the file is open for reading (POSIX always;
 * Windows for files opened by zc_os_file_open_read); readers keep their
 * bytes.  On Windows before 10 1709, or off NTFS, the name stays taken until
 * the last reader closes. */
int zc_os_remove(const char *path);

/* Create one directory (the parent must exist); ZC_OS_EXISTS if the path
 * exists already, whatever it is. */
int zc_os_mkdir(const char *path);

typedef enum {
    ZC_OS_PATH_FILE = 1,  /* a regular file */
    ZC_OS_PATH_DIR,       /* a directory */
    ZC_OS_PATH_OTHER,     /* anything else (device, FIFO, socket) */
} zc_os_path_kind;

/* What path is (following symbolic links) and, for a file, its size
 * (size may be NULL).  ZC_OS_NOT_FOUND if nothing is there. */
int zc_os_stat(const char *path, zc_os_path_kind *kind, uint64_t *size);

/* 0 if the caller may create files in the directory path.  POSIX:
 * access(W_OK | X_OK).  Windows checks ACLs only when a file is created, so
 * there this checks that path is a directory and the first write reports a
 * refusal. */
int zc_os_dir_writable(const char *path);

/* Listing a directory: every entry but "." and "..", in no particular
 * order, names in UTF-8.  The name returned by next is valid until the
 * following next or close. */
typedef struct zc_os_dir zc_os_dir;
int zc_os_dir_open(const char *path, zc_os_dir **out);
/* 0 and *name, or 0 and *name = NULL at the end, or an OS error. */
int zc_os_dir_next(zc_os_dir *d, const char **name);
void zc_os_dir_close(zc_os_dir *d);

/* 1 if c separates path components here ('/'; on Windows also '\'). */
int zc_os_is_separator(char c);

/* The last separator in path, or NULL when path is a bare name. */
const char *zc_os_last_separator(const char *path);

/* ---- time and process ---- */

/* Wall-clock time in milliseconds since 1970-01-01 UTC. */
uint64_t zc_os_now_unix_ms(void);

/* A clock that never goes back, in nanoseconds from an arbitrary start. */
uint64_t zc_os_monotonic_ns(void);

/* Sleep at least ms milliseconds. */
void zc_os_sleep_ms(unsigned ms);

/* This process's id. */
long zc_os_pid(void);

/* main's arguments as UTF-8: argv itself on POSIX (where they are bytes
 * already); on Windows, where main gets them in the ANSI code page, a copy
 * made from the UTF-16 command line (kept until the process ends; argv if
 * that fails).  Call once, from main.  In the zc tool only (*_args.c), not
 * in libzc. */
char **zc_os_utf8_argv(int argc, char **argv);

#endif /* ZC_PLATFORM_H */
