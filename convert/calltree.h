/* calltree.h -- aggregation shared by the converters: which activations of
 * a location are its outermost on a thread (cumulative time counts those
 * only, as cProfile's cumtime does, so recursion is not counted twice), and
 * the aggregated call tree (one node per distinct call path) the exporters
 * draw from. Memory grows with open zones, distinct locations and distinct
 * call paths, never with the number of zones. */
#ifndef CONVERT_CALLTREE_H
#define CONVERT_CALLTREE_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

/* ---- Outermost activations ---------------------------------------------- */

typedef struct ct_active ct_active;

/* Returns a new tracker, or NULL on out-of-memory. */
ct_active *ct_active_new(void);
/* Frees the tracker. Accepts NULL. */
void ct_active_free(ct_active *a);
/* A zone of stream (process, thread) begins; `key` names what recursion is
 * judged by (the location id). Returns 0, or -1 on out-of-memory. */
int ct_active_begin(ct_active *a, uint32_t process, uint32_t thread, uint32_t key);
/* The innermost open zone of the stream ends. Returns 1 when no enclosing
 * open zone of the stream has its key (the outermost activation), 0 when
 * one has (a recursive activation), -1 when the stream has no open zone. */
int ct_active_end(ct_active *a, uint32_t process, uint32_t thread);

/* ---- Call tree ----------------------------------------------------------- */

/* A function: zones of every process with the same kind, name, file and
 * line share one. Zones count under their location's name (a ZONE_NAME
 * override given while the zone is open does not move it). */
typedef struct ct_func {
    const char *name, *file; /* owned by the tree */
    uint32_t line;
    uint8_t kind;            /* enum lt_loc_kind */
} ct_func;

#define CT_ROOT UINT32_MAX   /* func of a root node */

/* A distinct call path. Nodes are numbered in order of first use, so a
 * parent's index is below its children's. Node 0 is the root of a merged
 * tree; with per-thread trees each stream has a root of its own. */
typedef struct ct_node {
    uint32_t func;     /* ct_func index, CT_ROOT for a root */
    uint32_t parent;   /* node index (a root's parent is itself) */
    uint32_t stream;   /* ct stream index of the root (0 in a merged tree) */
    uint32_t depth;    /* 0 for a root, 1 for a top-level zone */
    uint64_t calls;    /* zones on this path */
    uint64_t total;    /* their durations, ns (each level of a recursion
                          counts its own: this is the time on this path) */
    uint64_t self;     /* less the time in their children, ns */
    uint32_t outer;    /* 1 when no ancestor has the same func */
    uint32_t outer_edge; /* 1 when no ancestor has the same (caller, func) */
} ct_node;

/* A thread of the trace, as the per-thread trees number them. */
typedef struct ct_stream {
    uint32_t process, thread;
    uint32_t root;     /* its root node (0 in a merged tree) */
    uint64_t zones, first_ts, last_ts;
} ct_stream;

typedef struct ct_tree ct_tree;

/* Makes an empty tree over the reader's metadata (the reader must outlive
 * it). merged: every thread under one root, else a root per thread.
 * Returns NULL on out-of-memory. */
ct_tree *ct_tree_new(lt_reader *r, int merged);
/* Frees the tree and its strings. Accepts NULL. */
void ct_tree_free(ct_tree *t);
/* Takes one event from lt_reader_next (zones; others are ignored). Returns
 * 0, or -1 on out-of-memory. */
int ct_tree_event(ct_tree *t, const lt_event *ev);
/* For trees fed from elsewhere than the reader (tracy-serve's index): adds
 * (or finds) the function of `loc` (its kind, name, file, line) and returns
 * its index, or -1 on out-of-memory; ct_tree_begin opens a zone of that
 * function on stream (process, thread), as a ZONE_BEGIN event would (0 or
 * -1); ct_tree_event with a ZONE_END closes it. */
long ct_tree_add_func(ct_tree *t, const lt_loc *loc);
int ct_tree_begin(ct_tree *t, uint32_t process, uint32_t thread, uint32_t func, uint64_t ts);
/* Sets outer and outer_edge of every node; call once after the last event. */
void ct_tree_finish(ct_tree *t);

size_t ct_tree_nnodes(const ct_tree *t);
const ct_node *ct_tree_node(const ct_tree *t, size_t i);
size_t ct_tree_nfuncs(const ct_tree *t);
const ct_func *ct_tree_func(const ct_tree *t, size_t i);
size_t ct_tree_nstreams(const ct_tree *t);
const ct_stream *ct_tree_stream(const ct_tree *t, size_t i);
/* The function of location `loc` of `process` (-1 on out-of-memory). */
long ct_tree_func_of(ct_tree *t, uint32_t process, uint32_t loc);

/* ---- Per-function totals -------------------------------------------------- */

/* What cProfile keeps per function, summed over the tree. */
typedef struct ct_total {
    uint64_t calls;    /* every zone */
    uint64_t prim;     /* outermost zones (cProfile's primitive calls) */
    uint64_t self;     /* ns */
    uint64_t cum;      /* ns, outermost zones only */
} ct_total;

/* Fills out[f] (an array of ct_tree_nfuncs entries) for every function.
 * Call after ct_tree_finish. */
void ct_tree_totals(const ct_tree *t, ct_total *out);

#endif /* CONVERT_CALLTREE_H */
