/*
 * worker.c — the store's background worker thread and its job queue.  It
 * computes the digests that put deferred (so put costs a copy, not a copy
 * plus a hash) and writes spill files; zc_store_flush waits for both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

void zc__spill_write(zc_store *s, zc_slot *slot);

static void *worker_main(void *arg);

int zc__worker_start(zc_store *s)
{
    if (pthread_create(&s->writer, NULL, worker_main, s) != 0)
        return zc__fail(ZC_E_STATE, "cannot start the store's worker thread");
    s->writer_running = 1;
    return ZC_OK;
}

void zc__worker_stop(zc_store *s)
{
    if (!s->writer_running)
        return;
    pthread_mutex_lock(&s->lock);
    s->closing = 1;
    pthread_cond_broadcast(&s->work_ready);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->writer, NULL);
    s->writer_running = 0;
}

void zc__job_enqueue(zc_store *s, zc_slot *slot, zc_job_kind kind)
{
    zc_spill_job *job = malloc(sizeof *job);
    if (job == NULL) {
        if (kind == ZC_JOB_DIGEST)
            return; /* the first reader computes the digest instead */
        s->stats.spill_errors++;
        if (s->flush_status == ZC_OK) {
            s->flush_status = ZC_E_NOMEM;
            snprintf(s->flush_message, sizeof s->flush_message,
                     "out of host memory queueing the spill of tag \"%s\"", slot->tag);
        }
        return;
    }
    zc__slot_ref(slot);
    job->slot = slot;
    job->kind = kind;
    job->next = NULL;
    if (s->queue_tail)
        s->queue_tail->next = job;
    else
        s->queue_head = job;
    s->queue_tail = job;
    if (kind == ZC_JOB_SPILL)
        s->stats.pending_spills++;
    pthread_cond_signal(&s->work_ready);
}

static void *worker_main(void *arg)
{
    zc_store *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->queue_head == NULL && !s->closing)
            pthread_cond_wait(&s->work_ready, &s->lock);
        if (s->queue_head == NULL)
            break;
        zc_spill_job *job = s->queue_head;
        s->queue_head = job->next;
        if (s->queue_head == NULL)
            s->queue_tail = NULL;
        s->writer_busy = 1;
        pthread_mutex_unlock(&s->lock);

        if (job->kind == ZC_JOB_SPILL)
            zc__spill_write(s, job->slot);
        else
            zc__slot_ensure_digests(job->slot);
        zc__slot_unref(job->slot);
        free(job);

        pthread_mutex_lock(&s->lock);
        s->writer_busy = 0;
        if (s->queue_head == NULL)
            pthread_cond_broadcast(&s->work_done);
    }
    pthread_cond_broadcast(&s->work_done);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int zc_store_flush(zc_store *s)
{
    if (s == NULL)
        return zc__fail(ZC_E_INVALID, "zc_store_flush: store is NULL");
    pthread_mutex_lock(&s->lock);
    while (s->writer_running && (s->queue_head != NULL || s->writer_busy))
        pthread_cond_wait(&s->work_done, &s->lock);
    int rc = s->flush_status;
    char msg[sizeof s->flush_message];
    memcpy(msg, s->flush_message, sizeof msg);
    s->flush_status = ZC_OK;
    s->flush_message[0] = '\0';
    pthread_mutex_unlock(&s->lock);
    if (rc != ZC_OK)
        return zc__fail(rc, "%s", msg);
    return ZC_OK;
}
