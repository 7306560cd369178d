/*
 * zc.h — ZeroCopy-Continuity engine: the whole public API.
 *
 * A tagged store of latent "bundles" (up to ZC_MAX_TENSORS named tensors plus
 * a string->string metadata map) with a host tier (C-owned aligned memory), a
 * device tier (tensors held by reference through their DLPack managed tensor;
 * the engine never reads or writes device memory), a disk tier (crash-safe
 * safetensors spill files, compatible with ComfyUI's .latent files), 64-bit
 * digests (XXH3-64) that certify bit-identity, and a hardened safetensors reader.
 *
 * The header has three sections.
 * - The stable core, first: every function the node pack's Python bridge
 *   (zc_engine) calls, and the types and constants they take.  A binding needs
 *   nothing else.
 * - The advanced section, after it and marked as such: what only the zc tool
 *   and the benchmark call (the hardened file reader, dtype names, digest
 *   text, the plain form of bundle creation).
 * - The test-support section, last: what only the engine's C and Python tests
 *   call (streaming hashes, the seam of a cut before the put, entry-by-entry
 *   bundle and view calls, a file as a bundle, the ABI description the
 *   binding's test compares).  No product code calls it.
 * The last two are exported all the same, and documented as carefully, but a
 * binding should not need them.
 *
 * HowTo: the sequence of calls
 * Fill a zc_store_config with zc_store_config_init, set what differs (a
 * spill_dir for the disk tier, budgets, depth), and open a store with
 * zc_store_open.  For each shot, create a bundle with zc_store_bundle_create,
 * add its tensors (zc_bundle_add_copy or zc_bundle_add_host_copy for host
 * bytes, which the engine copies and digests; zc_bundle_add_reference for a
 * device tensor it holds without reading), set its metadata with
 * zc_bundle_set_meta_packed, and hand it to zc_store_put, which numbers it
 * (the tag's next generation) and from then on owns it.  To read a shot,
 * zc_store_get gives a zc_view of one generation: describe its tensors with
 * zc_view_tensor, hand them to a framework without a copy with
 * zc_view_export_dlpack, check their bytes with zc_view_verify_ex, and
 * release the view with zc_view_release.  zc_store_flush waits until every
 * spill is on disk; zc_store_close ends the store.  A film, the shots of a
 * tag and their lineage, is read from the spill files alone with
 * zc_film_describe (and a take chosen with zc_film_choose).  Every call that
 * fails says why through zc_last_error.  The HowTo blocks below show each
 * step in code.
 *
 * Conventions
 * - Every function that can fail returns an int: ZC_OK (0) or a negative
 *   zc_status code.  zc_last_error() then returns a message, private to the
 *   calling thread, that names the value at fault, what was expected and the
 *   fix.  Nothing aborts on bad input.
 * - Opaque handles with create/free pairs.  A zc_store is thread-safe: any
 *   number of threads may put/get/list/drop concurrently.  A zc_bundle and a
 *   zc_file belong to one thread at a time.  A zc_view may be read from any
 *   thread; release it exactly once.
 * - Sizes are bytes unless the name says otherwise.
 */
#ifndef ZC_H
#define ZC_H

#include <stddef.h>
#include <stdint.h>

#include "zc_dlpack.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Symbols of the public API are exported from the shared library and the
 * library's internals are not.  Windows: the DLL is built with
 * ZC_BUILDING_LIBRARY (dllexport); a program that links zc.dll may define
 * ZC_USE_DLL for dllimport, which is only an optimisation for functions, so
 * static builds (the zc tool, the tests) define nothing.  Elsewhere the
 * library is built with -fvisibility=hidden and the API marked default. */
#if defined(_WIN32) || defined(__CYGWIN__)
#if defined(ZC_BUILDING_LIBRARY)
#define ZC_API __declspec(dllexport)
#elif defined(ZC_USE_DLL)
#define ZC_API __declspec(dllimport)
#else
#define ZC_API
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define ZC_API __attribute__((visibility("default")))
#else
#define ZC_API
#endif

/* ======================================================================== */
/* ======================================================================== */
/* STABLE CORE API                                                            */
/*                                                                            */
/* What the node pack's bridge calls; see "HowTo: the sequence of calls"      */
/* above.  The advanced section, then the test-support section, follow it.    */
/* ======================================================================== */
/* ======================================================================== */

#define ZC_VERSION_MAJOR 0
#define ZC_VERSION_MINOR 4
#define ZC_VERSION_PATCH 0
#define ZC_VERSION_STRING "0.4.0"

/* Limits.  Inputs beyond them are refused with ZC_E_LIMIT or ZC_E_INVALID. */
#define ZC_MAX_TENSORS 16        /* tensors in one bundle */
#define ZC_MAX_RANK 8            /* dimensions of one tensor (rank 0 allowed) */
#define ZC_MAX_TAG_LEN 64        /* bytes in a tag */
#define ZC_MAX_NAME_LEN 128      /* bytes in a tensor name */
#define ZC_MAX_META 64           /* metadata entries in one bundle */
#define ZC_MAX_META_KEY_LEN 128  /* bytes in a metadata key */
#define ZC_MAX_META_VALUE_LEN 65536 /* bytes in a metadata value */
#define ZC_DEFAULT_DEPTH 4       /* slots kept per tag unless configured */
#define ZC_DEFAULT_SPILL_DELAY_MS 50 /* zc_store_config.spill_delay_ms of zc_store_config_init */
#define ZC_MAX_SPILL_DELAY_MS 60000
#define ZC_MAX_DEPTH 1024
#define ZC_MAX_HEADER_BYTES (100u * 1024u * 1024u) /* safetensors JSON header */
#define ZC_MAX_GENERATION ((uint64_t)INT64_MAX) /* highest generation number */

/* Names the engine writes into safetensors files (readers may rely on them). */
#define ZC_FILE_META_FORMAT "zc.format"          /* value ZC_FILE_FORMAT_VALUE */
#define ZC_FILE_FORMAT_VALUE "zerocopy-continuity/1"
#define ZC_FILE_META_TAG "zc.tag"
#define ZC_FILE_META_GENERATION "zc.generation"  /* decimal */
#define ZC_FILE_META_DIGEST_PREFIX "zc.digest."  /* + tensor name: "xxh3:<16 hex>" (or
                                                  "xxh64:" in files of 0.2 and earlier) */
#define ZC_FILE_META_RECORD "zc.record"        /* the record digest: one digest over every
                                                  tensor's name, dtype and shape and every
                                                  other metadata entry (see "Record digest") */
#define ZC_FILE_LATENT_TENSOR "latent_tensor"    /* ComfyUI's SaveLatent/LoadLatent key */
#define ZC_FILE_LATENT_MARKER "latent_format_version_0" /* ComfyUI's empty F32 marker */

/* ------------------------------------------------------------------------ */
/* Errors                                                                     */
/* ------------------------------------------------------------------------ */

typedef enum {
    ZC_OK = 0,
    ZC_E_INVALID = -1,     /* an argument is malformed (tag charset, dtype, rank, NULL) */
    ZC_E_NOMEM = -2,       /* host memory allocation failed */
    ZC_E_NOT_FOUND = -3,   /* no such tag, generation, tensor or file */
    ZC_E_BUDGET = -4,      /* a tier budget cannot hold the bundle even after eviction */
    ZC_E_LIMIT = -5,       /* a documented limit (tensors, metadata, sizes) is exceeded */
    ZC_E_IO = -6,          /* the operating system refused a file operation */
    ZC_E_CORRUPT = -7,     /* a file is truncated, malformed, foreign, or fails its digest */
    ZC_E_STATE = -8,       /* the call does not fit the object's state (closed store, duplicate name) */
    ZC_E_UNSUPPORTED = -9, /* valid request the engine cannot serve (device bytes without a host copy) */
    ZC_E_EXISTS = -10,     /* the tag already holds that generation, in memory or on disk */
    ZC_E_ACCESS = -11      /* a spill file cannot be read for lack of permission (another
                              user's private file): kept, never renamed; the message names
                              its owner and mode */
} zc_status;

/* The symbolic name of a status code ("ZC_E_CORRUPT"); never NULL. */
ZC_API const char *zc_status_name(int status);

/* The message of the last failing call on this thread; "" if none.  The
 * pointer stays valid until the next failing zc_ call on the same thread. */
ZC_API const char *zc_last_error(void);

/* The library version string, e.g. "0.4.0" (ZC_VERSION_STRING). */
ZC_API const char *zc_version(void);

/* ------------------------------------------------------------------------ */
/* Data types                                                                 */
/* ------------------------------------------------------------------------ */

typedef enum {
    ZC_F32 = 0,
    ZC_F16,
    ZC_BF16,
    ZC_F64,
    ZC_F8_E4M3FN,
    ZC_F8_E5M2,
    ZC_I8,
    ZC_I16,
    ZC_I32,
    ZC_I64,
    ZC_U8,
    ZC_BOOL,
    ZC_DTYPE_COUNT
} zc_dtype;

