/*
 * internal.h — structures and helpers shared by the engine's source files.
 * Not installed; the public API is include/zc.h.
 */
#ifndef ZC_INTERNAL_H
#define ZC_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "platform/platform.h"
#include "zc.h"

#define ZC_HOST_ALIGN 64u
#define ZC_SPILL_SUFFIX ".latent"
#define ZC_TMP_PREFIX ".zc-tmp-"
#define ZC_REJECTED_SUFFIX ".rejected"
/* Files of a spill folder shared by processes; tags cannot start with '.',
 * so none of these can be a tag or a spill file. */
#define ZC_GEN_PREFIX ".zc-gen-"     /* + tag: the tag's generation counter */
#define ZC_OWNER_PREFIX ".zc-owner-" /* + token "-" n ".lock": a store's owner file */
#define ZC_OWNER_SUFFIX ".lock"
#define ZC_FOLDER_LOCK ".zc-lock"     /* held while a store opens */
#define ZC_TOKEN_LEN 16              /* hex digits of a process token */

/* ---- the process token and process-wide mutexes (shared_process.c) ---- */

/* ZC_TOKEN_LEN lowercase hex digits (and a NUL) naming this process in its
 * temporary files ZC_TMP_PREFIX<token>-... and owner files; a process made
 * by fork gets a token of its own. */
void zc__process_token(char out[ZC_TOKEN_LEN + 1]);

/* Tests only: behave as on a file system without locks. */
extern int zc__shared_locks_disabled_for_tests;

/* shared_process.c: the process-wide mutex that serialises counter-file
 * work for tag (lock order: before the store lock, never after it), and
 * the one for folder locks and owner files. */
zc_os_mutex *zc__shared_tag_mutex(const char *tag);
zc_os_mutex *zc__shared_folder_mutex(void);

/* ---- files a spill folder keeps for the engine alone (private_file.c) ---- */

/* A file refused by zc__open_private: why (ZC_OS_ERROR_NOT_REGULAR or
 * ZC_OS_ERROR_HARD_LINKED; 0 when nothing was refused), how many names it
 * had, whether it was renamed aside, and to which name: aside 1 is
 * <path>ZC_REJECTED_SUFFIX, n > 1 <path>.<n>ZC_REJECTED_SUFFIX (the first
 * free one: a file rejected before keeps its name). */
typedef struct {
    int err;
    uint64_t links;
    int renamed;
    int aside;
} zc_refusal;

/* Open path, a file of a spill folder the engine writes, locks or trusts
 * (create: for reading and writing, made empty when missing; else for
 * reading, existing): never through a symbolic link, and only a regular
 * file with one name (zc_os_file_check_private on the open handle).  A file
 * found there that is not (a hard link, a FIFO, a device) is neither read,
 * written nor locked: it is renamed aside while its name still names it,
 * *refused says so, and the open is tried once more (so with create a new
 * file is made; without, the result is usually ZC_OS_NOT_FOUND).
 * @return 0 and *out, or an OS error: the refusal's when it could not be
 * renamed aside, ZC_OS_ERROR_LINK_REFUSED for a symbolic link (left as it
 * is), or the open's.  *refused is filled either way. */
int zc__open_private(const char *path, int create, zc_os_file *out, zc_refusal *refused);

/* The sentence that says what happened to a refused file: "<what> "<path>"
 * was refused: <why>; it was renamed to "<path>.rejected" ...; <after>; ..."
 * (after may be NULL), into buf. */
void zc__refusal_text(const zc_refusal *r, const char *what, const char *path, const char *after,
                      char *buf, size_t cap);

/* The lock of a spill folder: this process's folder mutex, then an exclusive
 * lock of <dir>/ZC_FOLDER_LOCK (opened with zc__open_private: a planted hard
 * link or FIFO there is renamed aside, *refused says so, and a new one is
 * made).  locked is 0 on a file system without locks (then the mutex alone
 * serialises, within this process).  Held while a store opens and while a
 * film's choices file is read, changed and written. */
typedef struct {
    zc_os_file file;
    int locked;
} zc_folder_lock;
/* @return ZC_OK (the mutex held until zc__folder_unlock), or ZC_E_IO / ZC_E_NOMEM
 * with a message naming the folder (nothing held). */
int zc__folder_lock(const char *dir, zc_folder_lock *l, zc_refusal *refused);
void zc__folder_unlock(zc_folder_lock *l);

/* ---- errors (error.c) ---- */

/* Record a formatted message for zc_last_error() and return code. */
int zc__fail(int code, const char *fmt, ...) ZC_PRINTF(2, 3);

