/* cmd_dump.c — "zc dump FILE TENSOR": the values of one tensor, one per line. */
#include <inttypes.h>

#include "cli.h"

static void put_values(const cli_tensor *t)
{
    uint64_t n = cli_element_count(&t->info);
    int dtype = t->info.dtype;
    for (uint64_t i = 0; i < n; i++) {
        if (cli_dtype_is_float(dtype))
            cli_put_number(stdout, cli_element_value(dtype, t->data, i), 17);
        else
            printf("%" PRId64, cli_element_int64(dtype, t->data, i));
        fputc('\n', stdout);
    }
}

static int dump_tensor(zc_file *f, const char *path, const char *name)
{
    uint32_t index;
    if (zc_file_find(f, name, &index) != ZC_OK) {
        cli_error("%s: no tensor named '%s'", path, name);
        return CLI_EXIT_FAIL;
    }
    cli_tensor t;
    if (cli_tensor_load(f, path, index, &t) != 0) {
        cli_error("%s", t.error);
        cli_tensor_free(&t);
        return CLI_EXIT_FAIL;
    }
    if (t.digest_state == CLI_DIGEST_MISMATCH)
        cli_error("warning: %s: tensor %s does not match its recorded digest; printing the "
                  "bytes as stored", path, name);
    put_values(&t);
    cli_tensor_free(&t);
    return CLI_EXIT_OK;
}

static int run_dump(const char *path, const char *name)
{
    zc_file *f = NULL;
    int rc = zc_file_open(path, &f);
    if (rc != ZC_OK) {
        cli_error("%s", cli_engine_message(rc));
        return CLI_EXIT_FAIL;
    }
    rc = dump_tensor(f, path, name);
    zc_file_close(f);
    return rc;
}

static int dump_operands(const cli_args *args, void *opts)
{
    (void)opts;
    return run_dump(args->operands[0], args->operands[1]);
}

int cli_cmd_dump(int argc, char **argv)
{
    return cli_command("dump", argc, argv, NULL, (cli_operands){2, 2, "FILE and TENSOR"}, dump_operands,
                       NULL);
}
