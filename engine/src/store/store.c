/*
 * store.c — the tagged store: tags map to rings of slots; budgets per tier
 * with least-recently-used eviction across tags; generations that only grow
 * (allocated in the spill folder when there is one, generation_numbers.c).  One mutex
 * guards the tag table and the rings; copies, digests and file I/O run
 * outside it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

#define INITIAL_BUCKETS 64

void zc_store_config_init(zc_store_config *c)
{
    if (c == NULL)
        return;
    memset(c, 0, sizeof *c);
    c->default_depth = ZC_DEFAULT_DEPTH;
    c->spill_delay_ms = ZC_DEFAULT_SPILL_DELAY_MS;
}

int zc_store_open(const zc_store_config *config, zc_store **out)
{
    if (out == NULL)
        return zc__fail(ZC_E_INVALID, "zc_store_open: out is NULL");
    *out = NULL;
    zc_store_config c;
    zc_store_config_init(&c);
    if (config)
        c = *config;
    if (c.default_depth == 0)
        c.default_depth = ZC_DEFAULT_DEPTH;
    if (c.default_depth > ZC_MAX_DEPTH)
        return zc__fail(ZC_E_INVALID, "default_depth %u is above the limit %d", c.default_depth,
                        ZC_MAX_DEPTH);
    if (c.disk_keep == 0)
        c.disk_keep = c.default_depth;
    if (c.spill_delay_ms > ZC_MAX_SPILL_DELAY_MS)
        return zc__fail(ZC_E_INVALID, "spill_delay_ms %u is above the limit %d (a minute); use "
                        "0 to write each spill at once", c.spill_delay_ms, ZC_MAX_SPILL_DELAY_MS);
    zc_store *s = calloc(1, sizeof *s);
    if (s == NULL)
        return zc__fail(ZC_E_NOMEM, "out of host memory opening a store");
    s->config = c;
    s->config.spill_dir = NULL;
    s->owner_file = ZC_OS_FILE_CLOSED;
    s->core = calloc(1, sizeof *s->core);
    s->buckets = calloc(INITIAL_BUCKETS, sizeof *s->buckets);
    s->bucket_count = INITIAL_BUCKETS;
    if (s->core == NULL || s->buckets == NULL) {
        free(s->core);
        free(s->buckets);
        free(s);
        return zc__fail(ZC_E_NOMEM, "out of host memory opening a store");
    }
    atomic_init(&s->core->refs, 1);
    /* Keep freed buffers for recycling (a film puts one size shot after shot; a fresh buffer
     * costs its page faults): up to a quarter of the host budget, at most 2 GiB, or 1 GiB
     * without a budget.  zc_store_trim gives them back when the host runs short. */
    uint64_t pool_limit = (uint64_t)1 << 30;
    if (c.host_budget_bytes)
        pool_limit = c.host_budget_bytes / 4 < ((uint64_t)2 << 30) ? c.host_budget_bytes / 4
                                                                    : ((uint64_t)2 << 30);
    s->pool = zc__bufpool_new(pool_limit);
    atomic_init(&s->core->retained_bytes, 0);
    atomic_init(&s->core->verify_hashed_bytes, 0);
    atomic_init(&s->core->verify_skipped_bytes, 0);
    int err = zc_os_mutex_init(&s->lock);
    if (err == 0 && (err = zc_os_cond_init(&s->work_ready)) != 0)
        zc_os_mutex_destroy(&s->lock);
    if (err == 0 && (err = zc_os_cond_init(&s->work_done)) != 0) {
        zc_os_cond_destroy(&s->work_ready);
        zc_os_mutex_destroy(&s->lock);
    }
    if (err != 0) {
        zc__core_unref(s->core);
        zc__bufpool_unref(s->pool);
        free(s->buckets);
        free(s);
        return zc__fail(ZC_E_STATE, "cannot create the store's lock: %s", ZC_OS_WHY(err));
    }
    if (c.spill_dir) {
        s->spill_dir = zc__strdup(c.spill_dir);
        int rc = s->spill_dir ? zc__spill_open(s)
                              : zc__fail(ZC_E_NOMEM, "out of host memory opening a store");
        if (rc != ZC_OK) {
            zc_store_close(s);
            return rc;
        }
        s->config.spill_dir = s->spill_dir;
    }
    *out = s;
    return ZC_OK;
}

static void free_entry_rings(zc_tag_entry *e)
{
    for (uint32_t i = 0; i < e->count; i++) {
        zc__slot_retire(e->ring[i]);
        zc__slot_unref(e->ring[i]);
    }
    free(e->ring);
    free(e->disk);
    free(e);
}

