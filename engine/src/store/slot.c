/*
 * slot.c — reference counting of stored slots.  A slot's bytes live until
 * the last of its references goes: the ring's, each reader's (views and
 * exported DLPack tensors), each pending spill job's.  This is what lets a
 * torch tensor that views a slot outlive the slot's eviction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

zc_slot *zc__slot_new(zc_core *core, zc_bundle *bundle, const char *tag)
{
    zc_slot *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    atomic_init(&s->refs, 1);
    atomic_init(&s->readers, 0);
    atomic_init(&s->retained, 0);
    for (uint32_t i = 0; i < ZC_MAX_TENSORS; i++) {
        atomic_init(&s->watch[i].live, 0);
        atomic_init(&s->watch[i].released, 0);
        atomic_init(&s->watch[i].checked, 0); /* the digest was made from the bytes themselves */
    }
    s->bundle = bundle;
    s->core = core;
    atomic_fetch_add(&core->refs, 1);
    snprintf(s->tag, sizeof s->tag, "%s", tag);
    s->created_unix_ms = zc_os_now_unix_ms();
    s->host_bytes = zc__bundle_bytes(bundle, ZC_TIER_HOST);
    s->device_bytes = zc__bundle_bytes(bundle, ZC_TIER_DEVICE);
    return s;
}

void zc__core_unref(zc_core *core)
{
    if (atomic_fetch_sub(&core->refs, 1) == 1)
        free(core);
}

void zc__slot_ref(zc_slot *s)
{
    atomic_fetch_add(&s->refs, 1);
}

void zc__slot_unref(zc_slot *s)
{
    if (s == NULL || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    if (atomic_load(&s->retained))
        atomic_fetch_sub(&s->core->retained_bytes, s->host_bytes + s->device_bytes);
    zc_bundle_free(s->bundle);
    zc__core_unref(s->core);
    free(s);
}

void zc__slot_retire(zc_slot *s)
{
    atomic_store(&s->retained, 1);
    atomic_fetch_add(&s->core->retained_bytes, s->host_bytes + s->device_bytes);
}

void zc__slot_reader_acquire(zc_slot *s)
{
    zc__slot_ref(s);
    atomic_fetch_add(&s->readers, 1);
}

void zc__slot_reader_release(zc_slot *s)
{
    atomic_fetch_sub(&s->readers, 1);
    zc__slot_unref(s);
}

static int holds_references(const zc_slot *slot)
{
    for (uint32_t i = 0; slot->bundle && i < slot->bundle->count; i++)
        if (slot->bundle->tensors[i].ref != NULL)
            return 1;
    return 0;
}

/* The writer's reference on a spilled slot.  If it is the last one and the slot holds tensors
 * by reference, freeing it would run their producers' deleters (torch's, which may need the
 * interpreter) on this thread: the release waits for a caller's thread instead.  refs == 1
 * means no one else can take a reference any more (the slot left its ring, no view holds it). */
void zc__spill_release_from_writer(zc_store *s, zc_slot *slot)
{
    if (atomic_load(&slot->refs) == 1 && holds_references(slot)) {
        zc_os_mutex_lock(&s->lock);
        slot->next_deferred = s->deferred;
        s->deferred = slot;
        zc_os_mutex_unlock(&s->lock);
        return;
    }
    zc__slot_unref(slot);
}
