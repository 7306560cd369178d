/* cmd_ls.c — "zc ls DIR": one line per safetensors file of a directory. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/internal.h"
#include "platform/platform.h"

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

/* The kind shown for a file name, or NULL when ls skips it. */
static const char *file_kind(const char *name)
{
    if (ends_with(name, ".rejected"))
        return "rejected";
    if (ends_with(name, ".latent"))
        return "latent";
    if (ends_with(name, ".safetensors"))
        return "safetensors";
    return NULL;
}

static char *join_path(const char *dir, const char *name)
{
    size_t n = strlen(dir), m = strlen(name);
    char *p = malloc(n + m + 2);
    if (p == NULL)
        return NULL;
    memcpy(p, dir, n);
    size_t at = n;
    if (n > 0 && !zc_os_is_separator(dir[n - 1]))
        p[at++] = '/';
    memcpy(p + at, name, m + 1);
    return p;
}

static int is_regular_file(const char *dir, const char *name)
{
    char *path = join_path(dir, name);
    zc_os_path_kind kind;
    int ok = path != NULL && zc_os_stat(path, &kind, NULL) == 0 && kind == ZC_OS_PATH_FILE;
    free(path);
    return ok;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Collect the listed file names of dir, sorted.  @return 0 or -1 (printed). */
static int collect(const char *dir, zc_name_list *list)
{
    zc_os_dir *d = NULL;
    int err = zc_os_dir_open(dir, &d);
    if (err != 0) {
        cli_error("cannot read directory '%s': %s", dir, ZC_OS_WHY(err));
        return -1;
    }
    int rc = 0;
    const char *name;
    while (rc == 0 && (err = zc_os_dir_next(d, &name)) == 0 && name != NULL) {
        if (file_kind(name) != NULL && is_regular_file(dir, name) && zc__name_list_add(list, name) != 0) {
            cli_error("out of memory listing '%s'", dir);
            rc = -1;
        }
    }
    if (rc == 0 && err != 0) {
        cli_error("cannot read directory '%s': %s", dir, ZC_OS_WHY(err));
        rc = -1;
    }
    zc_os_dir_close(d);
    if (rc == 0 && list->count > 1)
        qsort(list->names, list->count, sizeof *list->names, compare_names);
    return rc;
}

static void put_meta_field(const zc_file *f, const char *label, const char *key)
{
    const char *value = zc_file_meta(f, key);
    printf("  %s=", label);
    cli_put_text(stdout, value != NULL && value[0] != '\0' ? value : "-");
}

/* The algorithms of the recorded digests, e.g. "xxh3" or "xxh3+xxh64". */
static void put_algorithms(const int seen[3])
{
    static const int order[] = {ZC_DIGEST_XXH3_64, ZC_DIGEST_XXH64};
    const char *sep = "";
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if (seen[order[i]]) {
            printf("%s%s", sep, zc_digest_algo_name(order[i]));
            sep = "+";
        }
    }
}

static void put_digest_status(const zc_file *f)
{
    uint32_t data = 0, with = 0;
    int seen[3] = {0, 0, 0};
    for (uint32_t i = 0; i < zc_file_count(f); i++) {
        zc_file_tensor t;
        if (zc_file_tensor_at(f, i, &t) != ZC_OK || cli_is_empty_marker(&t))
            continue;
        data++;
        with += t.has_digest ? 1u : 0u;
        if (t.has_digest && t.digest_algo > 0 && t.digest_algo < 3)
            seen[t.digest_algo] = 1;
    }
    if (with == 0) {
        fputs("  no digests", stdout);
        return;
    }
    if (with == data)
        fputs("  digests recorded (", stdout);
    else
        printf("  digests partial (%" PRIu32 " of %" PRIu32 ", ", with, data);
    put_algorithms(seen);
    fputs(")", stdout);
}

static void print_opened(const zc_file *f, const char *path)
{
    put_meta_field(f, "tag", ZC_FILE_META_TAG);
    put_meta_field(f, "generation", ZC_FILE_META_GENERATION);
    printf("  tensors=%" PRIu32 "  bytes=%" PRIu64 "  size=%" PRId64, zc_file_count(f),
           cli_data_bytes(f), cli_file_size(path));
    put_digest_status(f);
}

static void print_entry(const char *dir, const char *name)
{
    cli_put_text(stdout, name);
    printf("  %s", file_kind(name));
    char *path = join_path(dir, name);
    zc_file *f = NULL;
    int rc = path != NULL ? zc_file_open(path, &f) : ZC_E_NOMEM;
    if (rc == ZC_OK) {
        print_opened(f, path);
        zc_file_close(f);
    } else {
        fputs("  error: ", stdout);
        cli_put_text(stdout, path != NULL ? cli_engine_message(rc) : "out of memory");
    }
    fputc('\n', stdout);
    free(path);
}

static int list_folder(const cli_args *args, void *opts)
{
    (void)opts;
    zc_name_list list = {0};
    const char *dir = args->operands[0];
    int rc = CLI_EXIT_OK;
    if (collect(dir, &list) == 0) {
        for (size_t i = 0; i < list.count; i++)
            print_entry(dir, list.names[i]);
    } else {
        rc = CLI_EXIT_USAGE;
    }
    zc__name_list_free(&list);
    return rc;
}

int cli_cmd_ls(int argc, char **argv)
{
    return cli_command("ls", argc, argv, NULL, (cli_operands){1, 1, "one directory"}, list_folder, NULL);
}
