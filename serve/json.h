/* json.h -- a JSON writer into a growing buffer, for tracy-serve's answers.
 * Strings are escaped so that an answer is safe to embed in a page: quotes,
 * backslashes, control characters, '<', '>' and '&' are escaped, and bytes
 * that are not valid UTF-8 are replaced by U+FFFD. The buffer stops growing
 * at a limit: past it every call is ignored and jb_failed() says so. */
#ifndef SERVE_JSON_H
#define SERVE_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef struct jb {
    char *buf;
    size_t len, cap, limit;
    int failed;   /* out of memory or past the limit */
    int comma;    /* a value was written at this level: the next needs ',' */
} jb;

/* Starts an empty buffer that grows to at most `limit` bytes. */
void jb_init(jb *j, size_t limit);
void jb_free(jb *j);
int jb_failed(const jb *j);
/* Raw text, no separator logic. */
void jb_raw(jb *j, const char *s, size_t n);
/* Structure: jb_obj/jb_arr open, jb_end_obj/jb_end_arr close; jb_key writes
 * "key": before the next value. */
void jb_obj(jb *j);
void jb_end_obj(jb *j);
void jb_arr(jb *j);
void jb_end_arr(jb *j);
void jb_key(jb *j, const char *key);
/* Values. */
void jb_str(jb *j, const char *s);
void jb_strn(jb *j, const char *s, size_t n);
void jb_u64(jb *j, uint64_t v);
void jb_i64(jb *j, int64_t v);
void jb_dbl(jb *j, double v);  /* non-finite: null */
void jb_null(jb *j);
void jb_bool(jb *j, int v);
/* A 64-bit integer as a string of decimal digits (beyond 2^53). */
void jb_u64s(jb *j, uint64_t v);

#endif
