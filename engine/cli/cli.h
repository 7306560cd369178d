/*
 * cli.h — shared declarations of the zc command-line tool.
 *
 * The tool uses only the public API in zc.h.  Every command is a function
 * cli_cmd_<name>(argc, argv) that receives the arguments after its own name
 * and returns the process exit status.
 */
#ifndef ZC_CLI_H
#define ZC_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/compiler.h"
#include "core/jsonbuf.h"
#include "zc.h"

/* Exit statuses shared by every command. */
enum {
    CLI_EXIT_OK = 0,    /* success; for diff: every tensor bit-identical */
    CLI_EXIT_FAIL = 1,  /* a check failed: mismatch, corrupt file, missing digest, difference */
    CLI_EXIT_USAGE = 2  /* bad arguments; for diff and ls also any error */
};

/* ---- commands (cmd_*.c) ---- */

int cli_cmd_ls(int argc, char **argv);
int cli_cmd_inspect(int argc, char **argv);
int cli_cmd_verify(int argc, char **argv);
int cli_cmd_diff(int argc, char **argv);
int cli_cmd_dump(int argc, char **argv);
int cli_cmd_film(int argc, char **argv);

/* ---- help (help.c) ---- */

/* The overview printed by "zc --help". */
void cli_help_main(FILE *out);

/* The help of one command.  @return 0, or -1 when cmd is not a command. */
int cli_help_command(const char *cmd, FILE *out);

/* ---- arguments (args.c) ---- */

/* A boolean option: "--name" sets *flag to 1. */
typedef struct {
    const char *name;
    int *flag;
} cli_flag;

typedef struct {
    char **operands; /* malloc'd array of the non-option arguments */
    int count;
    int help;        /* --help or -h was given */
} cli_args;

/* Split argv into flags (from the NULL-terminated table) and operands.
 * "--" ends the options; "-" alone is an operand.  An unknown option prints
 * a usage error.  @return 0, or CLI_EXIT_USAGE (message already printed). */
int cli_args_parse(const char *cmd, int argc, char **argv, const cli_flag *flags, cli_args *out);
void cli_args_free(cli_args *args);

/* How many operands a command takes besides its flags: from min to max (max -1: no
 * limit), and how its usage error names them ("two files A B"). */
typedef struct {
    int min, max;
    const char *what;
} cli_operands;

/* A command's work once its arguments are parsed and counted; opts is the
 * command's own (what its flags set).  @return the exit status. */
typedef int (*cli_run_fn)(const cli_args *args, void *opts);

/* Run command cmd: parse argv (cli_args_parse, with flags), print the
 * command's help for --help, refuse a wrong number of operands with a usage
 * error ("expected <what>, got N arguments"), else call run.  The arguments
 * are freed before it returns.  @return the exit status. */
int cli_command(const char *cmd, int argc, char **argv, const cli_flag *flags, cli_operands want,
                cli_run_fn run, void *opts);

/* Print "zc CMD: message" and a pointer to the help; return CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) ZC_PRINTF(2, 3);

/* ---- errors and text output (output.c) ---- */

/* Print "zc: message" on stderr. */
void cli_error(const char *fmt, ...) ZC_PRINTF(1, 2);

/* The engine's message for a failed call: zc_last_error(), or the status
 * name when the engine left no message. */
const char *cli_engine_message(int status);

/* Copy of the engine's message into buf (the engine's pointer is only valid
 * until its next failing call). */
void cli_engine_message_copy(int status, char *buf, size_t cap);

/* "xxh3:" or "xxh64:" + 16 lowercase hex digits into out (zc_digest_format). */
void cli_digest_format(int algo, uint64_t digest, char out[ZC_DIGEST_TEXT_SIZE]);

/* Write s with bytes that would break a line-oriented output escaped:
 * control bytes and DEL as \xNN, backslash as \\.  Other bytes (UTF-8
 * included) pass through. */
void cli_put_text(FILE *out, const char *s);

/* cli_put_text of the first len bytes of s. */
void cli_put_text_n(FILE *out, const char *s, size_t len);

/* cli_put_text into a growing buffer. */
void cli_text_append(zc_jsonbuf *jb, const char *s);

/* Write s as a JSON string literal, quotes included.  Invalid UTF-8 bytes
 * are replaced by U+FFFD so the output is always valid JSON. */