/* ------------------------------------------------------------------------ */
/* Digests                                                                    */
/*                                                                            */
/* A digest is a 64-bit hash over a tensor's canonical bytes (contiguous,     */
/* row-major, little-endian as stored), seed 0, that names its algorithm.     */
/* The engine computes XXH3-64 for everything it stores or writes; files of   */
/* earlier versions carry XXH64 digests, which it still reads, verifies and   */
/* restores (and then keeps as XXH64: a digest is never silently re-based).   */
/* As text: "xxh3:" or "xxh64:" and 16 lowercase hex digits, e.g. in a file's */
/* "zc.digest.<name>" metadata.  Both are written from the xxHash             */
/* specification and agree with the reference implementation.                 */
/* ------------------------------------------------------------------------ */

typedef enum {
    ZC_DIGEST_NONE = 0,    /* no digest (a device tensor without a host copy) */
    ZC_DIGEST_XXH64 = 1,   /* XXH64: files written by engine 0.2 and earlier */
    ZC_DIGEST_XXH3_64 = 2  /* XXH3-64: what the engine computes now */
} zc_digest_algo;

/* The algorithm new digests use. */
#define ZC_DIGEST_DEFAULT ZC_DIGEST_XXH3_64

/* A hint for host memory the caller has just allocated and is about to fill
 * for the first time (a new latent of many megabytes): back it with huge
 * pages where the OS offers them (Linux transparent huge pages), so the first
 * touch faults in 2 MiB at a time instead of 4 KiB; only the huge pages wholly
 * inside [p, p + nbytes) are affected.  It never fails and changes no byte: a
 * no-op on other systems, for NULL, or when the kernel refuses. */
ZC_API void zc_host_prefer_huge_pages(void *p, size_t nbytes);

/* The XXH3-64 digest of a host tensor's canonical contiguous bytes, walking
 * its strides in place: no copy of the tensor is made (gathered elements of
 * a strided innermost dimension pass through a small fixed buffer on the
 * stack).  Equals the digest zc_bundle_add_copy records for the same tensor.
 * t is borrowed for the call; its device must be CPU, CUDA-host or
 * ROCm-host memory.  Strides may be 0 (broadcast views) but not negative.
 * @return ZC_OK and *digest; ZC_E_INVALID (NULL, rank, dtype, negative size
 * or stride, non-host device, NULL data with bytes); ZC_E_LIMIT (size
 * overflow). */
ZC_API int zc_digest_tensor(const zc_dl_tensor *t, uint64_t *digest);

/* zc_digest_tensor of a CPU tensor described by plain values, as
 * zc_bundle_add_host_copy takes them (a binding's hot path). */
ZC_API int zc_digest_host_tensor(const void *data, int dtype, int32_t ndim, const int64_t *dims,
                                 uint64_t *digest);

/* One-shot XXH3-64 of len bytes at data (data may be NULL when len is 0).
 * seed 0 is what digests use; other seeds follow the specification (for
 * inputs over 240 bytes, a secret derived from the seed). */
ZC_API uint64_t zc_xxh3_64(const void *data, size_t len, uint64_t seed);

/* ------------------------------------------------------------------------ */
/* HowTo: put a bundle into the store and read it back                        */
/*                                                                            */
/*   zc_store_config cfg; zc_store_config_init(&cfg);                         */
/*   cfg.spill_dir = "/path/to/spill";            (optional disk tier)        */
/*   zc_store *s; zc_store_open(&cfg, &s);                                    */
/*   zc_bundle *b; zc_store_bundle_create(s, &b);                             */
/*   zc_bundle_add_copy(b, "latent_tensor", &host_dltensor);    (host tier)   */
/*   zc_bundle_add_reference(b, "audio", managed, 1, NULL);     (device tier) */
/*   zc_bundle_set_meta_packed(b, "family\0wan21", 13);   ("key\0value\0")   */
/*   uint64_t gen; zc_store_put(s, "shot_a", b, ZC_PUT_SPILL, &gen);          */
/*       (on success the store owns b; on failure the caller still does)     */
/*   zc_view *v; zc_store_get(s, "shot_a", 0, &v);  (0 = newest generation)   */
/*   zc_tensor_info ti; zc_view_tensor(v, 0, &ti);  (ti.data: no copy)       */
/*   void *m; zc_view_export_dlpack(v, 0, 1, &m);   (hand to torch)           */
/*   zc_view_release(v);                                                      */
/*   zc_store_flush(s); zc_store_close(s);                                    */
/* ------------------------------------------------------------------------ */

typedef struct zc_store zc_store;
typedef struct zc_bundle zc_bundle;
typedef struct zc_view zc_view;

/* Where a tensor's bytes live. */
typedef enum {
    ZC_TIER_HOST = 0,   /* C-owned aligned host memory, contiguous */
    ZC_TIER_DEVICE = 1, /* held by reference (DLPack); bytes owned by the producer */
    ZC_TIER_DISK = 2    /* only in a spill file; restored on first get */
} zc_tier;

/* Create an empty bundle whose host copies reuse buffers the store has
 * recycled (slots of the same size that left it), so steady-state puts fault
 * in no fresh pages.  Otherwise the same as zc_bundle_create.
 * @return ZC_OK, ZC_E_INVALID or ZC_E_NOMEM. */
ZC_API int zc_store_bundle_create(zc_store *store, zc_bundle **out);

/* Free a bundle the store did not take (NULL is a no-op). */
ZC_API void zc_bundle_free(zc_bundle *bundle);

/* Copy a host-readable tensor into C-owned aligned memory (made contiguous
 * if strided) and digest it.  src is borrowed: the caller keeps it alive for
 * the call only.  src->device must be CPU, CUDA-host or ROCm-host memory.
 * @return ZC_OK; ZC_E_INVALID (bad name, dtype, rank, negative shape/stride,
 * non-host device); ZC_E_STATE (name already in the bundle); ZC_E_LIMIT
 * (ZC_MAX_TENSORS reached, size overflow); ZC_E_NOMEM. */
ZC_API int zc_bundle_add_copy(zc_bundle *bundle, const char *name, const zc_dl_tensor *src);

/* zc_bundle_add_copy for a CPU tensor described by plain values, for callers
 * that would otherwise build a DLTensor per call (a binding's hot path):
 * dtype is a zc_dtype; dims holds ndim sizes followed by ndim strides in
 * elements (2 * ndim values; NULL when ndim is 0).  data may be NULL only
 * when the tensor has no elements.
 * @return as zc_bundle_add_copy; ZC_E_INVALID also for a dtype outside
 * zc_dtype. */
ZC_API int zc_bundle_add_host_copy(zc_bundle *bundle, const char *name, const void *data,
                                   int dtype, int32_t ndim, const int64_t *dims);

/* The digest of tensor index of a bundle being built (a copy has one from the
 * moment it is added; a reference only with a host copy), so a caller can
 * report it without a view after the put.  @return ZC_OK; ZC_E_NOT_FOUND (no
 * such tensor, or no digest); ZC_E_INVALID (NULL arguments). */
ZC_API int zc_bundle_tensor_digest(const zc_bundle *bundle, uint32_t index, int *algo,
                                   uint64_t *digest);

/* Hold a tensor by reference, without touching its bytes.  managed is a
 * zc_dl_managed_versioned* when versioned is non-zero, else a zc_dl_managed*;
 * it is CONSUMED in every case: the bundle (later the store) calls its
 * deleter exactly once, at once when this call fails.  host_copy, optional
 * and borrowed, is a host-readable copy of the same tensor (same dtype and
 * shape); with it the engine can digest and spill the tensor, without it the
 * tensor has no digest and cannot be spilled (ZC_E_UNSUPPORTED at spill).
 * @return as zc_bundle_add_copy, plus ZC_E_INVALID when host_copy does not
 * match the referenced tensor. */
ZC_API int zc_bundle_add_reference(zc_bundle *bundle, const char *name, void *managed,
                            int versioned, const zc_dl_tensor *host_copy);

/* zc_bundle_set_meta for many entries in one call: packed holds len bytes,
 * each entry a key and then its value, both NUL-terminated ("k1\0v1\0k2\0v2\0").
 * Entries are set in order; at the first bad one it stops and returns its
 * error (the entries before it stay set).  @return as zc_bundle_set_meta;
 * ZC_E_INVALID also for a buffer that does not end an entry with a NUL. */
ZC_API int zc_bundle_set_meta_packed(zc_bundle *bundle, const char *packed, size_t len);

