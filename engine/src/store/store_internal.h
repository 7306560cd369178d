/*
 * store_internal.h — the store's private structures, shared by store.c
 * (tags, rings, budgets), slot.c (reference counts), view.c (views and DLPack
 * export), tag_index.c (each tag's entry, ring and files on disk), spill.c
 * (the disk tier and its writer thread), describe.c, and
 * the files that let several processes share one spill folder:
 * generation_numbers.c (generation counters), spill_owner.c (owner files and the
 * clean-up of dead processes' temporary files), spill_refresh.c (seeing
 * what other processes spilled), shared_process.c (process-wide state) and
 * shot_io.c (shots in and out as file bytes).
 */
#ifndef ZC_STORE_INTERNAL_H
#define ZC_STORE_INTERNAL_H

#include "core/internal.h"
#include "format/spill_names.h"

/* Counters that must outlive the store while slots that left it are still
 * held by readers. */
typedef struct zc_core {
    atomic_int_fast64_t refs;
    atomic_uint_fast64_t retained_bytes;
    atomic_uint_fast64_t verify_hashed_bytes;
    atomic_uint_fast64_t verify_skipped_bytes;
} zc_core;

/* Who could have written one host-tier tensor's bytes (view.c): writable
 * DLPack exports live now, and how many were deleted before and since its
 * digest was last checked.  An export is deleted by releasing first, then
 * leaving live, so a reader that sees live == 0 and then released ==
 * checked knows no writer existed since the check. */
typedef struct zc_write_watch {
    atomic_int_fast64_t live;       /* writable exports handed out, not yet deleted */
    atomic_uint_fast64_t released;  /* writable exports deleted, ever */
    atomic_uint_fast64_t checked;   /* released, read before the last matching check began */
} zc_write_watch;

/* One stored generation of one tag. */
typedef struct zc_slot {
    atomic_int_fast64_t refs;      /* ring membership + readers + pending spill jobs */
    atomic_int_fast64_t readers;   /* views and exported DLPack tensors */
    atomic_int retained;           /* left the ring while still referenced */
    zc_bundle *bundle;
    zc_core *core;
    char tag[ZC_MAX_TAG_LEN + 1];
    uint64_t generation;
    uint64_t last_used;            /* store tick of the last put/get; under the store lock */
    uint64_t created_unix_ms;
    uint64_t host_bytes;
    uint64_t device_bytes;
    int from_disk;                 /* restored from a spill file */
    int files_dropped;             /* dropped with ZC_DROP_DISK; under the store lock */
    int spill_state;               /* ZC__SPILL_*; under the store lock */
    uint64_t spill_bytes;          /* its spill file's size when this store wrote it (0: not
                                      written here); under the store lock */
    char spill_problem[1024];      /* why its spill failed (state ZC__SPILL_FAILED); under
                                      the store lock */
    zc_write_watch watch[ZC_MAX_TENSORS]; /* per tensor of bundle */
    struct zc_slot *next_deferred; /* in zc_store.deferred: its last release waits for a caller */
} zc_slot;

/* Where a slot's spill stands.  A slot whose spill is pending or failed
 * exists nowhere else: it is pinned in its ring (never evicted by a budget,
 * by the ring's depth or by zc_store_trim) until its file is written or
 * the user drops it. */
enum {
    ZC__SPILL_OFF = 0,     /* put without ZC_PUT_SPILL: memory only, by the caller's choice */
    ZC__SPILL_PENDING = 1, /* queued (or being written) */
    ZC__SPILL_WRITTEN = 2, /* its file is complete and durable */
    ZC__SPILL_FAILED = 3   /* the write failed; retried at the next flush or spill */
};
/* 1 when slot may leave memory without losing the shot (lock held). */
static inline int zc__slot_durable(const zc_slot *slot)
{
    return slot->spill_state == ZC__SPILL_OFF || slot->spill_state == ZC__SPILL_WRITTEN;
}

