/* option.c -- options that exclude each other: cv_getopt remembers how the
 * last option was spelt, cv_opt slots remember which option set a setting,
 * and the checks refuse, in one line, what the program could not honour
 * (prog.h). */
#include "prog/prog.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

/* The option cv_getopt returned last and its spelling. */
static int last_code;
static char last_name[sizeof ((cv_opt *)0)->name];

int cv_getopt(int argc, char *const *argv, const char *shorts, const struct option *longs) {
    int li = -1;
    int c = getopt_long(argc, argv, shorts, longs, &li);
    last_code = c;
    if (longs && li >= 0)
        snprintf(last_name, sizeof last_name, "--%s", longs[li].name);
    else
        snprintf(last_name, sizeof last_name, "-%c", c > 0 && c < 128 ? c : '?');
    return c;
}

/* An option as the messages show it: its name, then its value, quoted when
 * it is empty or holds a blank or a quote ("-o out.csv", "-f 'a b'"). */
typedef struct shown {
    const char *name, *sp, *q, *value;
} shown;

static shown show(const cv_opt *o) {
    shown s = {o->name, "", "", ""};
    if (o->value) {
        s.sp = " ";
        s.value = o->value;
        if (!*o->value || strpbrk(o->value, " \t'\"")) s.q = "'";
    }
    return s;
}

static int together(const cv_opt *a, const cv_opt *b, const char *why_opt, const char *needs) {
    shown x = show(a), y = show(b);
    if (!needs)
        return cv_usage_error("%s%s%s%s%s and %s%s%s%s%s cannot be used together", x.name, x.sp,
                              x.q, x.value, x.q, y.name, y.sp, y.q, y.value, y.q);
    return cv_usage_error("%s%s%s%s%s and %s%s%s%s%s cannot be used together (%s needs %s)",
                          x.name, x.sp, x.q, x.value, x.q, y.name, y.sp, y.q, y.value, y.q,
                          why_opt, needs);
}

static int same_value(const char *a, const char *b) {
    return a == b || (a && b && strcmp(a, b) == 0);
}

int cv_opt_set(cv_opt *slot, const char *value) {
    if (slot->code) {
        if (slot->code == last_code && same_value(slot->value, value)) return 0;
        cv_opt now = {.code = last_code, .value = value};
        memcpy(now.name, last_name, sizeof now.name);
        return together(slot, &now, NULL, NULL);
    }
    slot->code = last_code;
    memcpy(slot->name, last_name, sizeof slot->name);
    slot->value = value;
    return 0;
}

int cv_opt_unused(const cv_opt *opt, const cv_opt *mode, const char *needs) {
    if (!opt->code) return 0;
    if (mode && mode->code) return together(opt, mode, opt->name, needs);
    return cv_usage_error("%s needs %s", opt->name, needs);
}

int cv_opt_excl(const cv_opt *a, const cv_opt *b) {
    return a->code && b->code ? together(a, b, NULL, NULL) : 0;
}
