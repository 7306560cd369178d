/*
 * concurrency_main.c — many threads put, get, export, drop, describe and
 * resize concurrently on overlapping tags, with a spill directory and a host
 * budget that forces evictions.  Built with ThreadSanitizer: any data race
 * is reported and fails the run.  Also checks invariants at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "platform/platform.h"

#define THREADS 6
#define ROUNDS 300
#define TAGS 5

static zc_store *store;

static void worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;
    char tag[16];
    for (int i = 0; i < ROUNDS; i++) {
        seed = seed * 1103515245u + 12345u;
        snprintf(tag, sizeof tag, "tag%u", (seed >> 8) % TAGS);
        unsigned op = (seed >> 16) % 10;
        if (op < 4) {
            zc_bundle *b = fixture_bundle(256 + (seed >> 20) % 256, (float)i);
            uint32_t flags = (op == 0 ? ZC_PUT_SPILL : 0) | ZC_PUT_MAY_EVICT_NEWEST;
            if (zc_store_put(store, tag, b, flags, NULL) != ZC_OK)
                zc_bundle_free(b); /* budget refusals are legitimate here */
        } else if (op < 8) {
            zc_view *v;
            if (zc_store_get(store, tag, 0, &v) == ZC_OK) {
                zc_tensor_info ti;
                if (zc_view_tensor(v, 0, &ti) == ZC_OK) {
                    volatile float sum = 0;
                    for (int64_t k = 0; k < ti.shape[0]; k++)
                        sum += ((const float *)ti.data)[k];
                    (void)sum;
                }
                void *m;
                if (op == 7 && zc_view_export_dlpack(v, 0, 1, &m) == ZC_OK) {
                    zc_view_release(v);
                    v = NULL;
                    ((zc_dl_managed_versioned *)m)->deleter(m);
                }
                zc_view_release(v);
            }
        } else if (op == 8) {
            if ((seed >> 24) % 4 == 0)
                zc_store_drop(store, tag, (seed >> 26) % 2 ? ZC_DROP_DISK : 0);
            else
                zc_store_set_depth(store, tag, 1 + (seed >> 24) % 4);
        } else {
            size_t need = 0;
            zc_store_describe_json(store, NULL, 0, &need);
            char *buf = malloc(need + 4096);
            zc_store_describe_json(store, buf, need + 4096, NULL);
            free(buf);
            zc_store_stats st;
            zc_store_stats_get(store, &st);
        }
    }
}