/* Prefix the current thread's last error with "context: ". */
void zc__fail_context(const char *fmt, ...) ZC_PRINTF(1, 2);

/* ---- strings (str.c): C11 has no strdup/strndup ---- */

char *zc__strdup(const char *s);
/* At most n bytes of s (stops at a NUL), always terminated. */
char *zc__strndup(const char *s, size_t n);

/* A growing list of copied strings (directory entries kept for later). */
typedef struct {
    char **names;
    size_t count, cap;
} zc_name_list;
/* Append a copy of name: 0, or -1 when out of memory (the list is unchanged). */
int zc__name_list_add(zc_name_list *l, const char *name);
/* Free every name and the list's array; the list is empty afterwards. */
void zc__name_list_free(zc_name_list *l);

/* The value of a hex digit (0-9, a-f, A-F), or -1. */
int zc__hex_digit(int c);

/* ---- checked arithmetic (zc__mul_u64 and friends are in compiler.h) ---- */

/* Product of shape (all >= 0) times element size, or -1 on overflow. */
int zc__shape_nbytes(int32_t ndim, const int64_t *shape, size_t elem_size, uint64_t *out);

/* ---- host memory (hostmem.c) ---- */

/* The DLPack type of an engine dtype; ZC_E_INVALID for a value outside zc_dtype. */
int zc__dtype_to_dlpack(int dtype, zc_dl_dtype *out);
/* Parse a safetensors dtype name.  @return ZC_OK and *dtype, or ZC_E_INVALID. */
int zc__dtype_from_name(const char *name, int *dtype);
/* Map a DLPack data type to a zc_dtype.  @return ZC_OK, or ZC_E_INVALID for
 * a type the engine does not store (complex, vector lanes, sub-byte). */
int zc__dtype_from_dlpack(zc_dl_dtype dl, int *dtype);
/* The element at p (little-endian) of a float dtype (F32, F64, F16, BF16, F8_E4M3FN, F8_E5M2)
 * as a double, exactly; NaN for any other dtype. */
double zc__dtype_decode_float(int dtype, const uint8_t *p);
/* out describes the CPU tensor given by plain values (plain_tensor.c; dims:
 * ndim sizes then ndim strides in elements); what names it in errors. */
int zc__plain_dl_tensor(zc_dl_tensor *out, const char *what, const void *data, int dtype,
                        int32_t ndim, const int64_t *dims);
void *zc__host_alloc(uint64_t nbytes);   /* ZC_HOST_ALIGN-aligned, never NULL for 0 bytes */
void zc__host_free(void *p);

/* Copy a (possibly strided, byte strides) tensor into contiguous dst and
 * return the XXH3-64 of the copied bytes, in one pass over the source. */
uint64_t zc__copy_and_digest(void *dst, const uint8_t *src, int32_t ndim, const int64_t *shape,
                             const int64_t *byte_strides, size_t elem_size, uint64_t nbytes);

/* ---- host buffer recycling (bufpool.c) ---- */

typedef struct zc_bufpool zc_bufpool;
zc_bufpool *zc__bufpool_new(uint64_t limit_bytes);
void zc__bufpool_ref(zc_bufpool *pool);
void zc__bufpool_unref(zc_bufpool *pool);
/* A buffer of exactly nbytes: a recycled one if the pool has it, else fresh.
 * pool may be NULL (plain allocation). */
void *zc__bufpool_take(zc_bufpool *pool, uint64_t nbytes);
/* Keep a buffer for reuse if the pool has room, else free it (pool may be NULL). */
void zc__bufpool_give(zc_bufpool *pool, void *p, uint64_t nbytes);
uint64_t zc__bufpool_bytes(zc_bufpool *pool);
/* Free pooled buffers, oldest first, until at least want bytes went (or none is left).
 * @return the bytes freed. */
uint64_t zc__bufpool_trim(zc_bufpool *pool, uint64_t want);

/* ---- bundles (bundle.c) ---- */

typedef struct zc_seam_side zc_seam_side; /* seam.c */

