/* cmd_film.c — "zc film DIR TAG [--json] [--no-verify] [--seams-fail-above X]":
 * the film of a tag from its spill files, shot by shot, with every file and
 * hop verified, and the seam of every hop on the line. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "film/film.h"

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
    if (s->placed)
        printf("gen %" PRIu64 "  shot %u  take %u/%u  %s", s->generation, s->shot, s->take,
               s->takes, zc__film_state_name(s->state));
    else
        printf("gen %" PRIu64 "  not on the line  %s", s->generation, zc__film_state_name(s->state));
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
        printf("  parent %" PRIu64 " (%s)", s->parent_generation,
               s->record == FILM_RECORD_BAD ? "untrusted: the record changed" : "missing");
    } else {
        fputs("  root", stdout);
    }
    if (s->lineage_ok) {
        printf("  trim %" PRIu64 "  adapter ", s->trim);
        cli_put_text(stdout, s->adapter ? s->adapter : "-");
    }
    printf("  file %s  hop %s  record %s  digest ", zc__film_file_name(s->file),
           zc__film_hop_name(s->hop),
           s->record == FILM_RECORD_NOT_COVERED ? "not covered" : zc__film_record_name(s->record));
    put_short_digest(s->digest);
    if (s->lineage_ok) {
        fputs("  tail ", stdout);
        put_short_digest(s->tail_digest);
    }
    fputc('\n', stdout);
}

static void put_num(const char *label, double v)
{
    if (isnan(v))
        printf("  %s -", label);
    else
        printf("  %s %.3g", label, v);
}

static void put_hop(const zc_film *film, const zc_film_shot *s)
{
    printf("hop %" PRIu64 " <- %" PRIu64 " (shot %u)", s->generation,
           s->parent >= 0 ? film->shots[s->parent].generation : s->parent_generation, s->shot);
}

/* The seam of every hop on the line, then the worst one. */
static void print_seams(const zc_film *film)
{
    int any_hop = 0;
    for (size_t k = 0; k < film->line_count; k++) {
        long i = zc__film_find(film, film->line[k]);
        if (i < 0 || !film->shots[i].lineage_ok)
            continue;
        const zc_film_shot *s = &film->shots[i];
        any_hop = 1;
        fputs("seam ", stdout);
        put_hop(film, s);
        if (!s->seam.present) {
            fputs(": none recorded\n", stdout);
            continue;
        }
        printf(": score %.3g %s", s->seam.score, zc__film_seam_verdict(s->seam.score));
        put_num("mean", s->seam.mean_step);
        put_num("std", s->seam.std_step);
        put_num("rms", s->seam.rms_step);
        put_num("corr", s->seam.correlation);
        if (!isnan(s->seam.within_correlation))
            printf("/%.3g", s->seam.within_correlation);
        if (s->seam.audio) {
            fputs("  audio", stdout);
            if (!isnan(s->seam.audio_level_db))
                printf(" %+.3g dB", s->seam.audio_level_db);
            put_num("rms", s->seam.audio_rms_step);
            put_num("corr", s->seam.audio_correlation);
        }
        fputc('\n', stdout);
    }
    long w = zc__film_worst_seam(film);
    if (w >= 0) {
        fputs("worst seam: ", stdout);
        put_hop(film, &film->shots[w]);
        printf(", score %.3g (%s)\n", film->shots[w].seam.score,
               zc__film_seam_verdict(film->shots[w].seam.score));
    } else if (any_hop) {
        fputs("worst seam: none recorded on the line\n", stdout);
    }
}

/* The drift of each shot's tail from the line's first shot: per shot, the channel whose mean moved
 * most (in the first shot's standard deviations) and the one whose spread changed most. */
static void print_drift(const zc_film *film)
{
    zc_film_drift d;
    if (zc__film_drift(film, &d) != ZC_OK || d.count == 0) {
        if (film->line_count)
            fputs("drift: none (a shot on the line has no tail summary: stored by an older engine)\n",
                  stdout);
        zc__film_drift_free(&d);
        return;
    }
    printf("drift of the tails from shot %u (generation %" PRIu64 "), %u channels:\n",
           film->shots[d.shots[0].shot].shot, film->shots[d.shots[0].shot].generation, d.channels);
    for (size_t k = 0; k < d.count; k++) {
        uint32_t cm = 0, cs = 0;
        for (uint32_t c = 1; c < d.channels; c++) {
            if (fabs(d.shots[k].mean_delta[c]) > fabs(d.shots[k].mean_delta[cm]))
                cm = c;
            if (fabs(log(d.shots[k].std_ratio[c] > 0 ? d.shots[k].std_ratio[c] : 1e-300)) >
                fabs(log(d.shots[k].std_ratio[cs] > 0 ? d.shots[k].std_ratio[cs] : 1e-300)))
                cs = c;
        }
        printf("  drift %zu gen %" PRIu64 ": mean_delta %+.3g (channel %u)  std_ratio %.3g (channel %u)\n", k,
               film->shots[d.shots[k].shot].generation, d.shots[k].mean_delta[cm], cm,
               d.shots[k].std_ratio[cs], cs);
    }
    zc__film_drift_free(&d);
}