/* ------------------------------------------------------------------------ */
/* Store                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct {
    uint32_t default_depth;        /* slots kept per tag; 0 means ZC_DEFAULT_DEPTH */
    uint64_t host_budget_bytes;    /* 0 means unlimited */
    uint64_t device_budget_bytes;  /* 0 means unlimited */
    const char *spill_dir;         /* NULL: no disk tier.  Created if missing. */
    uint32_t disk_keep;            /* spill files kept per tag by this store (the newest it
                                      wrote, see zc_store_open); 0 means default_depth */
    uint32_t spill_delay_ms;       /* a spill is written this long after its put at the
                                      earliest (0: at once), so that the work right after a
                                      put (a Handoff reading the shot) does not share the
                                      memory bus and the cores with the write; anything that
                                      waits for spills (zc_store_flush, a drop of files,
                                      zc_store_close) cuts the wait short */
} zc_store_config;

/* Fill a config with defaults (depth 4, unlimited budgets, no disk tier,
 * spills ZC_DEFAULT_SPILL_DELAY_MS after their put). */
ZC_API void zc_store_config_init(zc_store_config *config);

/* Open a store.  With a spill_dir, the directory is indexed by file name
 * (files are not read, only looked at: one stat each), temporary files left
 * by a process that crashed are removed (never those of a live process), and
 * files that are not ours are left alone.  A file of ours that fails to
 * restore later (corrupt, truncated, foreign header) is renamed aside with a
 * ".rejected" suffix, never deleted; their count is in
 * zc_store_stats.files_rejected.  The folder is hostile input: a file named
 * like a spill file ("<tag>@<20 digits>.latent") that cannot be one — its
 * generation is 0 or above ZC_MAX_GENERATION, or it is no regular file, or
 * too small to hold a spill file's header (an empty file) — is renamed aside
 * the same way here, at open, and counted in files_rejected, so that no stray
 * file can make a tag's numbering wrap or run out.
 *
 * Several stores, in one process or in several on one machine, may share a
 * spill_dir (see "HowTo: share a spill folder" below).  The store keeps a few
 * bookkeeping files there, all named ".zc-*": ".zc-gen-<tag>" (the tag's
 * generation counter), ".zc-owner-*.lock" (one per open store) and
 * ".zc-lock".  Leave them alone while stores are open.  The store never
 * follows a symbolic link (nor, on Windows, a junction) in place of one of
 * them: it refuses it with a message naming the file (ZC_E_IO here for
 * ".zc-lock"; for a tag's counter, the put goes on with the store's own
 * number and the next zc_store_flush says why), and the link's target is
 * never touched; remove the link and the store creates the file anew.
 * Every file the store writes, locks or serves there (a counter, the folder
 * lock, a spill file it restores, a film's choices file) must also be a
 * regular file with exactly one name, checked on the open handle: a hard
 * link planted in its place (whose other name may lie outside the folder),
 * a FIFO or a device is never written, locked or served.  It is renamed
 * aside to "<name>.rejected" (kept, never deleted), counted in
 * files_rejected, and said: for a counter or ".zc-lock" a new file is made
 * and the note ("last_rejected" in zc_store_describe_json) names the file,
 * why and the fix; a spill file is refused as ZC_E_CORRUPT (see
 * zc_store_get).
 * @return ZC_OK; ZC_E_INVALID; ZC_E_IO (directory unusable); ZC_E_NOMEM. */
ZC_API int zc_store_open(const zc_store_config *config, zc_store **out);

/* Wait for pending spills, stop the writer thread and free the store.  Views
 * still held stay valid until released.  NULL is a no-op. */
ZC_API void zc_store_close(zc_store *store);

/* Tags: 1..ZC_MAX_TAG_LEN bytes of [A-Za-z0-9_.-], not starting with '.'
 * or '-'.  @return ZC_OK, or ZC_E_INVALID with a message naming the first
 * bad character.  Safe to use for file names. */
ZC_API int zc_tag_check(const char *tag);

/* Per-tag ring depth (1..ZC_MAX_DEPTH).  Shrinking drops the oldest slots. */
ZC_API int zc_store_set_depth(zc_store *store, const char *tag, uint32_t depth);

#define ZC_PUT_SPILL 1u          /* also write the bundle to the disk tier (background) */
#define ZC_PUT_MAY_EVICT_NEWEST 2u /* budget eviction may take other tags' newest slots */

/* Store a bundle as the tag's next generation.  On success the store owns
 * the bundle (do not free it) and *generation (optional) is its number,
 * strictly increasing per tag.  With a spill_dir it is allocated in the
 * folder, unique among every store and process sharing it, and never
 * reused, across restarts and drops included (a folder without counter
 * files, as older engines left them, continues after its newest file);
 * without one it is this store's own count.  A folder that cannot hand out
 * a number (removed, unwritable) does not fail the put: the store numbers it
 * alone and the next zc_store_flush reports it, as a failed spill would be.
 * The tag's oldest slot leaves when the ring is full; over budget,
 * least-recently-used slots of any tag leave first, never one a view holds,
 * never a tag's newest unless ZC_PUT_MAY_EVICT_NEWEST.  Memory of a slot that left lives on while views
 * hold it.  On failure nothing stored changes and the caller keeps the bundle.
 * @return ZC_OK; ZC_E_INVALID (tag, empty bundle); ZC_E_BUDGET (the bundle
 * cannot fit: the message gives need, limit and what is held);
 * ZC_E_UNSUPPORTED (ZC_PUT_SPILL without a disk tier or with a device tensor
 * lacking a host copy); ZC_E_STATE (store closing). */
ZC_API int zc_store_put(zc_store *store, const char *tag, zc_bundle *bundle,
                 uint32_t flags, uint64_t *generation);

/* One CPU tensor, no metadata, as the tag's next generation, in one call:
 * zc_store_bundle_create + zc_bundle_add_host_copy + zc_store_put (a
 * binding's fast path for the commonest put).  Nothing is stored, and the
 * copy is freed, when any step fails.  @return as those calls. */
ZC_API int zc_store_put_host_copy(zc_store *store, const char *tag, const char *name,
                                  const void *data, int dtype, int32_t ndim, const int64_t *dims,
                                  uint32_t flags, uint64_t *generation);

/* zc_store_put with the generation number chosen by the caller, e.g. one a
 * farm-wide allocator handed out, instead of the folder's next one.  The
 * store's own allocation continues above it afterwards.  The generation
 * must be new to the tag: in this store's memory and in the spill folder
 * (a spill file, or one renamed aside).  It is placed in generation order;
 * with a full ring, one older than every slot there is refused.  Note: a
 * generation at or below the folder's counter (zc_store_describe_tag_json,
 * "last_generation") may already be held in another process's memory only,
 * where this store cannot see it; a farm allocator should start above it.
 * @return as zc_store_put, plus ZC_E_INVALID (generation 0 or above
 * ZC_MAX_GENERATION, older than a full ring) and ZC_E_EXISTS (the tag holds
 * that generation already; nothing changed, the caller keeps the bundle). */
ZC_API int zc_store_put_generation(zc_store *store, const char *tag, zc_bundle *bundle,
                                   uint32_t flags, uint64_t generation);

/* A reference-counted read view of one slot.  generation 0 means the newest
 * known to the store: in its memory, or a spill file in the folder, written
 * by this store or by any other store or process sharing it (a look at the
 * tag's counter file finds those; a shot held only in another process's
 * memory is not visible).  A tag known only on disk is restored into the
 * host tier first, every tensor verified against its digest (ZC_E_CORRUPT,
 * file renamed aside, on mismatch); a file another process removed
 * meanwhile is forgotten, and for generation 0 the next newest is tried.
 * A restore is bounded before it allocates: a file whose header promises
 * more bytes than the file has is ZC_E_CORRUPT (renamed aside), and with a
 * host budget, one whose tensors need more than the whole budget is
 * ZC_E_BUDGET (the message names the file, its size and the budget; the
 * file is kept, since a store with a larger budget may read it).  A spill
 * file that is a symbolic link, has another name (a hard link) or is no
 * regular file is never served: ZC_E_CORRUPT, renamed aside.  One this
 * process may not read (another user's file, mode 0600) is ZC_E_ACCESS,
 * naming its owner and mode; it is kept (and stays indexed), so a caller
 * wanting "the newest that can be read" tries the next generation, as for
 * ZC_E_CORRUPT.
 * @return ZC_OK, ZC_E_INVALID, ZC_E_NOT_FOUND, ZC_E_CORRUPT, ZC_E_ACCESS,
 * ZC_E_BUDGET, ZC_E_IO, ZC_E_NOMEM. */
ZC_API int zc_store_get(zc_store *store, const char *tag, uint64_t generation, zc_view **out);

/* zc_store_get without the look at the tag's counter file: generation 0 is
 * the newest this store already knows (its memory, and the spill files it
 * indexed), not one another process spilled since its last look.  For a
 * caller that needs what this store holds and must not pay a file read for
 * it (the Store node's colour anchor: every shot of a tag carries the same
 * one); a file removed meanwhile is still forgotten and the next tried.
 * @return as zc_store_get. */
ZC_API int zc_store_get_known(zc_store *store, const char *tag, uint64_t generation,
                              zc_view **out);

