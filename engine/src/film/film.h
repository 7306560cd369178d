/*
 * film.h — the film of one tag, read from its spill files alone: the model
 * (film_model.c), its verification (film_verify.c), the choices file
 * (film_choose.c) and the JSON of zc_film_describe (film_json.c).  The zc
 * tool prints the same model (engine/cli/cmd_film.c).
 */
#ifndef ZC_FILM_H
#define ZC_FILM_H

#include "core/internal.h"
#include "format/json_reader.h"
#include "core/jsonbuf.h"

#define ZC_FILM_PREFIX ".zc-film-" /* + tag + ".json": the tag's chosen takes */
#define ZC_FILM_SUFFIX ".json"

enum { FILM_FILE_UNCHECKED = 0, FILM_FILE_OK, FILM_FILE_BAD };
/* The file's record digest (zc_file_record), checked whenever the header is read. */
enum { FILM_RECORD_UNCHECKED = 0, FILM_RECORD_OK, FILM_RECORD_BAD, FILM_RECORD_NOT_COVERED };
enum {
    FILM_HOP_UNCHECKED = 0,
    FILM_HOP_OK,
    FILM_HOP_BAD,
    FILM_HOP_ROOT,
    FILM_HOP_MISSING_PARENT,
    FILM_HOP_CYCLE,
    FILM_HOP_EXTERNAL
};
enum { FILM_LINE = 0, FILM_ALTERNATIVE, FILM_STALE, FILM_BROKEN };

/* The seam thresholds (docs/film.md; zc_continuity/seam_plan.py GREEN_BELOW, RED_FROM): a score under
 * GREEN_BELOW is green, from RED_FROM red, amber between. */
#define ZC_FILM_SEAM_GREEN_BELOW 2.0
#define ZC_FILM_SEAM_RED_FROM 4.0

/* The seam of the hop that made a shot, as its lineage (version 2) records it: latent statistics
 * the Store measured at put time (tests/python/seam_reference.py).  present: the lineage has a seam object
 * with a finite score; the other numbers are NaN when absent or not finite. */
typedef struct {
    int present, audio;
    double score, mean_step, std_step, rms_step, correlation, within_correlation;
    double audio_level_db, audio_rms_step, audio_correlation, audio_within_correlation;
} zc_film_seam;

typedef struct {
    uint64_t generation;
    int opened;              /* the file's header could be read */
    int record;              /* FILM_RECORD_*: a bad record makes the shot broken (its lineage
                                and description cannot be trusted) and its file bad */
    int start_image;         /* metadata kind = start_image */
    int has_lineage;         /* metadata lineage present (even if unreadable) */
    int lineage_ok;          /* it parsed as version 1 with every required field */
    char *parent_tag;        /* lineage fields (NULL / 0 when absent) */
    uint64_t parent_generation;
    uint64_t tail_frames, trim;
    char *tail_digest, *used_digest, *adapter, *prompt;
    int has_seed;
    uint64_t seed;
    char *audio_tail_digest;
    int has_audio_span;
    uint64_t audio_axis, audio_start, audio_count;
    zc_film_seam seam;
    /* the tail of its video stream (the file's "zc.seam.latent_tensor" summary): per-channel mean
     * and standard deviation of every sample of the last frames (NULL when the file has none) */
    uint32_t tail_channels;
    double *tail_mean, *tail_std;
    /* the latent tensor as the file describes it */
    int has_latent;
    int32_t ndim;
    int64_t shape[ZC_MAX_RANK];
    char digest[ZC_DIGEST_TEXT_SIZE]; /* recorded; "" when none */
    /* the model */
    long parent;             /* index of the parent in the tag, or -1 */
    int external;            /* the parent is in another tag: "continues" */
    int file, hop, state;
    int on_line, pinned;
    int placed;              /* on the film's tree: shot, take and takes mean something */
    uint32_t depth, shot, take, takes;
    uint64_t subtree_newest;
    char *problem;           /* what is wrong, without the shot's name (zc__film_problem_text) */
} zc_film_shot;

typedef struct {
    char *dir;
    char tag[ZC_MAX_TAG_LEN + 1];
    int verified;
    zc_film_shot *shots;     /* ascending generation */
    size_t count;
    uint64_t *line;          /* generations in film order */
    size_t line_count;
    uint64_t *pins;
    size_t pin_count;
    uint64_t newest, anchor;
    zc_jsonbuf problems;     /* film-wide sentences, each ending in '\n' */
    int ok;
} zc_film;

