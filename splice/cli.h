/* cli.h -- shared by tracy-merge and tracy-cut: the output's safety checks,
 * running the splice and reporting how it went. */
#ifndef SPLICE_CLI_H
#define SPLICE_CLI_H

#include <stdint.h>
#include "common.h"
#include "splice.h"

/* Refuses (message, CV_EXIT_USAGE) an output path that names one of the
 * inputs, even through another name or a link: writing it would destroy
 * the input while it is read. Returns 0 when the output is not an input. */
int sc_check_output(const char *out, char *const *inputs, int ninputs);

/* Creates the output (O_EXCL unless `force`). Returns 0 with *s set, or an
 * exit code after one message ("exists (use -f to overwrite)"). */
int sc_open(lt_splice **s, const char *out, int force, int level);

/* Copies the registered inputs, closes the output and frees *s. On failure
 * removes the output (which this run created) and returns the exit code
 * after one message; else prints a one-line summary unless `quiet` and
 * returns `ok_exit` (CV_EXIT_OK, or CV_EXIT_TRUNCATED when an input was cut
 * short). */
int sc_finish(lt_splice *s, const char *out, int quiet, int ok_exit);

/* Parses a zstd level 1..19. Returns 0 or -1. */
int sc_parse_level(const char *arg, int *level);

#endif /* SPLICE_CLI_H */