/* The generations of tag held in memory or on disk, newest first, without
 * duplicates: up to cap of them into out, their number into *count.  A tag
 * with nothing stored gives *count 0.  This is what zc_store_get can serve,
 * e.g. to fall back from a newest generation that fails verification.
 * Spill files other processes added or removed are looked for first, as
 * in zc_store_get (the newest 64 generations handed out in the folder are
 * probed by name when the tag's files changed; no directory scan).
 * @return ZC_OK; ZC_E_INVALID; ZC_E_LIMIT when *count > cap (call again with
 * a buffer of *count). */
ZC_API int zc_store_generations(zc_store *store, const char *tag, uint64_t *out, size_t cap,
                                size_t *count);

#define ZC_DROP_DISK 1u /* also delete the tag's spill files */

/* Remove a tag's slots (views keep their memory).  With ZC_DROP_DISK the
 * spill files go too, after pending writes finish (a spill still running for
 * a dropped slot removes its own file), those other processes wrote
 * included (but not one another process is still writing, which lands
 * later).  Spill errors of other tags stay reported by the next
 * zc_store_flush.
 * @return ZC_OK, ZC_E_NOT_FOUND or ZC_E_NOMEM. */
ZC_API int zc_store_drop(zc_store *store, const char *tag, uint32_t flags);

/* Trim the store: give memory of one tier back, for a host or a device that
 * runs short (the pack calls it when ComfyUI frees memory; not to be confused
 * with zc_view_release, which drops one view's reference): first the host buffers kept for
 * recycling (ZC_TIER_HOST), then, least recently used first, slots that can
 * leave without loss: their spill file is complete and no view holds them.
 * A later zc_store_get restores such a slot from its file (verified).  Stops
 * once want bytes went; a store without a disk tier only frees its pool.
 * @return ZC_OK and *released (the bytes freed, possibly fewer than want);
 * ZC_E_INVALID (NULL, tier not host or device); ZC_E_NOMEM. */
ZC_API int zc_store_trim(zc_store *store, int tier, uint64_t want, uint64_t *released);

/* Queue again every shot whose spill failed (see zc_store_stats.memory_only),
 * then block until every queued spill is on disk: written, synced, renamed
 * into place and its directory synced, so it survives a crash or power loss
 * from then on.  A spill that fails is first healed where that loses
 * nothing: a removed spill folder is re-created, and this store's older
 * files beyond disk_keep (never a film's protected ancestors, pins or
 * anchor) are pruned before the one retry.  A shot whose spill still fails
 * stays pinned in memory (no budget, ring depth or zc_store_trim evicts
 * it) until a later flush writes it or the tag is dropped; the describe
 * JSON marks it "spill":"failed" and its "spill_problem" says why.
 * @return ZC_OK, or the first spill error since the last flush (its message
 * names the tag, the generation and the file). */
ZC_API int zc_store_flush(zc_store *store);

/* zc_store_flush for one tag: what a reader of that tag's film calls, so that
 * another tag's trouble never fails it.  Queues again the tag's shots whose
 * spill failed (never another tag's), then looks at the tag's files the store
 * says are on disk (one stat each: the cost follows the tag's files, not the
 * tags held):
 *  - a shot still in memory whose file vanished, or whose size is no longer
 *    the one written (the file is renamed aside to *.rejected, kept), is
 *    queued to be written again from memory; its generation goes to
 *    rewritten;
 *  - a file that vanished while its shot is no longer in memory is gone for
 *    good: the store forgets it (its listing and zc_store_generations stop
 *    naming it) and its generation goes to lost.
 * Only the files this store owns are looked at (it wrote them, or found them
 * alone on the folder): other stores prune only their own, which this store
 * learns of as before.
 * Then waits until every queued spill is written (the writer is one queue),
 * as zc_store_flush does.  The store's first spill error since the last
 * zc_store_flush stays for that call: this one neither reports nor clears
 * another tag's failure.
 * rewritten and lost receive at most their cap generations, ascending;
 * *rewritten_count and *lost_count (either pointer may be NULL, with a cap
 * of 0) say how many there were.
 * @return ZC_OK; ZC_E_INVALID (NULL store, bad tag, NULL array with a cap);
 * or this tag's spill error (ZC_E_IO...), naming the tag, the generation and
 * the cause, when one of its shots is still not on disk. */
ZC_API int zc_store_flush_tag(zc_store *store, const char *tag, uint64_t *rewritten,
                              size_t rewritten_cap, size_t *rewritten_count, uint64_t *lost,
                              size_t lost_cap, size_t *lost_count);

/* Import a shot serialized by zc_view_serialize (or a spill file of this
 * engine read from elsewhere, e.g. fetched from another machine) as
 * tag@generation: the bytes are validated by the hardened reader, must say
 * they are tag@generation of this engine ("zc.format", "zc.tag",
 * "zc.generation"), every tensor must have a recorded digest that its
 * bytes match, and a record digest, when the bytes have one, must match
 * their header (a file without one is imported, "record not covered");
 * then they are written, unchanged and crash-safe, as the
 * tag's spill file (never over an existing one) and indexed, so a following
 * zc_store_get restores them.  The generation must be new to the tag, as
 * for zc_store_put_generation; the store's own allocation continues above
 * it.  The store does not prune imported files (other stores' rules apply
 * after a restart).  data is borrowed for the call; treat it as hostile.
 * Needs a spill_dir.  On failure nothing is written and nothing stored
 * changes.
 * @return ZC_OK; ZC_E_INVALID (tag, generation, NULL data); ZC_E_CORRUPT
 * (the bytes are not a whole, matching, verified file of tag@generation:
 * the message says what is wrong, naming the tensor or metadata key whose
 * record changed); ZC_E_BUDGET (with a host budget: the
 * tensors need more than the whole budget, so no restore could hold them;
 * refused before they are copied); ZC_E_EXISTS; ZC_E_UNSUPPORTED (no
 * spill_dir); ZC_E_IO; ZC_E_NOMEM; ZC_E_STATE (store closing). */
ZC_API int zc_store_import(zc_store *store, const char *tag, uint64_t generation,
                           const void *data, size_t len);

typedef struct {
    uint64_t tags;
    uint64_t slots;              /* live slots in the rings */
    uint64_t host_bytes;         /* live host-tier bytes */
    uint64_t device_bytes;       /* live device-tier bytes (by reference) */
    uint64_t retained_bytes;     /* bytes of slots that left but views still hold */
    uint64_t evictions;          /* slots removed by budget pressure */
    uint64_t spills_written;
    uint64_t spill_errors;
    uint64_t restores;
    uint64_t files_rejected;     /* files renamed aside as corrupt or foreign */
    uint64_t pending_spills;
    uint64_t pooled_bytes;       /* freed host buffers kept for reuse by later puts */
    uint64_t verify_hashed_bytes;  /* bytes zc_view_verify re-hashed (since the store opened) */
    uint64_t verify_skipped_bytes; /* bytes it did not need to: no writer possible */
    uint64_t memory_only;        /* shots whose spill failed: they exist only in this store's
                                    memory, pinned there (never evicted) until a retry writes
                                    them or they are dropped; the describe JSON's
                                    "spill_problem" says why */
    uint64_t spill_folder_recreated; /* times the spill directory was found removed while the
                                     store ran and was created again */
} zc_store_stats;

/* Snapshot of the store's counters. */
ZC_API int zc_store_stats_get(zc_store *store, zc_store_stats *out);

/* JSON description of every tag: generations, tensors (name, dtype, shape,
 * bytes, tier, digest), metadata, disk files, as far as this store knows
 * them (it does not look for files other processes spilled since; the
 * one-tag description below does), and "spill_locks": whether the spill
 * folder's file system grants file locks (null without a spill_dir), and
 * "last_rejected": the newest file of the spill folder this store refused
 * and renamed aside (files_rejected counts them), with why and the fix, or
 * null.  Writes at most cap bytes including the terminating NUL; *needed
 * (optional) gets the full size including the NUL.  @return ZC_OK, or
 * ZC_E_LIMIT when cap was too small (call again with *needed bytes). */
ZC_API int zc_store_describe_json(zc_store *store, char *buf, size_t cap, size_t *needed);

/* The same description for one tag only (the object of one "tags" entry), or
 * "null" when the tag holds nothing; nothing is restored from disk, but spill
 * files other processes added or removed are looked for first, as in
 * zc_store_generations.  "last_generation" is the highest generation handed
 * out for the tag in the spill folder, as far as the store knows.  Cheap
 * whatever the number of other tags.  @return as zc_store_describe_json, plus
 * ZC_E_INVALID for a bad tag. */
ZC_API int zc_store_describe_tag_json(zc_store *store, const char *tag, char *buf, size_t cap,
                                      size_t *needed);

