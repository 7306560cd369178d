/*
 * main.c — the zc tool's entry point: global options and command dispatch.
 *
 *   zc --help | -h          overview of every command
 *   zc --version            the engine version (zc_version())
 *   zc help [CMD]           help of one command
 *   zc CMD [ARGS...]        run a command (see help.c)
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "platform/platform.h"

typedef int (*cli_command_fn)(int argc, char **argv);

static const struct {
    const char *name;
    cli_command_fn fn;
} commands[] = {
    {"ls", cli_cmd_ls},
    {"inspect", cli_cmd_inspect},
    {"verify", cli_cmd_verify},
    {"diff", cli_cmd_diff},
    {"dump", cli_cmd_dump},
    {"film", cli_cmd_film},
};

static cli_command_fn find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(commands[i].name, name) == 0)
            return commands[i].fn;
    }
    return NULL;
}

static int is_help_option(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

static int cmd_help(int argc, char **argv)
{
    if (argc == 0 || (argc == 1 && is_help_option(argv[0]))) {
        cli_help_main(stdout);
        return CLI_EXIT_OK;
    }
    if (argc > 1)
        return cli_usage_error("help", "expected one command name, got %d arguments", argc);
    if (strcmp(argv[0], "help") == 0) {
        cli_help_main(stdout);
        return CLI_EXIT_OK;
    }
    if (cli_help_command(argv[0], stdout) != 0) {
        cli_error("unknown command '%s'; the commands are ls, inspect, verify, diff, dump, film "
                  "(see 'zc --help')", argv[0]);
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

static int dispatch(int argc, char **argv)
{
    const char *first = argv[1];
    if (is_help_option(first))
        return cmd_help(0, NULL);
    if (strcmp(first, "--version") == 0 || strcmp(first, "version") == 0) {
        printf("zc %s\n", zc_version());
        return CLI_EXIT_OK;
    }
    if (strcmp(first, "help") == 0)
        return cmd_help(argc - 2, argv + 2);
    cli_command_fn fn = find_command(first);
    if (fn == NULL) {
        if (first[0] == '-')
            cli_error("unknown option '%s' (see 'zc --help')", first);
        else
            cli_error("unknown command '%s'; the commands are ls, inspect, verify, diff, dump, film "
                      "(see 'zc --help')", first);
        return CLI_EXIT_USAGE;
    }
    return fn(argc - 2, argv + 2);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_error("no command; usage: zc COMMAND [ARGS...] with COMMAND one of ls, inspect, "
                  "verify, diff, dump, film (see 'zc --help')");
        return CLI_EXIT_USAGE;
    }
    int status = dispatch(argc, zc_os_utf8_argv(argc, argv)); /* paths are UTF-8 everywhere */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("cannot write to standard output");
        return CLI_EXIT_USAGE;
    }
    return status;
}