/* Build the film of tag from dir (ZC_FILM_VERIFY in flags: read every file
 * and check every hop).  @return ZC_OK; ZC_E_INVALID, ZC_E_IO,
 * ZC_E_NOT_FOUND (no files of the tag), ZC_E_NOMEM.  Free with
 * zc__film_free either way. */
int zc__film_build(const char *dir, const char *tag, uint32_t flags, zc_film *film);
void zc__film_free(zc_film *film);
/* The index of generation gen among film's shots (they ascend), or -1. */
long zc__film_find(const zc_film *film, uint64_t gen);

/* The parent within tag that a lineage JSON names: 1 and *parent (0 when
 * the parent is in another tag) when it is a readable lineage, else 0. */
int zc__film_lineage_parent(const char *lineage, const char *tag, uint64_t *parent);

/* film_json.c: the JSON of zc_film_describe, appended to jb. */
void zc__film_json(zc_jsonbuf *jb, const zc_film *film);

/* film_seam.c: the seam object of a parsed lineage (root: its object) into *seam. */
void zc__film_seam_read(const zc_json_doc *doc, const zc_json_node *root, zc_film_seam *seam);
/* film_seam.c: a spill file's "zc.hop_seam" record (untrusted text; NULL: none) into *seam. */
void zc__film_seam_read_record(const char *text, zc_film_seam *seam);
/* The seam as JSON (null when absent), appended to jb. */
void zc__film_seam_json(zc_jsonbuf *jb, const zc_film_seam *seam);
/* "green", "amber" or "red" for a score. */
const char *zc__film_seam_verdict(double score);
/* The index of the shot on the chosen line whose seam scores highest, or -1 when none has one. */
long zc__film_worst_seam(const zc_film *film);

/* film_drift.c: the drift of the chosen line's tails from its first shot's, as the "drift"
 * member of the film JSON (null when a shot on the line has no tail summary). */
typedef struct {
    long shot;                /* index in film->shots */
    double *mean_delta;       /* [channels] */
    double *std_ratio;        /* [channels] */
} zc_film_drift_shot;
typedef struct {
    uint32_t channels;
    size_t count;             /* shots on the line (a start image left out); 0: no drift */
    zc_film_drift_shot *shots;
} zc_film_drift;
/* The drift of film's chosen line: *d filled (count 0 when any shot lacks the data). */
int zc__film_drift(const zc_film *film, zc_film_drift *d);
void zc__film_drift_free(zc_film_drift *d);
void zc__film_drift_json(zc_jsonbuf *jb, const zc_film *film);

/* film_verify.c: check every file's digests and every hop's tail. */
int zc__film_verify(zc_film *film);

/* film_pins.c: the pins of the tag's choices file (none when it is
 * missing); *unreadable is 1 when it exists but cannot be used. */
int zc__film_read_pins(const char *dir, const char *tag, uint64_t **pins, size_t *count,
                       int *unreadable);

/* zc__film_read_pins; aside: rename a file that is not private aside
 * (*refused says so). */
int zc__film_pins_read(const char *dir, const char *tag, int aside, uint64_t **pins, size_t *count,
                       int *unreadable, zc_refusal *refused);

/* The path of the choices file (caller frees), or NULL. */
char *zc__film_choices_path(const char *dir, const char *tag);

/* Set the shot's problem (the first one stays): what is wrong and the fix, without naming the
 * shot, whose place on the line is known only once the film is built. */
void zc__film_problem(zc_film_shot *shot, const char *fmt, ...) ZC_PRINTF(2, 3);

/* The shot as the user sees it: "shot 2 (take 1/2, generation 4)", "shot 3 (generation 5)",
 * "the start image (generation 1)", or "generation 4 (not on the line)" for a shot that cannot
 * be placed.  Always NUL-terminated. */
void zc__film_shot_name(const zc_film_shot *shot, char *out, size_t size);

/* "<the shot's name>: <its problem>" in a new string (NULL when it has none or out of memory). */
char *zc__film_problem_text(const zc_film_shot *shot);

const char *zc__film_state_name(int state);
const char *zc__film_hop_name(int hop);
const char *zc__film_file_name(int file);
/* "unchecked", "ok", "bad", "not_covered" (the film JSON's "record"). */
const char *zc__film_record_name(int record);

#endif
