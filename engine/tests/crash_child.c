/*
 * crash_child.c — the victim of the crash test (tests/python/test_crash.py).
 * Spills generation after generation of a bundle whose every byte encodes
 * its generation, flushing each, until it is killed with SIGKILL.
 * Usage: crash_child SPILL_DIR MEGABYTES
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "zc.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: crash_child SPILL_DIR MEGABYTES\n");
        return 2;
    }
    int64_t n = (int64_t)atoi(argv[2]) * 1024 * 1024 / 4;
    float *data = malloc(sizeof(float) * (size_t)n);
    zc_store_config c;
    zc_store_config_init(&c);
    c.spill_dir = argv[1];
    c.default_depth = 2;
    c.disk_keep = 2;
    zc_store *s;
    if (data == NULL || zc_store_open(&c, &s) != ZC_OK) {
        fprintf(stderr, "crash_child: %s\n", zc_last_error());
        return 1;
    }
    for (;;) {
        /* Every byte of a generation encodes the fill value, recorded in
         * the metadata too, so a torn file cannot pass for a whole one. */
        static float value = 0;
        value += 1.0f;
        for (int64_t i = 0; i < n; i++)
            data[i] = value;
        int64_t shape[1] = {n};
        fixture_tensor ft;
        fixture_f32(&ft, data, 1, shape);
        zc_bundle *b;
        char fill[32];
        snprintf(fill, sizeof fill, "%.1f", (double)value);
        if (zc_bundle_create(&b) != ZC_OK || zc_bundle_add_copy(b, "latent_tensor", &ft.dl) != ZC_OK ||
            zc_bundle_set_meta(b, "fill", fill) != ZC_OK ||
            zc_store_put(s, "crash", b, ZC_PUT_SPILL, NULL) != ZC_OK ||
            zc_store_flush(s) != ZC_OK) {
            fprintf(stderr, "crash_child: %s\n", zc_last_error());
            return 1;
        }
        printf("spilled %s\n", fill);
        fflush(stdout);
    }
}
