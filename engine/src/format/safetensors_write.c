/*
 * safetensors_write.c — writing a bundle as a safetensors file, crash-safe.
 *
 * The file is written under a temporary name in the destination directory,
 * made durable (zc_os_file_sync), closed, put in place by an atomic replace
 * (zc_os_replace; for spill files and imports zc_os_rename_noreplace, which
 * never overwrites a file) and the directory entry made durable
 * (zc_os_sync_parent_dir): after a crash the destination holds either the
 * old file or the complete new one.  The temporary name is
 * ZC_TMP_PREFIX<process token>-<n>-<name>: a store opening the folder
 * removes a leftover only when the process it names is gone (spill_owner.c).
 *
 * For speed the header goes out in one write and every tensor straight from
 * its host buffer in large writes, with no copy; where the OS can (Linux),
 * the file is preallocated and writeback of what was written is started as
 * we go so the final sync does not wait for all of it.
 *
 * Header layout (deterministic): "__metadata__" first (as the safetensors
 * library writes it) with the bundle's entries, then the extra entries, then
 * "zc.digest.<name>" per digested tensor, then "zc.record", the record digest
 * of the whole header (record.h); then the tensors in bundle order,
 * with ComfyUI's marker "latent_format_version_0" right after
 * "latent_tensor"; spaces pad the header to a multiple of 8 bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "json_reader.h"
#include "record.h"
#include "core/jsonbuf.h"
#include "core/utf8.h"

/* Bytes per write call (the platform layer splits larger ones too). */
#define WRITE_CHUNK ((size_t)64 << 20)
/* Start writeback of every this many bytes written (Linux only). */
#define WRITEBACK_STEP ((uint64_t)32 << 20)
/* Longest file-name component we create (NAME_MAX on common filesystems). */
#define TMP_NAME_MAX 255

static atomic_ulong tmp_counter;

/* One tensor as it appears in the file. */
typedef struct {
    const char *name;
    int dtype;
    int32_t ndim;
    const int64_t *shape;
    const void *bytes;
    uint64_t nbytes;
} out_tensor;

typedef struct {
    out_tensor t[ZC_MAX_TENSORS + 1];
    uint32_t count;
} out_list;

/* ---- what goes into the file ---- */

static int bundle_has(const zc_bundle *b, const char *name)
{
    for (uint32_t i = 0; i < b->count; i++)
        if (strcmp(b->tensors[i].name, name) == 0)
            return 1;
    return 0;
}

static int collect_tensors(const zc_bundle *b, out_list *out)
{
    static const int64_t marker_shape[1] = {0};
    out->count = 0;
    for (uint32_t i = 0; i < b->count && i < ZC_MAX_TENSORS; i++) {
        const zc_tensor *t = &b->tensors[i];
        /* The reader would take such a tensor for the metadata object. */
        if (strcmp(t->name, "__metadata__") == 0)
            return zc__fail(ZC_E_INVALID, "a tensor named \"__metadata__\" cannot be written to "
                            "safetensors (the name is reserved for metadata); rename it");
        if (t->host == NULL && t->nbytes > 0)
            return zc__fail(ZC_E_UNSUPPORTED,
                            "tensor \"%s\" is held by reference on device %d:%d without a host "
                            "copy; put it with a host copy to spill it", t->name,
                            (int)t->device_type, (int)t->device_id);
        out->t[out->count++] = (out_tensor){t->name, t->dtype, t->ndim, t->shape, t->host,
                                            t->nbytes};
        /* ComfyUI's LoadLatent reads a latent unscaled when this empty F32
         * tensor (torch.tensor([]) in SaveLatent) is present. */
        if (strcmp(t->name, ZC_FILE_LATENT_TENSOR) == 0 && !bundle_has(b, ZC_FILE_LATENT_MARKER))
            out->t[out->count++] =
                (out_tensor){ZC_FILE_LATENT_MARKER, ZC_F32, 1, marker_shape, NULL, 0};
    }
    return ZC_OK;
}

static int utf8_ok(const char *what, const char *s)
{
    if (zc__utf8_valid(s, strlen(s)) != 0)
        return zc__fail(ZC_E_INVALID, "%s is not valid UTF-8; safetensors headers are UTF-8 JSON",
                        what);
    return ZC_OK;
}

