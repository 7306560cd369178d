/*
 * spill_names.h — the names and identity of spill files (spill_names.c), for the store's
 * disk tier and for the film code, which reads a spill folder without a store.
 */
#ifndef ZC_SPILL_NAMES_H
#define ZC_SPILL_NAMES_H

#include "core/internal.h"

#define ZC_SPILL_GEN_DIGITS 20 /* a spill file's generation, zero-padded */

/* dir/<tag>@<generation>.latent into out (cap bytes); ZC_E_LIMIT when it does not fit. */
int zc__spill_path_in(const char *dir, const char *tag, uint64_t generation, char *out,
                      size_t cap);
/* Parse a spill file name "<tag>@<ZC_SPILL_GEN_DIGITS digits>.latent": 0 and tag and
 * *generation, or -1 for any other name (temporary, owner, counter and
 * choices files included). */
int zc__spill_parse_name(const char *name, char tag[ZC_MAX_TAG_LEN + 1], uint64_t *generation);
/* The identity metadata of a spill file (format, tag, generation); gen
 * holds the generation's text and must live as long as extra. */
void zc__spill_identity(const char *tag, uint64_t generation, char gen[32],
                        zc_meta_entry extra[3]);
/* ZC_E_CORRUPT unless f says it is tag@generation of ours and every tensor
 * has a recorded digest; label names f in the message. */
int zc__spill_check_identity(const zc_file *f, const char *label, const char *tag,
                             uint64_t generation);

/* Open a spill file of a folder the engine serves from (safetensors_read.c):
 * zc_file_open, but never through a symbolic link, and only a regular file
 * with one name, checked on the open handle (zc_os_file_check_private: a
 * hard link planted as a spill file would serve a file from elsewhere).  A
 * file met in the instant of a non-replacing rename, when it has two names
 * for microseconds, is looked at again for a few milliseconds first.
 * @return ZC_OK and *out; ZC_E_CORRUPT for a link, a second name or no
 * regular file (the message names the file, why and the fix; the store
 * renames it aside); ZC_E_ACCESS when it may not be read (the message names
 * its owner and mode: kept, never renamed); otherwise as zc_file_open. */
int zc__spill_file_open(const char *path, zc_file **out);

#endif
