/* lines_source.c -- the sources beside the figures of the line reports
 * (tracy-export -f lines, the HTML report's line view, tracy-serve's
 * /lines): a recorded source file read whole, unless it changed since the
 * run by the size and mtime `python -m tracy -l` recorded (FORMAT.md,
 * "Source stamps"), is over SOURCE_MAX or cannot be read; then why. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "convert/export/lines_source.h"

#define SOURCE_MAX (64u << 20) /* larger sources are not shown */
#define STAMP_PREFIX "tracy: source "

void ls_source_drop(ls_source *src) {
    free(src->text);
    free(src->line);
    memset(src, 0, sizeof *src);
}

const lt_loc *ls_next_internal(lt_reader *r, uint32_t *p, uint32_t *id, const char *prefix) {
    size_t plen = strlen(prefix);
    for (;;) {
        const lt_loc *l = *p ? lt_reader_loc(r, *p, ++*id) : NULL;
        if (!l) {
            if (++*p > lt_reader_nprocesses(r)) return NULL;
            *id = 0;
            continue;
        }
        if (l->kind == LT_LOC_INTERNAL && l->name && strncmp(l->name, prefix, plen) == 0)
            return l;
    }
}

/* The size and mtime `-l` recorded for path: 1 found, 0 none. */
static int stamp_of(lt_reader *r, const char *path, uint64_t *size, uint64_t *mtime) {
    uint32_t p = 0, id = 0;
    const lt_loc *l;
    while ((l = ls_next_internal(r, &p, &id, STAMP_PREFIX)) != NULL) {
        unsigned long long sz, m;
        if (l->file && strcmp(l->file, path) == 0 &&
            sscanf(l->name, STAMP_PREFIX "%llu %llu", &sz, &m) == 2) {
            *size = sz;
            *mtime = m;
            return 1;
        }
    }
    return 0;
}

static int split_lines(ls_source *src, size_t len) {
    size_t n = 1;
    for (size_t i = 0; i < len; i++) n += src->text[i] == '\n';
    src->line = malloc(n * sizeof *src->line);
    if (!src->line) return -1;
    char *p = src->text, *end = src->text + len;
    src->n = 0;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl) *nl = '\0';
        size_t l = strlen(p);
        if (l && p[l - 1] == '\r') p[l - 1] = '\0';
        src->line[src->n++] = p;
        p = nl ? nl + 1 : end;
    }
    return 0;
}

int ls_source_load(ls_source *src, lt_reader *r, const char *path) {
    if (src->path && strcmp(src->path, path) == 0) return 0;
    ls_source_drop(src);
    src->path = path;
    struct stat st;
    uint64_t size = 0, mtime = 0;
    int stamped = stamp_of(r, path, &size, &mtime);
    FILE *fp = *path ? fopen(path, "rb") : NULL;
    if (!*path) {
        snprintf(src->why, sizeof src->why, "source not shown: the trace names no file");
        return 0;
    }
    if (!fp || fstat(fileno(fp), &st) < 0) {
        snprintf(src->why, sizeof src->why, "source not shown: %s: %s", path, strerror(errno));
        if (fp) fclose(fp);
        return 0;
    }
    uint64_t now_mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
    if (stamped && ((uint64_t)st.st_size != size || now_mtime != mtime)) {
        snprintf(src->why, sizeof src->why,
                 "source not shown: %s changed since the run (%s differs from the recorded one)",
                 path, (uint64_t)st.st_size != size ? "its size" : "its modification time");
        fclose(fp);
        return 0;
    }
    if ((uint64_t)st.st_size > SOURCE_MAX) {
        snprintf(src->why, sizeof src->why, "source not shown: %s is over %u MiB", path,
                 SOURCE_MAX >> 20);
        fclose(fp);
        return 0;
    }
    src->unchecked = !stamped;
    src->text = malloc((size_t)st.st_size + 1);
    if (!src->text) {
        fclose(fp);
        return -1;
    }
    size_t len = fread(src->text, 1, (size_t)st.st_size, fp);
    int bad = ferror(fp);
    fclose(fp);
    if (bad) {
        snprintf(src->why, sizeof src->why, "source not shown: %s: read error", path);
        return 0;
    }
    src->text[len] = '\0';
    return split_lines(src, len);
}

static size_t indent_of(const char *l) {
    size_t i = 0;
    while (l[i] == ' ' || l[i] == '\t') i++;
    return i;
}

size_t ls_block_end(const ls_source *src, size_t first, size_t last_hit) {
    size_t i = first, end = first;
    while (i <= src->n && src->line[i - 1][indent_of(src->line[i - 1])] == '@') i++;
    if (i > src->n) return last_hit > end ? last_hit : end;
    size_t base = indent_of(src->line[i - 1]);
    end = i;
    for (size_t j = i + 1; j <= src->n; j++) {
        const char *l = src->line[j - 1];
        size_t ind = indent_of(l);
        if (!l[ind] || l[ind] == '#') continue; /* blank or a comment */
        if (ind <= base && l[ind] != ')' && l[ind] != ']' && l[ind] != '}') break;
        end = j;
    }
    return last_hit > end ? last_hit : end;
}
