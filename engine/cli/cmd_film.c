/* cmd_film.c — "zc film DIR TAG [--json] [--no-verify]": the film of a tag
 * from its spill files, shot by shot, with every file and hop verified. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "film.h"

/* A digest cut to its algorithm and 8 hex digits ("-" when none). */
static void put_short_digest(const char *d)
{
    if (d == NULL || d[0] == '\0') {
        fputs("-", stdout);
        return;
    }
    const char *colon = strchr(d, ':');
    size_t keep = colon ? (size_t)(colon - d) + 9 : 12;
    if (strlen(d) <= keep) {
        cli_put_text(stdout, d);
        return;
    }
    cli_put_text_n(stdout, d, keep);
    fputs("\xe2\x80\xa6", stdout); /* U+2026 */
}

static void put_shot(const zc_film *film, const zc_film_shot *s)
{
    printf("gen %" PRIu64 "  shot %u  take %u/%u  %s", s->generation, s->shot, s->take,
           s->takes, zc__film_state_name(s->state));
    if (s->start_image)
        fputs("  start image", stdout);
    if (s->pinned)
        fputs("  pinned", stdout);
    if (s->external) {
        fputs("  continues ", stdout);
        cli_put_text(stdout, s->parent_tag);
        printf("@%" PRIu64, s->parent_generation);
    } else if (s->parent >= 0) {
        printf("  parent %" PRIu64, film->shots[s->parent].generation);
    } else if (s->lineage_ok) {
        printf("  parent %" PRIu64 " (missing)", s->parent_generation);
    } else {
        fputs("  root", stdout);
    }
    if (s->lineage_ok) {
        printf("  trim %" PRIu64 "  adapter ", s->trim);
        cli_put_text(stdout, s->adapter ? s->adapter : "-");
    }
    printf("  file %s  hop %s  digest ", zc__film_file_name(s->file), zc__film_hop_name(s->hop));
    put_short_digest(s->digest);
    if (s->lineage_ok) {
        fputs("  tail ", stdout);
        put_short_digest(s->tail_digest);
    }
    fputc('\n', stdout);
}

static int print_text(const zc_film *film)
{
    for (size_t k = 0; k < film->line_count; k++)
        for (size_t i = 0; i < film->count; i++)
            if (film->shots[i].generation == film->line[k])
                put_shot(film, &film->shots[i]);
    size_t off = film->count - film->line_count;
    if (off > 0) {
        printf("off the line (%zu):\n", off);
        for (size_t i = 0; i < film->count; i++)
            if (!film->shots[i].on_line) {
                fputs("  ", stdout);
                put_shot(film, &film->shots[i]);
            }
    }
    for (size_t i = 0; i < film->count; i++)
        if (film->shots[i].problem) {
            fputs("problem: ", stdout);
            cli_put_text(stdout, film->shots[i].problem);
            fputc('\n', stdout);
        }
    if (film->problems.data) {
        fputs("note: ", stdout);
        const char *p = film->problems.data;
        for (; *p; p++) {
            if (*p == '\n' && p[1])
                fputs("\nnote: ", stdout);
            else if (*p != '\n')
                fputc(*p, stdout);
        }
        fputc('\n', stdout);
    }
    fputs("film ", stdout);
    cli_put_text(stdout, film->tag);
    printf(": %zu shot%s on the line", film->line_count, cli_plural(film->line_count));
    if (film->ok && film->verified) {
        fputs(", all hops verified\n", stdout);
    } else if (film->ok) {
        fputs(", not verified (--no-verify)\n", stdout);
    } else {
        int first = 1;
        fputs(film->verified ? ", verification FAILED: " : ", BROKEN: ", stdout);
        for (size_t i = 0; i < film->count; i++) {
            const zc_film_shot *s = &film->shots[i];
            int failing = s->state == FILM_BROKEN ||
                          (film->verified && (s->file != FILM_FILE_OK ||
                                              (s->hop != FILM_HOP_OK && s->hop != FILM_HOP_ROOT &&
                                               s->hop != FILM_HOP_EXTERNAL)));
            if (!failing)
                continue;
            fputs(first ? "" : "; ", stdout);
            first = 0;
            if (s->problem)
                cli_put_text(stdout, s->problem);
            else
                printf("shot %" PRIu64 ": file %s, hop %s", s->generation,
                       zc__film_file_name(s->file), zc__film_hop_name(s->hop));
        }
        fputc('\n', stdout);
    }
    return film->ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

int cli_cmd_film(int argc, char **argv)
{
    int json = 0, no_verify = 0;
    const cli_flag flags[] = {{"--json", &json}, {"--no-verify", &no_verify}, {NULL, NULL}};
    cli_args args;
    int rc = cli_args_parse("film", argc, argv, flags, &args);
    if (rc != 0)
        return rc;
    if (args.help) {
        cli_help_command("film", stdout);
        cli_args_free(&args);
        return CLI_EXIT_OK;
    }
    if (args.count != 2) {
        rc = cli_usage_error("film", "expected DIR and TAG, got %d argument%s", args.count,
                             cli_plural((uint64_t)args.count));
        cli_args_free(&args);
        return rc;
    }
    zc_film film;
    int st = zc__film_build(args.operands[0], args.operands[1], no_verify ? 0 : ZC_FILM_VERIFY,
                            &film);
    if (st != ZC_OK) {
        cli_error("%s", cli_engine_message(st));
        rc = CLI_EXIT_USAGE;
    } else if (json) {
        zc_jsonbuf jb;
        zc__jb_init(&jb);
        zc__film_json(&jb, &film);
        if (jb.failed) {
            cli_error("out of memory");
            rc = CLI_EXIT_USAGE;
        } else {
            fputs(jb.data, stdout);
            fputc('\n', stdout);
            rc = film.ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        }
        zc__jb_free(&jb);
    } else {
        rc = print_text(&film);
    }
    zc__film_free(&film);
    cli_args_free(&args);
    return rc;
}