/* One spill file of a tag. */
typedef struct {
    uint64_t generation;
    int mine;                      /* this store may prune it: it wrote it, or found it at open
                                      with no other store on the folder */
    int lineage_known;             /* parent, start_image and in_film below are read (once:
                                      from the slot when this store wrote it, else from the
                                      file's header the first time pruning needs it) */
    uint64_t parent;               /* the generation of its tag it continues; 0 for a root */
    int start_image;               /* metadata kind = start_image */
    int in_film;                   /* it has a lineage or is a start image */
} zc_disk_file;

typedef struct zc_tag_entry {
    struct zc_tag_entry *next;     /* hash chain */
    char tag[ZC_MAX_TAG_LEN + 1];
    uint32_t depth;
    uint32_t count;                /* slots in the ring, oldest first; above depth only while
                                      slots not yet on disk are pinned there */
    uint32_t cap;                  /* capacity of ring: at least depth */
    zc_slot **ring;
    uint64_t last_generation;      /* highest generation ever given (memory or disk) */
    zc_disk_file *disk;            /* generations with a complete spill file, ascending */
    uint32_t disk_count;
    uint32_t disk_cap;
    uint64_t seen_changes;         /* the folder's change count for the tag when last looked at */
    int seen_valid;                /* seen_changes was read (else the next look probes) */
} zc_tag_entry;

typedef struct zc_spill_job {
    struct zc_spill_job *next;
    zc_slot *slot;                 /* holds one slot reference */
    uint64_t due_ns;               /* zc_os_monotonic_ns() from which it may be written */
} zc_spill_job;

#define ZC__NOTE_BYTES 1024

struct zc_store {
    zc_os_mutex lock;
    zc_bufpool *pool;              /* recycled host buffers (see bufpool.c) */
    zc_store_config config;
    char *spill_dir;
    zc_core *core;
    zc_tag_entry **buckets;
    size_t bucket_count;
    size_t tag_count;
    uint64_t tick;
    zc_store_stats stats;          /* counters kept under the lock */
    uint64_t changes;              /* zc_store_changes: grows when a tag's newest rises or a
                                      tag is dropped (under the lock) */
    int closing;

    /* disk tier */
    zc_os_thread writer;
    int writer_running;
    zc_os_cond work_ready;         /* a job was queued or closing */
    zc_os_cond work_done;          /* the queue drained */
    zc_spill_job *queue_head;
    zc_spill_job *queue_tail;
    int writer_busy;
    int spill_waiters;             /* threads waiting for the queue to drain: the writer
                                      writes at once, without waiting out spill_delay_ms */
    zc_slot *deferred;             /* slots whose last reference the writer thread let go of
                                      while they hold tensors by reference: their producers'
                                      deleters (torch's) run on a caller's thread instead */
    int flush_status;              /* first spill error since the last flush */
    char flush_message[1024];
    char spill_problem[1024];      /* the newest spill failure, kept while any slot is
                                      memory-only (stats.memory_only > 0); "" otherwise */
    char reject_note[ZC__NOTE_BYTES]; /* the newest file of the folder refused and renamed
                                         aside (or refused), and why; "" when none */

    /* a spill folder shared with other processes */
    int shared_locks;              /* the folder's file system grants file locks */
    zc_os_file owner_file;         /* this store's owner file, locked while it is open */
    char *owner_path;
};

struct zc_view {
    zc_slot *slot;
};

/* tag@generation's slot in memory with a reference taken (zc__slot_unref it), or NULL
 * (generation 0 too: no "newest" here).  Takes the store lock. */
zc_slot *zc__store_slot_ref(zc_store *store, const char *tag, uint64_t generation);
/* tag@generation's spill file, open, when it is readable and says it is that shot (close it
 * with zc_file_close); NULL otherwise (no spill folder, no file, not that shot). */
