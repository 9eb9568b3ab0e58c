/* json.c -- tracy-json: Chrome trace event JSON (the array form) for
 * Perfetto's UI, chrome://tracing and speedscope, written by a buffered
 * hand-written emitter; gzip when the output name ends in .gz.
 *
 * Zone names are the functions' names alone; file and line go in args as
 * "url", "line" and "column", the keys speedscope reads a frame's file and
 * line from (its Hermes form, which it chooses when the first event's args
 * hold all of HERMES_KEYS). Perfetto shows args as the slice's details. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <errno.h>
#include <unistd.h>
#include <zlib.h>

#include "convert/convert.h"

typedef struct json_opts {
    const char *path, *output;
    int allow_truncated;
} json_opts;

/* Pre-rendered pieces of a location's X event. */
typedef struct loc_cache {
    char *head;   /* {"ph":"X","cat":"python","name":"f", */
    size_t head_len;
    char *args;   /* "args":{"url":"a.py","line":3,"column":0 */
    size_t args_len;
} loc_cache;

typedef struct proc_cache {
    uint64_t pid;
    loc_cache *locs;
    uint32_t nlocs;
    uint32_t nthreads;
    int tid_clash;  /* thread indices stand in for tids */
} proc_cache;

typedef struct json_state {
    const json_opts *o;
    lt_reader *r;
    cv_out out;
    proc_cache *procs;
    uint32_t nproc;
    uint64_t nonfinite;
    uint64_t events;
    uint32_t who_process, who_thread; /* whose "pid","tid" who_buf holds */
    size_t who_len;
    char who_buf[64];
} json_state;

static const char usage_text[] =
    "Usage: tracy-json [OPTIONS] TRACE.tracy\n"
    "Converts a .tracy file to Chrome trace event JSON (an array of events),\n"
    "which Perfetto's UI, chrome://tracing and speedscope load. Zones are named by\n"
    "their function; file and line are in args (url, line), shown as details.\n"
    "\n"
    "  -o, --output FILE      write to FILE ('-': standard output, the default);\n"
    "                         a name ending in .gz is written gzip-compressed\n"
    "      --allow-truncated  exit 0 on a truncated trace (still warns)\n"
    "  -h, --help             print this help and exit\n"
    "  -V, --version          print the version and exit\n"
    "\n"
    "Exit status: 0 ok, 1 usage, 2 cannot read input or not a trace,\n"
    "3 truncated input, 4 corrupt input, 5 cannot write output.\n";

/* ---- Caches ------------------------------------------------------------- */

/* Renders into a malloc'd string through a scratch cv_out (no sink). */
typedef struct scratch {
    cv_out o;
} scratch;

static void scratch_init(scratch *s, size_t cap) {
    memset(&s->o, 0, sizeof s->o);
    s->o.cap = cap;
    s->o.fd = -1; /* never flushed: sized for the worst case */
    s->o.buf = malloc(cap);
    if (!s->o.buf) s->o.cap = 0;
}

static char *scratch_take(scratch *s, size_t *len) {
    if (!s->o.buf || s->o.err || s->o.total || s->o.len >= s->o.cap) {
        free(s->o.buf);
        return NULL;
    }
    s->o.buf[s->o.len] = '\0';
    *len = s->o.len;
    return s->o.buf;
}

static int render_loc(loc_cache *c, const lt_loc *loc) {
    const char *name = loc && loc->name ? loc->name : "?";
    const char *file = loc && loc->file ? loc->file : "";
    scratch s;
    scratch_init(&s, 6 * (strlen(name) + strlen(file)) + 128);
    cv_out_str(&s.o, "{\"ph\":\"X\",\"cat\":\"");
    cv_out_str(&s.o, cv_kind_name(loc ? loc->kind : 0));
    cv_out_str(&s.o, "\",\"name\":");
    cv_out_json(&s.o, name, strlen(name));
    cv_out_ch(&s.o, ',');
    c->head = scratch_take(&s, &c->head_len);
    scratch_init(&s, 6 * strlen(file) + 64);
    cv_out_str(&s.o, "\"args\":{\"url\":");
    cv_out_json(&s.o, file, strlen(file));
    cv_out_str(&s.o, ",\"line\":");
    cv_out_u64(&s.o, loc ? loc->line : 0);
    cv_out_str(&s.o, ",\"column\":0");
    c->args = scratch_take(&s, &c->args_len);
    return c->head && c->args ? 0 : -1;
}