/* A count that grows whenever a tag's newest generation rises or a tag is
 * dropped, as far as this store knows them: a put, an import, a spill file
 * of another process found by a look at the folder (zc_store_get,
 * zc_store_generations, zc_store_describe_tag_json), a drop.  Equal counts
 * mean that every tag's "last_generation" and the set of tags described
 * are unchanged; a caller that must notice any new shot of any tag (a
 * node whose tag is not known yet) compares it instead of the whole
 * description.  Constant time whatever the number of tags.
 * @return ZC_OK; ZC_E_INVALID (store or out NULL). */
ZC_API int zc_store_changes(zc_store *store, uint64_t *out);

/* ------------------------------------------------------------------------ */
/* HowTo: measure the seam of a hop at put time (reference definition:      */
/* tests/python/seam_reference.py; docs/film.md says what the numbers mean) */
/*                                                                            */
/* A seam compares the parent shot's last frames with the new shot's first    */
/* ones after those that repeat the parent.  The engine keeps, per tensor, a  */
/* small summary of both ends, read from its host bytes: each frame of a      */
/* window read on a strided grid of at most max_values values (all channels), */
/* its per-channel mean and standard deviation, the frame-to-frame RMS steps  */
/* and covariances inside the window, and the grid samples of the frame at    */
/* the cut.  The caller says what the engine cannot know: which axis is time  */
/* (channels are axis 1; a batch on axis 0 is read whole unless it is the     */
/* time axis) and how many leading frames repeat the parent (head_skip).      */
/*                                                                            */
/* The put pays for none of it: it only says what to summarise and which     */
/* shot is the parent.  The spill writer measures the hop before it writes    */
/* the file (or the first zc_store_hop_seam_json that asks does):             */
/*                                                                            */
/*   zc_bundle *b; zc_store_bundle_create(s, &b);                             */
/*   zc_seam_layout lay = {.time_axis = 2, .head_skip = 1, .window = 4,       */
/*                         .max_values = 4096};                               */
/*   zc_bundle_seam_plan(b, "latent_tensor", &lay);                           */
/*   zc_bundle_seam_parent(b, "film", parent_gen);                            */
/*   zc_bundle_add_copy(b, "latent_tensor", &host_dltensor);                  */
/*   zc_store_put(s, "film", b, ZC_PUT_SPILL, &gen);                          */
/*   ... later: zc_store_hop_seam_json(s, "film", gen, buf, cap, &needed);    */
/*                                                                            */
/* Both summaries and the hop's record live with the slot and are written     */
/* into its spill file (metadata "zc.seam.<tensor name>", see                 */
/* ZC_FILE_META_SEAM_PREFIX, and ZC_FILE_META_HOP_SEAM), so the seam of a     */
/* later hop, and the film's seams and drift (zc_film_describe), need no      */
/* tensor read.  Files without them (older engines) simply have none.         */
/* zc_store_seam measures one cut at once, for a caller that wants it now.    */
/* ------------------------------------------------------------------------ */

#define ZC_FILE_META_SEAM_PREFIX "zc.seam." /* + tensor name: the tail summary (JSON) */
#define ZC_FILE_META_HOP_SEAM "zc.hop_seam"  /* the seam record of the hop that made the shot */
#define ZC_SEAM_MAX_WINDOW 64                /* frames of a summary window */

typedef struct {
    int32_t time_axis;    /* the frames' axis: 0 (a batch of images) or 2 and up; never 1 */
    uint32_t head_skip;   /* leading frames that repeat the parent: the head window starts here */
    uint32_t window;      /* frames read at each end, 1..ZC_SEAM_MAX_WINDOW */
    uint32_t max_values;  /* values read of each frame, all channels (per batch entry); 0: all */
} zc_seam_layout;

/* Ask for the seam summaries of the tensor called name of a bundle being
 * built, added before or after this call (zc_bundle_add_copy,
 * zc_bundle_add_host_copy, or zc_bundle_add_reference with a host copy),
 * before the bundle is put.  Nothing is read on the put's
 * path: the summaries are made from the stored host bytes later, by the
 * spill writer before it writes the file, or by the first call that needs
 * them (zc_store_seam, zc_store_hop_seam_json, a child's seam), whichever
 * comes first.  zc_bundle_seam_summarize makes them at once, for a tensor
 * already added.  A planned tensor that cannot be summarised (rank, dtype,
 * a reference without a host copy) is added all the same, without
 * summaries: a seam is a report, never a reason to refuse a shot.  Planning
 * a name again replaces its layout.
 * @return ZC_OK; ZC_E_INVALID (NULL, bad name, window or time_axis out of
 * range); ZC_E_LIMIT (ZC_MAX_TENSORS names planned). */
ZC_API int zc_bundle_seam_plan(zc_bundle *bundle, const char *name, const zc_seam_layout *layout);

/* Name the parent of the shot a bundle being built will store: the seam of
 * the hop, from parent_tag@parent_generation's tail to this shot's head,
 * is measured after the put, off its path (see the HowTo above), for the
 * tensor "latent_tensor" and, when both shots have it, "latent_tensor_1"
 * (an audio stream), each as planned with zc_bundle_seam_plan.
 * @return ZC_OK; ZC_E_INVALID (NULL, bad tag, generation 0). */
ZC_API int zc_bundle_seam_parent(zc_bundle *bundle, const char *parent_tag, uint64_t parent_generation);

/* The seam record of the hop that made tag@generation, as JSON (the object
 * tests/python/seam_reference.py defines: version, frames, skip, mean_step, std_step,
 * rms_step, correlation, within_correlation, audio (for two audio streams),
 * score; numbers at 4 significant digits), from memory (measured now if the
 * spill writer has not yet) or from its spill file.  NUL-terminated into
 * buf; *needed (may be NULL) receives the bytes needed, NUL included.
 * @return ZC_OK; ZC_E_INVALID (NULL store, bad tag); ZC_E_NOT_FOUND (no such
 * shot, or it has no seam: a root, the first shot after a start image, a
 * parent gone or without summaries, a file of an older engine; the error
 * says which); ZC_E_LIMIT (buf too small: *needed says how much). */
ZC_API int zc_store_hop_seam_json(zc_store *store, const char *tag, uint64_t generation, char *buf,
                                  size_t cap, size_t *needed);

/* ------------------------------------------------------------------------ */
/* HowTo: share a spill folder between processes                              */
/*                                                                            */
/* Open a store on the same spill_dir in each process (one per GPU, say) and  */
/* use it as usual; nothing else is needed on one machine:                    */
/* - generations are allocated in the folder (".zc-gen-<tag>", under a file   */
/*   lock), so every put gets a number no other store got, and no spill file */
/*   is ever written over another (the name is taken exclusively);           */
/* - zc_store_get(s, tag, 0), zc_store_generations and                        */
/*   zc_store_describe_tag_json see generations the others spilled (after    */
/*   their zc_store_flush, or once their writer finished);                    */
/* - a store removes temporary files only of processes that are gone, and    */
/*   prunes only spill files it wrote itself (beyond its disk_keep), plus    */
/*   those it found at open when no other store had the folder open.         */
/* Not shared: what another process holds only in memory.  Between machines, */
/* move shots as bytes: zc_view_serialize on one, zc_store_import on the     */
/* other, with generations from a farm-wide allocator and                     */
/* zc_store_put_generation.  Network file systems: untested (docs/engine.md). */
/* ------------------------------------------------------------------------ */

/* ------------------------------------------------------------------------ */
/* Views                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct {
    const char *name;              /* valid while the view lives */
    int dtype;                     /* zc_dtype */
    int32_t ndim;
    int64_t shape[ZC_MAX_RANK];
    int64_t byte_strides[ZC_MAX_RANK];
    int32_t device_type;           /* DLPack device code of data */
    int32_t device_id;
    int tier;                      /* zc_tier */
    uint64_t nbytes;               /* canonical contiguous size */
    uint64_t digest;               /* of the canonical bytes, with digest_algo */
    int has_digest;                /* 0 for a device tensor stored without a host copy */
    int digest_algo;               /* zc_digest_algo: XXH3-64, or XXH64 for a tensor restored
                                      from an older file; ZC_DIGEST_NONE without a digest */
    void *data;                    /* host: contiguous bytes (read-only: see zc_view_verify);
                                      device: device address */
} zc_tensor_info;

/* Record digest.  Every file the engine writes (spill files, zc_view_save,
 * zc_view_serialize) records, under ZC_FILE_META_RECORD, a digest of its
 * header beside its tensors' digests: each tensor's name, dtype and shape,
 * and every other metadata entry, keys and values (lineage, seam records,
 * identity, the tensors' digests, everything), in a canonical order
 * (docs/engine.md, "Record digest").  A reader recomputes it; a header that
 * differs is refused with ZC_E_CORRUPT naming what changed where it can
 * ("tensor "latent_tensor" dtype is I32, was F32", "metadata "lineage"
 * changed").  A file without one (written before record digests, or by
 * another program) reads as before: "record not covered". */