zc_file *zc__spill_open_shot(const zc_store *store, const char *tag, uint64_t generation);
/* Drop the writer thread's reference on slot: the last one of a slot holding tensors by
 * reference waits for a caller's thread (their deleters may need the interpreter). */
void zc__spill_release_from_writer(zc_store *store, zc_slot *slot);
/* zc_store_seam, on the writer thread when on_writer (the parent's reference is dropped as
 * zc__spill_release_from_writer drops it). */
int zc__store_seam(zc_store *s, const char *tag, uint64_t generation, const zc_bundle *b,
                   const char *name, zc_seam_stats *out, int on_writer);
/* Run the releases the writer thread deferred (lock NOT held): call on callers' threads. */
void zc__release_deferred(zc_store *store);

/* slot.c */
zc_slot *zc__slot_new(zc_core *core, zc_bundle *bundle, const char *tag);
void zc__slot_ref(zc_slot *slot);
void zc__slot_unref(zc_slot *slot);
void zc__slot_reader_acquire(zc_slot *slot);
void zc__slot_reader_release(zc_slot *slot);
/* Mark a slot as having left its ring (caller then drops the ring's ref). */
void zc__slot_retire(zc_slot *slot);
void zc__core_unref(zc_core *core);

/* tag_index.c (call with the lock held, unless said) */
zc_tag_entry *zc__tag_find(zc_store *store, const char *tag);
zc_tag_entry *zc__tag_get_or_create(zc_store *store, const char *tag);

int zc__spill_path(const zc_store *store, const char *tag, uint64_t generation, char *out,
                   size_t cap);
/* Record a generation as on disk (lock held); mine is or-ed into an
 * existing entry's flag. */
int zc__disk_add(zc_tag_entry *entry, uint64_t generation, int mine);
void zc__disk_remove(zc_tag_entry *entry, uint64_t generation);
void zc__disk_remove_at(zc_tag_entry *entry, uint32_t index); /* index < disk_count */
int zc__disk_has(const zc_tag_entry *entry, uint64_t generation);
/* Remove ring[index] from entry, keeping order (lock held); the ring's reference on the
 * slot now belongs to the caller, who unrefs it outside the lock. */
zc_slot *zc__ring_take(zc_store *store, zc_tag_entry *entry, uint32_t index);
/* entry's slot of generation in its ring (0: the newest), or NULL (lock held). */
zc_slot *zc__ring_find(zc_tag_entry *entry, uint64_t generation);
/* Let the oldest durable slots of entry leave while its ring holds more than
 * its depth (pinned slots made it grow; lock held).  Their ring references
 * go into out (at most cap); returns how many. */
uint32_t zc__ring_trim(zc_store *store, zc_tag_entry *entry, zc_slot **out, uint32_t cap);
/* Count a file of the spill folder refused (renamed aside, or left where it
 * could not be) in stats.files_rejected, and keep the note (a format and its
 * arguments), the sentence that
 * says which, why and what was done, as the store's newest such note
 * ("last_rejected" in zc_store_describe_json).  Takes the store lock. */
void zc__spill_note_rejected(zc_store *store, const char *fmt, ...) ZC_PRINTF(2, 3);

/* spill.c */
int zc__spill_open(zc_store *store);      /* index the directory, start the writer */
/* Create the spill directory again if it was removed (lock NOT held): 1 when
 * it was missing and now exists, else 0 (the message says why, if it failed). */
int zc__spill_dir_recreate(zc_store *store);
void zc__spill_close(zc_store *store);    /* drain and stop the writer */
void zc__worker_wait(zc_store *store);    /* wait until the queue is drained (lock not held) */
void zc__spill_enqueue(zc_store *store, zc_slot *slot); /* lock held; takes a slot ref */
/* Restore tag@generation from disk as a new slot (lock NOT held). */
int zc__spill_restore(zc_store *store, const char *tag, uint64_t generation, zc_slot **out);
/* Rename tag's bad spill file at path aside (never deletes it); why says
 * what is wrong with it (for the store's note of refused files; may be NULL). */
