/*
 * abi.c — zc_abi_describe: the library's binary interface as this build compiled it (each
 * struct's size and its members' offsets and sizes, every constant of zc.h and zc_dlpack.h,
 * the engine's file names a binding restates), so that a binding's test can compare what it
 * restates by hand with the library it loads, on any platform and compiler, without a C
 * compiler of its own (tests/python/test_abi.py).
 */
#include <stddef.h>
#include <stdio.h>

#include "film/film.h"
#include "core/internal.h"
#include "core/jsonbuf.h"

typedef struct {
    zc_jsonbuf jb;
    int first; /* no entry written yet in the open object or array */
} abi_writer;

static void key(abi_writer *w, const char *name)
{
    zc__jb_raw(&w->jb, w->first ? "" : ",");
    w->first = 0;
    zc__jb_string(&w->jb, name);
    zc__jb_raw(&w->jb, ":");
}

static void close_section(abi_writer *w, const char *bracket)
{
    zc__jb_raw(&w->jb, bracket);
    w->first = 0;
}

/* "name": followed by what fill writes between the two characters of brackets ("{}", "[]"). */
static void section(abi_writer *w, const char *name, const char *brackets, void (*fill)(abi_writer *))
{
    char opening[2] = {brackets[0], 0}, closing[2] = {brackets[1], 0};
    key(w, name);
    zc__jb_raw(&w->jb, opening);
    w->first = 1;
    fill(w);
    close_section(w, closing);
}

static void struct_open(abi_writer *w, const char *name, size_t size)
{
    key(w, name);
    zc__jb_printf(&w->jb, "{\"size\":%llu,\"fields\":[", (unsigned long long)size);
    w->first = 1;
}

static void member(abi_writer *w, const char *name, size_t offset, size_t size)
{
    zc__jb_raw(&w->jb, w->first ? "[" : ",[");
    w->first = 0;
    zc__jb_string(&w->jb, name);
    zc__jb_printf(&w->jb, ",%llu,%llu]", (unsigned long long)offset, (unsigned long long)size);
}

static void number(abi_writer *w, const char *name, long long value)
{
    key(w, name);
    zc__jb_printf(&w->jb, "%lld", value);
}

static void real(abi_writer *w, const char *name, double value)
{
    key(w, name);
    zc__jb_printf(&w->jb, "%.17g", value);
}

static void text(abi_writer *w, const char *name, const char *value)
{
    key(w, name);
    zc__jb_string(&w->jb, value);
}

#define STRUCT(T) struct_open(w, #T, sizeof(T))
#define MEMBER(T, m) member(w, #m, offsetof(T, m), sizeof(((T *)0)->m))
#define END_STRUCT() close_section(w, "]}")
#define NUMBER(c) number(w, #c, (long long)(c))
#define REAL(c) real(w, #c, (double)(c))
#define TEXT(c) text(w, #c, c)