typedef enum {
    ZC_RECORD_NOT_COVERED = 0, /* no record digest (an older file): dtype, shape and metadata
                                  are not checked */
    ZC_RECORD_OK = 1,          /* covered: the header matches its record digest, or the shot
                                  was put in this process (its file gets one as it is written) */
    ZC_RECORD_BAD = 2          /* the header differs from its record digest (files only: a
                                  store never serves such a shot) */
} zc_record_status;

ZC_API const char *zc_view_tag(const zc_view *view);
ZC_API uint64_t zc_view_generation(const zc_view *view);
ZC_API uint32_t zc_view_count(const zc_view *view);

/* Describe tensor index.  @return ZC_OK or ZC_E_NOT_FOUND. */
ZC_API int zc_view_tensor(const zc_view *view, uint32_t index, zc_tensor_info *out);

/* Every metadata entry in one call, packed as zc_bundle_set_meta_packed
 * takes them ("key\0value\0" each, in the bundle's order) into buf; the
 * packed size into *len (also when the buffer is too small, so the caller
 * can call again with a buffer of *len).
 * @return ZC_OK, ZC_E_INVALID, ZC_E_LIMIT (*len > cap; buf unchanged). */
ZC_API int zc_view_meta_packed(const zc_view *view, char *buf, size_t cap, size_t *len);

/* The value for key, or NULL. */
ZC_API const char *zc_view_meta(const zc_view *view, const char *key);

/* Whether the shot's record (dtype, shape, metadata) is covered by a record
 * digest: ZC_RECORD_OK for a shot put in this process or restored from a
 * file whose record digest matched; ZC_RECORD_NOT_COVERED for one restored
 * or imported from a file without one (what was read is served as before).
 * A file whose record differs is never served (zc_store_get refuses it with
 * ZC_E_CORRUPT).  @return a zc_record_status; ZC_E_INVALID for NULL. */
ZC_API int zc_view_record(const zc_view *view);

/* Export tensor index as a new DLPack managed tensor that holds its own
 * reference on the slot: the slot's memory lives until the consumer calls
 * the managed tensor's deleter (exactly once), even after the view is
 * released and the slot evicted.  versioned selects the struct.  Host-tier
 * tensors are exported writable (flags 0) because torch refuses read-only
 * imports; writing through them changes the stored bytes (and breaks their
 * digest), so consumers must treat them as read-only.  Each such export is
 * a possible writer until its deleter runs (see zc_view_verify).
 * @return ZC_OK, ZC_E_NOT_FOUND, ZC_E_NOMEM. */
ZC_API int zc_view_export_dlpack(const zc_view *view, uint32_t index, int versioned, void **managed);

/* Verification: is a slot's host memory still the bytes its digests name?
 *
 * The guarantee: when zc_view_verify returns ZC_OK, every host-tier tensor
 * of the slot is covered by a digest check made at or after the last moment
 * anything could have written its bytes.  The only writers the engine hands
 * out are writable DLPack exports of host-tier tensors; so a tensor is
 * re-hashed when an export of it is live, or was deleted after its digest
 * was last checked, and otherwise skipped ("unchanged since checked, no
 * writer possible").  A digest is checked when it is computed (put, where
 * the copy and the digest are one pass, or restore from a file) and by
 * every verify that re-hashes and matches.  What this cannot see, by
 * contract: writes through zc_tensor_info.data (read-only) or through an
 * export after its deleter ran (use after release), and memory corruption
 * outside the API; ZC_VERIFY_REHASH re-hashes everything regardless.
 *
 * Device-tier tensors (held by reference) are the producer's memory, which
 * the engine never reads: nothing here proves anything about them.  What
 * is checked is their host copy (when given), which is never exported and
 * so never re-hashed unless ZC_VERIFY_REHASH; a caller that needs the
 * device bytes unchanged must hold a private device clone that nothing
 * else can write (the Python bridge's defensive_clone). */

#define ZC_VERIFY_REHASH 1u /* re-hash every digested tensor, writer possible or not */

/* What a verification did, tensor by tensor (bit i = tensor index i). */
typedef struct {
    uint32_t hashed;       /* host bytes re-hashed, and they matched */
    uint32_t unchanged;    /* not re-hashed: no writer possible since the last check */
    uint32_t unchecked;    /* no digest (a device tensor without a host copy) */
    uint32_t device;       /* held by reference: device bytes not covered (see above) */
    uint64_t hashed_bytes; /* bytes re-hashed by this call */
} zc_verify_report;

/* Verify a slot's host bytes against their digests, re-hashing only the
 * tensors a writer could have changed (all of them with ZC_VERIFY_REHASH).
 * report (optional) says which were hashed and which skipped; the store's
 * verify_hashed_bytes / verify_skipped_bytes statistics add them up.
 * @return ZC_OK; ZC_E_INVALID (NULL view, unknown flag); ZC_E_CORRUPT naming
 * the first tensor whose bytes changed, with both digests (report then
 * holds the tensors checked before it). */
ZC_API int zc_view_verify_ex(const zc_view *view, uint32_t flags, zc_verify_report *report);

/* Write the slot as a safetensors file at path, crash-safe (temporary file,
 * fsync, rename, fsync of the directory), synchronously.  A tensor named
 * "latent_tensor" gets ComfyUI's "latent_format_version_0" marker so
 * LoadLatent reads it unscaled.  @return ZC_OK, ZC_E_IO, ZC_E_UNSUPPORTED. */
ZC_API int zc_view_save(const zc_view *view, const char *path);

/* The bytes of the safetensors file zc_view_save would write, with the
 * identity metadata of a spill file (zc.format, zc.tag, zc.generation),
 * every tensor's digest and the record digest of the header: what zc_store_import takes, e.g. to publish a shot
 * to other machines.  Into buf (cap bytes); *needed (optional) gets the
 * size.  Call with buf NULL and cap 0 to learn it.  The bytes are the same
 * as the slot's spill file.
 * @return ZC_OK; ZC_E_LIMIT (cap below *needed); ZC_E_UNSUPPORTED (a
 * device tensor without a host copy); ZC_E_INVALID; ZC_E_NOMEM. */
ZC_API int zc_view_serialize(const zc_view *view, void *buf, size_t cap, size_t *needed);

/* Release a view (NULL is a no-op). */
ZC_API void zc_view_release(zc_view *view);

/* ------------------------------------------------------------------------ */
/* HowTo: read a film from the spill files (no store needed)                  */
/*                                                                            */
/* A tag's spill files are its shots.  A shot's metadata "lineage" (JSON that */
/* the Python Handoff writes; docs/film.md) names the shot it continued: its  */
/* parent.  A shot without one is a root; metadata kind = "start_image" marks */
/* the encoded start image a film may begin with.  Shots with one parent (or  */
/* all roots of the tag) are the takes of one shot, numbered 1.. by           */
/* generation.  At each step the film follows the chosen take: the pinned     */
/* one (a pin chooses its ancestors too), else the take whose descendants     */
/* hold the newest generation, so with no pins the film ends at the tag's     */
/* newest shot.  The chosen line runs from the chosen root down the chosen    */
/* takes to a leaf; a choice makes it pass through the chosen take.           */
/*                                                                            */
/*   char *json; zc_film_describe(dir, "shot_a", ZC_FILM_VERIFY, &json);      */
/*   ... parse json ...; zc_free(json);                                       */
/*   zc_film_choose(dir, "shot_a", 7);   (pin take 7; 0 clears every pin)    */
/*                                                                            */
/* Choices live in "<dir>/.zc-film-<tag>.json", replaced atomically under    */
/* the folder's lock; stores never prune a pinned take or its ancestors (see  */
/* zc_store_config.disk_keep).  Safe from any thread and process; a film is   */
/* read as the folder stands.                                                 */
/* ------------------------------------------------------------------------ */

#define ZC_FILM_VERIFY 1u /* read every file (digests checked) and check every hop's tail */

