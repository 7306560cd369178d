/*
 * shared_main.c — several processes spilling into one folder (shared_child
 * does the writing; Windows runs it under wine too):
 * - PROCS processes × SHOTS shots on one shared tag, and each on a tag of
 *   its own: every generation handed out exactly once; every file left holds
 *   the shot its generation was given to (its writer's log says which; its
 *   values, metadata and digest must agree); each process's newest shot is
 *   there and verifies; a store opened before them sees the newest;
 * - processes killed in the middle of a spill while others write and a
 *   store opens again and again: the others finish without an error (had
 *   one of their temporary files been removed, their spill would fail), all
 *   their shots are there, and the dead ones' leftovers go;
 * - a live process's temporary file survives another store's open and goes
 *   once the process is killed.
 *   shared_test SHARED_CHILD PROCS SHOTS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "platform/platform_test.h"
#include "shared_value.h"
#include "zc.h"

#define WAIT_MS 120000

static const char *child_path;
static int procs, shots;

typedef struct {
    uint64_t generation;
    int writer, index;
    uint64_t digest;
} log_line;

typedef struct {
    log_line *lines;
    size_t count, cap;
} shot_log;

/* Append the complete lines of the log at path (a killed writer may leave
 * half a line at the end). */
static int read_log(const char *path, shot_log *log)
{
    FILE *fp = fopen(path, "rb");
    char line[256];
    if (fp == NULL)
        return -1;
    while (fgets(line, sizeof line, fp)) {
        unsigned long long g, d;
        int w, i;
        if (strchr(line, '\n') == NULL || sscanf(line, "%llu %d %d %llx", &g, &w, &i, &d) != 4)
            continue;
        if (log->count == log->cap) {
            size_t cap = log->cap ? log->cap * 2 : 256;
            log_line *n = realloc(log->lines, sizeof *n * cap);
            if (n == NULL)
                break;
            log->lines = n;
            log->cap = cap;
        }
        log->lines[log->count++] = (log_line){g, w, i, d};
    }
    fclose(fp);
    return 0;
}

static int by_generation(const void *a, const void *b)
{
    uint64_t x = ((const log_line *)a)->generation, y = ((const log_line *)b)->generation;
    return x < y ? -1 : x > y;
}

static const log_line *find_line(const shot_log *log, uint64_t g)
{
    log_line key = {g, 0, 0, 0};
    return bsearch(&key, log->lines, log->count, sizeof key, by_generation);
}

/* Sort the log and count generations that appear more than once. */
static int duplicates(shot_log *log)
{
    int dup = 0;
    qsort(log->lines, log->count, sizeof *log->lines, by_generation);
    for (size_t i = 1; i < log->count; i++)
        if (log->lines[i].generation == log->lines[i - 1].generation && ++dup <= 10) {
            fprintf(stderr, "  generation %llu was handed out twice (writers %d and %d)\n",
                    (unsigned long long)log->lines[i].generation, log->lines[i - 1].writer,
                    log->lines[i].writer);
        }
    return dup;
}

static char *log_path(const char *dir, const char *what, int writer)
{
    char name[64];
    snprintf(name, sizeof name, "%s%d.log", what, writer);
    return zc_test_join(dir, name);
}

static int spawn_writer(const char *spill, const char *tag, int writer, int count, long floats,
                        const char *log, zc_os_process *p)
{
    char w[16], c[16], f[24];
    snprintf(w, sizeof w, "%d", writer);
    snprintf(c, sizeof c, "%d", count);
    snprintf(f, sizeof f, "%ld", floats);
    const char *argv[] = {child_path, "write", spill, tag, w, c, f, log, NULL};
    int err = zc_os_test_spawn(argv, 1, p);
    if (err != 0)
        fprintf(stderr, "  cannot start %s: %s\n", child_path, ZC_OS_WHY(err));
    return err;
}

static int exists(const char *path)
{
    zc_os_path_kind kind;
    return zc_os_stat(path, &kind, NULL) == 0;
}

/* Check the file of tag@g: identity, the shot its metadata names (values
 * and digest), and that its log line (if any) names the same shot.
 * unlogged_from: writers at or above it may have files their log missed
 * (killed between the spill and the log line). */
