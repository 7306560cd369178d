/* cmd_inspect.c — "zc inspect [--json] [--full] FILE": tensors, digests, metadata. */
#include <inttypes.h>
#include <string.h>

#include "cli.h"

#define META_TEXT_LIMIT 200u /* bytes of a metadata value shown without --full */

typedef struct {
    int json;
    int full;
} inspect_opts;

typedef struct {
    uint32_t match;
    uint32_t mismatch;
    uint32_t none;
    uint32_t unreadable;
} inspect_counts;

static const char *status_word(const cli_tensor *t, int loaded)
{
    if (!loaded)
        return "error";
    switch (t->digest_state) {
    case CLI_DIGEST_MATCH: return "match";
    case CLI_DIGEST_MISMATCH: return "MISMATCH";
    default: return "none recorded";
    }
}

static void count_status(inspect_counts *c, const cli_tensor *t, int loaded)
{
    if (!loaded)
        c->unreadable++;
    else if (t->digest_state == CLI_DIGEST_MATCH)
        c->match++;
    else if (t->digest_state == CLI_DIGEST_MISMATCH)
        c->mismatch++;
    else
        c->none++;
}

static const char *dtype_text(int dtype)
{
    const char *name = zc_dtype_name(dtype);
    return name != NULL ? name : "?";
}

/* ---- text ---- */

static void text_tensor(const cli_tensor *t, int loaded)
{
    char recorded[ZC_DIGEST_TEXT_SIZE] = "-", computed[ZC_DIGEST_TEXT_SIZE] = "-";
    if (t->info.has_digest)
        cli_digest_format(t->info.digest_algo, t->info.recorded_digest, recorded);
    if (loaded)
        cli_digest_format(t->computed_algo, t->computed, computed);
    fputs("tensor ", stdout);
    cli_put_text(stdout, t->info.name != NULL ? t->info.name : "?");
    printf(" dtype=%s shape=", dtype_text(t->info.dtype));
    cli_put_shape(stdout, t->info.ndim, t->info.shape);
    printf(" bytes=%" PRIu64 " offset=%" PRIu64 " recorded=%s computed=%s ", t->info.nbytes,
           t->info.offset, recorded, computed);
    if (loaded) {
        fputs(status_word(t, loaded), stdout);
    } else {
        fputs("ERROR ", stdout);
        cli_put_text(stdout, t->error);
    }
    fputc('\n', stdout);
}

static void text_meta_value(const char *value, int full)
{
    size_t len = strlen(value);
    if (full || len <= META_TEXT_LIMIT) {
        cli_put_text(stdout, value);
        return;
    }
    size_t cut = META_TEXT_LIMIT;
    while (cut > 0 && ((unsigned char)value[cut] & 0xc0u) == 0x80u)
        cut--; /* do not split a UTF-8 sequence */
    cli_put_text_n(stdout, value, cut);
    printf("... (%zu bytes, see --full)", len);
}

static void text_metadata(const zc_file *f, int full)
{
    printf("metadata: %" PRIu32 "\n", zc_file_meta_count(f));
    for (uint32_t i = 0; i < zc_file_meta_count(f); i++) {
        const char *key = NULL, *value = NULL;
        if (zc_file_meta_at(f, i, &key, &value) != ZC_OK || key == NULL || value == NULL)
            continue;
        fputs("meta ", stdout);
        cli_put_text(stdout, key);
        fputs(" = ", stdout);
        text_meta_value(value, full);
        fputc('\n', stdout);
    }
}

static void text_header(const zc_file *f, const char *path)
{
    fputs("file: ", stdout);
    cli_put_text(stdout, path);
    printf(" (%" PRId64 " bytes)\n", cli_file_size(path));
    printf("tensors: %" PRIu32 " (%" PRIu64 " data bytes)\n", zc_file_count(f), cli_data_bytes(f));
}

static void text_summary(const inspect_counts *c)
{
    printf("summary: %" PRIu32 " match, %" PRIu32 " MISMATCH, %" PRIu32 " none recorded, %" PRIu32
           " unreadable\n", c->match, c->mismatch, c->none, c->unreadable);
}

/* ---- JSON ---- */