void zc_store_close(zc_store *s)
{
    if (s == NULL)
        return;
    zc_os_mutex_lock(&s->lock);
    s->closing = 1;
    zc_os_mutex_unlock(&s->lock);
    zc__spill_close(s);
    zc__release_deferred(s); /* the writer has stopped: its deferred releases run here */
    for (size_t i = 0; i < s->bucket_count; i++) {
        zc_tag_entry *e = s->buckets[i];
        while (e) {
            zc_tag_entry *next = e->next;
            free_entry_rings(e);
            e = next;
        }
    }
    free(s->buckets);
    zc_os_mutex_destroy(&s->lock);
    zc_os_cond_destroy(&s->work_ready);
    zc_os_cond_destroy(&s->work_done);
    zc__core_unref(s->core);
    zc__bufpool_unref(s->pool);
    free(s->spill_dir);
    free(s);
}

int zc_store_bundle_create(zc_store *s, zc_bundle **out)
{
    if (s == NULL)
        return zc__fail(ZC_E_INVALID, "zc_store_bundle_create: store is NULL");
    int rc = zc_bundle_create(out);
    if (rc == ZC_OK && s->pool) {
        zc__bufpool_ref(s->pool);
        (*out)->pool = s->pool;
    }
    return rc;
}

int zc_store_set_depth(zc_store *s, const char *tag, uint32_t depth)
{
    int rc;
    if (s == NULL)
        return zc__fail(ZC_E_INVALID, "store is NULL");
    if ((rc = zc_tag_check(tag)) != ZC_OK)
        return rc;
    if (depth == 0 || depth > ZC_MAX_DEPTH)
        return zc__fail(ZC_E_INVALID, "depth %u for tag \"%s\" is out of range; expected 1 to %d",
                        depth, tag, ZC_MAX_DEPTH);
    zc_slot *dropped[ZC_MAX_DEPTH];
    uint32_t ndropped = 0;
    zc_os_mutex_lock(&s->lock);
    zc_tag_entry *e = zc__tag_get_or_create(s, tag);
    if (e == NULL) {
        zc_os_mutex_unlock(&s->lock);
        return zc__fail(ZC_E_NOMEM, "out of host memory for tag \"%s\"", tag);
    }
    uint32_t cap = depth > e->count ? depth : e->count;
    zc_slot **ring = realloc(e->ring, sizeof *ring * cap);
    if (ring == NULL) {
        zc_os_mutex_unlock(&s->lock);
        return zc__fail(ZC_E_NOMEM, "out of host memory resizing tag \"%s\"", tag);
    }
    e->ring = ring;
    e->cap = cap;
    e->depth = depth;
    /* The oldest go, except shots not yet on disk: they stay until written. */
    ndropped = zc__ring_trim(s, e, dropped, ZC_MAX_DEPTH);
    zc_os_mutex_unlock(&s->lock);
    for (uint32_t i = 0; i < ndropped; i++)
        zc__slot_unref(dropped[i]);
    return ZC_OK;
}

/* Can slot (at ring position pos of e) go under budget pressure?  Not while
 * a view reads it, nor while it exists only in memory (its spill is pending
 * or failed).  A tag's newest slot is protected, except in the tag being put
 * to: the new slot becomes that tag's newest. */
static int evictable(const zc_tag_entry *e, uint32_t pos, uint32_t flags, const zc_tag_entry *putting)
{
    if (atomic_load(&e->ring[pos]->readers) > 0 || !zc__slot_durable(e->ring[pos]))
        return 0; /* read now, or not yet on disk: leaving would lose it */
    if (pos == e->count - 1 && e != putting && !(flags & ZC_PUT_MAY_EVICT_NEWEST))
        return 0;
    return 1;
}

typedef struct {
    zc_tag_entry *entry;
    zc_slot *slot;
} victim;

static int victim_cmp(const void *a, const void *b)
{
    uint64_t x = ((const victim *)a)->slot->last_used, y = ((const victim *)b)->slot->last_used;
    return x < y ? -1 : x > y;
}

/* Choose least-recently-used slots to evict so that live + need fits the
 * budgets, without changing anything.  Returns the victim count, or -1 if
 * eviction cannot make room (message set).  exclude: a slot already leaving. */