static int check_file(const char *path, const char *tag, uint64_t g, const shot_log *log,
                      int unlogged_from, float *buf, long floats_cap, int *writer_out)
{
    zc_file *f = NULL;
    zc_file_tensor t;
    uint32_t idx = 0;
    uint64_t digest = 0;
    char want_gen[32];
    snprintf(want_gen, sizeof want_gen, "%llu", (unsigned long long)g);
    const char *ftag, *fgen, *w, *i;
    int ok = zc_file_open(path, &f) == ZC_OK && (ftag = zc_file_meta(f, "zc.tag")) != NULL &&
             strcmp(ftag, tag) == 0 && (fgen = zc_file_meta(f, "zc.generation")) != NULL &&
             strcmp(fgen, want_gen) == 0 && (w = zc_file_meta(f, "writer")) != NULL &&
             (i = zc_file_meta(f, "index")) != NULL &&
             zc_file_find(f, "latent_tensor", &idx) == ZC_OK &&
             zc_file_tensor_at(f, idx, &t) == ZC_OK && t.has_digest &&
             t.nbytes <= (uint64_t)floats_cap * sizeof(float) &&
             zc_file_read(f, idx, buf, (size_t)floats_cap * sizeof(float), &digest) == ZC_OK;
    if (!ok) {
        fprintf(stderr, "  %s: unreadable or not tag %s generation %s (%s)\n", path, tag, want_gen,
                zc_last_error());
        zc_file_close(f);
        return 1;
    }
    int writer = atoi(w), index = atoi(i);
    long n = (long)(t.nbytes / sizeof(float));
    for (long k = 0; k < n && ok; k++)
        ok = buf[k] == shared_value(writer, index, k);
    zc_file_close(f);
    if (!ok) {
        fprintf(stderr, "  %s: values are not shot %d of writer %d\n", path, index, writer);
        return 1;
    }
    const log_line *line = find_line(log, g);
    if (line == NULL && writer < unlogged_from) {
        fprintf(stderr, "  %s: no writer logged generation %s\n", path, want_gen);
        return 1;
    }
    if (line && (line->writer != writer || line->index != index || line->digest != digest)) {
        fprintf(stderr, "  %s: holds shot %d of writer %d (digest %016llx); generation %s was "
                "given to shot %d of writer %d (digest %016llx)\n", path, index, writer,
                (unsigned long long)digest, want_gen, line->index, line->writer,
                (unsigned long long)line->digest);
        return 1;
    }
    *writer_out = writer;
    return 0;
}

/* Check every spill file of tag in spill; *files gets their number.
 * @return the number of bad ones. */
static int check_files(const char *spill, const char *tag, const shot_log *log, int unlogged_from,
                       long floats, int *files)
{
    zc_os_dir *d = NULL;
    const char *name;
    int bad = 0;
    size_t tlen = strlen(tag);
    float *buf = malloc(sizeof(float) * (size_t)floats);
    *files = 0;
    if (buf == NULL || zc_os_dir_open(spill, &d) != 0) {
        free(buf);
        return 1;
    }
    while (zc_os_dir_next(d, &name) == 0 && name != NULL) {
        size_t len = strlen(name);
        if (strncmp(name, tag, tlen) != 0 || name[tlen] != '@' || len < 7 ||
            strcmp(name + len - 7, ".latent") != 0)
            continue;
        char *path = zc_test_join(spill, name);
        int writer = -1;
        bad += check_file(path, tag, strtoull(name + tlen + 1, NULL, 10), log, unlogged_from, buf,
                          floats, &writer);
        (*files)++;
        free(path);
    }
    zc_os_dir_close(d);
    free(buf);
    return bad;
}

/* 1 if the newest generation writer logged has its file. */
static int newest_kept(const char *spill, const char *tag, const shot_log *log, int writer)
{
    uint64_t newest = 0;
    for (size_t i = 0; i < log->count; i++)
        if (log->lines[i].writer == writer && log->lines[i].generation > newest)
            newest = log->lines[i].generation;
    char name[160];
    snprintf(name, sizeof name, "%s@%020llu.latent", tag, (unsigned long long)newest);
    char *path = zc_test_join(spill, name);
    int ok = newest && path && exists(path);
    if (!ok)
        fprintf(stderr, "  writer %d's newest shot (generation %llu) is not on disk\n", writer,
                (unsigned long long)newest);
    free(path);
    return ok;
}

