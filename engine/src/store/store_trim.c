/*
 * store_trim.c — zc_store_trim: giving memory back when the host or the device runs
 * short: first the recycled buffers of the pool, then, least recently used first, slots
 * that can leave without losing anything (their spill file is complete, no view holds
 * them).  A later get restores such a slot from its file.  Called by the pack when ComfyUI
 * frees memory.
 */
#include <stdlib.h>

#include "store_internal.h"

typedef struct {
    zc_tag_entry *entry;
    zc_slot *slot;
} release_candidate;

static int by_last_use(const void *a, const void *b)
{
    uint64_t x = ((const release_candidate *)a)->slot->last_used;
    uint64_t y = ((const release_candidate *)b)->slot->last_used;
    return x < y ? -1 : x > y;
}

static uint64_t tier_bytes(const zc_slot *slot, int tier)
{
    return tier == ZC_TIER_DEVICE ? slot->device_bytes : slot->host_bytes;
}

int zc_store_trim(zc_store *s, int tier, uint64_t want, uint64_t *released)
{
    if (s == NULL || released == NULL)
        return zc__fail(ZC_E_INVALID, "zc_store_trim: store or released is NULL");
    if (tier != ZC_TIER_HOST && tier != ZC_TIER_DEVICE)
        return zc__fail(ZC_E_INVALID, "zc_store_trim: tier %d is neither ZC_TIER_HOST nor "
                        "ZC_TIER_DEVICE", tier);
    *released = 0;
    zc__release_deferred(s);
    if (want == 0)
        return ZC_OK;
    uint64_t freed = tier == ZC_TIER_HOST ? zc__bufpool_trim(s->pool, want) : 0;
    zc_os_mutex_lock(&s->lock);
    release_candidate *cands = NULL;
    size_t n = 0;
    if (freed < want && s->stats.slots > 0 && s->spill_dir != NULL) {
        cands = malloc(sizeof *cands * s->stats.slots);
        if (cands == NULL) {
            zc_os_mutex_unlock(&s->lock);
            *released = freed;
            return zc__fail(ZC_E_NOMEM, "out of host memory choosing slots to release");
        }
        for (size_t b = 0; b < s->bucket_count; b++)
            for (zc_tag_entry *e = s->buckets[b]; e; e = e->next)
                for (uint32_t i = 0; i < e->count; i++) {
                    zc_slot *slot = e->ring[i];
                    if (atomic_load(&slot->readers) == 0 && tier_bytes(slot, tier) > 0 &&
                        zc__disk_has(e, slot->generation)) /* on disk: leaving loses nothing */
                        cands[n++] = (release_candidate){e, slot};
                }
        qsort(cands, n, sizeof *cands, by_last_use);
    }
    size_t chosen = 0;
    uint64_t from_slots = 0;
    while (freed + from_slots < want && chosen < n) {
        release_candidate *c = &cands[chosen++];
        for (uint32_t k = 0; k < c->entry->count; k++) {
            if (c->entry->ring[k] == c->slot) {
                from_slots += tier_bytes(c->slot, tier);
                c->slot = zc__ring_take(s, c->entry, k); /* the ring's reference is ours now */
                s->stats.evictions++;
                break;
            }
        }
    }
    zc_os_mutex_unlock(&s->lock);
    for (size_t i = 0; i < chosen; i++) /* deleters (torch's, for device slots) outside the lock */
        zc__slot_unref(cands[i].slot);
    free(cands);
    *released = freed + from_slots;
    return ZC_OK;
}
