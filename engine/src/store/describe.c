/* describe.c — the store as JSON, for the Python shell, the REST API and
 * the CLI.  Built under the store lock from in-memory state only. */
#include <stdio.h>
#include <string.h>

#include "core/jsonbuf.h"
#include "store_internal.h"

static const char *tier_name(int tier)
{
    return tier == ZC_TIER_DEVICE ? "device" : tier == ZC_TIER_DISK ? "disk" : "host";
}

static void describe_tensor(zc_jsonbuf *jb, const zc_tensor *t)
{
    zc__jb_raw(jb, "{\"name\":");
    zc__jb_string(jb, t->name);
    zc__jb_printf(jb, ",\"dtype\":\"%s\",\"shape\":[", zc_dtype_name(t->dtype));
    for (int32_t i = 0; i < t->ndim; i++)
        zc__jb_printf(jb, "%s%lld", i ? "," : "", (long long)t->shape[i]);
    zc__jb_printf(jb, "],\"nbytes\":%llu,\"tier\":\"%s\",\"device_type\":%d,\"device_id\":%d,"
                  "\"host_copy\":%s,\"digest\":",
                  (unsigned long long)t->nbytes, tier_name(t->tier), (int)t->device_type,
                  (int)t->device_id, t->host ? "true" : "false");
    if (t->has_digest) {
        char d[ZC_DIGEST_TEXT_SIZE];
        zc__digest_text(t->digest_algo, t->digest, d);
        zc__jb_string(jb, d);
    } else {
        zc__jb_raw(jb, "null");
    }
    zc__jb_raw(jb, "}");
}

/* "spill": where the slot's spill stands (lock held). */
static const char *spill_state_name(const zc_slot *s)
{
    switch (s->spill_state) {
    case ZC__SPILL_PENDING: return "pending";
    case ZC__SPILL_WRITTEN: return "written";
    case ZC__SPILL_FAILED: return "failed";
    default: return s->from_disk ? "written" : "off";
    }
}

static void describe_slot(zc_jsonbuf *jb, const zc_slot *s)
{
    const zc_bundle *b = s->bundle;
    zc__jb_printf(jb, "{\"generation\":%llu,\"created_unix_ms\":%llu,\"readers\":%lld,"
                  "\"restored_from_disk\":%s,\"spill\":\"%s\",\"host_bytes\":%llu,"
                  "\"device_bytes\":%llu,\"tensors\":[",
                  (unsigned long long)s->generation, (unsigned long long)s->created_unix_ms,
                  (long long)atomic_load(&s->readers), s->from_disk ? "true" : "false",
                  spill_state_name(s), (unsigned long long)s->host_bytes,
                  (unsigned long long)s->device_bytes);
    for (uint32_t i = 0; i < b->count; i++) {
        if (i)
            zc__jb_raw(jb, ",");
        describe_tensor(jb, &b->tensors[i]);
    }
    zc__jb_raw(jb, "],\"meta\":{");
    for (uint32_t i = 0; i < b->meta_count; i++) {
        if (i)
            zc__jb_raw(jb, ",");
        zc__jb_string(jb, b->meta[i].key);
        zc__jb_raw(jb, ":");
        zc__jb_string(jb, b->meta[i].value);
    }
    zc__jb_raw(jb, "}");
    if (s->spill_state == ZC__SPILL_FAILED && s->spill_problem[0]) {
        zc__jb_raw(jb, ",\"spill_problem\":"); /* this shot's own cause */
        zc__jb_string(jb, s->spill_problem);
    }
    zc__jb_raw(jb, "}");
}

static void describe_tag(zc_jsonbuf *jb, const zc_tag_entry *e)
{
    zc__jb_raw(jb, "{\"tag\":");
    zc__jb_string(jb, e->tag);
    zc__jb_printf(jb, ",\"depth\":%u,\"last_generation\":%llu,\"slots\":[", e->depth,
                  (unsigned long long)e->last_generation);
    for (uint32_t i = e->count; i > 0; i--) { /* newest first */
        if (i != e->count)
            zc__jb_raw(jb, ",");
        describe_slot(jb, e->ring[i - 1]);
    }
    zc__jb_raw(jb, "],\"disk_generations\":[");
    for (uint32_t i = 0; i < e->disk_count; i++)
        zc__jb_printf(jb, "%s%llu", i ? "," : "", (unsigned long long)e->disk[i].generation);
    zc__jb_raw(jb, "]}");
}