/* The generations of tag's spill files in spill, up to cap. */
static size_t file_generations(const char *spill, const char *tag, uint64_t *out, size_t cap)
{
    zc_os_dir *d = NULL;
    const char *name;
    size_t n = 0, tlen = strlen(tag);
    if (zc_os_dir_open(spill, &d) != 0)
        return 0;
    while (zc_os_dir_next(d, &name) == 0 && name != NULL && n < cap) {
        size_t len = strlen(name);
        if (strncmp(name, tag, tlen) == 0 && name[tlen] == '@' && len > 7 &&
            strcmp(name + len - 7, ".latent") == 0)
            out[n++] = strtoull(name + tlen + 1, NULL, 10);
    }
    zc_os_dir_close(d);
    return n;
}

static int contains(const uint64_t *list, size_t n, uint64_t g)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == g)
            return 1;
    return 0;
}

static zc_store *open_store(const char *spill)
{
    zc_store_config c;
    zc_store_config_init(&c);
    c.spill_dir = spill;
    zc_store *s = NULL;
    if (zc_store_open(&c, &s) != ZC_OK)
        fprintf(stderr, "  open: %s\n", zc_last_error());
    return s;
}

/* Run procs writers of shots shots each, on one tag or each on its own. */
static void run_writers(int shared_tag)
{
    char *dir = zc_test_tmpdir(shared_tag ? "multi-shared" : "multi-own");
    REQUIRE(dir != NULL);
    char *spill = zc_test_join(dir, "spill");
    zc_os_process *kids = calloc((size_t)procs, sizeof *kids);
    char tags[16][16];
    REQUIRE(spill && kids && procs <= 16);
    REQUIRE(zc_os_mkdir(spill) == 0);
    zc_store *watcher = open_store(spill); /* open before any of them: must see their shots */
    REQUIRE(watcher != NULL);
    const long floats = 4096;
    int started = 0;
    for (int w = 0; w < procs; w++) {
        snprintf(tags[w], sizeof tags[w], shared_tag ? "shared" : "own%d", w);
        char *log = log_path(dir, "writer", w);
        if (log && spawn_writer(spill, tags[w], w, shots, floats, log, &kids[w]) == 0)
            started++;
        free(log);
    }
    REQUIRE(started == procs);
    for (int w = 0; w < procs; w++) {
        int code = -2;
        CHECK(zc_os_test_wait(&kids[w], &code) == 0 && code == 0);
    }
    shot_log all = {0};
    for (int w = 0; w < procs; w++) {
        char *log = log_path(dir, "writer", w);
        CHECK(log && read_log(log, &all) == 0);
        free(log);
    }
    CHECK(all.count == (size_t)procs * (size_t)shots);
    int files = 0, bad = 0;
    for (int w = 0; w < (shared_tag ? 1 : procs); w++) {
        shot_log mine = {0};
        for (size_t i = 0; i < all.count; i++) /* the lines of this tag */
            if (shared_tag || all.lines[i].writer == w) {
                log_line l = all.lines[i];
                if (mine.count == mine.cap) {
                    mine.cap = mine.cap ? mine.cap * 2 : 256;
                    mine.lines = realloc(mine.lines, sizeof *mine.lines * mine.cap);
                }
                mine.lines[mine.count++] = l;
            }
        /* Each generation of the tag handed out once: one tag per writer,
         * exactly 1..shots; one tag for all, exactly 1..procs*shots. */
        CHECK(duplicates(&mine) == 0);
        for (size_t i = 0; i < mine.count; i++)
            CHECK(mine.lines[i].generation == (uint64_t)i + 1);
        int n = 0;
        bad += check_files(spill, tags[w], &mine, procs, floats, &n);
        files += n;
        for (int v = 0; v < procs; v++)
            if (shared_tag || v == w)
                CHECK(newest_kept(spill, tags[w], &mine, v));
        /* The watcher sees the newest, spilled by someone else. */
        zc_view *view = NULL;
        CHECK(zc_store_get(watcher, tags[w], 0, &view) == ZC_OK &&
              zc_view_generation(view) == mine.lines[mine.count - 1].generation);
        CHECK(view && zc_view_verify(view) == ZC_OK);
        zc_view_release(view);
        /* It lists files only, and every file among the newest generations it
         * probes (zc_store_generations: the 64 below the folder's counter). */
        uint64_t gens[256], on_disk[256];
        size_t count = 0, disk = file_generations(spill, tags[w], on_disk, 256);
        CHECK(zc_store_generations(watcher, tags[w], gens, 256, &count) == ZC_OK && count <= 256);
        uint64_t newest = mine.lines[mine.count - 1].generation;
        for (size_t i = 0; i < count; i++)
            CHECK(contains(on_disk, disk, gens[i]));
        for (size_t i = 0; i < disk; i++)
            CHECK(on_disk[i] + 64 <= newest || contains(gens, count, on_disk[i]));
        free(mine.lines);
    }
    CHECK(bad == 0);
    CHECK(files >= procs && files <= procs * SHARED_DISK_KEEP);
    CHECK(zc_test_count(spill, ".zc-tmp-", "") == 0);
    CHECK(zc_test_count(spill, "", ".rejected") == 0);
    zc_store_close(watcher);
    CHECK(zc_test_count(spill, ".zc-owner-", "") == 0);
    printf("  %d processes x %d shots on %s: %zu generations, each once; %d files kept, all "
           "verified\n", procs, shots, shared_tag ? "one tag" : "their own tags", all.count, files);
    free(all.lines);
    free(kids);
    free(spill);
    zc_test_rmtree(dir);
    free(dir);
}