static int is_extra_key(const zc_meta_entry *extra, uint32_t n, const char *key)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(extra[i].key, key) == 0)
            return 1;
    return 0;
}

static int is_digest_key(const char *key)
{
    return strncmp(key, ZC_FILE_META_DIGEST_PREFIX, strlen(ZC_FILE_META_DIGEST_PREFIX)) == 0;
}

/* Keys the writer makes itself: a stored one gives way to the one made here. */
static int is_made_here(const char *key)
{
    return is_digest_key(key) || strcmp(key, ZC_FILE_META_RECORD) == 0;
}

static int emit_meta(zc_jsonbuf *jb, int *first, const char *key, const char *value)
{
    int rc;
    if ((rc = utf8_ok("metadata key", key)) != ZC_OK ||
        (rc = utf8_ok("metadata value", value)) != ZC_OK)
        return rc;
    zc__jb_raw(jb, *first ? "" : ",");
    zc__jb_string(jb, key);
    zc__jb_raw(jb, ":");
    zc__jb_string(jb, value);
    *first = 0;
    return ZC_OK;
}

/* The metadata entries of the file, in the order written (borrowed, except the digests' texts,
 * held here): the bundle's entries, the extras, a "zc.digest.<name>" per digested tensor.  Keys
 * must be unique (a reader refuses duplicates), so extras win over bundle entries of the same
 * key, and stored "zc.digest." and "zc.record" entries give way to the ones made here. */
typedef struct {
    zc_meta_entry *e;
    uint32_t count;
    char dkey[ZC_MAX_TENSORS][sizeof ZC_FILE_META_DIGEST_PREFIX + ZC_MAX_NAME_LEN];
    char dval[ZC_MAX_TENSORS][ZC_DIGEST_TEXT_SIZE];
} meta_list;

static int collect_meta(meta_list *l, const zc_bundle *b, const zc_meta_entry *extra,
                        uint32_t extra_count)
{
    int rc;
    l->count = 0;
    l->e = malloc(sizeof *l->e * ((size_t)b->meta_count + extra_count + ZC_MAX_TENSORS + 1));
    if (l->e == NULL)
        return zc__fail(ZC_E_NOMEM, "out of host memory building a safetensors header");
    for (uint32_t i = 0; i < b->meta_count && i < ZC_MAX_META; i++) {
        const zc_meta_entry *e = &b->meta[i];
        if (!is_made_here(e->key) && !is_extra_key(extra, extra_count, e->key))
            l->e[l->count++] = *e;
    }
    for (uint32_t i = 0; i < extra_count; i++)
        if (!is_made_here(extra[i].key) && !is_extra_key(extra, i, extra[i].key))
            l->e[l->count++] = extra[i];
    uint32_t nd = 0;
    for (uint32_t i = 0; i < b->count && i < ZC_MAX_TENSORS; i++) {
        const zc_tensor *t = &b->tensors[i];
        if (!t->has_digest)
            continue;
        snprintf(l->dkey[nd], sizeof l->dkey[nd], ZC_FILE_META_DIGEST_PREFIX "%s", t->name);
        if ((rc = zc_digest_format(t->digest_algo, t->digest, l->dval[nd], sizeof l->dval[nd])) !=
            ZC_OK)
            return rc;
        l->e[l->count++] = (zc_meta_entry){l->dkey[nd], l->dval[nd]};
        nd++;
    }
    return ZC_OK;
}

/* "__metadata__": the entries of collect_meta, then "zc.record", the record digest of the
 * header (format/record.h) over the tensors ts and those entries. */
