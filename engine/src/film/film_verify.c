/*
 * film_verify.c — checking a film from its files: every tensor of every
 * shot read and compared with its recorded digest, and every hop's tail:
 * the parent's last tail_frames latent frames (axis 2 of a 5-D video
 * latent, axis 0 of a 4-D image latent), digested with the algorithm the
 * recorded tail digest names, must equal it; so must the audio span
 * (audio_axis, audio_start, audio_count of "latent_tensor_1") its audio
 * tail digest.  Each parent is read once, and its children's tails are
 * digested from those bytes through the engine's strided walk.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "film.h"
#include "format/spill_names.h"

#define AUDIO_TENSOR "latent_tensor_1"

typedef struct {
    int present;
    int dtype;
    int32_t ndim;
    int64_t shape[ZC_MAX_RANK];
    uint8_t *bytes;
} held_tensor;

static void stream_sink(void *ctx, const uint8_t *bytes, size_t n)
{
    zc__digest_stream_update(ctx, bytes, n);
}

/* The digest of t's slice [start, start + count) along axis, in canonical
 * order, with algo; -1 when the slice lies outside the tensor. */
static int slice_digest(const held_tensor *t, int axis, uint64_t start, uint64_t count, int algo,
                        uint64_t *out)
{
    if (axis < 0 || axis >= t->ndim || start > (uint64_t)t->shape[axis] ||
        count > (uint64_t)t->shape[axis] - start)
        return -1;
    size_t esize = zc_dtype_size(t->dtype);
    int64_t shape[ZC_MAX_RANK], strides[ZC_MAX_RANK];
    int64_t step = (int64_t)esize;
    uint64_t nbytes = esize;
    for (int32_t i = t->ndim; i-- > 0;) {
        strides[i] = step;
        step *= t->shape[i]; /* bounded: the file's reader checked the tensor's size */
        shape[i] = i == axis ? (int64_t)count : t->shape[i];
        nbytes *= (uint64_t)shape[i];
    }
    zc_digest_stream h;
    zc__digest_stream_init(&h, algo);
    if (nbytes > 0) {
        zc_strided st;
        zc__strided_init(&st, t->ndim, shape, strides, esize);
        const uint8_t *base = t->bytes + (uint64_t)strides[axis] * start;
        zc_walk_sink sink = {stream_sink, NULL, &h};
        zc__strided_walk(&st, base, NULL, &sink);
    }
    *out = zc__digest_stream_final(&h);
    return 0;
}

/* Check one recorded tail digest against the parent's bytes.  @return 1 ok,
 * 0 mismatch or unusable (problem set), -1 nothing to check (problem set). */
static int check_tail(zc_film_shot *c, const zc_film_shot *p, const held_tensor *t,
                      const char *recorded, const char *what, int axis, uint64_t start,
                      uint64_t count)
{
    unsigned long long pg = (unsigned long long)p->generation;
    int algo = 0;
    uint64_t want = 0, got = 0;
    if (recorded == NULL || recorded[0] == '\0') {
        zc__film_problem(c, "the hop from generation %llu: the lineage records no %s tail digest, so the "
                         "hop cannot be checked; render the shot again through a Handoff",
                         pg, what);
        return -1;
    }
    if (zc_digest_parse(recorded, &algo, &want) != ZC_OK) {
        zc__film_problem(c, "the hop from generation %llu: the %s tail digest \"%.40s\" is not a digest "
                         "(\"xxh3:\" or \"xxh64:\" and 16 hex digits); its lineage is "
                         "damaged", pg, what, recorded);
        return 0;
    }
    if (!t->present) {
        zc__film_problem(c, "the hop from generation %llu: the parent's %s tensor could not be read, so "
                         "the hop cannot be checked; see the parent's file problem", pg,
                         what);
        return -1;
    }
    if (slice_digest(t, axis, start, count, algo, &got) != 0) {
        zc__film_problem(c, "the hop from generation %llu: the %s tail (%llu steps from %llu along axis %d) "
                         "does not fit the parent's tensor; the lineage does not describe this "
                         "parent", pg, what, (unsigned long long)count,
                         (unsigned long long)start, axis);
        return 0;
    }
    if (got != want) {
        char g[ZC_DIGEST_TEXT_SIZE];
        zc__digest_text(algo, got, g);
        if (strcmp(what, "video") == 0)
            zc__film_problem(c, "the hop from generation %llu: tail digest %s does not match the parent's "
                             "last %llu frame%s %s; the parent changed since this shot was "
                             "made, or this shot continues another take: render it again",
                             pg, recorded, (unsigned long long)count, count == 1 ? "" : "s",
                             g);
        else
            zc__film_problem(c, "the hop from generation %llu: audio tail digest %s does not match the "
                             "parent's audio span %s; render the shot again", pg, recorded,
                             g);
        return 0;
    }
    return 1;
}

