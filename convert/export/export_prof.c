/* export_prof.c -- tracy-export's per-function formats: cProfile's pstats
 * file (a marshal'd dict, as cProfile.Profile.dump_stats writes it) and the
 * callgrind format (KCachegrind, callgrind_annotate). Both come from the
 * merged call tree, where recursion is told from the paths. */
#include <stdio.h>
#include <stdlib.h>

#include "convert/export/export.h"

/* A caller -> callee pair, summed over the tree's paths. */
typedef struct edge {
    uint32_t caller, callee;
    uint64_t calls, prim;  /* prim: the pair was not already open above */
    uint64_t self;         /* the callee's self time under this caller */
    uint64_t cum_pair;     /* callee time when the pair was not open above */
    uint64_t cum_callee;   /* callee time when the callee was not open above */
} edge;

static int by_callee(const void *a, const void *b) {
    const edge *x = a, *y = b;
    if (x->callee != y->callee) return x->callee < y->callee ? -1 : 1;
    return x->caller < y->caller ? -1 : x->caller > y->caller;
}

static int by_caller(const void *a, const void *b) {
    const edge *x = a, *y = b;
    if (x->caller != y->caller) return x->caller < y->caller ? -1 : 1;
    return x->callee < y->callee ? -1 : x->callee > y->callee;
}

/* The pairs of the tree, sorted with `cmp` and merged; NULL on
 * out-of-memory (an empty tree gives a valid empty array). */
static edge *edges_of(const ct_tree *t, size_t *n, int (*cmp)(const void *, const void *)) {
    size_t nn = ct_tree_nnodes(t), k = 0;
    edge *e = malloc((nn + 1) * sizeof *e);
    if (!e) return NULL;
    for (size_t i = 0; i < nn; i++) {
        const ct_node *c = ct_tree_node(t, i);
        const ct_node *p = ct_tree_node(t, c->parent);
        if (c->func == CT_ROOT || p->func == CT_ROOT) continue;
        e[k++] = (edge){p->func, c->func, c->calls, c->outer_edge ? c->calls : 0, c->self,
                        c->outer_edge ? c->total : 0, c->outer ? c->total : 0};
    }
    qsort(e, k, sizeof *e, cmp);
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m && e[m - 1].caller == e[i].caller && e[m - 1].callee == e[i].callee) {
            e[m - 1].calls += e[i].calls;
            e[m - 1].prim += e[i].prim;
            e[m - 1].self += e[i].self;
            e[m - 1].cum_pair += e[i].cum_pair;
            e[m - 1].cum_callee += e[i].cum_callee;
        } else {
            e[m++] = e[i];
        }
    }
    *n = m;
    return e;
}

/* ---- pstats ------------------------------------------------------------- */

static void m_u32(cv_out *o, uint32_t v) {
    unsigned char b[4] = {v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24};
    cv_out_write(o, b, 4);
}

/* marshal's int: 'i' when it fits 32 bits, else 'l' in 15-bit digits. */
static void m_int(cv_out *o, uint64_t v) {
    if (v <= INT32_MAX) {
        cv_out_ch(o, 'i');
        m_u32(o, (uint32_t)v);
        return;
    }
    uint32_t nd = 0;
    for (uint64_t w = v; w; w >>= 15) nd++;
    cv_out_ch(o, 'l');
    m_u32(o, nd);
    for (; v; v >>= 15) {
        unsigned char b[2] = {v & 0xff, (v >> 8) & 0x7f};
        cv_out_write(o, b, 2);
    }
}

static void m_float(cv_out *o, double d) {
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    cv_out_ch(o, 'g');
    for (int i = 0; i < 8; i++) cv_out_ch(o, (char)(bits >> (8 * i)));
}

/* Length of the valid UTF-8 sequence at s (1..4), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
                 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (len == 0 || len > n || (len == 2 && s[0] < 0xc2)) return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return len;
}

/* marshal's str ('u', UTF-8): bytes that are not UTF-8 become '?'. */
static void m_str(cv_out *o, const char *s) {
    size_t n = strlen(s);
    cv_out_ch(o, 'u');
    m_u32(o, (uint32_t)n);
    for (size_t i = 0; i < n;) {
        size_t len = utf8_len((const unsigned char *)s + i, n - i);
        if (len == 0) {
            cv_out_ch(o, '?');
            i++;
        } else {
            cv_out_write(o, s + i, len);
            i += len;
        }
    }
}

