/*
 * store_internal.h — the store's private structures, shared by store.c
 * (tags, rings, budgets), slot.c (reference counts), view.c (views and DLPack
 * export), spill.c (the disk tier and its writer thread) and describe.c.
 */
#ifndef ZC_STORE_INTERNAL_H
#define ZC_STORE_INTERNAL_H

#include "internal.h"

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
    zc_write_watch watch[ZC_MAX_TENSORS]; /* per tensor of bundle */
} zc_slot;

typedef struct zc_tag_entry {
    struct zc_tag_entry *next;     /* hash chain */
    char tag[ZC_MAX_TAG_LEN + 1];
    uint32_t depth;
    uint32_t count;                /* slots in the ring, oldest first */
    zc_slot **ring;                /* capacity depth */
    uint64_t last_generation;      /* highest generation ever given (memory or disk) */
    uint64_t *disk;                /* generations with a complete spill file, ascending */
    uint32_t disk_count;
    uint32_t disk_cap;
} zc_tag_entry;

typedef struct zc_spill_job {
    struct zc_spill_job *next;
    zc_slot *slot;                 /* holds one slot reference */
} zc_spill_job;

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
    int closing;

    /* disk tier */
    zc_os_thread writer;
    int writer_running;
    zc_os_cond work_ready;         /* a job was queued or closing */
    zc_os_cond work_done;          /* the queue drained */
    zc_spill_job *queue_head;
    zc_spill_job *queue_tail;
    int writer_busy;
    int flush_status;              /* first spill error since the last flush */
    char flush_message[1024];
};

struct zc_view {
    zc_slot *slot;
};

/* slot.c */
zc_slot *zc__slot_new(zc_core *core, zc_bundle *bundle, const char *tag);
void zc__slot_ref(zc_slot *slot);
void zc__slot_unref(zc_slot *slot);
void zc__slot_reader_acquire(zc_slot *slot);
void zc__slot_reader_release(zc_slot *slot);
/* Mark a slot as having left its ring (caller then drops the ring's ref). */
void zc__slot_retire(zc_slot *slot);
void zc__core_unref(zc_core *core);

/* store.c (call with the lock held) */
zc_tag_entry *zc__tag_find(zc_store *store, const char *tag);
zc_tag_entry *zc__tag_get_or_create(zc_store *store, const char *tag);

/* spill.c */
int zc__spill_open(zc_store *store);      /* index the directory, start the writer */
void zc__spill_close(zc_store *store);    /* drain and stop the writer */
void zc__worker_wait(zc_store *store);    /* wait until the queue is drained (lock not held) */
void zc__spill_enqueue(zc_store *store, zc_slot *slot); /* lock held; takes a slot ref */
int zc__spill_path(const zc_store *store, const char *tag, uint64_t generation, char *out,
                   size_t cap);
/* Restore tag@generation from disk as a new slot (lock NOT held). */
int zc__spill_restore(zc_store *store, const char *tag, uint64_t generation, zc_slot **out);
/* Record a generation as on disk (lock held). */
int zc__disk_add(zc_tag_entry *entry, uint64_t generation);
void zc__disk_remove(zc_tag_entry *entry, uint64_t generation);
/* Rename a bad spill file aside (never deletes); returns the new name via out. */
void zc__spill_reject(zc_store *store, const char *path);

zc_view *zc__view_new(zc_slot *slot); /* acquires a reader on slot */


#endif
