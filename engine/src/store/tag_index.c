/*
 * tag_index.c — a store's index of its tags, the leaf every store file
 * reads: each tag's entry (found or made), its ring of slots (taking one
 * out, trimming to depth), its spill files (the generations on disk and
 * their paths), and the note of a spill file renamed aside.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

static size_t hash_tag(const char *tag)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)tag; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return (size_t)h;
}

zc_tag_entry *zc__tag_find(zc_store *s, const char *tag)
{
    for (zc_tag_entry *e = s->buckets[hash_tag(tag) & (s->bucket_count - 1)]; e; e = e->next)
        if (strcmp(e->tag, tag) == 0)
            return e;
    return NULL;
}

static int grow_buckets(zc_store *s)
{
    size_t n = s->bucket_count * 2;
    zc_tag_entry **b = calloc(n, sizeof *b);
    if (b == NULL)
        return -1;
    for (size_t i = 0; i < s->bucket_count; i++) {
        zc_tag_entry *e = s->buckets[i];
        while (e) {
            zc_tag_entry *next = e->next;
            size_t k = hash_tag(e->tag) & (n - 1);
            e->next = b[k];
            b[k] = e;
            e = next;
        }
    }
    free(s->buckets);
    s->buckets = b;
    s->bucket_count = n;
    return 0;
}

zc_tag_entry *zc__tag_get_or_create(zc_store *s, const char *tag)
{
    zc_tag_entry *e = zc__tag_find(s, tag);
    if (e)
        return e;
    if (s->tag_count + 1 > s->bucket_count && grow_buckets(s) != 0)
        return NULL;
    e = calloc(1, sizeof *e);
    if (e == NULL)
        return NULL;
    e->depth = e->cap = s->config.default_depth;
    e->ring = calloc(e->cap, sizeof *e->ring);
    if (e->ring == NULL) {
        free(e);
        return NULL;
    }
    snprintf(e->tag, sizeof e->tag, "%s", tag);
    size_t k = hash_tag(tag) & (s->bucket_count - 1);
    e->next = s->buckets[k];
    s->buckets[k] = e;
    s->tag_count++;
    return e;
}

/* Remove ring[index] from e, keeping order.  Returns the slot (the ring's
 * reference now belongs to the caller). */
uint32_t zc__ring_trim(zc_store *s, zc_tag_entry *e, zc_slot **out, uint32_t cap)
{
    uint32_t n = 0, i = 0;
    while (e->count > e->depth && n < cap && i + 1 < e->count) { /* never the newest */
        if (zc__slot_durable(e->ring[i]))
            out[n++] = zc__ring_take(s, e, i);
        else
            i++;
    }
    return n;
}

zc_slot *zc__ring_take(zc_store *s, zc_tag_entry *e, uint32_t index)
{
    zc_slot *slot = e->ring[index];
    memmove(&e->ring[index], &e->ring[index + 1], sizeof *e->ring * (e->count - index - 1));
    e->count--;
    s->stats.slots--;
    s->stats.host_bytes -= slot->host_bytes;
    s->stats.device_bytes -= slot->device_bytes;
    zc__slot_retire(slot);
    return slot;
}

int zc__spill_path(const zc_store *s, const char *tag, uint64_t generation, char *out, size_t cap)
{
    return zc__spill_path_in(s->spill_dir, tag, generation, out, cap);
}

int zc__disk_add(zc_tag_entry *e, uint64_t generation, int mine)
{
    for (uint32_t i = 0; i < e->disk_count; i++) {
        if (e->disk[i].generation == generation) {
            e->disk[i].mine |= mine;
            return 0;
        }
    }
    if (e->disk_count == e->disk_cap) {
        uint32_t cap = e->disk_cap ? e->disk_cap * 2 : 4;
        zc_disk_file *d = realloc(e->disk, sizeof *d * cap);
        if (d == NULL)
            return -1;
        e->disk = d;
        e->disk_cap = cap;
    }
    uint32_t i = e->disk_count;
    while (i > 0 && e->disk[i - 1].generation > generation) {
        e->disk[i] = e->disk[i - 1];
        i--;
    }
    e->disk[i] = (zc_disk_file){.generation = generation, .mine = mine};
    e->disk_count++;
    if (generation > e->last_generation)
        e->last_generation = generation;
    return 0;
}

void zc__disk_remove_at(zc_tag_entry *e, uint32_t index)
{
    memmove(&e->disk[index], &e->disk[index + 1], sizeof *e->disk * (e->disk_count - index - 1));
    e->disk_count--;
}

void zc__disk_remove(zc_tag_entry *e, uint64_t generation)
{
    for (uint32_t i = 0; i < e->disk_count; i++) {
        if (e->disk[i].generation == generation) {
            zc__disk_remove_at(e, i);
            return;
        }
    }
}

int zc__disk_has(const zc_tag_entry *e, uint64_t generation)
{
    for (uint32_t i = 0; i < e->disk_count; i++)
        if (e->disk[i].generation == generation)
            return 1;
    return 0;
}

void zc__spill_note_rejected(zc_store *s, const char *fmt, ...)
{
    char note[ZC__NOTE_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, sizeof note, fmt, ap);
    va_end(ap);
    zc_os_mutex_lock(&s->lock);
    s->stats.files_rejected++;
    memcpy(s->reject_note, note, sizeof note);
    zc_os_mutex_unlock(&s->lock);
}

zc_slot *zc__ring_find(zc_tag_entry *e, uint64_t generation)
{
    if (e->count == 0)
        return NULL;
    if (generation == 0)
        return e->ring[e->count - 1];
    for (uint32_t i = 0; i < e->count; i++)
        if (e->ring[i]->generation == generation)
            return e->ring[i];
    return NULL;
}

zc_slot *zc__store_slot_ref(zc_store *s, const char *tag, uint64_t generation)
{
    zc_os_mutex_lock(&s->lock);
    zc_tag_entry *e = generation != 0 ? zc__tag_find(s, tag) : NULL;
    zc_slot *slot = e ? zc__ring_find(e, generation) : NULL;
    if (slot != NULL)
        zc__slot_ref(slot);
    zc_os_mutex_unlock(&s->lock);
    return slot;
}

zc_file *zc__spill_open_shot(const zc_store *s, const char *tag, uint64_t generation)
{
    char path[4096];
    zc_file *f = NULL;
    if (s->spill_dir == NULL || zc__spill_path(s, tag, generation, path, sizeof path) != ZC_OK ||
        zc__spill_file_open(path, &f) != ZC_OK)
        return NULL;
    if (zc__spill_check_identity(f, path, tag, generation) != ZC_OK) {
        zc_file_close(f);
        return NULL;
    }
    return f;
}
