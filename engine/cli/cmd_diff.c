/* cmd_diff.c — "zc diff A B": compare two files tensor by tensor. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "cli.h"

typedef struct {
    const char *path;
    zc_file *file;
} diff_side;

typedef struct {
    uint32_t tensors;
    uint32_t identical;
    uint32_t different;
    uint32_t errors;
} diff_summary;

static void put_tensor_prefix(const char *name)
{
    fputs("tensor ", stdout);
    cli_put_text(stdout, name);
    fputs(": ", stdout);
}

static int same_shape(const zc_file_tensor *a, const zc_file_tensor *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int32_t i = 0; i < a->ndim && i < ZC_MAX_RANK; i++) {
        if (a->shape[i] != b->shape[i])
            return 0;
    }
    return 1;
}

static const char *dtype_text(int dtype)
{
    const char *name = zc_dtype_name(dtype);
    return name != NULL ? name : "?";
}

/* Print a dtype or shape mismatch.  @return 1 when there was one. */
static int layout_mismatch(const zc_file_tensor *a, const zc_file_tensor *b)
{
    if (a->dtype != b->dtype) {
        put_tensor_prefix(a->name);
        printf("dtype mismatch (A %s, B %s)\n", dtype_text(a->dtype), dtype_text(b->dtype));
        return 1;
    }
    if (!same_shape(a, b)) {
        put_tensor_prefix(a->name);
        fputs("shape mismatch (A ", stdout);
        cli_put_shape(stdout, a->ndim, a->shape);
        fputs(", B ", stdout);
        cli_put_shape(stdout, b->ndim, b->shape);
        fputs(")\n", stdout);
        return 1;
    }
    return 0;
}

/* Read one side's tensor; warn about a digest mismatch.  @return 0 or -1. */
static int load_side(const diff_side *side, uint32_t index, const char *name, cli_tensor *t)
{
    if (cli_tensor_load(side->file, side->path, index, t) != 0) {
        put_tensor_prefix(name);
        fputs("error: ", stdout);
        cli_put_text(stdout, t->error);
        fputc('\n', stdout);
        cli_error("%s", t->error);
        return -1;
    }
    if (t->digest_state == CLI_DIGEST_MISMATCH) {
        char recorded[ZC_DIGEST_TEXT_SIZE], computed[ZC_DIGEST_TEXT_SIZE];
        cli_digest_format(t->info.digest_algo, t->info.recorded_digest, recorded);
        cli_digest_format(t->computed_algo, t->computed, computed);
        cli_error("warning: %s: tensor %s: bytes do not match the recorded digest (recorded %s, "
                  "computed %s); comparing the bytes as stored", side->path, name, recorded,
                  computed);
    }
    return 0;
}

static void put_stats(const cli_diff_stats *s)
{
    fputs("differs mse=", stdout);
    cli_put_number(stdout, cli_diff_mse(s), 9);
    fputs(" max_abs=", stdout);
    cli_put_number(stdout, s->max_abs, 9);
    double psnr = cli_diff_psnr(s);
    fputs(" psnr=", stdout);
    if (isfinite(psnr))
        printf("%.4f", psnr);
    else
        cli_put_number(stdout, psnr, 9);
    fputs(" dB peak=", stdout);
    cli_put_number(stdout, s->peak, 9);
    printf(" elements=%" PRIu64 " differing=%" PRIu64 " nan=%" PRIu64 "\n", s->elements,
           s->differing, s->nan_counted);
}