/* Describe the film of tag from the spill files in spill_dir, as a JSON
 * object in a new string (free it with zc_free):
 *   {version: 1, tag, verified, ok, line: [generations in film order],
 *    newest, end (last of line), anchor (lowest-generation root, 0 if none),
 *    pins: [..], seam_thresholds, worst_seam, drift (null, or the tails'
 *    per-channel mean_delta and std_ratio from the line's first shot, read
 *    from the files' seam summaries: docs/film.md), problems: [sentences],
 *    shots: [{generation, shot (position along the line; a start image is
 *      0), depth, kind ("shot" | "start_image"), parent (generation or 0),
 *      continues ("tag@gen" when the parent is in another tag, else null),
 *      take, takes, state ("line" | "alternative" | "stale" | "broken"),
 *      pinned, trim, adapter, tail_frames, tail_digest, used_digest, prompt,
 *      seed (or null), frames (time axis of the latent), shape, digest
 *      (the latent's recorded digest), file ("ok" | "bad" | "unchecked"),
 *      hop ("ok" | "bad" | "root" | "missing_parent" | "cycle" |
 *      "unchecked" | "not_checked_external"), record ("ok" | "bad" |
 *      "not_covered" | "unchecked": the file's record digest, see
 *      zc_file_record; "unchecked" when the file cannot be opened),
 *      problem (sentence or null), seam}]
 *   } with shots in ascending generation.
 * "alternative": off the line, its parent on the line (or a root take);
 * "stale": an ancestor is off the line; "broken": its lineage cannot be
 * followed (unreadable, a missing parent, a parent not older than the
 * shot, a cycle) or trusted (its file's record digest does not match its
 * header, checked with or without ZC_FILM_VERIFY: record "bad", file
 * "bad").  With ZC_FILM_VERIFY every tensor is read against its
 * recorded digest and each hop's tail digest is recomputed from the
 * parent's latent (the last tail_frames along axis 2 of a 5-D latent,
 * axis 0 of a 4-D one; the audio span of "latent_tensor_1" for audio tail
 * digests); ok is then true when every file and hop is ok (or a root, or
 * external) and nothing is broken.  Without it files and hops are
 * "unchecked" and ok means nothing is broken.  The files may be hostile:
 * the reader is the hardened one.
 * @return ZC_OK and *json_out; ZC_E_INVALID (NULL, bad tag, unknown flag);
 * ZC_E_IO (the folder cannot be listed); ZC_E_NOT_FOUND (no spill files
 * of the tag: the message names the tag and the folder); ZC_E_NOMEM. */
ZC_API int zc_film_describe(const char *spill_dir, const char *tag, uint32_t flags,
                            char **json_out);

/* Choose take generation of tag's film: the chosen line passes through it
 * from then on.  It and its ancestors within the tag are pinned, each the
 * chosen take of its place; the pins below it that the line followed stay,
 * every other pin goes (so the pins are one chain from a root down, and
 * the line passes through every one).  generation 0 clears every pin.  The
 * choices file "<spill_dir>/.zc-film-<tag>.json" = {"version":1,"tag":..,
 * "chosen":[..]} is read, changed and replaced crash-safe under the spill
 * folder's lock (".zc-lock"), so choices made at once by threads or
 * processes are applied one after the other: the last one wins, and the
 * line passes through it.  A choices file (or folder lock) that is not a
 * regular file with one name is renamed aside to ".rejected" and the
 * choice refused, saying so (ZC_E_CORRUPT); choose again.
 * @return ZC_OK; ZC_E_INVALID; ZC_E_NOT_FOUND (no such generation, or no
 * files of the tag: the message names it); ZC_E_STATE (the take cannot be on
 * any line: its lineage, or an ancestor's, cannot be followed; the message
 * says why); ZC_E_CORRUPT (see above); ZC_E_IO; ZC_E_NOMEM. */
ZC_API int zc_film_choose(const char *spill_dir, const char *tag, uint64_t generation);

/* 1 if the tag's choices file exists and pins at least one take, else 0
 * (also for bad arguments and an unreadable file).  Reads one small file. */
ZC_API int zc_film_has_choices(const char *spill_dir, const char *tag);

/* Free a string the engine returned (zc_film_describe); NULL is a no-op. */
ZC_API void zc_free(void *p);

/* ======================================================================== */
/* ======================================================================== */
/* ADVANCED API                                                               */
/*                                                                            */
/* Below: what only the zc tool and the benchmark call.  Exported from the    */
/* library like the core and kept working, but the node pack's bridge uses    */
/* none of it, and a binding should not need it.                              */
/* ======================================================================== */
/* ======================================================================== */

/* ------------------------------------------------------------------------ */
/* Data types: sizes and names                                                */
/* ------------------------------------------------------------------------ */

/* Bytes per element of a dtype, 0 for an unknown code. */
ZC_API size_t zc_dtype_size(int dtype);

/* The safetensors name of a dtype ("F32", "BF16", "F8_E4M3", ...); NULL if unknown. */
ZC_API const char *zc_dtype_name(int dtype);

/* ------------------------------------------------------------------------ */
/* Digests: text, any algorithm                                               */
/* ------------------------------------------------------------------------ */

/* The text prefix of an algorithm without its colon ("xxh3", "xxh64"); NULL
 * for ZC_DIGEST_NONE or an unknown code. */
ZC_API const char *zc_digest_algo_name(int algo);

/* A digest as text, "<name>:<16 hex>", into out (cap >= ZC_DIGEST_TEXT_SIZE).
 * @return ZC_OK, or ZC_E_INVALID for an unknown algorithm or a short buffer. */
#define ZC_DIGEST_TEXT_SIZE 24
ZC_API int zc_digest_format(int algo, uint64_t digest, char *out, size_t cap);

/* The digest of len bytes at data (NULL allowed when len is 0) with an
 * algorithm and seed 0.  @return ZC_OK or ZC_E_INVALID (unknown algorithm). */
ZC_API int zc_digest_bytes(int algo, const void *data, size_t len, uint64_t *digest);

/* ------------------------------------------------------------------------ */
/* Bundles: the plain form of zc_store_bundle_create                          */
/* ------------------------------------------------------------------------ */

/* Create an empty bundle.  @return ZC_OK or ZC_E_NOMEM. */
ZC_API int zc_bundle_create(zc_bundle **out);

/* ------------------------------------------------------------------------ */
/* Files: a hardened safetensors reader                                       */
/*                                                                            */
/* Every byte is treated as hostile: the header length, the JSON, the dtype   */
/* names, shapes against byte lengths (with overflow checks), offsets that    */
/* overlap, leave holes or run past the end.  Nothing is trusted before it is */
/* checked; a bad file is an error code, never a crash.                       */
/* ------------------------------------------------------------------------ */

typedef struct zc_file zc_file;

typedef struct {
    const char *name;              /* valid while the file is open */
    int dtype;
    int32_t ndim;
    int64_t shape[ZC_MAX_RANK];
    uint64_t nbytes;
    uint64_t offset;               /* from the start of the file */
    int has_digest;                /* the file's metadata records one */
    int digest_algo;               /* zc_digest_algo of recorded_digest; ZC_DIGEST_NONE without */
    uint64_t recorded_digest;
} zc_file_tensor;

/* Open and validate a file: only its header is read.  The tensors must tile
 * the data section up to the file's real size (as the OS reports it at
 * open), so a header promising more bytes than the file has is refused here,
 * before anything is allocated for them.  Untrusted input: a file may still
 * really be large (a sparse file costs no disk), so check each
 * zc_file_tensor.nbytes against your limits before zc_file_read or
 * zc_file_load_bundle allocate and read them.  @return ZC_OK; ZC_E_IO
 * (cannot open/read); ZC_E_CORRUPT (the message says what is wrong and
 * where). */
ZC_API int zc_file_open(const char *path, zc_file **out);

ZC_API void zc_file_close(zc_file *file);

ZC_API uint32_t zc_file_count(const zc_file *file);
ZC_API int zc_file_tensor_at(const zc_file *file, uint32_t index, zc_file_tensor *out);
ZC_API int zc_file_find(const zc_file *file, const char *name, uint32_t *index);
ZC_API uint32_t zc_file_meta_count(const zc_file *file);
ZC_API int zc_file_meta_at(const zc_file *file, uint32_t index, const char **key, const char **value);
ZC_API const char *zc_file_meta(const zc_file *file, const char *key);

/* What the file's record digest (ZC_FILE_META_RECORD) says of its header,
 * checked when the file was opened: a zc_record_status.  why (optional)
 * gets a sentence owned by the file (valid while it is open): for
 * ZC_RECORD_BAD what changed ("the record (dtype, shape or metadata) changed
 * since it was written: metadata "lineage" changed"), for
 * ZC_RECORD_NOT_COVERED why it is not covered, "" for ZC_RECORD_OK.
 * zc_file_open does not refuse a file for its record (so that tools can
 * still show it); zc_file_load_bundle, hence every restore and import, does.
 * @return a zc_record_status; ZC_E_INVALID for NULL. */
ZC_API int zc_file_record(const zc_file *file, const char **why);

/* Read tensor index into dst (cap >= nbytes), digesting it as it is read,
 * and return the digest in *digest (optional): computed with the algorithm
 * of the recorded digest (zc_file_tensor.digest_algo), or XXH3-64 when the
 * file records none.  @return ZC_OK, ZC_E_LIMIT (cap), ZC_E_IO, ZC_E_CORRUPT
 * (short read, or a recorded digest that does not match). */
ZC_API int zc_file_read(zc_file *file, uint32_t index, void *dst, size_t cap, uint64_t *digest);

/* ======================================================================== */
/* ======================================================================== */
/* TEST SUPPORT                                                               */
/*                                                                            */
/* Functions the engine's tests use (engine/tests in C; tests/python through  */
/* the binding); no product code calls them: not the node pack, the zc tool,  */
/* nor the benchmark.  Exported and kept working like the rest;               */
/* tests/python/test_abi.py holds this section to exactly those functions.    */
/* ======================================================================== */
/* ======================================================================== */

