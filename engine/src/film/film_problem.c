/*
 * film_problem.c — what is wrong with a shot: its problem (the first one
 * set stays), its name as the user sees it, and the two together.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "film.h"

void zc__film_problem(zc_film_shot *shot, const char *fmt, ...)
{
    if (shot->problem != NULL)
        return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    shot->problem = zc__strdup(text);
}

void zc__film_shot_name(const zc_film_shot *s, char *out, size_t size)
{
    unsigned long long g = (unsigned long long)s->generation;
    if (!s->placed)
        snprintf(out, size, "generation %llu (not on the line)", g);
    else if (s->start_image)
        snprintf(out, size, "the start image (generation %llu)", g);
    else if (s->takes > 1)
        snprintf(out, size, "shot %u (take %u/%u, generation %llu)", s->shot, s->take, s->takes, g);
    else
        snprintf(out, size, "shot %u (generation %llu)", s->shot, g);
}

char *zc__film_problem_text(const zc_film_shot *s)
{
    if (s->problem == NULL)
        return NULL;
    char name[96];
    zc__film_shot_name(s, name, sizeof name);
    size_t n = strlen(name) + 2 + strlen(s->problem) + 1;
    char *text = malloc(n);
    if (text != NULL)
        snprintf(text, n, "%s: %s", name, s->problem);
    return text;
}