static int emit_metadata(zc_jsonbuf *jb, const zc_bundle *b, const out_list *ts,
                         const zc_meta_entry *extra, uint32_t extra_count)
{
    int first = 1, rc;
    meta_list *l = malloc(sizeof *l);
    char *record = NULL;
    zc_record_tensor rt[ZC_MAX_TENSORS + 1];
    if (l == NULL)
        return zc__fail(ZC_E_NOMEM, "out of host memory building a safetensors header");
    if ((rc = collect_meta(l, b, extra, extra_count)) != ZC_OK)
        goto done;
    for (uint32_t i = 0; i < ts->count; i++)
        rt[i] = (zc_record_tensor){ts->t[i].name, ts->t[i].dtype, ts->t[i].ndim, ts->t[i].shape};
    zc__jb_raw(jb, "\"__metadata__\":{");
    for (uint32_t i = 0; i < l->count; i++)
        if ((rc = emit_meta(jb, &first, l->e[i].key, l->e[i].value)) != ZC_OK)
            goto done;
    /* After the checks above (valid UTF-8), so the record covers a header that can be written. */
    if ((record = zc__record_text(rt, ts->count, l->e, l->count)) == NULL) {
        rc = zc__fail(ZC_E_NOMEM, "out of host memory building a safetensors header");
        goto done;
    }
    rc = emit_meta(jb, &first, ZC_FILE_META_RECORD, record);
    zc__jb_raw(jb, "}");
done:
    free(record);
    free(l->e);
    free(l);
    return rc;
}

static void emit_tensor(zc_jsonbuf *jb, const out_tensor *t, uint64_t begin)
{
    zc__jb_string(jb, t->name);
    zc__jb_printf(jb, ":{\"dtype\":\"%s\",\"shape\":[", zc_dtype_name(t->dtype));
    for (int32_t d = 0; d < t->ndim; d++)
        zc__jb_printf(jb, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    zc__jb_printf(jb, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)begin,
                  (unsigned long long)(begin + t->nbytes));
}

/* The 8-byte length prefix and the padded JSON header, ready to write. */
static int build_header(zc_jsonbuf *jb, const zc_bundle *b, const out_list *ts,
                        const zc_meta_entry *extra, uint32_t extra_count)
{
    uint64_t at = 0;
    int rc;
    zc__jb_init(jb);
    zc__jb_rawn(jb, "\0\0\0\0\0\0\0\0", 8);
    zc__jb_raw(jb, "{");
    if ((rc = emit_metadata(jb, b, ts, extra, extra_count)) != ZC_OK)
        return rc;
    for (uint32_t i = 0; i < ts->count; i++) {
        char what[ZC_MAX_NAME_LEN + 32];
        snprintf(what, sizeof what, "tensor name \"%s\"", ts->t[i].name);
        if ((rc = utf8_ok(what, ts->t[i].name)) != ZC_OK)
            return rc;
        if (zc_dtype_name(ts->t[i].dtype) == NULL || ts->t[i].ndim < 0 ||
            ts->t[i].ndim > ZC_MAX_RANK)
            return zc__fail(ZC_E_INVALID, "tensor \"%s\" has dtype %d and rank %d; cannot "
                            "describe it", ts->t[i].name, ts->t[i].dtype, (int)ts->t[i].ndim);
        zc__jb_raw(jb, ",");
        emit_tensor(jb, &ts->t[i], at);
        if (zc__add_u64(at, ts->t[i].nbytes, &at) != 0)
            return zc__fail(ZC_E_LIMIT, "tensors add up to more than 2^64 bytes");
    }
    zc__jb_raw(jb, "}");
    /* Spaces to a multiple of 8, as the safetensors library pads. */
    zc__jb_rawn(jb, "        ", (8 - (jb->len - 8) % 8) % 8);
    if (jb->failed)
        return zc__fail(ZC_E_NOMEM, "out of host memory building a safetensors header");
    uint64_t n = jb->len - 8;
    if (n > ZC_MAX_HEADER_BYTES)
        return zc__fail(ZC_E_LIMIT, "safetensors header of %llu bytes exceeds the %u-byte limit; "
                        "shorten the metadata", (unsigned long long)n, ZC_MAX_HEADER_BYTES);
    for (int i = 0; i < 8; i++)
        jb->data[i] = (char)(uint8_t)(n >> (8 * i));
    return ZC_OK;
}

/* ---- file system ---- */

int zc__fsync_parent_dir(const char *path)
{
    int err = zc_os_sync_parent_dir(path);
    if (err != 0)
        return zc__fail(ZC_E_IO, "cannot sync the directory of %s: %s", path, ZC_OS_WHY(err));
    return ZC_OK;
}

/* "<dir>/.zc-tmp-<process token>-<n>-<basename>", unique per process and
 * call: the token says whose it is (spill_owner.c). */
