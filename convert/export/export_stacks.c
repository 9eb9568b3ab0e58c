/* export_stacks.c -- tracy-export's stack formats: folded stacks (one line
 * per call path, "a;b;c SELF_NS") and speedscope's evented JSON (every zone
 * as an open and a close event, a profile per thread). */
#include <stdio.h>
#include <stdlib.h>

#include "convert/export/export.h"

/* ---- Folded stacks ------------------------------------------------------ */

/* A frame of a folded line: ';' separates frames and a line ends the stack,
 * so both become ':' and ' ' inside a frame. */
static void folded_frame(cv_out *o, const char *s) {
    for (; *s; s++) cv_out_ch(o, *s == ';' ? ':' : *s == '\n' || *s == '\r' ? ' ' : *s);
}

static void folded_thread(ex_ctx *x, const ct_stream *s) {
    const lt_process *p = lt_reader_process(x->r, s->process);
    const lt_thread *th = lt_reader_thread(x->r, s->process, s->thread);
    char buf[64];
    folded_frame(&x->out, p && p->program && *p->program ? p->program : "process");
    snprintf(buf, sizeof buf, " %llu;", (unsigned long long)(p ? p->pid : s->process));
    cv_out_str(&x->out, buf);
    if (th && th->name && *th->name) {
        folded_frame(&x->out, th->name);
        cv_out_ch(&x->out, ' ');
    }
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)(th ? th->tid : s->thread));
    cv_out_str(&x->out, buf);
}

int ex_folded(ex_ctx *x) {
    const ct_tree *t = x->tree;
    size_t nn = ct_tree_nnodes(t);
    uint32_t *path = malloc((LT_MAX_DEPTH + 2) * sizeof *path);
    if (!path) {
        cv_err("out of memory");
        return -1;
    }
    cv_out *o = &x->out;
    uint64_t period = x->o->period ? x->o->period : 1;
    for (size_t i = 0; i < nn; i++) {
        const ct_node *n = ct_tree_node(t, i);
        uint64_t weight = (n->self + period / 2) / period;
        if (n->func == CT_ROOT || weight == 0) continue;
        size_t d = 0;
        for (uint32_t m = (uint32_t)i; ct_tree_node(t, m)->func != CT_ROOT;
             m = ct_tree_node(t, m)->parent)
            path[d++] = m;
        int first = 1;
        if (x->o->per_thread) {
            folded_thread(x, ct_tree_stream(t, n->stream));
            first = 0;
        }
        while (d--) {
            if (!first) cv_out_ch(o, ';');
            first = 0;
            const ct_func *f = ct_tree_func(t, ct_tree_node(t, path[d])->func);
            folded_frame(o, f->name);
            if (*f->file) {
                cv_out_write(o, " (", 2);
                folded_frame(o, f->file);
                cv_out_printf(o, ":%u)", f->line);
            }
        }
        cv_out_ch(o, ' ');
        cv_out_u64(o, weight);
        cv_out_ch(o, '\n');
    }
    free(path);
    return 0;
}

/* ---- speedscope --------------------------------------------------------- */

typedef struct ss_state {
    ex_ctx *x;
    uint64_t t0;        /* the trace's first timestamp: "at" counts from it */
    uint64_t first, last;
    uint32_t *stack;    /* open zones' frames */
    uint32_t depth;
    int nprofiles;
} ss_state;

static void ss_profile_head(ss_state *s, uint32_t p, uint32_t t) {
    cv_out *o = &s->x->out;
    const lt_process *pr = lt_reader_process(s->x->r, p);
    const lt_thread *th = lt_reader_thread(s->x->r, p, t);
    char name[600];
    snprintf(name, sizeof name, "%s %llu: %s%s%llu",
             pr && pr->program && *pr->program ? pr->program : "process",
             (unsigned long long)(pr ? pr->pid : p), th && th->name && *th->name ? th->name : "",
             th && th->name && *th->name ? " " : "", (unsigned long long)(th ? th->tid : t));
    cv_out_str(o, s->nprofiles++ ? ",\n" : "\n");
    cv_out_str(o, "{\"type\":\"evented\",\"name\":");
    cv_out_json(o, name, strlen(name));
    cv_out_str(o, ",\"unit\":\"nanoseconds\",\"events\":[");
}

/* Decimal digits of v at the end of buf[24], two at a time (the events are
 * mostly numbers: this keeps the format above 3M zones/s); returns the
 * first digit. */
static char *digits(char *end, uint64_t v) {
    static const char pairs[] = "00010203040506070809101112131415161718192021222324"
                                "25262728293031323334353637383940414243444546474849"
                                "50515253545556575859606162636465666768697071727374"
                                "75767778798081828384858687888990919293949596979899";
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        *--end = pairs[d + 1];
        *--end = pairs[d];
    }
    if (v >= 10) {
        *--end = pairs[v * 2 + 1];
        *--end = pairs[v * 2];
    } else {
        *--end = (char)('0' + v);
    }
    return end;
}

