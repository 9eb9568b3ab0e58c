/* api_lines.c -- /api/t/ID/lines?func=F (API.md): the line heat of one
 * function of a trace recorded with `python -m tracy -l`, the figures of
 * `tracy-export -f lines` (convert/export/export_lines.c) with the source
 * beside them (convert/export/lines_source.c, the same checks).
 *
 * `-l` records each executed line as a zone of kind "line" named
 * "QUAL:LINE" with the file of its code object; the function's own zones
 * are named QUAL (with " [FILE:LINE]" under --label). Per line: hits (its
 * zones) and time (their durations summed, nested ones too, as
 * line_profiler counts), over every thread; zones still open at the end of
 * the data are left out, as tracy-export sees no end for them. Counted from
 * the index in one pass over its zones rows, on the thread pool (about
 * 0.1 s per 10M zones: the loop keeps answering meanwhile). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/export/lines_source.h"
#include "serve.h"

#define LINES_TEXT_MAX 240 /* bytes of a source line, as the HTML report */
#define LINES_MAX 400      /* lines of a function with its source, else hit lines only */

typedef struct lrow {
    uint32_t line;
    uint64_t hits, ns;
} lrow;

/* The function part of a function's name: QUAL of "QUAL:LINE" (line) or
 * of "QUAL [FILE:LINE]" (python). */
static size_t qual_len(const char *name, uint32_t kind) {
    size_t n = strlen(name);
    if (kind == LT_LOC_LINE) {
        const char *c = strrchr(name, ':');
        return c ? (size_t)(c - name) : n;
    }
    const char *open = strstr(name, " [");
    return n && name[n - 1] == ']' && open ? (size_t)(open - name) : n;
}

static int same_function(const vw_index *ix, const vw_func *g, const char *qual, size_t ql,
                         const char *file) {
    const char *n = vw_string(ix, g->name, NULL);
    return qual_len(n, g->kind) == ql && !memcmp(n, qual, ql) &&
           !strcmp(vw_string(ix, g->file, NULL), file);
}

static int by_line(const void *a, const void *b) {
    const lrow *x = a, *y = b;
    return x->line < y->line ? -1 : x->line > y->line;
}

/* Hits and time of the marked functions (mark[f]: 1) over every zone. */
static void count_zones(const vw_index *ix, const uint8_t *mark, uint64_t *hits, uint64_t *ns) {
    for (uint32_t t = 0; t < vw_ntracks(ix); t++) {
        uint32_t depths = vw_track_at(ix, t)->depths;
        for (uint32_t d = 0; d < depths; d++) {
            long row = vw_find_row(ix, VW_ROW_ZONES, t, d);
            if (row < 0) continue;
            uint64_t n = vw_row_at(ix, (uint32_t)row)->n;
            for (uint64_t i = 0; i < n; i++) {
                const vw_zone *z = vw_rec(ix, (uint32_t)row, i);
                uint32_t f = z->func_flags & VW_FUNC_MASK;
                if (!mark[f] || (z->func_flags & VW_OPEN)) continue;
                hits[f]++;
                ns[f] += z->dur;
            }
        }
    }
}

/* The rows with their source (lines first..last, every one) or the hit
 * rows alone. */
static void rows_json(jb *j, const lrow *rows, size_t n, const ls_source *src, int text,
                      uint32_t first, uint32_t last) {
    jb_key(j, "rows"), jb_arr(j);
    size_t k = 0;
    for (uint32_t line = first; line <= last && line >= first; line++) {
        while (k < n && rows[k].line < line) k++;
        const lrow *r = k < n && rows[k].line == line ? &rows[k] : NULL;
        if (!text && !r) continue;
        jb_arr(j);
        jb_u64(j, line);
        jb_u64(j, r ? r->hits : 0);
        jb_u64(j, r ? r->ns : 0);
        if (text) {
            const char *l = src->line[line - 1];
            size_t len = strlen(l);
            jb_strn(j, l, len < LINES_TEXT_MAX ? len : LINES_TEXT_MAX);
        } else {
            jb_null(j);
        }
        jb_end_arr(j);
    }
    jb_end_arr(j);
}