static const loc_cache *get_loc(json_state *s, uint32_t process, uint32_t id) {
    if (process == 0 || process > s->nproc) return NULL;
    proc_cache *p = &s->procs[process];
    if (id >= p->nlocs) {
        uint32_t n = p->nlocs ? p->nlocs : 64;
        while (n <= id) n *= 2;
        loc_cache *l = realloc(p->locs, n * sizeof *l);
        if (!l) return NULL;
        memset(l + p->nlocs, 0, (n - p->nlocs) * sizeof *l);
        p->locs = l;
        p->nlocs = n;
    }
    loc_cache *c = &p->locs[id];
    if (!c->head && render_loc(c, lt_reader_loc(s->r, process, id))) return NULL;
    return c;
}

/* Chrome identifies processes by pid and threads by (pid, tid): when two
 * processes share a pid (several hosts), process indices stand in for
 * pids; when two threads of a process share a tid (reuse), thread indices
 * stand in for that process's tids. */
static int build_procs(json_state *s) {
    s->nproc = lt_reader_nprocesses(s->r);
    s->procs = calloc(s->nproc + 1, sizeof *s->procs);
    uint64_t *ids = malloc((s->nproc + 1) * sizeof *ids);
    if (!s->procs || !ids) {
        free(ids);
        return -1;
    }
    for (uint32_t p = 1; p <= s->nproc; p++) {
        const lt_process *pr = lt_reader_process(s->r, p);
        ids[p - 1] = s->procs[p].pid = pr ? pr->pid : p;
    }
    int pid_clash = cv_has_dup_u64(ids, s->nproc);
    free(ids);
    if (pid_clash < 0) return -1;
    for (uint32_t p = 1; p <= s->nproc; p++) {
        proc_cache *pc = &s->procs[p];
        if (pid_clash) pc->pid = p;
        uint32_t nt = lt_reader_nthreads(s->r, p);
        pc->nthreads = nt;
        /* Thread names are rendered as they are needed ("who"): nothing
         * kept per thread but whether tids clash in the process. */
        uint64_t *tids = malloc((nt + 1) * sizeof *tids);
        size_t n = 0;
        if (!tids) return -1;
        for (uint32_t t = 1; t <= nt; t++) {
            const lt_thread *th = lt_reader_thread(s->r, p, t);
            if (th) tids[n++] = th->tid;
        }
        pc->tid_clash = cv_has_dup_u64(tids, n);
        free(tids);
        if (pc->tid_clash < 0) return -1;
    }
    return 0;
}

static void free_procs(json_state *s) {
    if (!s->procs) return;
    for (uint32_t p = 0; p <= s->nproc; p++) {
        proc_cache *pc = &s->procs[p];
        for (uint32_t i = 0; i < pc->nlocs; i++) {
            free(pc->locs[i].head);
            free(pc->locs[i].args);
        }
        free(pc->locs);
    }
    free(s->procs);
}

/* ---- Events ------------------------------------------------------------- */

static void sep(json_state *s) {
    if (s->events++) cv_out_write(&s->out, ",\n", 2);
}

/* "pid":P,"tid":T, of a thread: rendered when the thread differs from the
 * last event's (one entry kept, not a string per thread). */
static void who(json_state *s, uint32_t process, uint32_t thread) {
    if (!(process && process <= s->nproc && thread && thread <= s->procs[process].nthreads)) {
        cv_out_printf(&s->out, "\"pid\":%u,\"tid\":%u,", process, thread);
        return;
    }
    if (process != s->who_process || thread != s->who_thread || !s->who_len) {
        const proc_cache *pc = &s->procs[process];
        const lt_thread *th = lt_reader_thread(s->r, process, thread);
        int n = snprintf(s->who_buf, sizeof s->who_buf, "\"pid\":%llu,\"tid\":%llu,",
                         (unsigned long long)pc->pid,
                         (unsigned long long)(pc->tid_clash || !th ? thread : th->tid));
        s->who_len = (size_t)n;
        s->who_process = process;
        s->who_thread = thread;
    }
    cv_out_write(&s->out, s->who_buf, s->who_len);
}

/* Added to the first process_name event's args (see the top). */
#define HERMES_KEYS ",\"url\":\"\",\"line\":0,\"column\":0,\"category\":\"\"," \
    "\"params\":\"\",\"allocatedCategory\":\"\",\"allocatedName\":\"\""