static void m_tuple(cv_out *o, uint32_t n) {
    cv_out_ch(o, '(');
    m_u32(o, n);
}

/* cProfile's label: (file, line, name); C functions as ('~', 0, name). */
static void m_func(cv_out *o, const ct_func *f) {
    m_tuple(o, 3);
    m_str(o, *f->file ? f->file : "~");
    m_int(o, *f->file ? f->line : 0);
    m_str(o, f->name);
}

int ex_pstats(ex_ctx *x) {
    const ct_tree *t = x->tree;
    size_t nf = ct_tree_nfuncs(t), ne;
    ct_total *tot = calloc(nf + 1, sizeof *tot);
    edge *e = edges_of(t, &ne, by_callee);
    if (!tot || !e) {
        free(tot);
        free(e);
        cv_err("out of memory");
        return -1;
    }
    ct_tree_totals(t, tot);
    cv_out *o = &x->out;
    cv_out_ch(o, '{');
    size_t k = 0;
    for (size_t f = 0; f < nf; f++) {
        if (!tot[f].calls) continue;
        m_func(o, ct_tree_func(t, f));
        m_tuple(o, 5);
        m_int(o, tot[f].prim);
        m_int(o, tot[f].calls);
        m_float(o, (double)tot[f].self / 1e9);
        m_float(o, (double)tot[f].cum / 1e9);
        cv_out_ch(o, '{');
        for (; k < ne && e[k].callee < f; k++) {}
        for (; k < ne && e[k].callee == f; k++) {
            m_func(o, ct_tree_func(t, e[k].caller));
            m_tuple(o, 4);
            m_int(o, e[k].calls);
            m_int(o, e[k].prim);
            m_float(o, (double)e[k].self / 1e9);
            m_float(o, (double)e[k].cum_pair / 1e9);
        }
        cv_out_ch(o, '0');
    }
    cv_out_ch(o, '0');
    free(tot);
    free(e);
    return 0;
}

/* ---- callgrind ---------------------------------------------------------- */

/* Writes "fl=(N) file" / "fn=(N) name" (the name and file the first time
 * only, as the format's compression allows). Functions sharing a file and
 * a name (two lambdas) get ":LINE" so that they stay apart. */
typedef struct cg_names {
    unsigned char *fn_seen, *fl_seen;
    uint32_t *fl_id;      /* func -> file id */
    unsigned char *dup;   /* func name shared within its file */
} cg_names;

static const char *cg_file(const ct_func *f) { return *f->file ? f->file : "???"; }

static int cg_names_init(cg_names *c, const ct_tree *t) {
    size_t nf = ct_tree_nfuncs(t);
    cv_map *files = cv_map_new(), *names = cv_map_new();
    c->fn_seen = calloc(nf + 1, 1);
    c->fl_seen = calloc(nf + 1, 1);
    c->dup = calloc(nf + 1, 1);
    c->fl_id = calloc(nf + 1, sizeof *c->fl_id);
    long *first = calloc(nf + 1, sizeof *first);
    int rc = files && names && c->fn_seen && c->fl_seen && c->dup && c->fl_id && first ? 0 : -1;
    for (size_t f = 0; f < nf && !rc; f++) {
        const ct_func *fn = ct_tree_func(t, f);
        const char *file = cg_file(fn);
        int added;
        long id = cv_map_get(files, file, strlen(file), &added);
        size_t flen = strlen(file), nlen = strlen(fn->name);
        char *key = malloc(flen + nlen + 2);
        if (id < 0 || !key) {
            free(key);
            rc = -1;
            break;
        }
        c->fl_id[f] = (uint32_t)id + 1;
        memcpy(key, file, flen + 1);
        memcpy(key + flen + 1, fn->name, nlen);
        long n = cv_map_get(names, key, flen + 1 + nlen, &added);
        free(key);
        if (n < 0) rc = -1;
        else if (added) first[n] = (long)f;
        else c->dup[f] = c->dup[first[n]] = 1;
    }
    free(first);
    cv_map_free(files);
    cv_map_free(names);
    return rc;
}