static void check_hop(zc_film_shot *c, const zc_film_shot *p, const held_tensor *video,
                      const held_tensor *audio)
{
    int axis = video->ndim == 5 ? 2 : video->ndim == 4 ? 0 : -1;
    if (video->present && axis < 0) {
        c->hop = FILM_HOP_BAD;
        zc__film_problem(c, "the hop from generation %llu: the parent's latent is %d-D, neither a video "
                         "[B,C,T,H,W] nor an image [B,C,H,W] latent",
                         (unsigned long long)p->generation, (int)video->ndim);
        return;
    }
    uint64_t frames = axis >= 0 ? (uint64_t)video->shape[axis] : 0;
    uint64_t start = c->tail_frames <= frames ? frames - c->tail_frames : frames + 1;
    int v = check_tail(c, p, video, c->tail_digest, "video", axis, start, c->tail_frames);
    int a = 1;
    if (c->audio_tail_digest != NULL && c->audio_tail_digest[0] != '\0' && c->has_audio_span)
        a = check_tail(c, p, audio, c->audio_tail_digest, "audio", (int)c->audio_axis,
                       c->audio_start, c->audio_count);
    c->hop = v == 0 || a == 0 ? FILM_HOP_BAD : v < 0 || a < 0 ? FILM_HOP_UNCHECKED : FILM_HOP_OK;
}

/* Read every tensor of shot s (checking its digest); keep the video and
 * audio latents for the hops of its children. */
static int check_file(zc_film *film, zc_film_shot *s, held_tensor *video, held_tensor *audio)
{
    char path[4096];
    zc_file *f = NULL;
    int rc = zc__spill_path_in(film->dir, film->tag, s->generation, path, sizeof path);
    if (rc == ZC_OK)
        rc = zc__spill_file_open(path, &f);
    if (rc == ZC_OK)
        rc = zc__spill_check_identity(f, path, film->tag, s->generation);
    for (uint32_t i = 0; rc == ZC_OK && i < zc_file_count(f); i++) {
        zc_file_tensor ft;
        if ((rc = zc_file_tensor_at(f, i, &ft)) != ZC_OK)
            break;
        if (ft.nbytes > SIZE_MAX) {
            rc = zc__fail(ZC_E_LIMIT, "%s: tensor \"%s\" has %llu bytes, more than this host "
                          "addresses", path, ft.name, (unsigned long long)ft.nbytes);
            break;
        }
        uint8_t *buf = malloc(ft.nbytes ? (size_t)ft.nbytes : 1);
        if (buf == NULL) {
            rc = zc__fail(ZC_E_NOMEM, "out of host memory reading %s", path);
            break;
        }
        if ((rc = zc_file_read(f, i, buf, (size_t)ft.nbytes, NULL)) != ZC_OK) {
            free(buf);
            break;
        }
        held_tensor *keep = strcmp(ft.name, ZC_FILE_LATENT_TENSOR) == 0 ? video
                            : strcmp(ft.name, AUDIO_TENSOR) == 0   ? audio
                                                                    : NULL;
        if (keep == NULL) {
            free(buf);
            continue;
        }
        keep->present = 1;
        keep->dtype = ft.dtype;
        keep->ndim = ft.ndim;
        memcpy(keep->shape, ft.shape, sizeof keep->shape);
        keep->bytes = buf;
    }
    zc_file_close(f);
    if (rc == ZC_OK) {
        s->file = FILM_FILE_OK;
        return ZC_OK;
    }
    free(video->bytes); /* nothing of a shot that failed is kept */
    free(audio->bytes);
    memset(video, 0, sizeof *video);
    memset(audio, 0, sizeof *audio);
    if (rc == ZC_E_NOMEM)
        return rc;
    s->file = FILM_FILE_BAD;
    zc__film_problem(s, "its file fails verification (%s); the shot's bytes are not what was "
                     "stored: delete the file or restore it from a copy", zc_last_error());
    return ZC_OK;
}

int zc__film_verify(zc_film *film)
{
    for (size_t i = 0; i < film->count; i++) {
        zc_film_shot *p = &film->shots[i];
        held_tensor video, audio;
        memset(&video, 0, sizeof video);
        memset(&audio, 0, sizeof audio);
        /* a file whose record changed stays bad; its tensors are not taken for its children's
         * hops (its dtype or shape may be what changed) */
        int rc = p->opened && p->record != FILM_RECORD_BAD ? check_file(film, p, &video, &audio)
                                                           : ZC_OK;
        if (rc != ZC_OK)
            return rc;
        for (size_t j = i + 1; j < film->count; j++) {
            zc_film_shot *c = &film->shots[j];
            if (c->parent == (long)i && c->state != FILM_BROKEN && c->lineage_ok)
                check_hop(c, p, &video, &audio);
        }
        free(video.bytes);
        free(audio.bytes);
    }
    return ZC_OK;
}