static void json_digest(const char *key, int present, int algo, uint64_t digest)
{
    char text[ZC_DIGEST_TEXT_SIZE];
    printf(",\"%s\":", key);
    if (!present) {
        fputs("null", stdout);
        return;
    }
    cli_digest_format(algo, digest, text);
    cli_put_json_string(stdout, text);
}

static void json_tensor(const cli_tensor *t, int loaded)
{
    fputs("{\"name\":", stdout);
    cli_put_json_string(stdout, t->info.name != NULL ? t->info.name : "");
    fputs(",\"dtype\":", stdout);
    cli_put_json_string(stdout, dtype_text(t->info.dtype));
    fputs(",\"shape\":", stdout);
    cli_put_shape(stdout, t->info.ndim, t->info.shape);
    printf(",\"bytes\":%" PRIu64 ",\"offset\":%" PRIu64, t->info.nbytes, t->info.offset);
    json_digest("recorded_digest", t->info.has_digest, t->info.digest_algo,
                t->info.recorded_digest);
    json_digest("computed_digest", loaded, t->computed_algo, t->computed);
    fputs(",\"status\":", stdout);
    cli_put_json_string(stdout, status_word(t, loaded));
    if (!loaded) {
        fputs(",\"error\":", stdout);
        cli_put_json_string(stdout, t->error);
    }
    fputc('}', stdout);
}

static void json_metadata(const zc_file *f)
{
    fputs(",\"metadata\":{", stdout);
    int first = 1;
    for (uint32_t i = 0; i < zc_file_meta_count(f); i++) {
        const char *key = NULL, *value = NULL;
        if (zc_file_meta_at(f, i, &key, &value) != ZC_OK || key == NULL || value == NULL)
            continue;
        if (!first)
            fputc(',', stdout);
        first = 0;
        cli_put_json_string(stdout, key);
        fputc(':', stdout);
        cli_put_json_string(stdout, value);
    }
    fputc('}', stdout);
}

static void json_open_error(const char *path, const char *message)
{
    fputs("{\"file\":", stdout);
    cli_put_json_string(stdout, path);
    fputs(",\"ok\":false,\"error\":", stdout);
    cli_put_json_string(stdout, message);
    fputs("}\n", stdout);
}

/* ---- the command ---- */

static void inspect_tensors(zc_file *f, const char *path, const inspect_opts *o, inspect_counts *c)
{
    if (o->json)
        fputs(",\"tensors\":[", stdout);
    for (uint32_t i = 0; i < zc_file_count(f); i++) {
        cli_tensor t;
        int loaded = cli_tensor_load(f, path, i, &t) == 0;
        count_status(c, &t, loaded);
        if (o->json) {
            if (i > 0)
                fputc(',', stdout);
            json_tensor(&t, loaded);
        } else {
            text_tensor(&t, loaded);
        }
        cli_tensor_free(&t);
    }
    if (o->json)
        fputc(']', stdout);
}

static int inspect_file(const char *path, const inspect_opts *o)
{
    zc_file *f = NULL;
    int rc = zc_file_open(path, &f);
    if (rc != ZC_OK) {
        if (o->json)
            json_open_error(path, cli_engine_message(rc));
        cli_error("%s", cli_engine_message(rc));
        return CLI_EXIT_FAIL;
    }
    inspect_counts c = {0};
    if (o->json) {
        fputs("{\"file\":", stdout);
        cli_put_json_string(stdout, path);
        printf(",\"file_bytes\":%" PRId64, cli_file_size(path));
    } else {
        text_header(f, path);
    }
    inspect_tensors(f, path, o, &c);
    int ok = c.mismatch == 0 && c.unreadable == 0;
    if (o->json) {
        json_metadata(f);
        printf(",\"ok\":%s}\n", ok ? "true" : "false");
    } else {
        text_metadata(f, o->full);
        text_summary(&c);
    }
    zc_file_close(f);
    return ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

static int inspect_operands(const cli_args *args, void *opts)
{
    return inspect_file(args->operands[0], opts);
}

int cli_cmd_inspect(int argc, char **argv)
{
    inspect_opts o = {0};
    const cli_flag flags[] = {{"--json", &o.json}, {"--full", &o.full}, {NULL, NULL}};
    return cli_command("inspect", argc, argv, flags, (cli_operands){1, 1, "one file"}, inspect_operands,
                       &o);
}