static void cg_names_free(cg_names *c) {
    free(c->fn_seen);
    free(c->fl_seen);
    free(c->fl_id);
    free(c->dup);
}

static void cg_ref(cv_out *o, cg_names *c, const ct_tree *t, uint32_t f, const char *fl,
                   const char *fn) {
    const ct_func *func = ct_tree_func(t, f);
    uint32_t fid = c->fl_id[f];
    cv_out_printf(o, "%s=(%u)", fl, fid);
    if (!c->fl_seen[fid]) {
        cv_out_ch(o, ' ');
        cv_out_str(o, cg_file(func));
        c->fl_seen[fid] = 1;
    }
    cv_out_printf(o, "\n%s=(%u)", fn, f + 1);
    if (!c->fn_seen[f]) {
        cv_out_ch(o, ' ');
        cv_out_str(o, func->name);
        if (c->dup[f]) cv_out_printf(o, ":%u", func->line);
        c->fn_seen[f] = 1;
    }
    cv_out_ch(o, '\n');
}

static void cg_header(ex_ctx *x, uint64_t sum) {
    cv_out *o = &x->out;
    const lt_process *p = lt_reader_process(x->r, 1);
    cv_out_str(o, "# callgrind format\nversion: 1\ncreator: tracy-export " LT_VERSION_STRING
               "\n");
    if (p && p->argc) {
        cv_out_str(o, "cmd:");
        for (uint32_t i = 0; i < p->argc; i++) {
            cv_out_ch(o, ' ');
            for (const char *s = p->argv[i]; *s; s++) cv_out_ch(o, *s == '\n' ? ' ' : *s);
        }
        cv_out_ch(o, '\n');
    }
    cv_out_str(o, "positions: line\nevents: ns\nsummary: ");
    cv_out_u64(o, sum);
    cv_out_str(o, "\n\n");
}

/* Costs: a function's self time on its line; a call's inclusive cost is the
 * callee's time when it was not already open above. callgrind_annotate
 * takes a function's inclusive cost as the sum of the calls into it, which
 * is then its cumulative time: the outermost call of a recursion (mutual
 * ones too) counted once, as cumtime does. */
int ex_callgrind(ex_ctx *x) {
    const ct_tree *t = x->tree;
    size_t nf = ct_tree_nfuncs(t), ne;
    ct_total *tot = calloc(nf + 1, sizeof *tot);
    edge *e = edges_of(t, &ne, by_caller);
    cg_names c;
    memset(&c, 0, sizeof c);
    if (!tot || !e || cg_names_init(&c, t)) {
        free(tot);
        free(e);
        cg_names_free(&c);
        cv_err("out of memory");
        return -1;
    }
    ct_tree_totals(t, tot);
    uint64_t sum = 0;
    for (size_t f = 0; f < nf; f++) sum += tot[f].self;
    cg_header(x, sum);
    cv_out *o = &x->out;
    size_t k = 0;
    for (uint32_t f = 0; f < nf; f++) {
        if (!tot[f].calls) continue;
        const ct_func *fn = ct_tree_func(t, f);
        cg_ref(o, &c, t, f, "fl", "fn");
        cv_out_printf(o, "%u ", fn->line);
        cv_out_u64(o, tot[f].self);
        cv_out_ch(o, '\n');
        for (; k < ne && e[k].caller < f; k++) {}
        for (; k < ne && e[k].caller == f; k++) {
            cg_ref(o, &c, t, e[k].callee, "cfl", "cfn");
            cv_out_printf(o, "calls=%llu %u\n%u ", (unsigned long long)e[k].calls,
                          ct_tree_func(t, e[k].callee)->line, fn->line);
            cv_out_u64(o, e[k].cum_callee);
            cv_out_ch(o, '\n');
        }
        cv_out_ch(o, '\n');
    }
    cv_out_str(o, "totals: ");
    cv_out_u64(o, sum);
    cv_out_ch(o, '\n');
    free(tot);
    free(e);
    cg_names_free(&c);
    return 0;
}