TEST(concurrent_put_get_drop_describe_spill)
{
    TEST_FOLDER(dir, "concurrency");
    zc_store_config c;
    zc_store_config_init(&c);
    c.spill_dir = dir;
    c.host_budget_bytes = 16 * 1024;
    REQUIRE_OK(zc_store_open(&c, &store));
    zc_os_thread threads[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        REQUIRE(zc_os_thread_start(&threads[i], worker, (void *)(i + 1)) == 0);
    for (int i = 0; i < THREADS; i++)
        zc_os_thread_join(&threads[i]);
    CHECK_OK(zc_store_flush(store));
    zc_store_stats st;
    REQUIRE_OK(zc_store_stats_get(store, &st));
    CHECK(st.host_bytes <= c.host_budget_bytes);
    CHECK(st.retained_bytes == 0); /* every view was released */
    CHECK(st.pending_spills == 0);
    zc_store_close(store);
    /* Everything spilled restores and verifies. */
    REQUIRE_OK(zc_store_open(&c, &store));
    char tag[16];
    for (int t = 0; t < TAGS; t++) {
        zc_view *v;
        snprintf(tag, sizeof tag, "tag%d", t);
        int rc = zc_store_get(store, tag, 0, &v);
        CHECK(rc == ZC_OK || rc == ZC_E_NOT_FOUND);
        if (rc == ZC_OK) {
            CHECK_OK(zc_view_verify(v));
            zc_view_release(v);
        }
    }
    REQUIRE_OK(zc_store_stats_get(store, &st));
    CHECK(st.files_rejected == 0);
    zc_store_close(store);
}

/* ---- two stores on one spill folder, threads of both on one tag ---- */

#define SHARED_PUTS 60

typedef struct {
    zc_store *store;
    uint64_t gens[SHARED_PUTS];
} shared_worker_state;

static void shared_worker(void *arg)
{
    shared_worker_state *w = arg;
    for (int i = 0; i < SHARED_PUTS; i++) {
        w->gens[i] = 0;
        zc_bundle *b = fixture_bundle(64, (float)i);
        if (zc_store_put(w->store, "both", b, i % 3 ? ZC_PUT_SPILL : 0, &w->gens[i]) != ZC_OK)
            zc_bundle_free(b);
        zc_view *v = NULL;
        if (zc_store_get(w->store, "both", 0, &v) == ZC_OK) /* also sees the other store's */
            zc_view_release(v);
        uint64_t list[16];
        size_t n = 0;
        zc_store_generations(w->store, "both", list, 16, &n);
    }
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

TEST(two_stores_on_one_folder_from_many_threads)
{
    TEST_FOLDER(dir, "concurrency-shared");
    zc_store_config c;
    zc_store_config_init(&c);
    c.spill_dir = dir;
    zc_store *a = NULL, *b = NULL;
    REQUIRE_OK(zc_store_open(&c, &a));
    REQUIRE_OK(zc_store_open(&c, &b));
    static shared_worker_state w[4];
    zc_os_thread threads[4];
    for (int i = 0; i < 4; i++) {
        w[i].store = i % 2 ? b : a;
        REQUIRE(zc_os_thread_start(&threads[i], shared_worker, &w[i]) == 0);
    }
    for (int i = 0; i < 4; i++)
        zc_os_thread_join(&threads[i]);
    CHECK_OK(zc_store_flush(a));
    CHECK_OK(zc_store_flush(b));
    static uint64_t all[4 * SHARED_PUTS];
    for (int i = 0; i < 4; i++)
        memcpy(&all[i * SHARED_PUTS], w[i].gens, sizeof w[i].gens);
    qsort(all, 4 * SHARED_PUTS, sizeof all[0], by_value);
    for (int i = 0; i < 4 * SHARED_PUTS; i++)
        CHECK(all[i] == (uint64_t)i + 1); /* every generation once, none skipped */
    zc_store_close(a);
    zc_store_close(b);
}

/* Exports made and deleted on some threads while others verify the same
 * slot: no false alarm, no race on the writer bookkeeping, and once every
 * export is gone one more verify hashes at most once and then skips. */
static zc_store *shared_store;
static atomic_int shared_failures; /* counted here, reported by the main thread */

static void export_verify_worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;
    for (int i = 0; i < ROUNDS; i++) {
        seed = seed * 1103515245u + 12345u;
        zc_view *v;
        if (zc_store_get(shared_store, "one", 0, &v) != ZC_OK) {
            atomic_fetch_add(&shared_failures, 1);
            return;
        }
        void *m = NULL;
        if ((seed >> 16) % 2 == 0 && zc_view_export_dlpack(v, 0, 1, &m) != ZC_OK)
            m = NULL;
        if (zc_view_verify(v) != ZC_OK) /* exports, but nobody writes */
            atomic_fetch_add(&shared_failures, 1);
        if (m != NULL)
            ((zc_dl_managed_versioned *)m)->deleter(m);
        zc_view_release(v);
    }
}

TEST(concurrent_exports_and_verifies_of_one_slot)
{
    zc_store_config c;
    zc_store_config_init(&c);
    REQUIRE_OK(zc_store_open(&c, &shared_store));
    zc_bundle *b = fixture_bundle(4096, 0.5f);
    REQUIRE(b != NULL);
    REQUIRE_OK(zc_store_put(shared_store, "one", b, 0, NULL));
    zc_os_thread threads[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        REQUIRE(zc_os_thread_start(&threads[i], export_verify_worker, (void *)(i + 1)) == 0);
    for (int i = 0; i < THREADS; i++)
        zc_os_thread_join(&threads[i]);
    CHECK(atomic_load(&shared_failures) == 0);
    zc_view *v;
    REQUIRE_OK(zc_store_get(shared_store, "one", 0, &v));
    zc_verify_report r;
    CHECK_OK(zc_view_verify_ex(v, 0, &r));
    CHECK_OK(zc_view_verify_ex(v, 0, &r));
    CHECK(r.hashed == 0 && r.unchanged == 1u);
    zc_view_release(v);
    zc_store_close(shared_store);
}
