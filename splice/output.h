/* output.h -- shared by tracy-merge and tracy-cut: the options about the
 * output, its safety checks, running the splice and reporting how it went. */
#ifndef SPLICE_OUTPUT_H
#define SPLICE_OUTPUT_H

#include <getopt.h>
#include <stdint.h>
#include "prog/prog.h"
#include "prog/input.h"
#include "format/splice.h"

/* The options both programs take, all about the output. */
typedef struct sc_output {
    const char *path;       /* -o FILE (required) */
    int force, quiet;       /* -f, -q */
    int level;              /* --level N, zstd 1..19 (set the default: 3) */
    cv_opt given_path, given_level; /* which option set them (prog.h) */
} sc_output;

/* getopt_long's answer for --level (above every other option's). */
#define SC_OPT_LEVEL 0x200

/* The entries of both programs' long-option tables for those options and
 * for --help and --version: list them after the program's own. */
#define SC_LONG_OPTIONS                                                        \
    {"output", required_argument, 0, 'o'}, {"force", no_argument, 0, 'f'},     \
        {"level", required_argument, 0, SC_OPT_LEVEL},                         \
        {"quiet", no_argument, 0, 'q'}, CV_STD_LONG_OPTIONS

/* sc_option() took the option: parsing goes on. */
#define SC_MORE (-1)

/* Takes an option cv_getopt returned (opterr = 0, an optstring that
 * starts with ':' and holds "o:fqhV"), for the default branch of the
 * program's switch: -o, -f, -q and --level into *o; -h prints `usage` on
 * stdout. Returns SC_MORE, or the exit code when the program ends here
 * (CV_EXIT_OK for -h and -V, CV_EXIT_USAGE after one line for a bad level,
 * -o or --level given twice with different values, a missing value or an
 * unknown option). */
int sc_option(int c, sc_output *o, const char *usage, char *const *argv);

/* After the options: refuses (CV_EXIT_USAGE, one line) a missing -o or
 * no input left in argv. Returns 0 when both are there. */
int sc_check_args(const sc_output *o, int argc);

/* Creates the output o->path (O_EXCL unless o->force) at o->level. Returns
 * 0 with *s set, or an exit code after one message ("exists (use -f to
 * overwrite)"). */
int sc_open(lt_splice **s, const sc_output *o);

/* For a failure to register the inputs (out of memory): prints one line,
 * frees s, removes the output this run created and returns
 * CV_EXIT_OUTPUT. */
int sc_abandon(lt_splice *s, const char *out);

/* Copies the registered inputs, closes the output and frees *s. On failure
 * removes the output (which this run created) and returns the exit code
 * after one message; else prints a one-line summary unless o->quiet and
 * returns `ok_exit` (CV_EXIT_OK, or CV_EXIT_TRUNCATED when an input was cut
 * short). */
int sc_finish(lt_splice *s, const sc_output *o, int ok_exit);

#endif /* SPLICE_OUTPUT_H */
