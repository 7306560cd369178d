/*
 * record.h — the record digest of a safetensors file the engine writes
 * (record.c): one digest over what the header says, beside the tensors'
 * digests over their bytes.
 *
 * The record of a header is every tensor's name, dtype and shape and every
 * metadata entry but ZC_FILE_META_RECORD itself.  Its canonical
 * serialisation (version 1), hashed with XXH3-64 (seed 0):
 *
 *   "zc.record 1\n"
 *   per tensor, by name (bytewise):  "tensor <n>:<name> <DTYPE> [<d0>,<d1>,...]\n"
 *   per metadata key, by key:        "meta <n>:<key> <n>:<value>\n"
 *
 * (<n> the byte length of what follows the colon, in decimal), so the
 * serialisation does not depend on the order the JSON lists them in, and no
 * two headers share one.  The value written under ZC_FILE_META_RECORD is a
 * JSON object that holds that digest and, to name what changed when it no
 * longer matches, each tensor's dtype and shape in clear and the first 8 hex
 * digits of each metadata value's XXH3-64:
 *
 *   {"version":1,"digest":"xxh3:<16 hex>",
 *    "tensors":{"<name>":"<DTYPE> [<dims>]",...},"meta":{"<key>":"<8 hex>",...}}
 *
 * with tensors and keys in the order above.  The value is a function of the
 * header alone, so a reader recomputes it and compares the texts.
 */
#ifndef ZC_RECORD_H
#define ZC_RECORD_H

#include "core/internal.h"
#include "core/jsonbuf.h"

#define ZC_RECORD_VERSION 1

/* A tensor as the record sees it. */
typedef struct {
    const char *name;
    int dtype;
    int32_t ndim;
    const int64_t *shape;
} zc_record_tensor;

/* Append the canonical serialisation of the header (tensors and meta in any
 * order; an entry keyed ZC_FILE_META_RECORD is left out) to jb.  @return
 * ZC_OK, or ZC_E_NOMEM (jb->failed). */
int zc__record_canonical(zc_jsonbuf *jb, const zc_record_tensor *tensors, uint32_t ntensors,
                         const zc_meta_entry *meta, uint32_t nmeta);

/* The value to write under ZC_FILE_META_RECORD for the header: a new string
 * (free it), or NULL when out of memory. */
char *zc__record_text(const zc_record_tensor *tensors, uint32_t ntensors,
                      const zc_meta_entry *meta, uint32_t nmeta);

/* Check the recorded value (the text of ZC_FILE_META_RECORD, untrusted;
 * NULL when the file has none) against the header.
 * @return ZC_RECORD_OK; ZC_RECORD_NOT_COVERED (no record, or one of a newer
 * version: why says which); ZC_RECORD_BAD with why naming what changed
 * ("the record (dtype, shape or metadata) changed since it was written:
 * tensor "x" dtype is I32, was F32"); ZC_E_NOMEM.  why (cap bytes) is always
 * a NUL-terminated sentence ("" for ZC_RECORD_OK). */
int zc__record_check(const char *recorded, const zc_record_tensor *tensors, uint32_t ntensors,
                     const zc_meta_entry *meta, uint32_t nmeta, char *why, size_t cap);

#endif /* ZC_RECORD_H */
