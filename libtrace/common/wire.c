/* wire.c -- the client/daemon protocol's codec (schema/PROTOCOL.md): message
 * headers, HELLO, WELCOME, REFUSE, BYE, RESUME, RESUMED, EXEC, FORK and the EVENTS prefix, encoded and
 * decoded here for both sides. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "wire.h"

static uint8_t *put_u16(uint8_t *p, unsigned v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    return p + 2;
}

static unsigned get_u16(const uint8_t *p) { return (unsigned)(p[0] | p[1] << 8); }

static uint8_t *put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
    return p + 8;
}

static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

uint8_t *lt__wire_header(uint8_t *h, uint8_t type, size_t body_len) {
    uint32_t len = (uint32_t)body_len + 1;
    for (int i = 0; i < 4; i++) h[i] = (uint8_t)(len >> (8 * i));
    h[4] = type;
    return h + LT_WIRE_HEADER;
}

uint32_t lt__wire_length(const uint8_t *h) {
    return (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
           (uint32_t)h[3] << 24;
}

size_t lt__wire_events_header(uint8_t *h, uint32_t thread, size_t records_len) {
    uint8_t t[5];
    size_t tl = (size_t)(lt__put_varint_(t, thread) - t);
    uint8_t *p = lt__wire_header(h, LT_MSG_EVENTS, tl + records_len);
    memcpy(p, t, tl);
    return LT_WIRE_HEADER + tl;
}

/* Magic and version, which open HELLO and WELCOME. */
static uint8_t *put_magic(uint8_t *p) {
    memcpy(p, LT_WIRE_MAGIC, LT_WIRE_MAGIC_LEN);
    p = put_u16(p + LT_WIRE_MAGIC_LEN, LT_WIRE_MAJOR);
    return put_u16(p, LT_WIRE_MINOR);
}

uint8_t *lt__wire_hello_start(uint8_t *msg) {
    return put_magic(msg + LT_WIRE_HEADER);
}

uint8_t *lt__wire_hello_finish(uint8_t *msg, uint8_t *p, const char *token,
                               size_t token_len) {
    p = lt__put_str(p, token ? token : "", token ? token_len : 0);
    lt__wire_header(msg, LT_MSG_HELLO, (size_t)(p - msg) - LT_WIRE_HEADER);
    return p;
}

size_t lt__wire_welcome(uint8_t *msg, uint32_t index, uint64_t key) {
    uint8_t *p = lt__put_varint_(put_magic(msg + LT_WIRE_HEADER), index);
    if (key) p = put_u64(p, key);
    lt__wire_header(msg, LT_MSG_WELCOME, (size_t)(p - msg) - LT_WIRE_HEADER);
    return (size_t)(p - msg);
}

size_t lt__wire_resume(uint8_t *msg, uint32_t index, uint64_t key, const char *token,
                       size_t token_len) {
    uint8_t *p = lt__put_varint_(put_magic(msg + LT_WIRE_HEADER), index);
    p = lt__put_str(put_u64(p, key), token ? token : "", token ? token_len : 0);
    lt__wire_header(msg, LT_MSG_RESUME, (size_t)(p - msg) - LT_WIRE_HEADER);
    return (size_t)(p - msg);
}

size_t lt__wire_resumed(uint8_t *msg, uint64_t offset) {
    uint8_t *p = lt__put_varint_(msg + LT_WIRE_HEADER, offset);
    lt__wire_header(msg, LT_MSG_RESUMED, (size_t)(p - msg) - LT_WIRE_HEADER);
    return (size_t)(p - msg);
}

size_t lt__wire_refuse(uint8_t *msg, const char *reason, size_t reason_len) {
    if (reason_len > LT_WIRE_REFUSE_REASON_MAX) reason_len = LT_WIRE_REFUSE_REASON_MAX;
    uint8_t *p = put_u16(msg + LT_WIRE_HEADER, LT_WIRE_MAJOR);
    p = lt__put_str(put_u16(p, LT_WIRE_MINOR), reason, reason_len);
    lt__wire_header(msg, LT_MSG_REFUSE, (size_t)(p - msg) - LT_WIRE_HEADER);
    return (size_t)(p - msg);
}

static size_t counts_msg(uint8_t *msg, uint8_t type, uint64_t events_sent,
                         uint64_t events_lost) {
    uint8_t *p = lt__put_varint_(msg + LT_WIRE_HEADER, events_sent);
    p = lt__put_varint_(p, events_lost);
    lt__wire_header(msg, type, (size_t)(p - msg) - LT_WIRE_HEADER);
    return (size_t)(p - msg);
}

size_t lt__wire_bye(uint8_t *msg, uint64_t events_sent, uint64_t events_lost) {
    return counts_msg(msg, LT_MSG_BYE, events_sent, events_lost);
}

