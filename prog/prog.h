/* prog.h -- what every program of the toolkit shares on its command line:
 * exit codes, messages ("PROG: ..."), the options every program handles
 * alike (--help, --version), and checks of its arguments. Linked by the
 * converters, tracy-merge, tracy-cut and tracy-serve (build/lib/libprog.a).
 * The names keep the cv_ prefix the converters gave them first. */
#ifndef PROG_PROG_H
#define PROG_PROG_H

#include <stddef.h>
#include <stdint.h>

/* Exit codes shared by every program (documented in their man pages). */
enum cv_exit {
    CV_EXIT_OK = 0,        /* success */
    CV_EXIT_USAGE = 1,     /* bad command line (or, tracy-sql, a bad query) */
    CV_EXIT_INPUT = 2,     /* cannot read input, not a trace, newer version */
    CV_EXIT_TRUNCATED = 3, /* input cut short: every complete unit converted */
    CV_EXIT_CORRUPT = 4,   /* input corrupt: converted up to the bad unit */
    CV_EXIT_OUTPUT = 5,    /* cannot write the output */
    CV_EXIT_LOST = 6       /* tracy-info: intact, but events were lost */
};

/* ---- Messages ----------------------------------------------------------- */

/* Name used as the prefix of every message ("tracy-csv"). */
extern const char *cv_prog;

/* Prints "PROG: message" on stderr. */
void cv_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "PROG: warning: message" on stderr. */
void cv_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "PROG: message" and a hint to use --help; returns CV_EXIT_USAGE. */
int cv_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "PROG VERSION (libtrace, format MAJOR.MINOR)"; returns CV_EXIT_OK. */
int cv_print_version(void);

/* The options every program handles alike, for the default branch of its
 * getopt_long switch (opterr = 0, an optstring that starts with ':'): -h
 * prints `usage` on stdout, -V the version (both return CV_EXIT_OK, and the
 * program then exits 0); a missing value (':') and anything else are usage
 * errors (one line, CV_EXIT_USAGE). */
int cv_std_option(int c, const char *usage, char *const *argv);

/* The long options cv_std_option() handles, for the end of a table
 * (<getopt.h> names no_argument). */
#define CV_STD_LONG_OPTIONS {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}

/* ---- Options that exclude each other (option.c) ---------------------------
 * A careful command line refuses what it cannot honour instead of letting
 * the last option win or ignoring one: the same option twice with different
 * values where one value holds (-o A -o B), two options that pick different
 * outputs or modes (--csv --json), an option the chosen mode does not use
 * (--period with -f pstats). Each setting the program checks has a cv_opt
 * slot, zeroed before parsing, that remembers which option set it and how
 * the user spelt it, for the message. */

struct option;

typedef struct cv_opt {
    int code;            /* getopt_long's answer for the option; 0: not given */
    char name[32];       /* as given: "-o", "--output" (long names cut to fit) */
    const char *value;   /* its value (argv memory), NULL for a flag */
} cv_opt;

/* getopt_long (opterr must be 0) that also remembers the spelling of the
 * option it returns ("-u", or "--unwrap" however it was abbreviated), for
 * cv_opt_set. Same arguments and answers as getopt_long. */
int cv_getopt(int argc, char *const *argv, const char *shorts, const struct option *longs);

/* Records into `slot` the option cv_getopt returned last, with `value`
 * (optarg, or NULL for a flag). One slot serves one setting: an option that
 * takes one value (-o), or every option that picks the same setting (the
 * output kind: --stats, -u, -m). The same option with the same value again
 * is accepted (-o a --output a); anything else in a slot already set is
 * refused: returns CV_EXIT_USAGE after "PROG: -o a and -o b cannot be used
 * together" (cv_usage_error), else 0. */
int cv_opt_set(cv_opt *slot, const char *value);

/* Whether the slot was set. */
static inline int cv_opt_given(const cv_opt *slot) { return slot->code != 0; }

/* Refuses `opt` when it was given but the mode in force does not use it
 * (the caller decides that): `mode` is the slot of the option that chose
 * the mode, or NULL (or a slot not set) when the mode is the default one;
 * `needs` completes "OPT needs ..." ("--stats or -u"). Prints "PROG: -e
 * and -m cannot be used together (-e needs --stats or -u)", or without a
 * mode option "PROG: -e needs --stats or -u", and returns CV_EXIT_USAGE;
 * returns 0 when opt was not given. */
int cv_opt_unused(const cv_opt *opt, const cv_opt *mode, const char *needs);

/* Refuses two options that exclude each other whatever the mode (tracy-sql's
 * -o and --cache): when both slots are set, CV_EXIT_USAGE after "PROG: -o
 * db and --cache cannot be used together"; else 0. */
int cv_opt_excl(const cv_opt *a, const cv_opt *b);

/* After the options, the one trace the program reads: returns 0 with *path
 * set, or CV_EXIT_USAGE after one line when there is none or more. */
int cv_one_trace(int argc, char *const *argv, const char **path);

/* Whether two of the n values are equal: 1, 0, or -1 when out of memory.
 * n log n (a sorted copy): for pids of processes and tids of threads, of
 * which a trace may hold a million. */
int cv_has_dup_u64(const uint64_t *v, size_t n);

/* Parses a whole decimal unsigned number; returns 0 or -1. */
int cv_parse_u64(const char *s, uint64_t *out);

/* Writes (pwrite) or reads (pread) all n bytes at `off` of fd, through
 * short transfers and EINTR. Return 0, or -1 with errno set (ENOSPC for a
 * write that stalls, EIO for a read past the end). */
int cv_pwrite_full(int fd, const void *buf, size_t n, uint64_t off);
int cv_pread_full(int fd, void *buf, size_t n, uint64_t off);

#endif /* PROG_PROG_H */