void zc__spill_reject(zc_store *store, const char *tag, const char *path, const char *why);
/* 1 if tag@generation has a spill file, or one renamed aside, in the folder. */
int zc__spill_name_taken(const zc_store *store, const char *tag, uint64_t generation);

/* ---- several processes, one spill folder ---- */

/* generation_numbers.c: the per-tag counter file ZC_GEN_PREFIX<tag>, holding the
 * highest generation handed out for the tag in the folder and a count of
 * changes to its spill files (landed, pruned, rejected, dropped). */
typedef struct {
    uint64_t last;
    uint64_t changes;
} zc_gen_counter;
/* Read tag's counter; *exists 0 when it has none (all zero then). */
int zc__gen_read(zc_store *store, const char *tag, zc_gen_counter *out, int *exists);
/* Hand out a generation of tag: requested (refused with ZC_E_EXISTS if its
 * file exists), or the next above the counter, floor (what the store knows)
 * and every existing file.  Raises the counter.  Caller holds
 * zc__shared_tag_mutex(tag), not the store lock. */
int zc__gen_allocate(zc_store *store, const char *tag, uint64_t floor, uint64_t requested,
                     uint64_t *out);
/* Count one change of tag's files; *before gets the count before it.  Takes
 * zc__shared_tag_mutex(tag) itself.  Best effort: a failure is ignored by
 * callers (other processes then see the change at their next probe). */
int zc__gen_note_change(zc_store *store, const char *tag, uint64_t *before);

/* spill_owner.c, called by zc__spill_open with the folder lock held
 * between begin and end. */
typedef struct zc_owner_scan zc_owner_scan;
/* Take the folder lock and create this store's owner file. */
int zc__owner_begin(zc_store *store, zc_owner_scan **out);
/* Offer a directory entry; 1 if it is a temporary or owner file (kept for
 * end), 0 otherwise.  -1: out of memory. */
int zc__owner_note(zc_owner_scan *scan, const char *name);
/* Remove the temporary files of dead processes (never a live one's) and
 * their owner files; *alone is 1 when no other store has the folder open.
 * Releases the folder lock and frees scan. */
int zc__owner_end(zc_store *store, zc_owner_scan *scan, int *alone);
/* Remove this store's owner file (at close). */
void zc__owner_release(zc_store *store);

/* spill.c: count a change of tag's files in the folder (landed, pruned,
 * rejected, dropped, imported) for the other stores; best effort. */
void zc__spill_announce(zc_store *store, const char *tag);

/* spill_prune.c: which of tag's files this store prunes after a write:
 * its own ("mine") beyond the newest disk_keep, except the film's that
 * must stay: ancestors within the tag of every file kept, pinned takes
 * (the choices file) and their ancestors, and the anchor of a film (its
 * lowest-generation root, and when that is a start image also its
 * lowest-generation child).  Removes them from the index and returns
 * their generations (at most cap) in prune.  Lock NOT held. */
uint32_t zc__spill_plan_prune(zc_store *store, const char *tag, uint64_t *prune, uint32_t cap);
/* A disk file's lineage from its metadata (its "lineage" JSON and "kind",
 * either NULL), into d (whose generation is set).  Parses: no lock needed. */
void zc__lineage_read(zc_disk_file *d, const char *tag, const char *lineage, const char *kind);
/* The lineage fields of from into to (the generation and owner stay). */
void zc__lineage_copy(zc_disk_file *to, const zc_disk_file *from);

/* spill_refresh.c: learn which spill files of tag other processes (or
 * other stores of this one) added or removed since the store last looked.
 * Cheap when nothing changed (one small file read).  Lock NOT held. */
int zc__spill_refresh(zc_store *store, const char *tag);

zc_view *zc__view_new(zc_slot *slot); /* acquires a reader on slot */


#endif