/* --seams-fail-above: 1 when the worst seam on the line scores above limit (said on stderr). */
static int seams_fail(const zc_film *film, double limit)
{
    long w = zc__film_worst_seam(film);
    if (isnan(limit) || w < 0 || !(film->shots[w].seam.score > limit))
        return 0;
    fprintf(stderr, "zc film: seams FAILED: the worst seam, hop %" PRIu64 " (shot %u), scores %.4g, "
            "above %.4g\n", film->shots[w].generation, film->shots[w].shot,
            film->shots[w].seam.score, limit);
    return 1;
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
            char *text = zc__film_problem_text(&film->shots[i]);
            fputs("problem: ", stdout);
            cli_put_text(stdout, text ? text : film->shots[i].problem);
            fputc('\n', stdout);
            free(text);
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
    print_seams(film);
    print_drift(film);
    size_t uncovered = 0;
    for (size_t i = 0; i < film->count; i++)
        uncovered += film->shots[i].record == FILM_RECORD_NOT_COVERED;
    if (uncovered > 0)
        printf("record not covered: %zu file%s of the film record%s no digest of %s dtype, shape "
               "and metadata (written before record digests); %s tensors and hops are checked "
               "as before\n", uncovered, cli_plural(uncovered), uncovered == 1 ? "s" : "",
               uncovered == 1 ? "its" : "their", uncovered == 1 ? "its" : "their");
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
            char name[96], *text = zc__film_problem_text(s);
            zc__film_shot_name(s, name, sizeof name);
            if (text)
                cli_put_text(stdout, text);
            else
                printf("%s: file %s, hop %s", name, zc__film_file_name(s->file),
                       zc__film_hop_name(s->hop));
            free(text);
        }
        fputc('\n', stdout);
    }
    return film->ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* Take "--seams-fail-above X" (or "=X") out of argv (before "--"); *limit NaN when absent.
 * @return 0, or CLI_EXIT_USAGE (said) for a missing or bad X. */
static int take_seam_limit(int *argc, char **argv, double *limit)
{
    static const char opt[] = "--seams-fail-above";
    *limit = NAN;
    int out = 0;
    for (int i = 0; i < *argc; i++) {
        const char *a = argv[i], *value = NULL;
        if (strcmp(a, "--") == 0) {
            while (i < *argc)
                argv[out++] = argv[i++];
            break;
        }
        if (strcmp(a, opt) == 0) {
            if (i + 1 >= *argc)
                return cli_usage_error("film", "%s needs a number (a seam score, e.g. 4)", opt);
            value = argv[++i];
        } else if (strncmp(a, opt, sizeof opt - 1) == 0 && a[sizeof opt - 1] == '=') {
            value = a + sizeof opt;
        } else {
            argv[out++] = argv[i];
            continue;
        }
        char *end = NULL;
        double v = strtod(value, &end);
        if (value[0] == '\0' || *end != '\0' || !isfinite(v) || v < 0)
            return cli_usage_error("film", "%s '%s' is not a seam score (a number >= 0; 1 is a "
                                   "smooth cut, 4 a red one)", opt, value);
        *limit = v;
    }
    *argc = out;
    return 0;
}

typedef struct {
    int json, no_verify;
    double limit;
} film_opts;

static int film_operands(const cli_args *args, void *opts)
{
    const film_opts *o = opts;
    zc_film film;
    int rc;
    int st = zc__film_build(args->operands[0], args->operands[1], o->no_verify ? 0 : ZC_FILM_VERIFY,
                            &film);
    if (st != ZC_OK) {
        cli_error("%s", cli_engine_message(st));
        rc = CLI_EXIT_USAGE;
    } else if (o->json) {
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
    if (st == ZC_OK && rc != CLI_EXIT_USAGE && seams_fail(&film, o->limit))
        rc = CLI_EXIT_FAIL;
    zc__film_free(&film);
    return rc;
}

int cli_cmd_film(int argc, char **argv)
{
    film_opts o = {0};
    const cli_flag flags[] = {{"--json", &o.json}, {"--no-verify", &o.no_verify}, {NULL, NULL}};
    int rc = take_seam_limit(&argc, argv, &o.limit);
    if (rc != 0)
        return rc;
    return cli_command("film", argc, argv, flags, (cli_operands){2, 2, "DIR and TAG"}, film_operands, &o);
}