static void lines_json(sv_session *s, sv_answer *a, uint32_t func, const char *qual, size_t ql,
                       const char *file, uint32_t def_line, const lrow *rows, size_t n) {
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += rows[i].ns;
    ls_source src;
    memset(&src, 0, sizeof src);
    if (ls_source_load(&src, s->r, file)) {
        sv_error(a, 500, "internal", "out of memory");
        return;
    }
    uint32_t first = def_line && def_line < rows[0].line ? def_line : rows[0].line;
    uint32_t last = rows[n - 1].line;
    int text = !src.why[0] && src.line && first > 0;
    if (text) last = (uint32_t)ls_block_end(&src, first, last);
    if (text && last > src.n) text = 0, last = rows[n - 1].line;
    const char *note = text ? (src.unchecked ? "source not checked: the trace holds no size "
                                               "and mtime for it" : "")
                            : src.why[0] ? src.why : "source not shown: the recorded lines go "
                                                     "past the file's end";
    if (text && last - first >= LINES_MAX) {
        text = 0;
        last = rows[n - 1].line;
        note = "source lines left out (too many)";
    }
    a->status = 200;
    a->type = "application/json; charset=utf-8";
    jb_init(&a->body, SV_MAX_ANSWER);
    jb *j = &a->body;
    jb_obj(j);
    jb_key(j, "func"), jb_u64(j, func);
    jb_key(j, "name"), jb_strn(j, qual, ql);
    jb_key(j, "file"), jb_str(j, file);
    jb_key(j, "first"), jb_u64(j, first);
    jb_key(j, "total"), jb_u64(j, total);
    jb_key(j, "note"), jb_str(j, note);
    rows_json(j, rows, n, &src, text, first, last);
    jb_end_obj(j);
    ls_source_drop(&src);
}

/* The function id of q's func parameter: 0, or -1 with the error in a. */
static int func_param(const sv_session *s, const sv_req *q, sv_answer *a, uint32_t *func) {
    uint32_t nf = vw_nfuncs(s->ix);
    char buf[32];
    long len = sv_param(q, "func", buf, sizeof buf);
    char *e = buf;
    errno = 0;
    unsigned long long fid = len > 0 && isdigit((unsigned char)buf[0]) ? strtoull(buf, &e, 10) : 0;
    if (len <= 0 || *e || !isdigit((unsigned char)buf[0]) || errno == ERANGE) {
        sv_error(a, 400, "bad_param", "func must be a function id");
        return -1;
    }
    if (fid >= nf) {
        sv_error(a, 404, "not_found", "no function %llu", fid);
        return -1;
    }
    *func = (uint32_t)fid;
    return 0;
}

void sv_api_lines(sv_ctx *c, sv_session *s, const sv_req *q, sv_answer *a) {
    uint32_t fid;
    if (sv_job_take(q, a) || func_param(s, q, a, &fid) < 0) return;
    sv_job_lines(c, s, q, a, fid);
}

void sv_lines_compute(sv_session *s, uint32_t fid, sv_answer *a) {
    const vw_index *ix = s->ix;
    uint32_t nf = vw_nfuncs(ix);
    const vw_func *f = vw_func_at(ix, fid);
    const char *name = vw_string(ix, f->name, NULL), *file = vw_string(ix, f->file, NULL);
    size_t ql = qual_len(name, f->kind);
    uint8_t *mark = calloc(nf, 1);
    uint64_t *hits = calloc(nf, sizeof *hits), *ns = calloc(nf, sizeof *ns);
    lrow *rows = calloc(nf, sizeof *rows);
    if (!mark || !hits || !ns || !rows) {
        sv_error(a, 500, "internal", "out of memory");
        goto out;
    }
    /* the function's line locations, and its first line: the def (the
     * lowest line of its python locations) */
    uint32_t nl = 0, def_line = 0;
    if (f->kind == LT_LOC_PYTHON || f->kind == LT_LOC_LINE) {
        for (uint32_t g = 0; g < nf; g++) {
            const vw_func *fg = vw_func_at(ix, g);
            if ((fg->kind != LT_LOC_LINE && fg->kind != LT_LOC_PYTHON) ||
                !same_function(ix, fg, name, ql, file))
                continue;
            if (fg->kind == LT_LOC_PYTHON) {
                if (!def_line || fg->line < def_line) def_line = fg->line;
            } else {
                mark[g] = 1;
                nl++;
            }
        }
    }
    if (!nl) {
        sv_error(a, 404, "not_found", "function %u has no line zones (python -m tracy -l)", fid);
        goto out;
    }
    count_zones(ix, mark, hits, ns);
    size_t n = 0;
    for (uint32_t g = 0; g < nf; g++)
        if (mark[g] && hits[g]) rows[n++] = (lrow){vw_func_at(ix, g)->line, hits[g], ns[g]};
    if (!n) {
        sv_error(a, 404, "not_found", "function %u has no line zones (python -m tracy -l)", fid);
        goto out;
    }
    qsort(rows, n, sizeof *rows, by_line);
    lines_json(s, a, fid, name, ql, file, def_line, rows, n);
out:
    free(mark);
    free(hits);
    free(ns);
    free(rows);
}
