/*
 * shared_child.c — one of several processes sharing a spill folder, for
 * shared_main.c.
 *   shared_child write SPILL_DIR TAG WRITER COUNT FLOATS LOG
 *     puts COUNT shots (0: until killed) of FLOATS floats under TAG, each
 *     spilled and flushed, and logs "<generation> <writer> <index> <digest>"
 *     per shot to LOG as soon as the put returns; creates LOG.done when it
 *     ends (an error included: its exit status says which).
 *   shared_child hold SPILL_DIR LOG
 *     opens a store, leaves a temporary file of its own in SPILL_DIR (as a
 *     spill in flight would), creates LOG and waits to be killed.
 * Every value of a shot says which writer made it and which of its shots it
 * is (shared_value), so a file can be checked without the log.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "core/internal.h"
#include "shared_value.h"

static char done_path[4200]; /* LOG.done, made at the end, whatever the outcome */

static int touch(const char *path)
{
    FILE *fp = fopen(path, "wb");
    if (fp == NULL)
        return -1;
    fclose(fp);
    return 0;
}

static int fail(const char *what)
{
    fprintf(stderr, "shared_child: %s: %s\n", what, zc_last_error());
    if (done_path[0])
        touch(done_path);
    return 1;
}

static zc_store *open_store(const char *dir)
{
    zc_store_config c;
    zc_store_config_init(&c);
    c.spill_dir = dir;
    c.default_depth = 2;
    c.disk_keep = SHARED_DISK_KEEP;
    zc_store *s = NULL;
    return zc_store_open(&c, &s) == ZC_OK ? s : NULL;
}

static int hold(const char *dir, const char *ready)
{
    zc_store *s = open_store(dir);
    if (s == NULL)
        return fail("open");
    char token[ZC_TOKEN_LEN + 1], path[4096];
    zc__process_token(token);
    snprintf(path, sizeof path, "%s/" ZC_TMP_PREFIX "%s-0-held@00000000000000000001.latent", dir,
             token);
    if (touch(path) != 0 || touch(ready) != 0) {
        fprintf(stderr, "shared_child: cannot create %s or %s\n", path, ready);
        return 1;
    }
    for (;;)
        zc_os_sleep_ms(1000);
}

static int write_shots(const char *dir, const char *tag, int writer, int count, int64_t floats,
                       const char *log_path)
{
    snprintf(done_path, sizeof done_path, "%s.done", log_path);
    float *data = malloc(sizeof(float) * (size_t)floats);
    FILE *log = fopen(log_path, "w");
    zc_store *s = open_store(dir);
    if (data == NULL || log == NULL || s == NULL)
        return fail("start");
    for (int index = 1; count == 0 || index <= count; index++) {
        shared_fill(data, floats, writer, index);
        int64_t shape[1] = {floats};
        fixture_tensor ft;
        fixture_f32(&ft, data, 1, shape);
        char w[16], i[16];
        snprintf(w, sizeof w, "%d", writer);
        snprintf(i, sizeof i, "%d", index);
        zc_bundle *b = NULL;
        uint64_t gen = 0;
        if (zc_bundle_create(&b) != ZC_OK || zc_bundle_add_copy(b, "latent_tensor", &ft.dl) != ZC_OK ||
            zc_bundle_set_meta(b, "writer", w) != ZC_OK ||
            zc_bundle_set_meta(b, "index", i) != ZC_OK ||
            zc_store_put(s, tag, b, ZC_PUT_SPILL, &gen) != ZC_OK)
            return fail("put");
        zc_view *v = NULL;
        zc_tensor_info ti;
        if (zc_store_get(s, tag, gen, &v) != ZC_OK || zc_view_tensor(v, 0, &ti) != ZC_OK)
            return fail("get");
        fprintf(log, "%llu %d %d %016llx\n", (unsigned long long)gen, writer, index,
                (unsigned long long)ti.digest);
        fflush(log);
        zc_view_release(v);
        if (zc_store_flush(s) != ZC_OK)
            return fail("flush");
    }
    zc_store_close(s);
    fclose(log);
    free(data);
    return touch(done_path) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "hold") == 0)
        return hold(argv[2], argv[3]);
    if (argc == 8 && strcmp(argv[1], "write") == 0)
        return write_shots(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]), atoll(argv[6]),
                           argv[7]);
    fprintf(stderr, "usage: shared_child write SPILL_DIR TAG WRITER COUNT FLOATS LOG\n"
                    "       shared_child hold SPILL_DIR LOG\n");
    return 2;
}
