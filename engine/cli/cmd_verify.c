/* cmd_verify.c — "zc verify [--allow-missing] FILE...": check every digest,
 * the tensors' and the record digest of the header (dtype, shape, metadata). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct {
    uint32_t checked;  /* tensors that count (not the empty ComfyUI marker without digest) */
    uint32_t matched;
    uint32_t missing;  /* without a recorded digest */
    uint32_t failed;   /* digest mismatch or unreadable */
    zc_jsonbuf problems; /* "tensor x digest mismatch (...)", joined by "; " */
    zc_jsonbuf missing_names;
    int record;        /* zc_record_status of the header */
} verify_result;

static void result_init(verify_result *r)
{
    memset(r, 0, sizeof *r);
    zc__jb_init(&r->problems);
    zc__jb_init(&r->missing_names);
}

static void result_free(verify_result *r)
{
    zc__jb_free(&r->problems);
    zc__jb_free(&r->missing_names);
}

/* The buffer's text ("" when empty). */
static const char *text_of(const zc_jsonbuf *jb)
{
    return jb->data ? jb->data : "";
}

static void add_problem_prefix(verify_result *r, const char *name)
{
    if (r->failed > 0)
        zc__jb_raw(&r->problems, "; ");
    r->failed++;
    zc__jb_raw(&r->problems, "tensor ");
    cli_text_append(&r->problems, name);
}

static void note_tensor(verify_result *r, const cli_tensor *t, int loaded)
{
    const char *name = t->info.name != NULL ? t->info.name : "?";
    if (!loaded) {
        r->checked++;
        add_problem_prefix(r, name);
        zc__jb_raw(&r->problems, " unreadable: ");
        cli_text_append(&r->problems, t->error);
        cli_error("%s", t->error);
    } else if (t->digest_state == CLI_DIGEST_MISMATCH) {
        char recorded[ZC_DIGEST_TEXT_SIZE], computed[ZC_DIGEST_TEXT_SIZE];
        cli_digest_format(t->info.digest_algo, t->info.recorded_digest, recorded);
        cli_digest_format(t->computed_algo, t->computed, computed);
        r->checked++;
        add_problem_prefix(r, name);
        zc__jb_printf(&r->problems, " digest mismatch (recorded %s, computed %s)", recorded,
                      computed);
    } else if (t->digest_state == CLI_DIGEST_MATCH) {
        r->checked++;
        r->matched++;
    } else if (!cli_is_empty_marker(&t->info)) {
        r->checked++;
        zc__jb_raw(&r->missing_names, r->missing > 0 ? ", " : "");
        cli_text_append(&r->missing_names, name);
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

/* The record digest, checked when the file was opened: a changed header is a failure. */
static void check_record(zc_file *f, verify_result *r)
{
    const char *why = "";
    r->record = zc_file_record(f, &why);
    if (r->record != ZC_RECORD_BAD)
        return;
    if (r->failed > 0)
        zc__jb_raw(&r->problems, "; ");
    r->failed++;
    cli_text_append(&r->problems, why);
}

/* How the OK line ends: the record's state. */
static const char *record_note(const verify_result *r)
{
    return r->record == ZC_RECORD_OK ? ", record matches" : "; record not covered";
}

static void put_missing(const verify_result *r)
{
    printf("no digest recorded for tensor%s %s", cli_plural(r->missing), text_of(&r->missing_names));
}

/* Print the file's line.  @return 1 when the file passes. */
static int report(const char *path, const verify_result *r, int allow_missing)
{
    int passes = r->failed == 0 && (r->missing == 0 || allow_missing);
    fputs(r->failed > 0 ? "FAIL " : passes ? "OK " : "NO-DIGEST ", stdout);
    cli_put_text(stdout, path);
    if (r->failed > 0) {
        printf(": %s", text_of(&r->problems));
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
               " without digest allowed%s)", r->checked, cli_plural(r->checked), r->matched,
               r->matched == 1 ? "" : "s", r->missing, record_note(r));
    } else {
        printf(" (%" PRIu32 " tensor%s, all digests match%s)", r->checked, cli_plural(r->checked),
               record_note(r));
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
    result_init(&r);
    check_record(f, &r);
    check_tensors(f, path, &r);
    if (r.problems.failed || r.missing_names.failed)
        cli_error("out of memory");
    else
        passes = report(path, &r, allow_missing);
    result_free(&r);
    zc_file_close(f);
    return passes;
}

static int verify_operands(const cli_args *args, void *opts)
{
    int allow_missing = *(const int *)opts;
    int rc = CLI_EXIT_OK;
    for (int i = 0; i < args->count; i++) {
        if (!verify_file(args->operands[i], allow_missing))
            rc = CLI_EXIT_FAIL;
    }
    return rc;
}

int cli_cmd_verify(int argc, char **argv)
{
    int allow_missing = 0;
    const cli_flag flags[] = {{"--allow-missing", &allow_missing}, {NULL, NULL}};
    return cli_command("verify", argc, argv, flags, (cli_operands){1, -1, "at least one file"},
                       verify_operands, &allow_missing);
}
