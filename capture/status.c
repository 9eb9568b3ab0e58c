/* status.c -- capture-release's stderr: log lines, the live status line on a
 * terminal, and the summary at the end. */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include "capture.h"

static int verbosity;
static int on_tty;          /* the live status line is drawn */
static int shown;           /* a status line is on screen */
static uint64_t last_ns, last_events;
static double rate;

void cap_log_init(int v) {
    verbosity = v;
    on_tty = v >= 0 && isatty(STDERR_FILENO);
}

static void vlog(const char *fmt, va_list ap) {
    cap_status_clear();
    fputs(CAP_NAME ": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void cap_log(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}

void cap_logn(const char *fmt, ...) {
    va_list ap;
    if (verbosity < 0) return;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}

void cap_logv(const char *fmt, ...) {
    va_list ap;
    if (verbosity < 1) return;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}

/* "12.3 MiB" */
static const char *human(uint64_t n, char *buf, size_t len) {
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
    return buf;
}

static const char *count(double v, char *buf, size_t len) {
    if (v >= 1e9) snprintf(buf, len, "%.2fG", v / 1e9);
    else if (v >= 1e6) snprintf(buf, len, "%.2fM", v / 1e6);
    else if (v >= 1e4) snprintf(buf, len, "%.1fk", v / 1e3);
    else snprintf(buf, len, "%.0f", v);
    return buf;
}

void cap_status_update(uint32_t clients, uint64_t events, uint64_t written) {
    char b1[32], b2[32], b3[32];
    if (!on_tty) return;
    uint64_t now = lt_now_ns();
    if (last_ns && now > last_ns)
        rate = (double)(events - last_events) * 1e9 / (double)(now - last_ns);
    last_ns = now;
    last_events = events;
    fprintf(stderr, "\r" CAP_NAME ": %u client%s, %s events, %s written, %s events/s\033[K",
            clients, clients == 1 ? "" : "s", count((double)events, b1, sizeof b1),
            human(written, b2, sizeof b2), count(rate, b3, sizeof b3));
    fflush(stderr);
    shown = 1;
}

void cap_status_clear(void) {
    if (!shown) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    shown = 0;
}

void cap_summary(const char *path, const cap_totals *t, const cap_store *s,
                 uint64_t clients, uint64_t file_bytes, int exit_code) {
    char b1[32], b2[32];
    if (verbosity < 0) return;
    cap_status_clear();
    double ratio = t->body_bytes ? (double)t->raw_bytes / (double)t->body_bytes : 0;
    uint64_t lost_client = cap_store_stat(s, CAP_ST_EVENTS_LOST_CLIENT);
    uint64_t rejected = cap_store_stat(s, CAP_ST_EVENTS_REJECTED);
    /* (after a failure, the events received are more than the file holds) */
    fprintf(stderr,
            CAP_NAME ": %s: %llu client%s, %llu events %s%llu stream%s, %s written "
            "(raw %s, ratio %.1fx)\n",
            path, (unsigned long long)clients, clients == 1 ? "" : "s",
            (unsigned long long)t->events, exit_code == CAP_EXIT_OK ? "in " : "received in ",
            (unsigned long long)t->threads,
            t->threads == 1 ? "" : "s", human(file_bytes, b1, sizeof b1),
            human(t->raw_bytes, b2, sizeof b2), ratio);
    fprintf(stderr,
            CAP_NAME ": lost events: %llu dropped by clients, %llu rejected; "
            "clients: %llu lost, %llu rejected, %llu refused; %llu zones aborted\n",
            (unsigned long long)lost_client, (unsigned long long)rejected,
            (unsigned long long)cap_store_stat(s, CAP_ST_CLIENTS_LOST),
            (unsigned long long)cap_store_stat(s, CAP_ST_CLIENTS_REJECTED),
            (unsigned long long)cap_store_stat(s, CAP_ST_CLIENTS_REFUSED),
            (unsigned long long)cap_store_stat(s, CAP_ST_ZONES_ABORTED));
    if (exit_code != CAP_EXIT_OK)
        fprintf(stderr, CAP_NAME ": %s is incomplete (no trailer): it holds the "
                "%s written before the failure\n", path, human(file_bytes, b1, sizeof b1));
}