TEST(processes_on_one_tag_get_unique_generations_and_keep_their_shots)
{
    run_writers(1);
}

TEST(processes_on_their_own_tags_get_unique_generations_and_keep_their_shots)
{
    run_writers(0);
}

static int lines_in(const char *path)
{
    shot_log log = {0};
    int n = read_log(path, &log) == 0 ? (int)log.count : 0;
    free(log.lines);
    return n;
}

static int all_done(const char *dir, int writers)
{
    for (int w = 0; w < writers; w++) {
        char *log = log_path(dir, "writer", w), done[4200];
        snprintf(done, sizeof done, "%s.done", log ? log : "");
        int ok = log && exists(done);
        free(log);
        if (!ok)
            return 0;
    }
    return 1;
}

/* A temporary file of tag@g in spill (a spill caught in flight). */
static int temp_of(const char *spill, const char *tag, uint64_t g)
{
    char want[160];
    snprintf(want, sizeof want, "-%s@%020llu.latent", tag, (unsigned long long)g);
    zc_os_dir *d = NULL;
    const char *name;
    int found = 0;
    if (zc_os_dir_open(spill, &d) != 0)
        return 0;
    while (zc_os_dir_next(d, &name) == 0 && name != NULL) {
        size_t len = strlen(name), wl = strlen(want);
        found |= strncmp(name, ".zc-tmp-", 8) == 0 && len > wl && strcmp(name + len - wl, want) == 0;
    }
    zc_os_dir_close(d);
    return found;
}