size_t lt__wire_exec(uint8_t *msg, uint64_t events_sent, uint64_t events_lost) {
    return counts_msg(msg, LT_MSG_EXEC, events_sent, events_lost);
}

size_t lt__wire_exec_failed(uint8_t *msg) {
    lt__wire_header(msg, LT_MSG_EXEC_FAILED, 0);
    return LT_WIRE_HEADER;
}

size_t lt__wire_fork(uint8_t *msg, uint64_t pid) {
    uint8_t *p = lt__put_varint_(msg + LT_WIRE_HEADER, pid);
    lt__wire_header(msg, LT_MSG_FORK, (size_t)(p - msg) - LT_WIRE_HEADER);
    return (size_t)(p - msg);
}

size_t lt__wire_stored(uint8_t *msg, uint64_t events_stored) {
    uint8_t *p = lt__put_varint_(msg + LT_WIRE_HEADER, events_stored);
    lt__wire_header(msg, LT_MSG_STORED, (size_t)(p - msg) - LT_WIRE_HEADER);
    return (size_t)(p - msg);
}

size_t lt__wire_bye_crash(uint8_t *msg, uint64_t events_sent, uint64_t events_lost,
                          unsigned sig) {
    uint8_t *p = msg + lt__wire_bye(msg, events_sent, events_lost);
    p = lt__put_varint_(p, sig);
    lt__wire_header(msg, LT_MSG_BYE, (size_t)(p - msg) - LT_WIRE_HEADER);
    return (size_t)(p - msg);
}