static int plan_eviction(zc_store *s, const zc_tag_entry *putting, const char *tag,
                         uint64_t need_host, uint64_t need_dev,
                         const zc_slot *exclude, uint32_t flags, victim **out)
{
    uint64_t host = s->stats.host_bytes, dev = s->stats.device_bytes;
    uint64_t hb = s->config.host_budget_bytes, db = s->config.device_budget_bytes;
    if (exclude) {
        host -= exclude->host_bytes;
        dev -= exclude->device_bytes;
    }
    *out = NULL;
    int host_over = hb && host + need_host > hb;
    int dev_over = db && dev + need_dev > db;
    if (!host_over && !dev_over)
        return 0;
    victim *cands = malloc(sizeof *cands * (s->stats.slots + 1));
    if (cands == NULL)
        return zc__fail(-1, "out of host memory planning eviction");
    size_t n = 0;
    uint64_t pinned = 0; /* host bytes of shots not yet on disk */
    for (size_t b = 0; b < s->bucket_count; b++)
        for (zc_tag_entry *e = s->buckets[b]; e; e = e->next)
            for (uint32_t i = 0; i < e->count; i++) {
                if (!zc__slot_durable(e->ring[i]))
                    pinned += host_over ? e->ring[i]->host_bytes : e->ring[i]->device_bytes;
                if (e->ring[i] != exclude && evictable(e, i, flags, putting)) {
                    cands[n].entry = e;
                    cands[n].slot = e->ring[i];
                    n++;
                }
            }
    qsort(cands, n, sizeof *cands, victim_cmp);
    size_t chosen = 0;
    uint64_t freed_host = 0, freed_dev = 0;
    while ((host_over || dev_over) && chosen < n) {
        const zc_slot *v = cands[chosen].slot;
        /* Only take slots that relieve a tier that is over. */
        if ((host_over && v->host_bytes) || (dev_over && v->device_bytes)) {
            freed_host += v->host_bytes;
            freed_dev += v->device_bytes;
            chosen++;
        } else {
            memmove(&cands[chosen], &cands[chosen + 1], sizeof *cands * (n - chosen - 1));
            n--;
            continue;
        }
        host_over = hb && host - freed_host + need_host > hb;
        dev_over = db && dev - freed_dev + need_dev > db;
    }
    if (host_over || dev_over) {
        free(cands);
        const char *tier = host_over ? "host" : "device";
        uint64_t need = host_over ? need_host : need_dev;
        uint64_t limit = host_over ? hb : db;
        uint64_t live = host_over ? host : dev;
        uint64_t freeable = host_over ? freed_host : freed_dev;
        char why[1200] = "";
        if (pinned)
            snprintf(why, sizeof why, "; %llu bytes are shots not yet on disk, kept in memory "
                     "until their spills succeed%s%s", (unsigned long long)pinned,
                     s->spill_problem[0] ? " (" : "", s->spill_problem[0] ? s->spill_problem : "");
        if (pinned && s->spill_problem[0])
            snprintf(why + strlen(why), sizeof why - strlen(why), ")");
        return zc__fail(-1,
                        "%s budget exceeded for tag \"%s\": the bundle needs %llu bytes, the budget "
                        "is %llu, %llu are stored and only %llu can be evicted (the rest is held "
                        "by readers or is a tag's newest slot%s); raise the %s budget, drop tags or "
                        "release views", tier, tag, (unsigned long long)need,
                        (unsigned long long)limit, (unsigned long long)live,
                        (unsigned long long)freeable, why, tier);
    }
    *out = cands;
    return (int)chosen;
}

static int spill_possible(const zc_store *s, const zc_bundle *b, const char *tag)
{
    if (s->spill_dir == NULL)
        return zc__fail(ZC_E_UNSUPPORTED,
                        "tag \"%s\": spill requested but the store has no spill directory; open "
                        "the store with spill_dir set", tag);
    for (uint32_t i = 0; i < b->count; i++)
        if (b->tensors[i].host == NULL && b->tensors[i].nbytes > 0)
            return zc__fail(ZC_E_UNSUPPORTED,
                            "tag \"%s\": tensor \"%s\" is held by reference on device type %d "
                            "without a host copy, so it cannot be spilled; put it with a host "
                            "copy or without spill", tag, b->tensors[i].name,
                            (int)b->tensors[i].device_type);
    return ZC_OK;
}

/* Where a slot of generation g goes in e's ring (ascending), once the ring
 * victim (if any) has left. */
static uint32_t ring_position(const zc_tag_entry *e, uint64_t g)
{
    uint32_t pos = e->count;
    while (pos > 0 && e->ring[pos - 1]->generation > g)
        pos--;
    return pos;
}

/* A requested generation the tag holds already (lock held). */
static int generation_taken(zc_tag_entry *e, uint64_t g)
{
    if (e == NULL)
        return 0;
    for (uint32_t i = 0; i < e->count; i++)
        if (e->ring[i]->generation == g)
            return 1;
    return zc__disk_has(e, g);
}