typedef struct zc_tensor {
    char name[ZC_MAX_NAME_LEN + 1];
    int dtype;
    int32_t ndim;
    int64_t shape[ZC_MAX_RANK];
    int64_t byte_strides[ZC_MAX_RANK]; /* of the data a reader sees */
    uint64_t nbytes;                   /* canonical contiguous size */
    int tier;                          /* ZC_TIER_HOST or ZC_TIER_DEVICE */
    int32_t device_type;
    int32_t device_id;
    void *host;          /* contiguous C-owned bytes: the host tier, or a reference's host copy */
    void *ref;           /* managed tensor held by reference, or NULL */
    int ref_versioned;
    void *ref_data;      /* first element of the referenced tensor */
    uint64_t digest;
    int has_digest;
    int digest_algo;     /* zc_digest_algo of digest; ZC_DIGEST_NONE without one */
    zc_bufpool *pool;    /* where host goes back when released (a reference), or NULL */
    /* Seam summaries (seam.c), each published once, off the put's path: the head by the
     * spill writer's hop measure or the first zc_store_seam that needs it (zc__seam_head), the
     * tail by the spill writer or the first child's seam (zc__seam_tail), or read back from a
     * spill file; zc_bundle_seam_summarize makes both at once. */
    int seam_planned;                  /* seam_layout holds what to summarise */
    zc_seam_layout seam_layout;
    _Atomic(zc_seam_side *) seam_head;
    _Atomic(zc_seam_side *) seam_tail;
} zc_tensor;

typedef struct zc_meta_entry {
    char *key;
    char *value;
} zc_meta_entry;

struct zc_bundle {
    zc_bufpool *pool;    /* host buffers come from here (a reference), or NULL */
    uint32_t count;
    zc_tensor tensors[ZC_MAX_TENSORS];
    uint32_t seam_plan_count; /* zc_bundle_seam_plan: summaries to take as tensors are added */
    struct {
        char name[ZC_MAX_NAME_LEN + 1];
        zc_seam_layout layout;
    } seam_plans[ZC_MAX_TENSORS];
    /* The hop that made this shot (seam_hop.c): the parent zc_bundle_seam_parent names, and
     * the record of its seam once measured (seam_hop_state 1: measured, seam_hop_record the
     * record's JSON, or NULL and seam_hop_why says why there is none). */
    char seam_parent[ZC_MAX_TAG_LEN + 1];
    uint64_t seam_parent_generation;
    _Atomic(char *) seam_hop_record;
    atomic_int seam_hop_state;
    char seam_hop_why[400];
    uint32_t meta_count;
    zc_meta_entry meta[ZC_MAX_META];
    /* zc_record_status of the file it was read from (zc_file_load_bundle); ZC_RECORD_OK for a
     * bundle built by a caller (its file gets a record digest as it is written). */
    int record;
};

/* The value of a bundle's metadata key, or NULL (NULL bundle or key too). */
const char *zc__bundle_meta(const zc_bundle *b, const char *key);

/* Release everything a tensor owns (host bytes, reference deleter). */
void zc__tensor_release(zc_tensor *t);

/* Call a managed tensor's deleter once (NULL-safe). */
void zc__managed_delete(void *managed, int versioned);

/* Checks shared by every entry point. */
int zc__name_check(const char *what, const char *name, size_t max_len);
int zc__meta_key_check(const char *key, int allow_reserved);

/* Set metadata with the engine's own reserved keys allowed. */
int zc__bundle_set_meta_internal(zc_bundle *b, const char *key, const char *value);

/* Add a tensor whose contiguous host bytes the bundle takes over (restore). */
int zc__bundle_adopt_host(zc_bundle *b, const char *name, int dtype, int32_t ndim,
                          const int64_t *shape, void *host, uint64_t nbytes, int digest_algo,
                          uint64_t digest);

/* Validate a DLPack tensor description (rank, shape, strides, dtype, size
 * overflow) into t's dtype, ndim, shape, byte_strides, nbytes and device;
 * name is for messages.  @return ZC_OK, ZC_E_INVALID or ZC_E_LIMIT. */
int zc__tensor_describe(zc_tensor *t, const char *name, const zc_dl_tensor *src);

/* Whether a DLPack device type is host-readable memory. */
int zc__is_host_device(int32_t device_type);

uint64_t zc__bundle_bytes(const zc_bundle *b, int tier);

/* ---- safetensors (safetensors_write.c) ---- */

/* Write b as a safetensors file at path, crash-safe: a temporary file
 * ZC_TMP_PREFIX* in the same directory, durable sync, atomic replace of
 * path, the directory made durable (platform.h's promises).  Every tensor
 * needs host bytes (else ZC_E_UNSUPPORTED).
 * Metadata = b's entries + extra (may be NULL) + "zc.digest.<name>" for
 * every tensor with a digest + "zc.record", the record digest of the header
 * (format/record.h).  If a tensor "latent_tensor" exists, an empty
 * F32 tensor "latent_format_version_0" is added (ComfyUI's marker).
 * @return ZC_OK, ZC_E_IO (message names the path and the OS error),
 * ZC_E_UNSUPPORTED, ZC_E_NOMEM. */