static void structs(abi_writer *w)
{
    STRUCT(zc_dl_version);
    MEMBER(zc_dl_version, major);
    MEMBER(zc_dl_version, minor);
    END_STRUCT();
    STRUCT(zc_dl_device);
    MEMBER(zc_dl_device, device_type);
    MEMBER(zc_dl_device, device_id);
    END_STRUCT();
    STRUCT(zc_dl_dtype);
    MEMBER(zc_dl_dtype, code);
    MEMBER(zc_dl_dtype, bits);
    MEMBER(zc_dl_dtype, lanes);
    END_STRUCT();
    STRUCT(zc_dl_tensor);
    MEMBER(zc_dl_tensor, data);
    MEMBER(zc_dl_tensor, device);
    MEMBER(zc_dl_tensor, ndim);
    MEMBER(zc_dl_tensor, dtype);
    MEMBER(zc_dl_tensor, shape);
    MEMBER(zc_dl_tensor, strides);
    MEMBER(zc_dl_tensor, byte_offset);
    END_STRUCT();
    STRUCT(zc_dl_managed);
    MEMBER(zc_dl_managed, dl_tensor);
    MEMBER(zc_dl_managed, manager_ctx);
    MEMBER(zc_dl_managed, deleter);
    END_STRUCT();
    STRUCT(zc_dl_managed_versioned);
    MEMBER(zc_dl_managed_versioned, version);
    MEMBER(zc_dl_managed_versioned, manager_ctx);
    MEMBER(zc_dl_managed_versioned, deleter);
    MEMBER(zc_dl_managed_versioned, flags);
    MEMBER(zc_dl_managed_versioned, dl_tensor);
    END_STRUCT();
    STRUCT(zc_xxh3_state);
    MEMBER(zc_xxh3_state, acc);
    MEMBER(zc_xxh3_state, secret);
    MEMBER(zc_xxh3_state, buffer);
    MEMBER(zc_xxh3_state, last_stripe);
    MEMBER(zc_xxh3_state, total_len);
    MEMBER(zc_xxh3_state, seed);
    MEMBER(zc_xxh3_state, buffered);
    MEMBER(zc_xxh3_state, stripes_in_block);
    END_STRUCT();
    STRUCT(zc_xxh64_state);
    MEMBER(zc_xxh64_state, acc);
    MEMBER(zc_xxh64_state, total_len);
    MEMBER(zc_xxh64_state, seed);
    MEMBER(zc_xxh64_state, buffer);
    MEMBER(zc_xxh64_state, buffered);
    END_STRUCT();
    STRUCT(zc_store_config);
    MEMBER(zc_store_config, default_depth);
    MEMBER(zc_store_config, host_budget_bytes);
    MEMBER(zc_store_config, device_budget_bytes);
    MEMBER(zc_store_config, spill_dir);
    MEMBER(zc_store_config, disk_keep);
    MEMBER(zc_store_config, spill_delay_ms);
    END_STRUCT();
    STRUCT(zc_store_stats);
    MEMBER(zc_store_stats, tags);
    MEMBER(zc_store_stats, slots);
    MEMBER(zc_store_stats, host_bytes);
    MEMBER(zc_store_stats, device_bytes);
    MEMBER(zc_store_stats, retained_bytes);
    MEMBER(zc_store_stats, evictions);
    MEMBER(zc_store_stats, spills_written);
    MEMBER(zc_store_stats, spill_errors);
    MEMBER(zc_store_stats, restores);
    MEMBER(zc_store_stats, files_rejected);
    MEMBER(zc_store_stats, pending_spills);
    MEMBER(zc_store_stats, pooled_bytes);
    MEMBER(zc_store_stats, verify_hashed_bytes);
    MEMBER(zc_store_stats, verify_skipped_bytes);
    MEMBER(zc_store_stats, memory_only);
    MEMBER(zc_store_stats, spill_folder_recreated);
    END_STRUCT();
    STRUCT(zc_seam_layout);
    MEMBER(zc_seam_layout, time_axis);
    MEMBER(zc_seam_layout, head_skip);
    MEMBER(zc_seam_layout, window);
    MEMBER(zc_seam_layout, max_values);
    END_STRUCT();
    STRUCT(zc_tensor_info);
    MEMBER(zc_tensor_info, name);
    MEMBER(zc_tensor_info, dtype);
    MEMBER(zc_tensor_info, ndim);
    MEMBER(zc_tensor_info, shape);
    MEMBER(zc_tensor_info, byte_strides);
    MEMBER(zc_tensor_info, device_type);
    MEMBER(zc_tensor_info, device_id);
    MEMBER(zc_tensor_info, tier);
    MEMBER(zc_tensor_info, nbytes);
    MEMBER(zc_tensor_info, digest);
    MEMBER(zc_tensor_info, has_digest);
    MEMBER(zc_tensor_info, digest_algo);
    MEMBER(zc_tensor_info, data);
    END_STRUCT();
    STRUCT(zc_verify_report);
    MEMBER(zc_verify_report, hashed);
    MEMBER(zc_verify_report, unchanged);
    MEMBER(zc_verify_report, unchecked);
    MEMBER(zc_verify_report, device);
    MEMBER(zc_verify_report, hashed_bytes);
    END_STRUCT();
    STRUCT(zc_seam_stats);
    MEMBER(zc_seam_stats, measured);
    MEMBER(zc_seam_stats, parent_start_image);
    MEMBER(zc_seam_stats, parent_frames);
    MEMBER(zc_seam_stats, shot_frames);
    MEMBER(zc_seam_stats, mean_step);
    MEMBER(zc_seam_stats, std_step);
    MEMBER(zc_seam_stats, rms_step);
    MEMBER(zc_seam_stats, correlation);
    MEMBER(zc_seam_stats, within_correlation);
    MEMBER(zc_seam_stats, parent_level);
    MEMBER(zc_seam_stats, shot_level);
    END_STRUCT();
    STRUCT(zc_file_tensor);
    MEMBER(zc_file_tensor, name);
    MEMBER(zc_file_tensor, dtype);
    MEMBER(zc_file_tensor, ndim);
    MEMBER(zc_file_tensor, shape);
    MEMBER(zc_file_tensor, nbytes);
    MEMBER(zc_file_tensor, offset);
    MEMBER(zc_file_tensor, has_digest);
    MEMBER(zc_file_tensor, digest_algo);
    MEMBER(zc_file_tensor, recorded_digest);
    END_STRUCT();
}