/* ------------------------------------------------------------------------ */
/* Digests: parsing text, streaming, XXH64, the kernel in use                 */
/* ------------------------------------------------------------------------ */

/* Parse "xxh3:<16 hex>" or "xxh64:<16 hex>" (hex digits in either case).
 * The text may be untrusted.  @return ZC_OK with *algo and *digest, or
 * ZC_E_INVALID (the message quotes the text and says what is expected). */
ZC_API int zc_digest_parse(const char *text, int *algo, uint64_t *digest);

/* Streaming XXH3-64: reset, update any number of times with any lengths,
 * digest (which does not change the state, so it may be called again after
 * more updates).  The result equals zc_xxh3_64 of the concatenated input.
 * The struct is public so callers can keep it on the stack; treat its
 * fields as private. */
typedef struct {
    uint64_t acc[8];
    uint8_t secret[192];
    uint8_t buffer[256];         /* input not yet hashed */
    uint8_t last_stripe[64];     /* the 64 input bytes before buffer[0] */
    uint64_t total_len;
    uint64_t seed;
    uint32_t buffered;
    uint32_t stripes_in_block;
} zc_xxh3_state;

ZC_API void zc_xxh3_reset(zc_xxh3_state *state, uint64_t seed);
ZC_API void zc_xxh3_update(zc_xxh3_state *state, const void *data, size_t len);
ZC_API uint64_t zc_xxh3_digest(const zc_xxh3_state *state);

/* The name of the XXH3 stripe kernel this process uses: "avx512", "avx2",
 * "sse2" or "scalar".  It is chosen once, at the first digest: the fastest one the CPU
 * and the build support, or the one the environment variable
 * ZC_DIGEST_KERNEL names ("scalar", "sse2", "avx2", "avx512") if the CPU runs it (any
 * other value is ignored; this function then says what runs).  Every kernel
 * gives the same digests; the variable exists to test them and to rule a
 * SIMD path out when diagnosing. */
ZC_API const char *zc_xxh3_kernel(void);

/* One-shot XXH64 of len bytes at data (data may be NULL when len is 0);
 * kept to verify files with "xxh64:" digests. */
ZC_API uint64_t zc_xxh64(const void *data, size_t len, uint64_t seed);

/* Streaming XXH64.  The struct is public so callers can keep it on the
 * stack; treat its fields as private. */
typedef struct {
    uint64_t acc[4];
    uint64_t total_len;
    uint64_t seed;
    uint8_t buffer[32];
    uint32_t buffered;
} zc_xxh64_state;

ZC_API void zc_xxh64_reset(zc_xxh64_state *state, uint64_t seed);
ZC_API void zc_xxh64_update(zc_xxh64_state *state, const void *data, size_t len);
ZC_API uint64_t zc_xxh64_digest(const zc_xxh64_state *state);

/* ------------------------------------------------------------------------ */
/* Bundles, seams and views: entry by entry, and a seam before the put        */
/* ------------------------------------------------------------------------ */

/* Set (or replace) a metadata entry.  Keys: 1..ZC_MAX_META_KEY_LEN bytes of
 * printable ASCII without '"' or '\\'; keys starting "zc." are reserved for
 * the engine.  Values: valid UTF-8 up to ZC_MAX_META_VALUE_LEN bytes.
 * @return ZC_OK, ZC_E_INVALID, ZC_E_LIMIT or ZC_E_NOMEM. */
ZC_API int zc_bundle_set_meta(zc_bundle *bundle, const char *key, const char *value);

/* Number of tensors in a bundle. */
ZC_API uint32_t zc_bundle_count(const zc_bundle *bundle);

/* Summarise both ends of tensor index of a bundle being built: the last
 * window frames (the tail, which the store keeps with the slot and its spill
 * file) and the window frames from head_skip on (the head, used by
 * zc_store_seam before the put).  Reads only the grid samples of those
 * frames from the tensor's host bytes (a host-tier copy, or a reference's
 * host copy); the grid stride is the smallest that keeps a frame, all its
 * channels, within max_values values per batch entry.  Calling it again
 * replaces the summaries.
 * @return ZC_OK; ZC_E_INVALID (NULL, index, time_axis 1 or out of range,
 * window, rank below 2); ZC_E_UNSUPPORTED (a dtype other than F32, F16,
 * BF16, F64, or a device tensor without a host copy); ZC_E_NOMEM. */
ZC_API int zc_bundle_seam_summarize(zc_bundle *bundle, uint32_t index, const zc_seam_layout *layout);

/* The statistics of one cut, as tests/python/seam_reference.py defines them (the
 * score, the rounding and the audio level in dB are the caller's). */
typedef struct {
    int measured;              /* 0: the shapes differ off the time axis, or neither side has
                                  two frames; the numbers below are then 0 */
    int parent_start_image;    /* the parent's metadata kind is "start_image" */
    uint32_t parent_frames;    /* frames read each side of the cut */
    uint32_t shot_frames;
    double mean_step;          /* the cut's step of the per-channel means over the mean step
                                  inside the shots */
    double std_step;           /* the same for the per-channel standard deviations */
    double rms_step;           /* the cut's RMS frame difference over the within-shot one */
    double correlation;        /* of the frames at the cut, each channel centred */
    double within_correlation; /* the mean of the same for neighbouring frames inside */
    double parent_level;       /* RMS of the parent's tail window (uncentred) */
    double shot_level;         /* RMS of the shot's head window */
} zc_seam_stats;

/* The seam of the cut from parent_tag@parent_generation to the bundle
 * (before it is put): the parent's tail summary of the tensor called name
 * (from its slot in memory, else the header of its spill file: no tensor is
 * read) against the bundle's head summary of the tensor of the same name.
 * Microseconds: a few thousand multiply-adds.  The parent's file may be
 * hostile; a summary that does not parse counts as none.
 * @return ZC_OK and *out; ZC_E_INVALID (NULL, bad tag, generation 0; the
 * two summaries were taken on different grids of the same shape);
 * ZC_E_NOT_FOUND (the bundle has no such tensor or no summary of it: call
 * zc_bundle_seam_summarize first; the parent is not in memory nor on disk;
 * or it has no summary, e.g. a file of an older engine: measure from the
 * tensors instead). */
ZC_API int zc_store_seam(zc_store *store, const char *parent_tag, uint64_t parent_generation,
                         const zc_bundle *bundle, const char *name, zc_seam_stats *out);

/* Number of metadata entries of a view. */
ZC_API uint32_t zc_view_meta_count(const zc_view *view);

/* The index-th metadata entry.  @return ZC_OK or ZC_E_NOT_FOUND. */
ZC_API int zc_view_meta_at(const zc_view *view, uint32_t index, const char **key, const char **value);

/* zc_view_verify_ex(view, 0, NULL). */
ZC_API int zc_view_verify(const zc_view *view);

/* ------------------------------------------------------------------------ */
/* Files: a memory image, a whole file as a bundle                            */
/* ------------------------------------------------------------------------ */

/* Validate an in-memory image of a file (borrowed; keep it alive while the
 * zc_file is open).  Same checks as zc_file_open. */
ZC_API int zc_file_open_memory(const void *data, size_t len, zc_file **out);

/* Read a whole file into a new bundle (host tier), verifying every recorded
 * digest, the record digest first (a header that differs from it is
 * ZC_E_CORRUPT, naming what changed, before any tensor is read); each tensor
 * keeps the digest zc_file_read returned, with its algorithm (an "xxh64:"
 * file stays XXH64).  The marker tensor "latent_format_version_0" is
 * skipped; metadata keys of the engine ("zc.*") are not copied.  @return as
 * zc_file_read. */
ZC_API int zc_file_load_bundle(zc_file *file, zc_bundle **out);

/* ------------------------------------------------------------------------ */
/* The ABI as this library was compiled (for a binding's test)               */
/* ------------------------------------------------------------------------ */

/* A JSON description of the binary interface as this build of the library
 * compiled it, for a binding that restates the header by hand to check
 * itself against the library it loaded (tests/python/test_abi.py does):
 *   {version, pointer_size,
 *    structs: {<struct name>: {size, fields: [[member, offset, size], ...]}}
 *      for every struct of zc.h and zc_dlpack.h, members in declared order,
 *    numbers: {<name>: value} for every numeric #define and enumerator of
 *      both headers (and the film's seam thresholds),
 *    strings: {<name>: text} for every string #define of zc.h and the
 *      engine's file names in a spill folder (ZC_GEN_PREFIX, ...),
 *    dtypes: [{code, name, size, dlpack_code, dlpack_bits}] in code order,
 *    digest_algos: {<code>: text prefix}}
 * Written as zc_store_describe_json writes: at most cap bytes including the
 * NUL; *needed (optional) gets the full size.
 * @return ZC_OK, ZC_E_LIMIT (call again with *needed bytes), ZC_E_NOMEM. */
ZC_API int zc_abi_describe(char *buf, size_t cap, size_t *needed);

#ifdef __cplusplus
}
#endif
#endif /* ZC_H */
