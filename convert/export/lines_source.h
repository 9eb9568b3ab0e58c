/* lines_source.h -- a recorded source file as the line reports show it
 * beside their figures (lines_source.c): tracy-export -f lines, the HTML
 * report's line view and tracy-serve's /lines share it. */
#ifndef CONVERT_LINES_SOURCE_H
#define CONVERT_LINES_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

/* A source file's text split into lines. */
typedef struct ls_source {
    const char *path;      /* the caller's string; NULL: none loaded */
    char *text;
    char **line;           /* line[i]: line i + 1 */
    size_t n;
    char why[320];         /* why no text is shown, "" when shown */
    int unchecked;         /* shown, but the trace holds no stamp */
} ls_source;

/* Loads path (a string that outlives the load) unless it is the one
 * loaded, checked against the size and mtime recorded in r. Leaves
 * src->why set when the text is not to be shown. Returns 0 or -1 (out of
 * memory). A zeroed ls_source is empty. */
int ls_source_load(ls_source *src, lt_reader *r, const char *path);
/* Frees the text; src is empty after. */
void ls_source_drop(ls_source *src);
/* The last line of the block that starts at `first` (decorators, then the
 * def and every line indented under it), at least `last_hit`. */
size_t ls_block_end(const ls_source *src, size_t first, size_t last_hit);
/* The internal locations of the trace whose name starts with `prefix`, in
 * turn: *p and *id start at 0; NULL after the last. */
const lt_loc *ls_next_internal(lt_reader *r, uint32_t *p, uint32_t *id, const char *prefix);

#endif /* CONVERT_LINES_SOURCE_H */