int zc_store_describe_json(zc_store *s, char *buf, size_t cap, size_t *needed)
{
    if (s == NULL)
        return zc__fail(ZC_E_INVALID, "zc_store_describe_json: store is NULL");
    zc_store_stats st;
    zc_store_stats_get(s, &st);
    zc_jsonbuf jb;
    zc__jb_init(&jb);
    zc_os_mutex_lock(&s->lock);
    zc__jb_raw(&jb, "{\"spill_dir\":");
    if (s->spill_dir)
        zc__jb_string(&jb, s->spill_dir);
    else
        zc__jb_raw(&jb, "null");
    zc__jb_printf(&jb, ",\"spill_locks\":%s", s->spill_dir ? (s->shared_locks ? "true" : "false")
                                                               : "null");
    zc__jb_raw(&jb, ",\"spill_problem\":");
    if (st.memory_only && s->spill_problem[0])
        zc__jb_string(&jb, s->spill_problem);
    else
        zc__jb_raw(&jb, "null");
    zc__jb_raw(&jb, ",\"last_rejected\":");
    if (s->reject_note[0])
        zc__jb_string(&jb, s->reject_note);
    else
        zc__jb_raw(&jb, "null");
    zc__jb_printf(&jb, ",\"host_budget_bytes\":%llu,\"device_budget_bytes\":%llu,\"tags\":[",
                  (unsigned long long)s->config.host_budget_bytes,
                  (unsigned long long)s->config.device_budget_bytes);
    int first = 1;
    for (size_t i = 0; i < s->bucket_count; i++) {
        for (const zc_tag_entry *e = s->buckets[i]; e; e = e->next) {
            if (e->count == 0 && e->disk_count == 0)
                continue;
            if (!first)
                zc__jb_raw(&jb, ",");
            first = 0;
            describe_tag(&jb, e);
        }
    }
    zc_os_mutex_unlock(&s->lock);
    zc__jb_printf(&jb, "],\"stats\":{\"tags\":%llu,\"slots\":%llu,\"host_bytes\":%llu,"
                  "\"device_bytes\":%llu,\"retained_bytes\":%llu,\"evictions\":%llu,"
                  "\"spills_written\":%llu,\"spill_errors\":%llu,\"restores\":%llu,"
                  "\"files_rejected\":%llu,\"pending_spills\":%llu,\"pooled_bytes\":%llu,"
                  "\"memory_only\":%llu,\"spill_folder_recreated\":%llu}}",
                  (unsigned long long)st.tags, (unsigned long long)st.slots,
                  (unsigned long long)st.host_bytes, (unsigned long long)st.device_bytes,
                  (unsigned long long)st.retained_bytes, (unsigned long long)st.evictions,
                  (unsigned long long)st.spills_written, (unsigned long long)st.spill_errors,
                  (unsigned long long)st.restores, (unsigned long long)st.files_rejected,
                  (unsigned long long)st.pending_spills, (unsigned long long)st.pooled_bytes,
                  (unsigned long long)st.memory_only, (unsigned long long)st.spill_folder_recreated);
    return zc__jb_deliver(&jb, buf, cap, needed, "the store");
}

int zc_store_describe_tag_json(zc_store *s, const char *tag, char *buf, size_t cap, size_t *needed)
{
    int rc;
    if (s == NULL)
        return zc__fail(ZC_E_INVALID, "zc_store_describe_tag_json: store is NULL");
    if ((rc = zc_tag_check(tag)) != ZC_OK)
        return rc;
    (void)zc__spill_refresh(s, tag); /* as in zc_store_get: unreadable, what the store knows */
    zc_jsonbuf jb;
    zc__jb_init(&jb);
    zc_os_mutex_lock(&s->lock);
    const zc_tag_entry *e = zc__tag_find(s, tag);
    if (e != NULL && (e->count || e->disk_count))
        describe_tag(&jb, e);
    else
        zc__jb_raw(&jb, "null");
    zc_os_mutex_unlock(&s->lock);
    return zc__jb_deliver(&jb, buf, cap, needed, "the store");
}