int zc__safetensors_write(const char *path, const zc_bundle *b,
                          const zc_meta_entry *extra, uint32_t extra_count);

/* The same, but never over an existing file: path must not exist when the
 * file is put in place (ZC_E_EXISTS, and nothing changed, if it does). */
int zc__safetensors_write_new(const char *path, const zc_bundle *b,
                              const zc_meta_entry *extra, uint32_t extra_count);

/* Write len bytes at data as a new file at path, crash-safe and never over
 * an existing file, as zc__safetensors_write_new.  @return ZC_OK, ZC_E_IO,
 * ZC_E_EXISTS, ZC_E_NOMEM. */
int zc__write_bytes_new(const char *path, const void *data, size_t len);

/* Write len bytes at data as the file at path, crash-safe, replacing what
 * is there atomically (a reader sees the old bytes or the new ones).
 * @return ZC_OK, ZC_E_IO, ZC_E_NOMEM. */
int zc__write_bytes(const char *path, const void *data, size_t len);

/* The bytes zc__safetensors_write would write, into buf (cap bytes);
 * *needed gets their count.  @return ZC_OK, ZC_E_LIMIT (cap too small),
 * ZC_E_UNSUPPORTED, ZC_E_INVALID, ZC_E_NOMEM. */
int zc__safetensors_serialize(const zc_bundle *b, const zc_meta_entry *extra,
                              uint32_t extra_count, void *buf, size_t cap, size_t *needed);

/* Make the directory entry of path durable (zc_os_sync_parent_dir), with a
 * message naming the directory.  @return ZC_OK or ZC_E_IO. */
int zc__fsync_parent_dir(const char *path);

/* ---- digests (digest_algo.c, digest_xxh3.c, digest_xxh64.c) ---- */

/* zc_digest_format into a buffer of ZC_DIGEST_TEXT_SIZE, for messages:
 * never fails ("?:<hex>" for an unknown algorithm). */
void zc__digest_text(int algo, uint64_t digest, char out[ZC_DIGEST_TEXT_SIZE]);

/* Streaming digest with either algorithm (anything but ZC_DIGEST_XXH64
 * means XXH3-64), seed 0. */
typedef struct {
    int algo;
    union {
        zc_xxh3_state xxh3;
        zc_xxh64_state xxh64;
    } u;
} zc_digest_stream;
void zc__digest_stream_init(zc_digest_stream *s, int algo);
void zc__digest_stream_update(zc_digest_stream *s, const void *data, size_t len);
uint64_t zc__digest_stream_final(const zc_digest_stream *s);

/* ---- strided tensors (strided.c) ---- */

/* The contiguous runs of a strided tensor in row-major order: dimensions of
 * size 1 dropped, dimensions that are contiguous with their inner neighbour
 * merged, so that a view whose rows are contiguous yields few long runs. */
typedef struct {
    int32_t ndim;                   /* after merging; 0 means one run */
    int64_t shape[ZC_MAX_RANK];
    int64_t byte_strides[ZC_MAX_RANK];
    size_t elem_size;
    int inner_contiguous;           /* the innermost dimension is dense */
} zc_strided;

/* Simplify a tensor's layout (shape all > 0; the caller handles 0 bytes). */
void zc__strided_init(zc_strided *st, int32_t ndim, const int64_t *shape,
                      const int64_t *byte_strides, size_t elem_size);

/* Whether the whole tensor is one contiguous run of bytes. */
int zc__strided_is_contiguous(const zc_strided *st);

/* Where a walk's bytes go, in canonical order: hash(ctx, bytes, n) reads
 * bytes in place; copy_hash(ctx, dst, src, n), used for contiguous runs
 * when the walk writes a copy, copies n bytes to dst and hashes them in the
 * same pass. */
typedef struct {
    void (*hash)(void *ctx, const uint8_t *bytes, size_t n);
    void (*copy_hash)(void *ctx, uint8_t *dst, const uint8_t *src, size_t n);
    void *ctx;
} zc_walk_sink;

/* Walk the tensor's canonical bytes into the sink: runs of a dense
 * innermost dimension straight from the source, gathered elements through a
 * small buffer otherwise.  dst, when not NULL, receives the canonical bytes
 * too (a contiguous copy): runs through copy_hash, gathered pieces written
 * to dst and hashed from there right after, while still in cache. */