static void metadata(json_state *s) {
    for (uint32_t p = 1; p <= s->nproc; p++) {
        const lt_process *pr = lt_reader_process(s->r, p);
        char name[512];
        const char *prog = pr && pr->program && *pr->program ? pr->program : "process";
        if (pr && pr->rank >= 0)
            snprintf(name, sizeof name, "%s (rank %lld)", prog, (long long)pr->rank);
        else
            snprintf(name, sizeof name, "%s", prog);
        sep(s);
        cv_out_str(&s->out, "{\"ph\":\"M\",\"name\":\"process_name\",");
        cv_out_printf(&s->out, "\"pid\":%llu,\"tid\":0,\"args\":{\"name\":",
                      (unsigned long long)s->procs[p].pid);
        cv_out_json(&s->out, name, strlen(name));
        if (p == 1) cv_out_str(&s->out, HERMES_KEYS);
        cv_out_str(&s->out, "}}");
        for (uint32_t t = 1; t <= s->procs[p].nthreads; t++) {
            const lt_thread *th = lt_reader_thread(s->r, p, t);
            if (!th || !th->name || !*th->name) continue;
            sep(s);
            cv_out_str(&s->out, "{\"ph\":\"M\",\"name\":\"thread_name\",");
            who(s, p, t);
            cv_out_str(&s->out, "\"args\":{\"name\":");
            cv_out_json(&s->out, th->name, strlen(th->name));
            cv_out_str(&s->out, "}}");
        }
    }
}

static int zone(json_state *s, const lt_event *ev) {
    const loc_cache *c = get_loc(s, ev->process, ev->loc);
    if (!c) return -1;
    cv_out *o = &s->out;
    sep(s);
    if (ev->name) {
        const lt_loc *loc = lt_reader_loc(s->r, ev->process, ev->loc);
        cv_out_str(o, "{\"ph\":\"X\",\"cat\":\"");
        cv_out_str(o, cv_kind_name(loc ? loc->kind : 0));
        cv_out_str(o, "\",\"name\":");
        cv_out_json(o, ev->name, ev->name_len);
        cv_out_ch(o, ',');
    } else {
        cv_out_write(o, c->head, c->head_len);
    }
    who(s, ev->process, ev->thread);
    cv_out_write(o, "\"ts\":", 5);
    cv_out_us(o, ev->begin_ts);
    cv_out_write(o, ",\"dur\":", 7);
    cv_out_us(o, ev->ts - ev->begin_ts);
    cv_out_ch(o, ',');
    cv_out_write(o, c->args, c->args_len);
    if (ev->text) {
        cv_out_write(o, ",\"text\":", 8);
        cv_out_json(o, ev->text, ev->text_len);
    }
    if (ev->flags & LT_EVF_ABORTED) cv_out_str(o, ",\"aborted\":true");
    if (ev->flags & LT_EVF_UNCLOSED) cv_out_str(o, ",\"unclosed\":true");
    cv_out_write(o, "}}", 2);
    return 0;
}

/* An instant event; `scope` is "t" (thread), "p" (process) or "g". */
static void instant(json_state *s, const lt_event *ev, const char *cat,
                    const char *scope, const char *name, size_t nlen) {
    cv_out *o = &s->out;
    sep(s);
    cv_out_str(o, "{\"ph\":\"i\",\"s\":\"");
    cv_out_str(o, scope);
    cv_out_str(o, "\",\"cat\":\"");
    cv_out_str(o, cat);
    cv_out_str(o, "\",\"name\":");
    cv_out_json(o, name, nlen);
    cv_out_ch(o, ',');
    who(s, ev->process, ev->thread);
    cv_out_write(o, "\"ts\":", 5);
    cv_out_us(o, ev->ts);
    switch (ev->type) {
    case LT_EV_SIGNPOST:
        cv_out_str(o, ",\"args\":{\"body\":");
        cv_out_json(o, ev->text2, ev->text2_len);
        cv_out_ch(o, '}');
        break;
    case LT_EV_LOST:
        cv_out_str(o, ",\"args\":{\"count\":");
        cv_out_u64(o, ev->count);
        cv_out_ch(o, '}');
        break;
    default: break;
    }
    cv_out_ch(o, '}');
}

static void counter(json_state *s, const lt_event *ev) {
    if (!isfinite(ev->value)) {
        s->nonfinite++;
        return;
    }
    const char *name = lt_reader_plot_name(s->r, ev->process, ev->id);
    char fallback[32];
    if (!name) {
        snprintf(fallback, sizeof fallback, "plot %u", ev->id);
        name = fallback;
    }
    cv_out *o = &s->out;
    sep(s);
    cv_out_str(o, "{\"ph\":\"C\",\"name\":");
    cv_out_json(o, name, strlen(name));
    cv_out_ch(o, ',');
    who(s, ev->process, ev->thread);
    cv_out_write(o, "\"ts\":", 5);
    cv_out_us(o, ev->ts);
    cv_out_str(o, ",\"args\":{\"value\":");
    cv_out_double(o, ev->value);
    cv_out_str(o, "}}");
}