static int exists_error(const char *tag, uint64_t g)
{
    return zc__fail(ZC_E_EXISTS, "tag \"%s\" already holds generation %llu in memory or on "
                    "disk; choose another generation", tag, (unsigned long long)g);
}

/* Unlock the store, then the caller's tag mutex (may be NULL). */
static void unlock_both(zc_store *s, zc_os_mutex *tag_mutex)
{
    zc_os_mutex_unlock(&s->lock);
    if (tag_mutex)
        zc_os_mutex_unlock(tag_mutex);
}

/* Store slot as generation gen of tag (0: the store's own next one, no
 * spill folder); lock NOT held.  tag_mutex (may be NULL), held by the
 * caller, is released with the store lock, before any deleter runs: a
 * deleter may run Python code that closes another store, whose writer may
 * wait for that mutex.  On failure the caller still owns the bundle and
 * frees the slot. */
static int commit(zc_store *s, const char *tag, zc_slot *slot, uint32_t flags, uint64_t gen,
                  int requested, uint64_t *out, zc_os_mutex *tag_mutex)
{
    zc_os_mutex_lock(&s->lock);
    if (s->closing) {
        unlock_both(s, tag_mutex);
        return zc__fail(ZC_E_STATE, "the store is closing; tag \"%s\" was not stored", tag);
    }
    zc_tag_entry *e = zc__tag_get_or_create(s, tag);
    if (e == NULL) {
        unlock_both(s, tag_mutex);
        return zc__fail(ZC_E_NOMEM, "out of host memory storing tag \"%s\"", tag);
    }
    if (gen == 0)
        gen = e->last_generation + 1;
    if (requested && generation_taken(e, gen)) {
        unlock_both(s, tag_mutex);
        return exists_error(tag, gen);
    }
    /* A full ring lets its oldest durable slot go; slots not yet on disk stay
     * pinned, and the ring grows past its depth until they are written. */
    zc_slot *ring_victim = NULL;
    for (uint32_t i = 0; e->count >= e->depth && i < e->count && !ring_victim; i++)
        if (zc__slot_durable(e->ring[i]))
            ring_victim = e->ring[i];
    if (ring_victim == NULL && e->count >= e->cap) {
        zc_slot **ring = realloc(e->ring, sizeof *ring * ((size_t)e->cap + 1));
        if (ring == NULL) {
            unlock_both(s, tag_mutex);
            return zc__fail(ZC_E_NOMEM, "out of host memory storing tag \"%s\"", tag);
        }
        e->ring = ring;
        e->cap++;
    }
    if (e->count >= e->depth && e->ring[0]->generation > gen) {
        unlock_both(s, tag_mutex);
        return zc__fail(ZC_E_INVALID, "tag \"%s\": generation %llu is older than every generation "
                        "in its full ring (depth %u, oldest %llu), so it would leave at once; "
                        "import it with zc_store_import or raise the depth", tag,
                        (unsigned long long)gen, e->depth,
                        (unsigned long long)e->ring[0]->generation);
    }
    victim *victims = NULL;
    int nvictims = plan_eviction(s, e, tag, slot->host_bytes, slot->device_bytes, ring_victim, flags,
                                 &victims);
    if (nvictims < 0) {
        unlock_both(s, tag_mutex);
        return ZC_E_BUDGET;
    }
    /* Commit: nothing below can fail. */
    zc_slot *released[ZC_MAX_DEPTH + 1];
    uint32_t nreleased = 0;
    zc_slot **evicted = nvictims ? malloc(sizeof *evicted * (size_t)nvictims) : NULL;
    for (uint32_t i = 0; ring_victim && i < e->count; i++)
        if (e->ring[i] == ring_victim) {
            released[nreleased++] = zc__ring_take(s, e, i);
            break;
        }
    for (int i = 0; i < nvictims; i++) {
        zc_tag_entry *ve = victims[i].entry;
        for (uint32_t k = 0; k < ve->count; k++) {
            if (ve->ring[k] == victims[i].slot) {
                zc_slot *gone = zc__ring_take(s, ve, k);
                s->stats.evictions++;
                if (evicted)
                    evicted[i] = gone;
                else
                    zc__slot_unref(gone); /* no room to defer: free under the lock */
                break;
            }
        }
    }
    free(victims);
    slot->generation = gen;
    if (gen > e->last_generation)
        e->last_generation = gen;
    s->changes++;
    slot->last_used = ++s->tick;
    uint32_t pos = ring_position(e, gen);
    memmove(&e->ring[pos + 1], &e->ring[pos], sizeof *e->ring * (e->count - pos));
    e->ring[pos] = slot;
    e->count++;
    s->stats.slots++;
    s->stats.host_bytes += slot->host_bytes;
    s->stats.device_bytes += slot->device_bytes;
    if (flags & ZC_PUT_SPILL)
        zc__spill_enqueue(s, slot);
    /* Durable slots written meanwhile let a grown ring come back to its depth. */
    nreleased += zc__ring_trim(s, e, released + nreleased, ZC_MAX_DEPTH + 1 - nreleased);
    *out = gen; /* read under the lock: once it is released the slot may leave */
    unlock_both(s, tag_mutex);

    /* Deleters (which may call back into torch) run outside the lock. */
    for (uint32_t i = 0; i < nreleased; i++)
        zc__slot_unref(released[i]);
    if (evicted) {
        for (int i = 0; i < nvictims; i++)
            zc__slot_unref(evicted[i]);
        free(evicted);
    }
    return ZC_OK;
}

