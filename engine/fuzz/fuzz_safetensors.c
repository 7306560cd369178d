/*
 * fuzz_safetensors.c — libFuzzer target for the safetensors reader.
 *
 * Feeds each input to zc_file_open_memory and, when it is accepted, walks
 * every accessor, reads every tensor (checking the digest the read returns
 * against a one-shot digest of the bytes) and loads the file as a bundle.
 * A sanitizer report or a failed invariant (abort) is a finding; error
 * codes are the expected outcome for most inputs.
 *
 *   make fuzz && ./build/fuzz_safetensors -max_len=65536 work_dir engine/fuzz/corpus
 * engine/fuzz/replay_main.c runs the same function over stored inputs
 * without libFuzzer (make test-c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Invariants of an accepted file: a failure is a reader bug, so crash. */
#define EXPECT(cond)                                                           \
    do {                                                                       \
        if (!(cond))                                                           \
            abort();                                                           \
    } while (0)

static void walk_meta(zc_file *f)
{
    uint32_t n = zc_file_meta_count(f);
    for (uint32_t i = 0; i < n; i++) {
        const char *k = NULL, *v = NULL;
        EXPECT(zc_file_meta_at(f, i, &k, &v) == ZC_OK && k && v);
        EXPECT(zc_file_meta(f, k) == v); /* keys are unique */
    }
    EXPECT(zc_file_meta_at(f, n, NULL, NULL) == ZC_E_NOT_FOUND);
}

static void read_tensors(zc_file *f, size_t image_size)
{
    uint32_t n = zc_file_count(f);
    for (uint32_t i = 0; i < n; i++) {
        zc_file_tensor t;
        uint32_t idx = UINT32_MAX;
        EXPECT(zc_file_tensor_at(f, i, &t) == ZC_OK);
        EXPECT(zc_file_find(f, t.name, &idx) == ZC_OK && idx == i);
        /* Validated offsets lie inside the image, so this is bounded. */
        EXPECT(t.offset <= image_size && t.nbytes <= image_size - t.offset);
        uint8_t *buf = malloc(t.nbytes ? (size_t)t.nbytes : 1);
        if (buf == NULL)
            continue;
        uint64_t d = 0;
        int rc = zc_file_read(f, i, buf, (size_t)t.nbytes, &d);
        EXPECT(rc == ZC_OK || (rc == ZC_E_CORRUPT && t.has_digest));
        uint64_t again = 0;
        EXPECT(zc_digest_bytes(t.has_digest ? t.digest_algo : ZC_DIGEST_DEFAULT, buf,
                               (size_t)t.nbytes, &again) == ZC_OK);
        EXPECT(d == again);
        if (t.nbytes > 0)
            EXPECT(zc_file_read(f, i, buf, (size_t)t.nbytes - 1, NULL) == ZC_E_LIMIT);
        free(buf);
    }
    zc_file_tensor t;
    EXPECT(zc_file_tensor_at(f, n, &t) == ZC_E_NOT_FOUND);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zc_file *f = NULL;
    if (zc_file_open_memory(data, size, &f) != ZC_OK) {
        EXPECT(f == NULL);
        return 0;
    }
    walk_meta(f);
    read_tensors(f, size);
    zc_bundle *b = NULL;
    if (zc_file_load_bundle(f, &b) == ZC_OK)
        zc_bundle_free(b);
    else
        EXPECT(b == NULL);
    zc_file_close(f);
    return 0;
}