static void frame(json_state *s, const lt_event *ev) {
    const char *name = ev->id ? lt_reader_frame_name(s->r, ev->process, ev->id) : NULL;
    if (!name) name = "frame";
    instant(s, ev, "frame", "p", name, strlen(name));
}

/* One event; -1 when out of memory. */
static int on_event(void *ctx, const lt_event *ev) {
    json_state *s = ctx;
    switch (ev->type) {
    case LT_EV_ZONE_END: return zone(s, ev) ? -1 : 0;
    case LT_EV_SIGNPOST: instant(s, ev, "signpost", "p", ev->text, ev->text_len); break;
    case LT_EV_MESSAGE: instant(s, ev, "message", "t", ev->text, ev->text_len); break;
    case LT_EV_LOST: instant(s, ev, "lost", "t", "lost events", 11); break;
    case LT_EV_PLOT: counter(s, ev); break;
    case LT_EV_FRAME: frame(s, ev); break;
    default: break;
    }
    return 0;
}

static int convert(json_state *s, int *read_exit) {
    cv_out_str(&s->out, "[\n");
    metadata(s);
    if (cv_each_event(s->r, s->o->path, read_exit, on_event, s, &s->out.err) < 0) {
        cv_err("out of memory");
        *read_exit = CV_EXIT_INPUT;
        return -1;
    }
    cv_out_str(&s->out, "\n]\n");
    if (s->nonfinite)
        cv_warn("%llu plot values were NaN or infinite and were left out",
                (unsigned long long)s->nonfinite);
    return 0;
}

/* ---- gzip output -------------------------------------------------------- */

static int gz_write(void *gz, const void *p, unsigned n) { return gzwrite(gz, p, n); }

static int gz_close(void *gz) { return gzclose(gz) == Z_OK ? 0 : -1; }

/* Puts gzip (level 1: JSON compresses well even so, and the output keeps
 * up with the converter) between the buffer and the file. */
static int start_gzip(cv_out *o, const char *path) {
    int fd = o->close_fd ? o->fd : dup(o->fd);
    gzFile gz = fd >= 0 ? gzdopen(fd, "wb1") : NULL;
    if (!gz) {
        cv_err("%s: cannot start gzip output", path);
        if (fd >= 0) close(fd);
        return -1;
    }
    gzbuffer(gz, 1u << 17);
    o->sink = gz;
    o->sink_write = gz_write;
    o->sink_close = gz_close;
    o->close_fd = 0; /* gzclose closes it */
    return 0;
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int run(const json_opts *o) {
    json_state s;
    memset(&s, 0, sizeof s);
    s.o = o;
    cv_run run;
    int code = cv_run_open(&run, o->path, o->allow_truncated ? CV_TRUNC_ALLOW : CV_TRUNC_REFUSE);
    if (code) return code;
    s.r = run.r;
    const char *out = o->output && strcmp(o->output, "-") ? o->output : NULL;
    if (build_procs(&s)) {
        cv_err("out of memory");
        code = CV_EXIT_INPUT;
        goto done;
    }
    if ((code = cv_out_open(&s.out, out))) goto done;
    if (out && ends_with(out, ".gz") && start_gzip(&s.out, out)) {
        cv_out_close(&s.out, out);
        code = CV_EXIT_OUTPUT;
        goto done;
    }
    convert(&s, &run.read_exit);
    code = cv_run_exit(&run, cv_out_close(&s.out, out) != 0);
done:
    free_procs(&s);
    cv_run_close(&run);
    return code;
}

/* ---- Command line ------------------------------------------------------- */

enum { OPT_ALLOW = 256 };

int main(int argc, char **argv) {
    static const struct option longs[] = {
        {"output", required_argument, 0, 'o'},
        {"allow-truncated", no_argument, 0, OPT_ALLOW},
        CV_STD_LONG_OPTIONS,
        {0, 0, 0, 0}};
    json_opts o = {0};
    cv_opt out = {0};
    int c;
    cv_prog = "tracy-json";
    opterr = 0;
    while ((c = cv_getopt(argc, argv, ":o:hV", longs)) != -1) {
        switch (c) {
        case 'o':
            if (cv_opt_set(&out, optarg)) return CV_EXIT_USAGE;
            o.output = optarg;
            break;
        case OPT_ALLOW: o.allow_truncated = 1; break;
        default: return cv_std_option(c, usage_text, argv);
        }
    }
    return cv_one_trace(argc, argv, &o.path) ? CV_EXIT_USAGE : run(&o);
}
