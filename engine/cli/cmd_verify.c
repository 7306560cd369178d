/* cmd_verify.c — "zc verify [--allow-missing] FILE...": check every digest. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct {
    uint32_t checked;  /* tensors that count (not the empty ComfyUI marker without digest) */
    uint32_t matched;
    uint32_t missing;  /* without a recorded digest */
    uint32_t failed;   /* digest mismatch or unreadable */
    FILE *problems;    /* "tensor x digest mismatch (...)", joined by "; " */
    FILE *missing_names;
    char *problems_text;
    char *missing_text;
    size_t problems_len;
    size_t missing_len;
} verify_result;

static int result_init(verify_result *r)
{
    memset(r, 0, sizeof *r);
    r->problems = open_memstream(&r->problems_text, &r->problems_len);
    r->missing_names = open_memstream(&r->missing_text, &r->missing_len);
    return r->problems != NULL && r->missing_names != NULL ? 0 : -1;
}

/* Close the streams so the texts are complete. */
static void result_finish(verify_result *r)
{
    if (r->problems != NULL)
        fclose(r->problems);
    if (r->missing_names != NULL)
        fclose(r->missing_names);
    r->problems = r->missing_names = NULL;
}

static void result_free(verify_result *r)
{
    result_finish(r);
    free(r->problems_text);
    free(r->missing_text);
}

static void add_problem_prefix(verify_result *r, const char *name)
{
    if (r->failed > 0)
        fputs("; ", r->problems);
    r->failed++;
    fputs("tensor ", r->problems);
    cli_put_text(r->problems, name);
}

static void note_tensor(verify_result *r, const cli_tensor *t, int loaded)
{
    const char *name = t->info.name != NULL ? t->info.name : "?";
    if (!loaded) {
        r->checked++;
        add_problem_prefix(r, name);
        fputs(" unreadable: ", r->problems);
        cli_put_text(r->problems, t->error);
        cli_error("%s", t->error);
    } else if (t->digest_state == CLI_DIGEST_MISMATCH) {
        char recorded[32], computed[32];
        cli_digest_format(t->info.recorded_digest, recorded);
        cli_digest_format(t->computed, computed);
        r->checked++;
        add_problem_prefix(r, name);
        fprintf(r->problems, " digest mismatch (recorded %s, computed %s)", recorded, computed);
    } else if (t->digest_state == CLI_DIGEST_MATCH) {
        r->checked++;
        r->matched++;
    } else if (!cli_is_empty_marker(&t->info)) {
        r->checked++;
        fputs(r->missing > 0 ? ", " : "", r->missing_names);
        cli_put_text(r->missing_names, name);
        r->missing++;
    }
}

static void check_tensors(zc_file *f, const char *path, verify_result *r)
{
    for (uint32_t i = 0; i < zc_file_count(f); i++) {
        cli_tensor t;
        int loaded = cli_tensor_load(f, path, i, &t) == 0;
        note_tensor(r, &t, loaded);
        cli_tensor_free(&t);
    }
}

static void put_missing(const verify_result *r)
{
    printf("no digest recorded for tensor%s %s", cli_plural(r->missing), r->missing_text);
}

/* Print the file's line.  @return 1 when the file passes. */
static int report(const char *path, const verify_result *r, int allow_missing)
{
    int passes = r->failed == 0 && (r->missing == 0 || allow_missing);
    fputs(r->failed > 0 ? "FAIL " : passes ? "OK " : "NO-DIGEST ", stdout);
    cli_put_text(stdout, path);
    if (r->failed > 0) {
        printf(": %s", r->problems_text);
        if (r->missing > 0 && !allow_missing) {
            fputs("; ", stdout);
            put_missing(r);
        }
    } else if (!passes) {
        fputs(": ", stdout);
        put_missing(r);
        fputs(" (use --allow-missing to accept files without digests)", stdout);
    } else if (r->missing > 0) {
        printf(" (%" PRIu32 " tensor%s: %" PRIu32 " digest%s match, %" PRIu32
               " without digest allowed)", r->checked, cli_plural(r->checked), r->matched,
               r->matched == 1 ? "" : "s", r->missing);
    } else {
        printf(" (%" PRIu32 " tensor%s, all digests match)", r->checked, cli_plural(r->checked));
    }
    fputc('\n', stdout);
    return passes;
}

static int verify_file(const char *path, int allow_missing)
{
    zc_file *f = NULL;
    int rc = zc_file_open(path, &f);
    if (rc != ZC_OK) {
        fputs("FAIL ", stdout);
        cli_put_text(stdout, path);
        fputs(": cannot open: ", stdout);
        cli_put_text(stdout, cli_engine_message(rc));
        fputc('\n', stdout);
        cli_error("%s", cli_engine_message(rc));
        return 0;
    }
    verify_result r;
    int passes = 0;
    if (result_init(&r) != 0) {
        cli_error("out of memory");
    } else {
        check_tensors(f, path, &r);
        result_finish(&r);
        passes = report(path, &r, allow_missing);
    }
    result_free(&r);
    zc_file_close(f);
    return passes;
}

int cli_cmd_verify(int argc, char **argv)
{
    int allow_missing = 0;
    const cli_flag flags[] = {{"--allow-missing", &allow_missing}, {NULL, NULL}};
    cli_args args;
    int rc = cli_args_parse("verify", argc, argv, flags, &args);
    if (rc != 0)
        return rc;
    if (args.help) {
        cli_help_command("verify", stdout);
        rc = CLI_EXIT_OK;
    } else if (args.count == 0) {
        rc = cli_usage_error("verify", "expected at least one file");
    } else {
        rc = CLI_EXIT_OK;
        for (int i = 0; i < args.count; i++) {
            if (!verify_file(args.operands[i], allow_missing))
                rc = CLI_EXIT_FAIL;
        }
    }
    cli_args_free(&args);
    return rc;
}