/* With a spill folder: allocate the generation in the folder and commit,
 * both under the tag's process-wide mutex, so that this process's puts of
 * the tag commit in the order their numbers were handed out. */
static int commit_shared(zc_store *s, const char *tag, zc_slot *slot, uint32_t flags,
                         uint64_t requested, uint64_t *gen)
{
    zc_os_mutex *m = zc__shared_tag_mutex(tag);
    zc_os_mutex_lock(m);
    zc_os_mutex_lock(&s->lock);
    zc_tag_entry *e = zc__tag_find(s, tag);
    uint64_t floor = e ? e->last_generation : 0;
    int taken = requested && generation_taken(e, requested);
    zc_os_mutex_unlock(&s->lock);
    int rc = taken ? exists_error(tag, requested)
                   : zc__gen_allocate(s, tag, floor, requested, gen);
    if (rc == ZC_E_IO && zc__spill_dir_recreate(s)) /* the folder was removed: number anew */
        rc = zc__gen_allocate(s, tag, floor, requested, gen);
    int alone = rc != ZC_OK && rc != ZC_E_EXISTS && rc != ZC_E_LIMIT;
    char why[512] = "";
    if (alone) {
        /* The folder cannot hand out a number (removed, unreadable, full):
         * the memory tier goes on, as it does when a spill fails, with the
         * store's own next number, and the next zc_store_flush says so. */
        snprintf(why, sizeof why, "%s", zc_last_error());
        *gen = requested;
        rc = ZC_OK;
    }
    if (rc != ZC_OK) {
        zc_os_mutex_unlock(m);
        return rc;
    }
    rc = commit(s, tag, slot, flags, *gen, requested != 0, gen, m); /* releases m */
    if (rc == ZC_OK && alone) {
        zc_os_mutex_lock(&s->lock);
        if (s->flush_status == ZC_OK) {
            s->flush_status = ZC_E_IO;
            snprintf(s->flush_message, sizeof s->flush_message, "tag \"%s\" generation %llu: the "
                     "spill folder could not hand out the number, so this store chose it alone "
                     "(it may not be unique among processes sharing the folder): %s", tag,
                     (unsigned long long)*gen, why);
        }
        zc_os_mutex_unlock(&s->lock);
    }
    return rc;
}

/* Shots whose spills are pending cannot be evicted.  When the budget needs
 * room they hold, wait for the writer first (lock NOT held): the put then
 * evicts them once they are on disk, instead of failing or losing them. */
static void wait_for_pinned_room(zc_store *s, const zc_slot *slot)
{
    zc_os_mutex_lock(&s->lock);
    uint64_t hb = s->config.host_budget_bytes, db = s->config.device_budget_bytes;
    int over = (hb && s->stats.host_bytes + slot->host_bytes > hb) ||
               (db && s->stats.device_bytes + slot->device_bytes > db);
    int pending = s->stats.pending_spills > 0;
    zc_os_mutex_unlock(&s->lock);
    if (over && pending)
        zc__worker_wait(s);
}