/* Every numeric #define and enumerator of zc.h and zc_dlpack.h, and the engine's own numbers a
 * binding restates (the seam score's colour thresholds). */
static void numbers(abi_writer *w)
{
    NUMBER(ZC_VERSION_MAJOR);
    NUMBER(ZC_VERSION_MINOR);
    NUMBER(ZC_VERSION_PATCH);
    NUMBER(ZC_MAX_TENSORS);
    NUMBER(ZC_MAX_RANK);
    NUMBER(ZC_MAX_TAG_LEN);
    NUMBER(ZC_MAX_NAME_LEN);
    NUMBER(ZC_MAX_META);
    NUMBER(ZC_MAX_META_KEY_LEN);
    NUMBER(ZC_MAX_META_VALUE_LEN);
    NUMBER(ZC_DEFAULT_DEPTH);
    NUMBER(ZC_DEFAULT_SPILL_DELAY_MS);
    NUMBER(ZC_MAX_SPILL_DELAY_MS);
    NUMBER(ZC_MAX_DEPTH);
    NUMBER(ZC_MAX_HEADER_BYTES);
    NUMBER(ZC_MAX_GENERATION);
    NUMBER(ZC_OK);
    NUMBER(ZC_E_INVALID);
    NUMBER(ZC_E_NOMEM);
    NUMBER(ZC_E_NOT_FOUND);
    NUMBER(ZC_E_BUDGET);
    NUMBER(ZC_E_LIMIT);
    NUMBER(ZC_E_IO);
    NUMBER(ZC_E_CORRUPT);
    NUMBER(ZC_E_STATE);
    NUMBER(ZC_E_UNSUPPORTED);
    NUMBER(ZC_E_EXISTS);
    NUMBER(ZC_E_ACCESS);
    NUMBER(ZC_F32);
    NUMBER(ZC_F16);
    NUMBER(ZC_BF16);
    NUMBER(ZC_F64);
    NUMBER(ZC_F8_E4M3FN);
    NUMBER(ZC_F8_E5M2);
    NUMBER(ZC_I8);
    NUMBER(ZC_I16);
    NUMBER(ZC_I32);
    NUMBER(ZC_I64);
    NUMBER(ZC_U8);
    NUMBER(ZC_BOOL);
    NUMBER(ZC_DTYPE_COUNT);
    NUMBER(ZC_DIGEST_NONE);
    NUMBER(ZC_DIGEST_XXH64);
    NUMBER(ZC_DIGEST_XXH3_64);
    NUMBER(ZC_DIGEST_DEFAULT);
    NUMBER(ZC_DIGEST_TEXT_SIZE);
    NUMBER(ZC_TIER_HOST);
    NUMBER(ZC_TIER_DEVICE);
    NUMBER(ZC_TIER_DISK);
    NUMBER(ZC_PUT_SPILL);
    NUMBER(ZC_PUT_MAY_EVICT_NEWEST);
    NUMBER(ZC_DROP_DISK);
    NUMBER(ZC_SEAM_MAX_WINDOW);
    NUMBER(ZC_VERIFY_REHASH);
    NUMBER(ZC_FILM_VERIFY);
    NUMBER(ZC_RECORD_NOT_COVERED);
    NUMBER(ZC_RECORD_OK);
    NUMBER(ZC_RECORD_BAD);
    NUMBER(ZC_DL_CPU);
    NUMBER(ZC_DL_CUDA);
    NUMBER(ZC_DL_CUDA_HOST);
    NUMBER(ZC_DL_OPENCL);
    NUMBER(ZC_DL_VULKAN);
    NUMBER(ZC_DL_METAL);
    NUMBER(ZC_DL_VPI);
    NUMBER(ZC_DL_ROCM);
    NUMBER(ZC_DL_ROCM_HOST);
    NUMBER(ZC_DL_EXT_DEV);
    NUMBER(ZC_DL_CUDA_MANAGED);
    NUMBER(ZC_DL_ONEAPI);
    NUMBER(ZC_DL_WEBGPU);
    NUMBER(ZC_DL_HEXAGON);
    NUMBER(ZC_DL_MAIA);
    NUMBER(ZC_DL_INT);
    NUMBER(ZC_DL_UINT);
    NUMBER(ZC_DL_FLOAT);
    NUMBER(ZC_DL_OPAQUE_HANDLE);
    NUMBER(ZC_DL_BFLOAT);
    NUMBER(ZC_DL_COMPLEX);
    NUMBER(ZC_DL_BOOL);
    NUMBER(ZC_DL_FLOAT8_E4M3FN);
    NUMBER(ZC_DL_FLOAT8_E5M2);
    NUMBER(ZC_DL_FLAG_READ_ONLY);
    NUMBER(ZC_DL_FLAG_IS_COPIED);
    NUMBER(ZC_DLPACK_MAJOR);
    NUMBER(ZC_DLPACK_MINOR);
    REAL(ZC_FILM_SEAM_GREEN_BELOW);
    REAL(ZC_FILM_SEAM_RED_FROM);
}