void cli_put_json_string(FILE *out, const char *s);

/* Write a shape as "[d0,d1,...]" ("[]" for rank 0). */
void cli_put_shape(FILE *out, int32_t ndim, const int64_t *shape);

/* Plural helper: "" for 1, "s" otherwise. */
const char *cli_plural(uint64_t n);

/* ---- tensors read from files (tensor.c) ---- */

typedef enum {
    CLI_DIGEST_NONE = 0,   /* the file records no digest for the tensor */
    CLI_DIGEST_MATCH,      /* recorded digest equals the digest of the bytes */
    CLI_DIGEST_MISMATCH    /* recorded digest differs: the bytes changed */
} cli_digest_state;

typedef struct {
    zc_file_tensor info;
    void *data;            /* malloc'd copy of the bytes (info.nbytes, at least 1 allocated) */
    uint64_t computed;     /* digest of data with computed_algo, computed by the tool */
    int computed_algo;     /* the recorded digest's algorithm, else XXH3-64 */
    int digest_state;      /* cli_digest_state */
    char error[768];       /* why the bytes could not be read ("" on success) */
} cli_tensor;

/* Read tensor index of an open file into t (zeroed first).  path is the
 * file's path, used to re-read the stored bytes when the reader refuses
 * them for a digest mismatch, so the mismatch can be shown and diffed.
 * @return 0 with t->data filled and t->digest_state set, or -1 with
 * t->error set and t->data NULL.  Free with cli_tensor_free either way. */
int cli_tensor_load(zc_file *file, const char *path, uint32_t index, cli_tensor *t);
void cli_tensor_free(cli_tensor *t);

/* 1 when the tensor is ComfyUI's empty marker: it holds no data, so it is
 * exempt from the digest requirement of verify and ls. */
int cli_is_empty_marker(const zc_file_tensor *t);

/* Number of elements of a tensor (product of its shape; 1 for rank 0). */
uint64_t cli_element_count(const zc_file_tensor *t);

/* Size of a file in bytes, or -1 when stat fails. */
int64_t cli_file_size(const char *path);

/* ---- elements (element.c) ---- */

/* Value of element index of an array of dtype as a double.  Floats decode
 * exactly (F8/F16/BF16/F32 widen without rounding); integers convert to the
 * nearest double (exact up to 2^53); BOOL is 0 or 1 (any non-zero byte is
 * true).  Unknown dtypes decode as NaN. */
double cli_element_value(int dtype, const void *data, uint64_t index);

/* 1 for the floating-point dtypes (those that can hold NaN). */
int cli_dtype_is_float(int dtype);

/* 1 for the signed and unsigned integer dtypes (not BOOL). */
int cli_dtype_is_integer(int dtype);

/* Exact value of an integer element (I8..I64, U8, BOOL). */
int64_t cli_element_int64(int dtype, const void *data, uint64_t index);

/* ---- comparison (compare.c) ---- */

typedef struct {
    uint64_t elements;     /* elements compared */
    uint64_t differing;    /* elements whose bytes differ */
    uint64_t nan_counted;  /* differing elements with a NaN on either side */
    double sum_sq;         /* sum of squared errors (compensated) */
    double sum_comp;       /* compensation term of sum_sq */
    double max_abs;        /* largest |a - b| */
    double peak;           /* largest finite |a| */
} cli_diff_stats;

/* Compare two arrays of the same dtype and element count. */
void cli_diff_compute(int dtype, const void *a, const void *b, uint64_t count, cli_diff_stats *out);

/* MSE over the elements without a NaN mismatch (NaN when there are none). */
double cli_diff_mse(const cli_diff_stats *s);

/* PSNR in dB: 10*log10(peak^2 / MSE); +inf when MSE is 0, -inf when the
 * peak is 0 and MSE is not, NaN when MSE is NaN. */
double cli_diff_psnr(const cli_diff_stats *s);

/* Print a double the way the tool prints numbers: "nan", "inf", "-inf" or
 * printf's %.*g. */
void cli_put_number(FILE *out, double v, int precision);

/* Bytes of tensor data in a file (the sum over its tensors). */
uint64_t cli_data_bytes(const zc_file *f);

#endif /* ZC_CLI_H */