static int put(zc_store *s, const char *tag, zc_bundle *b, uint32_t flags, uint64_t requested,
               uint64_t *generation)
{
    int rc;
    if (s == NULL || b == NULL)
        return zc__fail(ZC_E_INVALID, "zc_store_put: store or bundle is NULL");
    if ((rc = zc_tag_check(tag)) != ZC_OK)
        return rc;
    if (b->count == 0)
        return zc__fail(ZC_E_INVALID, "tag \"%s\": the bundle is empty; add at least one tensor",
                        tag);
    if ((flags & ZC_PUT_SPILL) && (rc = spill_possible(s, b, tag)) != ZC_OK)
        return rc;
    zc_slot *slot = zc__slot_new(s->core, b, tag);
    if (slot == NULL)
        return zc__fail(ZC_E_NOMEM, "out of host memory storing tag \"%s\"", tag);
    wait_for_pinned_room(s, slot);
    uint64_t gen = requested;
    if (s->spill_dir)
        rc = commit_shared(s, tag, slot, flags, requested, &gen);
    else
        rc = commit(s, tag, slot, flags, requested, requested != 0, &gen, NULL);
    if (rc != ZC_OK) {
        slot->bundle = NULL; /* the caller keeps the bundle */
        zc__slot_unref(slot);
        return rc;
    }
    if (generation)
        *generation = gen;
    return ZC_OK;
}

int zc_store_put(zc_store *s, const char *tag, zc_bundle *b, uint32_t flags, uint64_t *generation)
{
    if (s != NULL)
        zc__release_deferred(s);
    return put(s, tag, b, flags, 0, generation);
}

int zc_store_put_host_copy(zc_store *s, const char *tag, const char *name, const void *data,
                           int dtype, int32_t ndim, const int64_t *dims, uint32_t flags,
                           uint64_t *generation)
{
    zc_bundle *b = NULL;
    int rc = zc_store_bundle_create(s, &b);
    if (rc == ZC_OK && (rc = zc_bundle_add_host_copy(b, name, data, dtype, ndim, dims)) == ZC_OK &&
        (rc = zc_store_put(s, tag, b, flags, generation)) == ZC_OK)
        return ZC_OK; /* the store owns the bundle */
    zc_bundle_free(b);
    return rc;
}

int zc_store_put_generation(zc_store *s, const char *tag, zc_bundle *b, uint32_t flags,
                            uint64_t generation)
{
    if (generation == 0 || generation > ZC_MAX_GENERATION)
        return zc__fail(ZC_E_INVALID, "generation %llu for tag \"%s\" is out of range; expected "
                        "1 to %llu", (unsigned long long)generation, tag ? tag : "(null)",
                        (unsigned long long)ZC_MAX_GENERATION);
    if (s != NULL)
        zc__release_deferred(s);
    return put(s, tag, b, flags, generation, NULL);
}

/* Find generation in the ring (0 = newest); lock held. */
/* Put a restored slot into the ring if it is newer than everything there and
 * fits the budget without evicting anything; lock held.  Returns 1 if kept. */
static int adopt_restored(zc_store *s, zc_tag_entry *e, zc_slot *slot)
{
    if (e->count > 0 && e->ring[e->count - 1]->generation >= slot->generation)
        return 0;
    if (e->count >= e->depth)
        return 0;
    if (s->config.host_budget_bytes &&
        s->stats.host_bytes + slot->host_bytes > s->config.host_budget_bytes)
        return 0;
    zc__slot_ref(slot);
    e->ring[e->count++] = slot;
    s->stats.slots++;
    s->stats.host_bytes += slot->host_bytes;
    return 1;
}

/* A spill file of tag@generation the store does not know: another process
 * wrote it, or it lies beyond what a refresh probes.  Indexed if present. */
static void probe_by_name(zc_store *s, const char *tag, uint64_t generation)
{
    char path[4096];
    zc_os_path_kind kind;
    if (zc__spill_path(s, tag, generation, path, sizeof path) != ZC_OK ||
        zc_os_stat(path, &kind, NULL) != 0 || kind != ZC_OS_PATH_FILE)
        return;
    zc_os_mutex_lock(&s->lock);
    zc_tag_entry *e = zc__tag_get_or_create(s, tag);
    if (e && zc__disk_add(e, generation, 0) == 0) /* out of memory: simply not found */
        s->changes++;
    zc_os_mutex_unlock(&s->lock);
}

/* One try of zc_store_get; *gone is set when the file it restored from was
 * gone (another process removed it), so the caller may look again. */