static char *temp_path(const char *path)
{
    const char *slash = zc_os_last_separator(path);
    const char *base = slash ? slash + 1 : path;
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    char prefix[64], token[ZC_TOKEN_LEN + 1];
    zc__process_token(token);
    int n = snprintf(prefix, sizeof prefix, ZC_TMP_PREFIX "%s-%lu-", token,
                     (unsigned long)atomic_fetch_add(&tmp_counter, 1));
    size_t base_len = strlen(base);
    if ((size_t)n + base_len > TMP_NAME_MAX)
        base_len = TMP_NAME_MAX - (size_t)n; /* keep the component a legal file name */
    char *tmp = malloc(dir_len + (size_t)n + base_len + 1);
    if (tmp == NULL)
        return NULL;
    memcpy(tmp, path, dir_len);
    memcpy(tmp + dir_len, prefix, (size_t)n);
    memcpy(tmp + dir_len + (size_t)n, base, base_len);
    tmp[dir_len + (size_t)n + base_len] = '\0';
    return tmp;
}

/* Write the tensor bytes after the header, starting writeback as we go so
 * the final sync does not wait for all of it. */
static int write_tensors(zc_os_file f, const out_list *ts, uint64_t at)
{
    uint64_t hinted = 0;
    for (uint32_t i = 0; i < ts->count; i++) {
        const uint8_t *p = ts->t[i].bytes;
        uint64_t left = ts->t[i].nbytes;
        while (left > 0) {
            size_t step = left < WRITE_CHUNK ? (size_t)left : WRITE_CHUNK;
            int err = zc_os_file_write_all(f, p, step);
            if (err != 0)
                return err;
            p += step;
            left -= step;
            at += step;
            if (at - hinted >= WRITEBACK_STEP) {
                zc_os_file_start_writeback(f, hinted, at);
                hinted = at;
            }
        }
    }
    return 0;
}

/* Create the temporary file for path: a fresh name if one is taken (only
 * a process whose token collides with ours could have taken it). */
static int create_temp(const char *path, char **tmp, zc_os_file *f)
{
    int err = 0;
    for (int attempt = 0; attempt < 8; attempt++) {
        free(*tmp);
        if ((*tmp = temp_path(path)) == NULL)
            return zc__fail(ZC_E_NOMEM, "out of host memory writing %s", path);
        if ((err = zc_os_file_create_new(*tmp, f)) == 0)
            return ZC_OK;
        if (!zc_os_error_is(err, ZC_OS_EXISTS))
            break;
    }
    return zc__fail(ZC_E_IO, "cannot create %s (to write %s): %s", *tmp, path, ZC_OS_WHY(err));
}

/* Everything from creating the temporary file to the rename: head (the
 * header, or the whole file) and then the tensors of ts (may be NULL). */
static int write_file(const char *path, const void *head, size_t head_len, const out_list *ts,
                      uint64_t data_len, int exclusive)
{
    zc_os_file f = ZC_OS_FILE_CLOSED;
    char *tmp = NULL;
    int rc = create_temp(path, &tmp, &f), err = 0;
    if (rc != ZC_OK) {
        free(tmp);
        return rc;
    }
    const char *step = "preallocate";
    if ((err = zc_os_file_preallocate(f, head_len + data_len)) != 0)
        goto fail;
    step = "write";
    if ((err = zc_os_file_write_all(f, head, head_len)) != 0 ||
        (ts && (err = write_tensors(f, ts, head_len)) != 0))
        goto fail;
    step = "sync";
    if ((err = zc_os_file_sync(f)) != 0)
        goto fail;
    step = "close";
    if ((err = zc_os_file_close(&f)) != 0)
        goto fail;
    step = "rename";
    if ((err = exclusive ? zc_os_rename_noreplace(tmp, path) : zc_os_replace(tmp, path)) != 0)
        goto fail;
    free(tmp);
    return ZC_OK;
fail:
    zc_os_file_close(&f);
    zc_os_remove(tmp);
    if (exclusive && zc_os_error_is(err, ZC_OS_EXISTS))
        rc = zc__fail(ZC_E_EXISTS, "cannot write %s: a file of that name exists already (another "
                      "writer took the name); nothing was overwritten", path);
    else
        rc = zc__fail(ZC_E_IO, "cannot write %s (%s of %s failed): %s", path, step, tmp,
                      ZC_OS_WHY(err));
    free(tmp);
    return rc;
}