/* Every string #define of zc.h, and the names of the engine's own files in a spill folder. */
static void strings(abi_writer *w)
{
    TEXT(ZC_VERSION_STRING);
    TEXT(ZC_FILE_META_FORMAT);
    TEXT(ZC_FILE_FORMAT_VALUE);
    TEXT(ZC_FILE_META_TAG);
    TEXT(ZC_FILE_META_GENERATION);
    TEXT(ZC_FILE_META_DIGEST_PREFIX);
    TEXT(ZC_FILE_META_RECORD);
    TEXT(ZC_FILE_LATENT_TENSOR);
    TEXT(ZC_FILE_LATENT_MARKER);
    TEXT(ZC_FILE_META_SEAM_PREFIX);
    TEXT(ZC_FILE_META_HOP_SEAM);
    TEXT(ZC_SPILL_SUFFIX);
    TEXT(ZC_TMP_PREFIX);
    TEXT(ZC_REJECTED_SUFFIX);
    TEXT(ZC_GEN_PREFIX);
    TEXT(ZC_OWNER_PREFIX);
    TEXT(ZC_OWNER_SUFFIX);
    TEXT(ZC_FOLDER_LOCK);
    TEXT(ZC_FILM_PREFIX);
    TEXT(ZC_FILM_SUFFIX);
}

/* Each zc_dtype in code order: its safetensors name, bytes and DLPack type. */
static void dtypes(abi_writer *w)
{
    for (int code = 0; code < ZC_DTYPE_COUNT; code++) {
        zc_dl_dtype dl = {0, 0, 0};
        zc__dtype_to_dlpack(code, &dl);
        zc__jb_raw(&w->jb, code ? ",{\"code\":" : "{\"code\":");
        zc__jb_printf(&w->jb, "%d,\"name\":", code);
        zc__jb_string(&w->jb, zc_dtype_name(code));
        zc__jb_printf(&w->jb, ",\"size\":%llu,\"dlpack_code\":%u,\"dlpack_bits\":%u}",
                      (unsigned long long)zc_dtype_size(code), (unsigned)dl.code,
                      (unsigned)dl.bits);
    }
}

/* Each digest algorithm's code (as text) -> the prefix of its digests as text. */
static void digest_algos(abi_writer *w)
{
    for (int algo = ZC_DIGEST_XXH64; algo <= ZC_DIGEST_XXH3_64; algo++) {
        char code[16];
        snprintf(code, sizeof code, "%d", algo);
        text(w, code, zc_digest_algo_name(algo));
    }
}

int zc_abi_describe(char *buf, size_t cap, size_t *needed)
{
    abi_writer writer, *w = &writer;
    zc__jb_init(&w->jb);
    zc__jb_raw(&w->jb, "{");
    w->first = 1;
    text(w, "version", ZC_VERSION_STRING);
    number(w, "pointer_size", (long long)sizeof(void *));
    section(w, "structs", "{}", structs);
    section(w, "numbers", "{}", numbers);
    section(w, "strings", "{}", strings);
    section(w, "dtypes", "[]", dtypes);
    section(w, "digest_algos", "{}", digest_algos);
    zc__jb_raw(&w->jb, "}");
    return zc__jb_deliver(&w->jb, buf, cap, needed, "the ABI");
}