void zc__strided_walk(const zc_strided *st, const uint8_t *src, uint8_t *dst,
                      const zc_walk_sink *sink);

/* ---- seam summaries (seam.c) ---- */

/* A summary of the frames at one end of a tensor: what the seam of a cut
 * needs from that side (zc_bundle_seam_summarize). */
struct zc_seam_side {
    int32_t ndim, axis;
    int64_t shape[ZC_MAX_RANK]; /* of the tensor: shape[axis] is its frame count */
    uint32_t stride;            /* of the grid */
    uint32_t frames;            /* F: frames summarised (0 when none is left) */
    uint32_t channels;          /* C */
    uint64_t values;            /* N: grid samples of one channel of one frame */
    double *mean, *std;         /* [F][C] */
    double *power, *sumsq;      /* [F]: centred and plain sums of squares over C*N */
    double *rms, *cov;          /* [F-1]: RMS step and centred covariance of frames f, f+1 */
    float *edge;                /* [C][N]: the samples of the frame at the cut (the last of a
                                   tail, the first of a head); NULL when F is 0 */
};

void zc__seam_side_free(zc_seam_side *side);
/* The tail summary as the text of a spill file's "zc.seam.<name>": a new
 * string (free), or NULL when out of memory or over ZC_MAX_META_VALUE_LEN. */
char *zc__seam_side_text(const zc_seam_side *side);
/* Parse such a text (untrusted): a new summary, or NULL when it is not one. */
zc_seam_side *zc__seam_side_parse(const char *text);
/* The metadata entries "zc.seam.<name>" of every tensor of b with a tail
 * summary (made now where only planned), into extra (cap entries), keys and
 * values newly allocated (free with zc__seam_entries_free).  @return how many. */
uint32_t zc__seam_entries(zc_bundle *b, zc_meta_entry *extra, uint32_t cap);
/* Entries zc__seam_entries may add: a tail summary per tensor, and the hop's seam. */
#define ZC__SEAM_ENTRIES_MAX (ZC_MAX_TENSORS + 1)
/* The record of the seam of the hop that made b's shot (JSON, seam_hop.c),
 * measured now if it was not yet (lock NOT held: it takes it to find the
 * parent); NULL when it has none, and why in b->seam_hop_why.  on_writer:
 * called on the spill writer's thread (a parent slot it frees waits for a
 * caller's thread).  Thread-safe; the caller's last error stays its own. */
const char *zc__seam_hop_record(zc_store *s, zc_bundle *b, int on_writer);
/* Attach the hop's seam record a spill file holds (text: its "zc.hop_seam",
 * untrusted; NULL or not a record: none) to b, as measured (restore). */
void zc__seam_hop_attach(zc_bundle *b, const char *text);
/* Mark tensor t (named, described, its host bytes in bytes) with the layout
 * b's plan asks for, when it can be summarised: its summaries are made
 * later, off the put's path (zc__seam_head, zc__seam_tail).  A summary is a
 * report: nothing fails here. */
void zc__seam_on_add(const zc_bundle *b, zc_tensor *t, const uint8_t *bytes);
/* t's tail summary, made from its host bytes and published now if it is
 * planned and not made yet; NULL when it has none.  Thread-safe. */
const zc_seam_side *zc__seam_tail(zc_tensor *t);
void zc__seam_entries_free(zc_meta_entry *extra, uint32_t count);
/* t's head summary, made from its host bytes and published now if it is
 * planned and not made yet; NULL when it has none.  Thread-safe. */
const zc_seam_side *zc__seam_head(zc_tensor *t);
/* Attach the tail summaries and the hop's seam a file records to b (restore). */
void zc__seam_attach_from_file(zc_bundle *b, const zc_file *f);
/* Per-channel mean and standard deviation of every sample of a summary's
 * frames (each channel pooled over its F frames); mean and std hold
 * side->channels values.  @return 0, or -1 when it has no frames. */
int zc__seam_side_moments(const zc_seam_side *side, double *mean, double *std);
/* The cut between a parent's tail summary p and a new shot's head summary n, into out
 * (zeros when their layouts differ or they have too few frames); ZC_E_INVALID when the
 * two were sampled on different grids. */
int zc__seam_compare(const zc_seam_side *p, const zc_seam_side *n, zc_seam_stats *out);
/* num / den capped at seam_reference.py's CAP (100); 0 for 0 / 0, CAP for x / 0. */
double zc__seam_ratio(double num, double den);

#endif /* ZC_INTERNAL_H */