TEST(processes_killed_mid_spill_leave_the_others_unaffected)
{
    TEST_FOLDER(dir, "multi-kill");
    char *spill = zc_test_join(dir, "spill");
    REQUIRE(spill && zc_os_mkdir(spill) == 0);
    int writers = procs - 1 > 0 ? procs - 1 : 1;
    zc_os_process kids[16];
    REQUIRE(writers <= 16);
    /* Held open throughout, as a live ComfyUI would be: no victim opens the
     * folder alone, so none may prune the writers' files (zc_store_open). */
    zc_store *watcher = open_store(spill);
    REQUIRE(watcher != NULL);
    const long floats = 64 * 1024, victim_floats = 1024 * 1024;
    for (int w = 0; w < writers; w++) {
        char *log = log_path(dir, "writer", w);
        REQUIRE(log && spawn_writer(spill, "k", w, shots, floats, log, &kids[w]) == 0);
        free(log);
    }
    unsigned seed = 14;
    int victims = 0, mid_spill = 0, opens = 0;
    uint64_t start = zc_os_monotonic_ns();
    /* Until the writers finish: kill victims mid-spill one after the other,
     * and keep opening stores (each open sweeps up dead processes' files). */
    while ((!all_done(dir, writers) || mid_spill == 0) && victims < 500 &&
           zc_os_monotonic_ns() - start < (uint64_t)WAIT_MS * 1000000u) {
        int id = 100 + victims;
        char *vlog = log_path(dir, "victim", id);
        zc_os_process victim;
        REQUIRE(vlog && spawn_writer(spill, "k", id, 0, victim_floats, vlog, &victim) == 0);
        uint64_t t0 = zc_os_monotonic_ns();
        while (lines_in(vlog) < 1 && zc_os_monotonic_ns() - t0 < (uint64_t)WAIT_MS * 1000000u) {
            zc_store *s = open_store(spill);
            CHECK(s != NULL);
            zc_store_close(s);
            opens++;
            zc_os_sleep_ms(2);
        }
        seed = seed * 1103515245u + 12345u;
        zc_os_sleep_ms((seed >> 8) % 20);
        int code = 0;
        CHECK(zc_os_test_kill(&victim) == 0);
        CHECK(zc_os_test_wait(&victim, &code) == 0 && code == -1);
        shot_log vl = {0};
        read_log(vlog, &vl);
        uint64_t last = 0;
        for (size_t i = 0; i < vl.count; i++)
            last = vl.lines[i].generation > last ? vl.lines[i].generation : last;
        mid_spill += last && temp_of(spill, "k", last); /* killed with its spill in flight */
        free(vl.lines);
        free(vlog);
        victims++;
        zc_store *s = open_store(spill);
        CHECK(s != NULL);
        zc_store_close(s);
        opens++;
    }
    for (int w = 0; w < writers; w++) {
        int code = -2;
        CHECK(zc_os_test_wait(&kids[w], &code) == 0 && code == 0); /* no spill of theirs failed */
    }
    shot_log all = {0};
    for (int w = 0; w < writers; w++) {
        char *log = log_path(dir, "writer", w);
        CHECK(log && read_log(log, &all) == 0);
        free(log);
    }
    for (int v = 0; v < victims; v++) {
        char *log = log_path(dir, "victim", 100 + v);
        CHECK(log && read_log(log, &all) == 0);
        free(log);
    }
    CHECK(duplicates(&all) == 0);
    int files = 0;
    CHECK(check_files(spill, "k", &all, 100, victim_floats, &files) == 0);
    for (int w = 0; w < writers; w++)
        CHECK(newest_kept(spill, "k", &all, w));
    zc_store_close(watcher);
    zc_store *s = open_store(spill); /* every writer and victim is gone now */
    REQUIRE(s != NULL);
    zc_store_close(s);
    CHECK(zc_test_count(spill, ".zc-tmp-", "") == 0);
    CHECK(zc_test_count(spill, ".zc-owner-", "") == 0);
    CHECK(zc_test_count(spill, "", ".rejected") == 0);
    CHECK(victims >= 1 && mid_spill >= 1);
    printf("  %d writers x %d shots beside %d killed processes (%d killed with a spill in "
           "flight), %d store opens meanwhile; %d files kept, all verified\n", writers, shots,
           victims, mid_spill, opens, files);
    free(all.lines);
    free(spill);
}

TEST(live_process_temp_file_survives_another_open_until_it_dies)
{
    TEST_FOLDER(dir, "multi-hold");
    char *spill = zc_test_join(dir, "spill"), *ready = zc_test_join(dir, "ready");
    REQUIRE(spill && ready && zc_os_mkdir(spill) == 0);
    const char *argv[] = {child_path, "hold", spill, ready, NULL};
    zc_os_process child;
    REQUIRE(zc_os_test_spawn(argv, 1, &child) == 0);
    uint64_t t0 = zc_os_monotonic_ns();
    while (!exists(ready) && zc_os_monotonic_ns() - t0 < (uint64_t)WAIT_MS * 1000000u)
        zc_os_sleep_ms(5);
    CHECK(exists(ready));
    CHECK(zc_test_count(spill, ".zc-tmp-", "") == 1);
    CHECK(zc_test_count(spill, ".zc-owner-", "") == 1);
    zc_store *s = open_store(spill);
    CHECK(s != NULL);
    CHECK(zc_test_count(spill, ".zc-tmp-", "") == 1); /* its owner is alive */
    zc_store_close(s);
    int code = 0;
    CHECK(zc_os_test_kill(&child) == 0 && zc_os_test_wait(&child, &code) == 0 && code == -1);
    /* The OS drops a dead process's locks at once on POSIX; Windows may take
     * a moment, during which the files stay (never the other way round). */
    int tries = 0;
    do {
        s = open_store(spill);
        CHECK(s != NULL);
        zc_store_close(s);
    } while (zc_test_count(spill, ".zc-tmp-", "") != 0 && ++tries < 50 && (zc_os_sleep_ms(100), 1));
    CHECK(zc_test_count(spill, ".zc-tmp-", "") == 0);
    CHECK(zc_test_count(spill, ".zc-owner-", "") == 0);
    free(spill);
    free(ready);
}

int main(int argc, char **argv)
{
    if (argc != 4 || (procs = atoi(argv[2])) <= 0 || procs > 16 || (shots = atoi(argv[3])) <= 0) {
        fprintf(stderr, "usage: shared_test SHARED_CHILD PROCS(1-16) SHOTS\n");
        return 2;
    }
    child_path = argv[1];
    return zc_test_run_all(NULL);
}