static void ss_event(ss_state *s, char type, uint32_t frame, uint64_t ts, int first) {
    static const char head[] = ",\n{\"type\":\"O\",\"frame\":";
    char buf[128], num[24];
    size_t n = sizeof head - 1 - (size_t)first;
    memcpy(buf, head + first, n);
    buf[n - 11] = type;
    char *d = digits(num + sizeof num, frame);
    memcpy(buf + n, d, (size_t)(num + sizeof num - d));
    n += (size_t)(num + sizeof num - d);
    memcpy(buf + n, ",\"at\":", 6);
    n += 6;
    d = digits(num + sizeof num, ts - s->t0);
    memcpy(buf + n, d, (size_t)(num + sizeof num - d));
    n += (size_t)(num + sizeof num - d);
    buf[n++] = '}';
    cv_out_write(&s->x->out, buf, n);
}

/* One thread's profile; nothing when it has no zone. */
static int ss_thread(ss_state *s, uint32_t p, uint32_t t) {
    ex_ctx *x = s->x;
    lt_event ev;
    int rc, err = 0;
    uint64_t n = 0;
    if (!cv_sel_table_keeps(x->sel, p, t) || lt_reader_select(x->r, p, t)) return 0;
    s->depth = 0;
    while ((rc = cv_next(x->r, &ev, x->o->path, &err)) > 0) {
        if (ev.type == LT_EV_ZONE_BEGIN) {
            long f = ct_tree_func_of(x->tree, p, ev.loc);
            if (f < 0 || s->depth > LT_MAX_DEPTH) return -1;
            if (n == 0) {
                ss_profile_head(s, p, t);
                s->first = ev.ts;
            }
            ss_event(s, 'O', (uint32_t)f, ev.ts, n++ == 0);
            s->stack[s->depth++] = (uint32_t)f;
            s->last = ev.ts;
        } else if (ev.type == LT_EV_ZONE_END && s->depth) {
            ss_event(s, 'C', s->stack[--s->depth], ev.ts, 0);
            s->last = ev.ts;
        }
    }
    if (rc < 0 && !x->read_exit) x->read_exit = cv_exit_for(err) ? cv_exit_for(err)
                                                                  : CV_EXIT_CORRUPT;
    if (n)
        cv_out_printf(&x->out, "\n],\"startValue\":%llu,\"endValue\":%llu}",
                      (unsigned long long)(s->first - s->t0),
                      (unsigned long long)(s->last - s->t0));
    return 0;
}

static void ss_frames(ex_ctx *x) {
    cv_out *o = &x->out;
    size_t nf = ct_tree_nfuncs(x->tree);
    cv_out_str(o, "],\n\"shared\":{\"frames\":[");
    for (size_t f = 0; f < nf; f++) {
        const ct_func *fn = ct_tree_func(x->tree, f);
        cv_out_str(o, f ? ",\n{\"name\":" : "\n{\"name\":");
        cv_out_json(o, fn->name, strlen(fn->name));
        if (*fn->file) {
            cv_out_str(o, ",\"file\":");
            cv_out_json(o, fn->file, strlen(fn->file));
            cv_out_printf(o, ",\"line\":%u", fn->line);
        }
        cv_out_ch(o, '}');
    }
    cv_out_str(o, "\n]}}\n");
}

int ex_speedscope(ex_ctx *x) {
    ss_state s = {.x = x, .t0 = lt_reader_info(x->r)->first_ts};
    s.stack = malloc((LT_MAX_DEPTH + 2) * sizeof *s.stack);
    if (!s.stack) {
        cv_err("out of memory");
        return -1;
    }
    const lt_process *p1 = lt_reader_process(x->r, 1);
    const char *name = p1 && p1->program && *p1->program ? p1->program : x->o->path;
    cv_out_str(&x->out, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
               "\"exporter\":\"tracy-export " LT_VERSION_STRING "\",\"name\":");
    cv_out_json(&x->out, name, strlen(name));
    cv_out_str(&x->out, ",\"activeProfileIndex\":0,\"profiles\":[");
    int rc = 0;
    uint32_t np = lt_reader_nprocesses(x->r);
    for (uint32_t p = 1; p <= np && !rc && !x->out.err; p++) {
        uint32_t nt = lt_reader_nthreads(x->r, p);
        for (uint32_t t = 1; t <= nt && !rc; t++) rc = ss_thread(&s, p, t);
    }
    free(s.stack);
    if (rc) {
        cv_err("out of memory");
        return -1;
    }
    ss_frames(x);
    return 0;
}