static int get_once(zc_store *s, const char *tag, uint64_t generation, zc_view **out, int *gone)
{
    int rc;
    *gone = 0;
    zc_os_mutex_lock(&s->lock);
    zc_tag_entry *e = zc__tag_find(s, tag);
    zc_slot *slot = e ? zc__ring_find(e, generation) : NULL;
    uint64_t want = generation;
    if (e && generation == 0 && e->disk_count > 0) {
        uint64_t newest_disk = e->disk[e->disk_count - 1].generation;
        if (slot == NULL || newest_disk > slot->generation) {
            slot = NULL;
            want = newest_disk;
        }
    }
    if (slot) {
        slot->last_used = ++s->tick;
        zc_view *v = zc__view_new(slot);
        zc_os_mutex_unlock(&s->lock);
        if (v == NULL)
            return zc__fail(ZC_E_NOMEM, "out of host memory for a view of tag \"%s\"", tag);
        *out = v;
        return ZC_OK;
    }
    int on_disk = e && want != 0 && zc__disk_has(e, want);
    uint64_t newest = e && e->count ? e->ring[e->count - 1]->generation : 0;
    int empty = e == NULL || e->count == 0;
    uint32_t depth = e ? e->depth : 0;
    zc_os_mutex_unlock(&s->lock);
    if (!on_disk && generation != 0 && s->spill_dir) {
        probe_by_name(s, tag, generation);
        zc_os_mutex_lock(&s->lock);
        e = zc__tag_find(s, tag);
        on_disk = e && zc__disk_has(e, generation);
        zc_os_mutex_unlock(&s->lock);
    }
    if (!on_disk) {
        if (empty && generation == 0)
            return zc__fail(ZC_E_NOT_FOUND,
                            "no latent is stored under tag \"%s\"; run the Store node with this "
                            "tag first, or check the spelling", tag);
        return zc__fail(ZC_E_NOT_FOUND,
                        "tag \"%s\" has no generation %llu in memory or on disk (newest in "
                        "memory: %llu); older generations leave when the ring (depth %u) is full",
                        tag, (unsigned long long)generation, (unsigned long long)newest,
                        depth);
    }
    zc_slot *restored = NULL;
    if ((rc = zc__spill_restore(s, tag, want, &restored)) != ZC_OK) {
        *gone = rc == ZC_E_NOT_FOUND;
        return rc;
    }
    zc_os_mutex_lock(&s->lock);
    e = zc__tag_get_or_create(s, tag);
    zc_slot *raced = e ? zc__ring_find(e, want) : NULL;
    zc_slot *use = restored;
    if (raced && raced->generation == want) {
        use = raced; /* another thread restored it first */
    } else if (e) {
        restored->last_used = ++s->tick;
        adopt_restored(s, e, restored);
    }
    s->stats.restores++;
    zc_view *v = zc__view_new(use);
    zc_os_mutex_unlock(&s->lock);
    zc__slot_unref(restored); /* the creation reference */
    if (v == NULL)
        return zc__fail(ZC_E_NOMEM, "out of host memory for a view of tag \"%s\"", tag);
    *out = v;
    return ZC_OK;
}

static int get_view(zc_store *s, const char *tag, uint64_t generation, int look, zc_view **out)
{
    int rc, gone = 0;
    if (s == NULL || out == NULL)
        return zc__fail(ZC_E_INVALID, "store or out is NULL");
    *out = NULL;
    if ((rc = zc_tag_check(tag)) != ZC_OK)
        return rc;
    zc__release_deferred(s);
    /* What other processes spilled since the last look.  A counter that
     * cannot be read leaves the store with what it knows. */
    if (generation == 0 && look)
        (void)zc__spill_refresh(s, tag);
    /* For the newest: a file another process pruned meanwhile is forgotten
     * and the next newest tried (each try forgets one file). */
    for (int attempt = 0; attempt < 16; attempt++) {
        rc = get_once(s, tag, generation, out, &gone);
        if (!gone || generation != 0)
            break;
    }
    return rc;
}

int zc_store_get(zc_store *s, const char *tag, uint64_t generation, zc_view **out)
{
    return get_view(s, tag, generation, 1, out);
}

int zc_store_get_known(zc_store *s, const char *tag, uint64_t generation, zc_view **out)
{
    return get_view(s, tag, generation, 0, out);
}

int zc_store_generations(zc_store *s, const char *tag, uint64_t *out, size_t cap, size_t *count)
{
    int rc;
    if (s == NULL || count == NULL || (out == NULL && cap > 0))
        return zc__fail(ZC_E_INVALID, "zc_store_generations: store, count or out is NULL");
    if ((rc = zc_tag_check(tag)) != ZC_OK)
        return rc;
    size_t n = 0;
    (void)zc__spill_refresh(s, tag); /* as in zc_store_get */
    zc_os_mutex_lock(&s->lock);
    zc_tag_entry *e = zc__tag_find(s, tag);
    uint32_t ri = 0, di = 0;
    /* Both lists ascend: merge them newest first, without duplicates. */
    while (e && (ri < e->count || di < e->disk_count)) {
        uint64_t r = ri < e->count ? e->ring[e->count - 1 - ri]->generation : 0;
        uint64_t d = di < e->disk_count ? e->disk[e->disk_count - 1 - di].generation : 0;
        uint64_t g = r > d ? r : d;
        if (r == g)
            ri++;
        if (d == g)
            di++;
        if (n < cap)
            out[n] = g;
        n++;
    }
    zc_os_mutex_unlock(&s->lock);
    *count = n;
    if (n > cap)
        return zc__fail(ZC_E_LIMIT, "tag \"%s\" has %zu generations; the buffer holds %zu", tag, n,
                        cap);
    return ZC_OK;
}

