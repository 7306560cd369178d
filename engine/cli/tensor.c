/*
 * tensor.c — read one tensor of an open file into memory and check it.
 *
 * zc_file_read fills the buffer and refuses a tensor whose bytes do not
 * match the recorded digest (ZC_E_CORRUPT).  zc.h does not say whether the
 * buffer holds the bytes after that refusal, so on ZC_E_CORRUPT the tool
 * re-reads the stored bytes itself (the reader gave their offset and size,
 * already validated against the file) and computes their digest: if it
 * differs from the recorded one the tensor is reported as a digest
 * mismatch, with both digests, else the reader's error stands.  The
 * digest the tool reports is always of the bytes it holds, with the
 * algorithm the file records for the tensor (XXH3-64 when it records none):
 * the one zc_file_read computed while reading, or the tool's own after a
 * re-read.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "platform/platform.h"

uint64_t cli_element_count(const zc_file_tensor *t)
{
    uint64_t n = 1;
    for (int32_t i = 0; i < t->ndim && i < ZC_MAX_RANK; i++)
        n *= t->shape[i] > 0 ? (uint64_t)t->shape[i] : 0u;
    return n;
}

int cli_is_empty_marker(const zc_file_tensor *t)
{
    return t->name != NULL && strcmp(t->name, ZC_FILE_LATENT_MARKER) == 0 && t->nbytes == 0;
}

int64_t cli_file_size(const char *path)
{
    zc_os_path_kind kind;
    uint64_t size = 0;
    if (zc_os_stat(path, &kind, &size) != 0 || size > (uint64_t)INT64_MAX)
        return -1;
    return (int64_t)size;
}

/* Read len bytes at offset of the file at path.  @return 0 or -1. */
static int read_stored_bytes(const char *path, uint64_t offset, void *dst, uint64_t len)
{
    zc_os_file f = ZC_OS_FILE_CLOSED;
    size_t got = 0;
    if (path == NULL || len > SIZE_MAX || zc_os_file_open_read(path, &f) != 0)
        return -1;
    int rc = zc_os_file_read_at(f, dst, (size_t)len, offset, &got) == 0 && got == len ? 0 : -1;
    zc_os_file_close(&f);
    return rc;
}

static void set_digest_state(cli_tensor *t)
{
    if (!t->info.has_digest)
        t->digest_state = CLI_DIGEST_NONE;
    else if (t->computed == t->info.recorded_digest)
        t->digest_state = CLI_DIGEST_MATCH;
    else
        t->digest_state = CLI_DIGEST_MISMATCH;
}

/* The reader refused the bytes: is it a digest mismatch we can show? */
static int recover_mismatch(const char *path, cli_tensor *t)
{
    if (!t->info.has_digest || read_stored_bytes(path, t->info.offset, t->data, t->info.nbytes) != 0)
        return -1;
    if (zc_digest_bytes(t->computed_algo, t->data, (size_t)t->info.nbytes, &t->computed) != ZC_OK ||
        t->computed == t->info.recorded_digest)
        return -1; /* the digest is fine: the reader's error is about something else */
    t->digest_state = CLI_DIGEST_MISMATCH;
    return 0;
}

static int load_failed(cli_tensor *t)
{
    free(t->data);
    t->data = NULL;
    return -1;
}

int cli_tensor_load(zc_file *file, const char *path, uint32_t index, cli_tensor *t)
{
    memset(t, 0, sizeof *t);
    int rc = zc_file_tensor_at(file, index, &t->info);
    if (rc != ZC_OK) {
        cli_engine_message_copy(rc, t->error, sizeof t->error);
        return -1;
    }
    if (t->info.nbytes > (uint64_t)SIZE_MAX - 1u) {
        snprintf(t->error, sizeof t->error, "%s: tensor %s: %llu bytes do not fit in memory",
                 path != NULL ? path : "<memory image>", t->info.name,
                 (unsigned long long)t->info.nbytes);
        return -1;
    }
    t->data = malloc(t->info.nbytes ? (size_t)t->info.nbytes : 1u);
    if (t->data == NULL) {
        snprintf(t->error, sizeof t->error, "%s: tensor %s: cannot allocate %llu bytes",
                 path != NULL ? path : "<memory image>", t->info.name,
                 (unsigned long long)t->info.nbytes);
        return -1;
    }
    t->computed_algo = t->info.has_digest ? t->info.digest_algo : ZC_DIGEST_DEFAULT;
    rc = zc_file_read(file, index, t->data, (size_t)t->info.nbytes, &t->computed);
    if (rc == ZC_OK) {
        set_digest_state(t);
        return 0;
    }
    cli_engine_message_copy(rc, t->error, sizeof t->error);
    if (rc == ZC_E_CORRUPT && recover_mismatch(path, t) == 0) {
        t->error[0] = '\0';
        return 0;
    }
    return load_failed(t);
}

void cli_tensor_free(cli_tensor *t)
{
    free(t->data);
    t->data = NULL;
}

uint64_t cli_data_bytes(const zc_file *f)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < zc_file_count(f); i++) {
        zc_file_tensor t;
        if (zc_file_tensor_at(f, i, &t) == ZC_OK)
            total += t.nbytes;
    }
    return total;
}
