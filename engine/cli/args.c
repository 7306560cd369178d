/* args.c — option parsing shared by the commands. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "zc %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'zc help %s')\n", cmd);
    return CLI_EXIT_USAGE;
}

/* @return 1 when arg names a flag of the table (and sets it), else 0. */
static int set_flag(const cli_flag *flags, const char *arg)
{
    for (const cli_flag *f = flags; f != NULL && f->name != NULL; f++) {
        if (strcmp(f->name, arg) == 0) {
            *f->flag = 1;
            return 1;
        }
    }
    return 0;
}

static int is_option(const char *arg)
{
    return arg[0] == '-' && arg[1] != '\0';
}

int cli_args_parse(const char *cmd, int argc, char **argv, const cli_flag *flags, cli_args *out)
{
    memset(out, 0, sizeof *out);
    out->operands = calloc((size_t)argc + 1, sizeof *out->operands);
    if (out->operands == NULL) {
        cli_error("out of memory");
        return CLI_EXIT_USAGE;
    }
    int options_done = 0;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (options_done || !is_option(arg)) {
            out->operands[out->count++] = argv[i];
        } else if (strcmp(arg, "--") == 0) {
            options_done = 1;
        } else if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            out->help = 1;
        } else if (!set_flag(flags, arg)) {
            cli_args_free(out);
            return cli_usage_error(cmd, "unknown option '%s'", arg);
        }
    }
    return 0;
}

void cli_args_free(cli_args *args)
{
    free(args->operands);
    args->operands = NULL;
    args->count = 0;
}

int cli_command(const char *cmd, int argc, char **argv, const cli_flag *flags, cli_operands want,
                cli_run_fn run, void *opts)
{
    cli_args args;
    int rc = cli_args_parse(cmd, argc, argv, flags, &args);
    if (rc != 0)
        return rc;
    if (args.help) {
        cli_help_command(cmd, stdout);
        rc = CLI_EXIT_OK;
    } else if (args.count < want.min && want.max < 0) {
        rc = cli_usage_error(cmd, "expected %s", want.what);
    } else if (args.count < want.min || (want.max >= 0 && args.count > want.max)) {
        rc = cli_usage_error(cmd, "expected %s, got %d argument%s", want.what, args.count,
                             cli_plural((uint64_t)args.count));
    } else {
        rc = run(&args, opts);
    }
    cli_args_free(&args);
    return rc;
}