/* Both tensors are loaded, same dtype and shape: identical or measured. */
static void compare_loaded(const cli_tensor *ta, const cli_tensor *tb, diff_summary *sum)
{
    const char *name = ta->info.name;
    int equal = ta->info.nbytes == tb->info.nbytes &&
                memcmp(ta->data, tb->data, (size_t)ta->info.nbytes) == 0;
    if (equal && strcmp(name, ZC_FILE_LATENT_MARKER) == 0 && ta->info.nbytes == 0) {
        sum->tensors--; /* ComfyUI's marker, identical on both sides: not listed */
        return;
    }
    put_tensor_prefix(name);
    if (equal) {
        sum->identical++;
        fputs("identical (bit-for-bit)\n", stdout);
        return;
    }
    cli_diff_stats stats;
    cli_diff_compute(ta->info.dtype, ta->data, tb->data, cli_element_count(&ta->info), &stats);
    sum->different++;
    put_stats(&stats);
}

static void diff_pair(const diff_side *a, uint32_t ia, const diff_side *b, uint32_t ib,
                      diff_summary *sum)
{
    zc_file_tensor ia_info, ib_info;
    if (zc_file_tensor_at(a->file, ia, &ia_info) != ZC_OK ||
        zc_file_tensor_at(b->file, ib, &ib_info) != ZC_OK) {
        sum->errors++;
        cli_error("%s", zc_last_error());
        return;
    }
    if (layout_mismatch(&ia_info, &ib_info)) {
        sum->different++;
        return;
    }
    cli_tensor ta, tb;
    int ok = load_side(a, ia, ia_info.name, &ta) == 0;
    ok = ok && load_side(b, ib, ib_info.name, &tb) == 0;
    if (ok) {
        compare_loaded(&ta, &tb, sum);
        cli_tensor_free(&tb);
    } else {
        sum->errors++;
    }
    cli_tensor_free(&ta);
}

static void only_in(const char *name, const char *side, diff_summary *sum)
{
    put_tensor_prefix(name);
    printf("only in %s\n", side);
    sum->different++;
}

static void diff_files(const diff_side *a, const diff_side *b, diff_summary *sum)
{
    for (uint32_t i = 0; i < zc_file_count(a->file); i++) {
        zc_file_tensor t;
        uint32_t j;
        if (zc_file_tensor_at(a->file, i, &t) != ZC_OK)
            continue;
        sum->tensors++;
        if (zc_file_find(b->file, t.name, &j) == ZC_OK)
            diff_pair(a, i, b, j, sum);
        else
            only_in(t.name, "A", sum);
    }
    for (uint32_t j = 0; j < zc_file_count(b->file); j++) {
        zc_file_tensor t;
        uint32_t i;
        if (zc_file_tensor_at(b->file, j, &t) != ZC_OK || zc_file_find(a->file, t.name, &i) == ZC_OK)
            continue;
        sum->tensors++;
        only_in(t.name, "B", sum);
    }
}

static int open_side(diff_side *side, const char *path)
{
    side->path = path;
    side->file = NULL;
    int rc = zc_file_open(path, &side->file);
    if (rc != ZC_OK) {
        cli_error("%s", cli_engine_message(rc));
        return -1;
    }
    return 0;
}

static int run_diff(const char *path_a, const char *path_b)
{
    diff_side a, b;
    if (open_side(&a, path_a) != 0)
        return CLI_EXIT_USAGE;
    if (open_side(&b, path_b) != 0) {
        zc_file_close(a.file);
        return CLI_EXIT_USAGE;
    }
    diff_summary sum = {0};
    diff_files(&a, &b, &sum);
    printf("summary: %" PRIu32 " tensor%s, %" PRIu32 " identical, %" PRIu32 " different, %" PRIu32
           " unreadable\n", sum.tensors, cli_plural(sum.tensors), sum.identical, sum.different,
           sum.errors);
    zc_file_close(a.file);
    zc_file_close(b.file);
    if (sum.errors > 0)
        return CLI_EXIT_USAGE;
    return sum.different > 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static int diff_operands(const cli_args *args, void *opts)
{
    (void)opts;
    return run_diff(args->operands[0], args->operands[1]);
}

int cli_cmd_diff(int argc, char **argv)
{
    return cli_command("diff", argc, argv, NULL, (cli_operands){2, 2, "two files A B"}, diff_operands,
                       NULL);
}
