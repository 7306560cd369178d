/*
 * film_drift.c — the film's colour and contrast drift, from the tail
 * summaries the engine keeps in each spill file (seam.c): per channel, the
 * mean and standard deviation of every sample of a shot's last frames (the
 * seam's grid), each shot's relative to the first shot of the chosen line:
 *   mean_delta = (tail mean - first tail mean) / first tail std
 *   std_ratio  = tail std / first tail std
 * The first shot has mean_delta 0 and std_ratio 1 in every channel.  A
 * start image is left out (it is the film's reference still, not a shot).
 * Latent statistics, not perceptual ones (docs/film.md).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "film.h"

void zc__film_drift_free(zc_film_drift *d)
{
    for (size_t i = 0; d->shots && i < d->count; i++)
        free(d->shots[i].mean_delta); /* std_ratio shares its block */
    free(d->shots);
    memset(d, 0, sizeof *d);
}

int zc__film_drift(const zc_film *film, zc_film_drift *d)
{
    memset(d, 0, sizeof *d);
    d->shots = calloc(film->line_count ? film->line_count : 1, sizeof *d->shots);
    if (d->shots == NULL)
        return ZC_E_NOMEM;
    const zc_film_shot *ref = NULL;
    for (size_t k = 0; k < film->line_count; k++) {
        long i = zc__film_find(film, film->line[k]);
        if (i < 0 || film->shots[i].start_image)
            continue;
        const zc_film_shot *s = &film->shots[i];
        if (s->tail_mean == NULL || (ref != NULL && s->tail_channels != ref->tail_channels)) {
            zc__film_drift_free(d); /* one shot without the data: no drift for the line */
            return ZC_OK;
        }
        if (ref == NULL)
            ref = s;
        uint32_t C = s->tail_channels;
        zc_film_drift_shot *out = &d->shots[d->count];
        out->shot = i;
        out->mean_delta = malloc(2 * (size_t)C * sizeof(double));
        if (out->mean_delta == NULL) {
            zc__film_drift_free(d);
            return ZC_E_NOMEM;
        }
        d->count++;
        out->std_ratio = out->mean_delta + C;
        for (uint32_t c = 0; c < C; c++) {
            double scale = ref->tail_std[c];
            /* a channel that does not vary in the first shot: no scale to measure against */
            out->mean_delta[c] = scale > 0 ? (s->tail_mean[c] - ref->tail_mean[c]) / scale : 0.0;
            out->std_ratio[c] = scale > 0 ? s->tail_std[c] / scale : 1.0;
        }
    }
    d->channels = ref ? ref->tail_channels : 0;
    return ZC_OK;
}

static void num_list(zc_jsonbuf *jb, const double *v, uint32_t n)
{
    zc__jb_raw(jb, "[");
    for (uint32_t i = 0; i < n; i++)
        zc__jb_printf(jb, "%s%.6g", i ? "," : "", isfinite(v[i]) ? v[i] : 0.0);
    zc__jb_raw(jb, "]");
}

void zc__film_drift_json(zc_jsonbuf *jb, const zc_film *film)
{
    zc_film_drift d;
    if (zc__film_drift(film, &d) != ZC_OK) {
        jb->failed = 1;
        return;
    }
    if (d.count == 0) {
        zc__jb_raw(jb, "null");
        zc__film_drift_free(&d);
        return;
    }
    zc__jb_printf(jb, "{\"stream\":\"video\",\"channels\":%u,\"reference_generation\":%llu,\"shots\":[",
                  d.channels, (unsigned long long)film->shots[d.shots[0].shot].generation);
    for (size_t k = 0; k < d.count; k++) {
        zc__jb_printf(jb, "%s{\"index\":%zu,\"generation\":%llu,\"mean_delta\":", k ? "," : "", k,
                      (unsigned long long)film->shots[d.shots[k].shot].generation);
        num_list(jb, d.shots[k].mean_delta, d.channels);
        zc__jb_raw(jb, ",\"std_ratio\":");
        num_list(jb, d.shots[k].std_ratio, d.channels);
        zc__jb_raw(jb, "}");
    }
    zc__jb_raw(jb, "]}");
    zc__film_drift_free(&d);
}