void lt__wire_signal_text(unsigned sig, char *buf, size_t n) {
    static const struct { unsigned sig; const char *name; } names[] = {
        {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGILL, "SIGILL"},
        {SIGFPE, "SIGFPE"}, {SIGABRT, "SIGABRT"}, {SIGTRAP, "SIGTRAP"},
        {SIGSYS, "SIGSYS"}, {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"},
        {SIGINT, "SIGINT"}, {SIGHUP, "SIGHUP"}, {SIGQUIT, "SIGQUIT"},
        {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGUSR1, "SIGUSR1"},
        {SIGUSR2, "SIGUSR2"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
        {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGIO, "SIGIO"},
        {SIGPWR, "SIGPWR"}, {SIGSTKFLT, "SIGSTKFLT"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (names[i].sig == sig) {
            snprintf(buf, n, "%s (signal %u)", names[i].name, sig);
            return;
        }
    }
    snprintf(buf, n, "signal %u", sig);
}

static int bad(const char **why, const char *text) {
    *why = text;
    return -1;
}

/* Magic and version at the start of a HELLO or WELCOME body. */
static int get_magic(const uint8_t *body, size_t n, unsigned *major,
                     unsigned *minor, const char **why) {
    if (n < LT_WIRE_MAGIC_LEN + 4 || memcmp(body, LT_WIRE_MAGIC, LT_WIRE_MAGIC_LEN))
        return bad(why, "bad magic");
    *major = get_u16(body + LT_WIRE_MAGIC_LEN);
    *minor = get_u16(body + LT_WIRE_MAGIC_LEN + 2);
    return 0;
}

int lt__wire_hello_decode(const uint8_t *body, size_t n, uint8_t *info,
                          lt__wire_hello *h, const char **why) {
    const size_t start = LT_WIRE_MAGIC_LEN + 4;
    memset(h, 0, sizeof *h);
    if (get_magic(body, n, &h->major, &h->minor, why) < 0) return -1;
    if (h->major != LT_WIRE_MAJOR) return 0;
    /* The PROC_INFO fields follow; decoded with their tag, as stored. */
    size_t fl = n - start;
    info[0] = LT_TAG_PROC_INFO;
    memcpy(info + 1, body + start, fl);
    const uint8_t *q = info;
    if (lt__next_meta(&q, info + fl + 1, LT__META_BIT(LT_TAG_PROC_INFO), &h->info,
                      why) < 0)
        return -1;
    h->info_len = (size_t)(q - info);
    const uint8_t *t = body + start + (h->info_len - 1), *end = body + n;
    if (lt__get_str(&t, end, &h->token, &h->token_len) < 0)
        return bad(why, "missing token");
    if (t != end && h->minor <= LT_WIRE_MINOR) return bad(why, "trailing bytes");
    return 0;
}

int lt__wire_welcome_decode(const uint8_t *body, size_t n, unsigned *major,
                            unsigned *minor, uint32_t *index, const char **why) {
    uint64_t v;
    if (get_magic(body, n, major, minor, why) < 0) return -1;
    const uint8_t *q = body + LT_WIRE_MAGIC_LEN + 4;
    if (*major != LT_WIRE_MAJOR) return 0;
    if (lt__get_varint(&q, body + n, &v) < 0 || v == 0 || v > UINT32_MAX)
        return bad(why, "malformed process index");
    *index = (uint32_t)v;
    return 0;
}

uint64_t lt__wire_welcome_key(const uint8_t *body, size_t n) {
    uint64_t v;
    const uint8_t *q = body + LT_WIRE_MAGIC_LEN + 4, *end = body + n;
    if (n < LT_WIRE_MAGIC_LEN + 4 || lt__get_varint(&q, end, &v) < 0 || end - q < 8)
        return 0;
    return get_u64(q);
}

int lt__wire_resume_decode(const uint8_t *body, size_t n, lt__wire_resume_msg *r,
                           const char **why) {
    uint64_t v;
    memset(r, 0, sizeof *r);
    if (get_magic(body, n, &r->major, &r->minor, why) < 0) return -1;
    if (r->major != LT_WIRE_MAJOR) return 0;
    const uint8_t *q = body + LT_WIRE_MAGIC_LEN + 4, *end = body + n;
    if (lt__get_varint(&q, end, &v) < 0 || v == 0 || v > UINT32_MAX)
        return bad(why, "malformed process index");
    r->index = (uint32_t)v;
    if (end - q < 8) return bad(why, "missing session key");
    r->key = get_u64(q);
    q += 8;
    if (lt__get_str(&q, end, &r->token, &r->token_len) < 0)
        return bad(why, "missing token");
    if (q != end && r->minor <= LT_WIRE_MINOR) return bad(why, "trailing bytes");
    return 0;
}

int lt__wire_resumed_decode(const uint8_t *body, size_t n, uint64_t *offset,
                            const char **why) {
    const uint8_t *q = body, *end = body + n;
    if (lt__get_varint(&q, end, offset) < 0 || q != end)
        return bad(why, "malformed RESUMED");
    return 0;
}

int lt__wire_refuse_decode(const uint8_t *body, size_t n, unsigned *major,
                           unsigned *minor, const char **reason,
                           size_t *reason_len, const char **why) {
    const uint8_t *q = body + 4;
    *reason = "";
    *reason_len = 0;
    if (n < 4) return bad(why, "truncated REFUSE");
    *major = get_u16(body);
    *minor = get_u16(body + 2);
    if (lt__get_str(&q, body + n, reason, reason_len) < 0) {
        *reason = "";
        *reason_len = 0;
        return bad(why, "malformed reason");
    }
    return 0;
}

static int counts_decode(const uint8_t *body, size_t n, uint64_t *events_sent,
                         uint64_t *events_lost) {
    const uint8_t *q = body, *end = body + n;
    return lt__get_varint(&q, end, events_sent) < 0 ||
                   lt__get_varint(&q, end, events_lost) < 0 || q != end
               ? -1 : 0;
}

int lt__wire_bye_decode(const uint8_t *body, size_t n, uint64_t *events_sent,
                        uint64_t *events_lost, const char **why) {
    if (counts_decode(body, n, events_sent, events_lost) < 0)
        return bad(why, "malformed BYE");
    return 0;
}

int lt__wire_exec_decode(const uint8_t *body, size_t n, uint64_t *events_sent,
                         uint64_t *events_lost, const char **why) {
    if (counts_decode(body, n, events_sent, events_lost) < 0)
        return bad(why, "malformed EXEC");
    return 0;
}

int lt__wire_fork_decode(const uint8_t *body, size_t n, uint64_t *pid, const char **why) {
    const uint8_t *q = body, *end = body + n;
    if (lt__get_varint(&q, end, pid) < 0 || q != end || *pid == 0 || *pid > INT32_MAX)
        return bad(why, "malformed FORK");
    return 0;
}

int lt__wire_stored_decode(const uint8_t *body, size_t n, uint64_t *events_stored,
                           const char **why) {
    const uint8_t *q = body, *end = body + n;
    if (lt__get_varint(&q, end, events_stored) < 0 || q != end)
        return bad(why, "malformed STORED");
    return 0;
}

int lt__wire_bye_crash_decode(const uint8_t *body, size_t n, uint64_t *events_sent,
                              uint64_t *events_lost, unsigned *crash_sig,
                              const char **why) {
    const uint8_t *q = body, *end = body + n;
    uint64_t sig = 0;
    if (lt__get_varint(&q, end, events_sent) < 0 ||
        lt__get_varint(&q, end, events_lost) < 0 ||
        (q != end && (lt__get_varint(&q, end, &sig) < 0 || sig == 0 || sig > 64)) ||
        q != end)
        return bad(why, "malformed BYE");
    *crash_sig = (unsigned)sig;
    return 0;
}

int lt__wire_events_decode(const uint8_t *body, size_t n, uint64_t *thread,
                           const uint8_t **records, size_t *records_len,
                           const char **why) {
    const uint8_t *q = body, *end = body + n;
    if (lt__get_varint(&q, end, thread) < 0)
        return bad(why, "malformed thread index in an EVENTS message");
    *records = q;
    *records_len = (size_t)(end - q);
    return 0;
}