int zc_store_drop(zc_store *s, const char *tag, uint32_t flags)
{
    int rc;
    if (s == NULL)
        return zc__fail(ZC_E_INVALID, "store is NULL");
    if ((rc = zc_tag_check(tag)) != ZC_OK)
        return rc;
    zc__release_deferred(s);
    if ((flags & ZC_DROP_DISK) && s->spill_dir) {
        zc__worker_wait(s); /* pending writes must land before their files go (errors stay for flush) */
        (void)zc__spill_refresh(s, tag); /* and other processes' files go too */
    }
    zc_os_mutex_lock(&s->lock);
    zc_tag_entry *e = zc__tag_find(s, tag);
    if (e == NULL || (e->count == 0 && (!(flags & ZC_DROP_DISK) || e->disk_count == 0))) {
        zc_os_mutex_unlock(&s->lock);
        return zc__fail(ZC_E_NOT_FOUND, "tag \"%s\" holds nothing to drop", tag);
    }
    uint32_t n = e->count;
    zc_slot **gone = malloc(sizeof *gone * (n ? n : 1));
    zc_disk_file *files = NULL;
    uint32_t nfiles = 0;
    if (gone == NULL) {
        zc_os_mutex_unlock(&s->lock);
        return zc__fail(ZC_E_NOMEM, "out of host memory dropping tag \"%s\"", tag);
    }
    for (uint32_t i = 0; i < n; i++) {
        gone[i] = zc__ring_take(s, e, 0);
        if (flags & ZC_DROP_DISK)
            gone[i]->files_dropped = 1; /* a spill still queued for it must not leave a file */
    }
    if ((flags & ZC_DROP_DISK) && e->disk_count) {
        files = e->disk;
        nfiles = e->disk_count;
        e->disk = NULL;
        e->disk_count = e->disk_cap = 0;
    }
    s->changes++;
    zc_os_mutex_unlock(&s->lock);
    for (uint32_t i = 0; i < n; i++)
        zc__slot_unref(gone[i]);
    free(gone);
    char path[4096] = "";
    for (uint32_t i = 0; i < nfiles; i++)
        if (zc__spill_path(s, tag, files[i].generation, path, sizeof path) == ZC_OK)
            zc_os_remove(path);
    free(files);
    if (nfiles && path[0]) {
        zc__fsync_parent_dir(path);
        zc__spill_announce(s, tag); /* others forget them */
    }
    return ZC_OK;
}

int zc_store_changes(zc_store *s, uint64_t *out)
{
    if (s == NULL || out == NULL)
        return zc__fail(ZC_E_INVALID, "zc_store_changes: store or out is NULL");
    zc_os_mutex_lock(&s->lock);
    *out = s->changes;
    zc_os_mutex_unlock(&s->lock);
    return ZC_OK;
}

int zc_store_stats_get(zc_store *s, zc_store_stats *out)
{
    if (s == NULL || out == NULL)
        return zc__fail(ZC_E_INVALID, "zc_store_stats_get: store or out is NULL");
    zc_os_mutex_lock(&s->lock);
    *out = s->stats;
    out->tags = 0;
    out->memory_only = 0;
    for (size_t b = 0; b < s->bucket_count; b++)
        for (zc_tag_entry *e = s->buckets[b]; e; e = e->next) {
            if (e->count || e->disk_count)
                out->tags++;
            for (uint32_t i = 0; i < e->count; i++)
                out->memory_only += e->ring[i]->spill_state == ZC__SPILL_FAILED;
        }
    zc_os_mutex_unlock(&s->lock);
    out->retained_bytes = atomic_load(&s->core->retained_bytes);
    out->verify_hashed_bytes = atomic_load(&s->core->verify_hashed_bytes);
    out->verify_skipped_bytes = atomic_load(&s->core->verify_skipped_bytes);
    out->pooled_bytes = zc__bufpool_bytes(s->pool);
    return ZC_OK;
}