/* Header and tensor list of b, ready to write; *data_len gets the tensor bytes. */
static int prepare(const zc_bundle *b, const zc_meta_entry *extra, uint32_t extra_count,
                   out_list *ts, zc_jsonbuf *hdr, uint64_t *data_len)
{
    int rc;
    zc__jb_init(hdr);
    *data_len = 0;
    if (b == NULL || (extra == NULL && extra_count > 0))
        return zc__fail(ZC_E_INVALID, "zc__safetensors_write: bundle or extra is NULL");
    if ((rc = collect_tensors(b, ts)) != ZC_OK)
        return rc;
    for (uint32_t i = 0; i < ts->count; i++)
        *data_len += ts->t[i].nbytes; /* cannot overflow: build_header checks */
    return build_header(hdr, b, ts, extra, extra_count);
}

static int write_bundle(const char *path, const zc_bundle *b, const zc_meta_entry *extra,
                        uint32_t extra_count, int exclusive)
{
    out_list ts;
    zc_jsonbuf hdr;
    uint64_t data_len = 0;
    if (path == NULL)
        return zc__fail(ZC_E_INVALID, "zc__safetensors_write: path is NULL");
    int rc = prepare(b, extra, extra_count, &ts, &hdr, &data_len);
    if (rc == ZC_OK)
        rc = write_file(path, hdr.data, hdr.len, &ts, data_len, exclusive);
    if (rc == ZC_OK && (rc = zc__fsync_parent_dir(path)) != ZC_OK)
        zc__fail_context("%s was written, but its directory entry may not be durable", path);
    zc__jb_free(&hdr);
    return rc;
}

int zc__safetensors_write(const char *path, const zc_bundle *b, const zc_meta_entry *extra,
                          uint32_t extra_count)
{
    return write_bundle(path, b, extra, extra_count, 0);
}

int zc__safetensors_write_new(const char *path, const zc_bundle *b, const zc_meta_entry *extra,
                              uint32_t extra_count)
{
    return write_bundle(path, b, extra, extra_count, 1);
}

static int write_bytes(const char *who, const char *path, const void *data, size_t len,
                       int exclusive)
{
    if (path == NULL || (data == NULL && len > 0))
        return zc__fail(ZC_E_INVALID, "%s: path or data is NULL", who);
    int rc = write_file(path, data, len, NULL, 0, exclusive);
    if (rc == ZC_OK && (rc = zc__fsync_parent_dir(path)) != ZC_OK)
        zc__fail_context("%s was written, but its directory entry may not be durable", path);
    return rc;
}

int zc__write_bytes_new(const char *path, const void *data, size_t len)
{
    return write_bytes("zc__write_bytes_new", path, data, len, 1);
}

int zc__write_bytes(const char *path, const void *data, size_t len)
{
    return write_bytes("zc__write_bytes", path, data, len, 0);
}

int zc__safetensors_serialize(const zc_bundle *b, const zc_meta_entry *extra,
                              uint32_t extra_count, void *buf, size_t cap, size_t *needed)
{
    out_list ts;
    zc_jsonbuf hdr;
    uint64_t data_len = 0, total = 0;
    int rc = prepare(b, extra, extra_count, &ts, &hdr, &data_len);
    if (rc == ZC_OK && (zc__add_u64(hdr.len, data_len, &total) != 0 || total > SIZE_MAX))
        rc = zc__fail(ZC_E_LIMIT, "the file would have more bytes than this machine can address");
    if (rc == ZC_OK && needed)
        *needed = (size_t)total;
    if (rc == ZC_OK && (buf == NULL || cap < total))
        rc = zc__fail(ZC_E_LIMIT, "the serialized shot needs %llu bytes; the buffer has %zu",
                      (unsigned long long)total, cap);
    if (rc == ZC_OK) {
        uint8_t *out = buf;
        memcpy(out, hdr.data, hdr.len);
        out += hdr.len;
        for (uint32_t i = 0; i < ts.count; i++) {
            if (ts.t[i].nbytes)
                memcpy(out, ts.t[i].bytes, (size_t)ts.t[i].nbytes);
            out += ts.t[i].nbytes;
        }
    }
    zc__jb_free(&hdr);
    return rc;
}
