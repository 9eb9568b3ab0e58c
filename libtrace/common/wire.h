/* wire.h -- internal: the client/daemon protocol (schema/PROTOCOL.md), its
 * constants and its one codec (wire.c), used by the client (client*.c) and
 * the daemon (capture/server.c, store.c) alike. The records carried inside
 * META and EVENTS are the file's (records.c). */
#ifndef LIBTRACE_WIRE_H
#define LIBTRACE_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include "records.h"

#define LT_WIRE_MAGIC "TRCYWIRE"
#define LT_WIRE_MAGIC_LEN 8
#define LT_WIRE_MAJOR 1
#define LT_WIRE_MINOR 3
#define LT_WIRE_HEADER 5u                 /* u32 length + u8 type */
#define LT_WIRE_MAX_MESSAGE (1u << 20)    /* default daemon limit */
#define LT_WIRE_MAX_HELLO (64u << 10)     /* limit before the handshake */
#define LT_WIRE_CLIENT_CHUNK (60u << 10)  /* client EVENTS payloads stay below */
#define LT_WIRE_HANDSHAKE_MS 5000
#define LT_DEFAULT_PORT 8086
#define LT_DEFAULT_ADDR "127.0.0.1"

enum lt_wire_type {
    LT_MSG_HELLO = 0x01,
    LT_MSG_EVENTS = 0x02,
    LT_MSG_META = 0x03,
    LT_MSG_BYE = 0x04,
    LT_MSG_RESUME = 0x05,  /* 1.1: a new connection takes over a process */
    LT_MSG_EXEC = 0x06,    /* 1.2: the process is about to exec */
    LT_MSG_EXEC_FAILED = 0x07, /* 1.2: ... and the exec failed: it goes on */
    LT_MSG_FORK = 0x08,    /* 1.3: the process forked a child that records */
    LT_MSG_WELCOME = 0x81,
    LT_MSG_REFUSE = 0x82,
    LT_MSG_STORED = 0x83, /* answer to BYE: varint events stored */
    LT_MSG_RESUMED = 0x84 /* 1.1: answer to RESUME: varint stream offset */
};

/* The reason of the REFUSE a draining daemon gives a newcomer. */
#define LT_WIRE_REFUSE_FINISHING "the capture is finishing: the traced program has ended"

/* ---- Encoding ----------------------------------------------------------
 * Each writes into a buffer the caller sized with the bounds below and
 * returns the end of what it wrote (or its size). */

#define LT_WIRE_EVENTS_HDR_MAX (LT_WIRE_HEADER + 5u) /* header + thread */
#define LT_WIRE_HELLO_START (LT_WIRE_HEADER + LT_WIRE_MAGIC_LEN + 4u)
#define LT_WIRE_BYE_MAX (LT_WIRE_HEADER + 21u)
#define LT_WIRE_WELCOME_MAX (LT_WIRE_HEADER + LT_WIRE_MAGIC_LEN + 4u + 5u + 8u)
#define LT_WIRE_RESUMED_MAX (LT_WIRE_HEADER + 10u)
#define LT_WIRE_REFUSE_REASON_MAX 1000u /* longer reasons are cut */
#define LT_WIRE_REFUSE_MAX (LT_WIRE_HEADER + 4u + 2u + LT_WIRE_REFUSE_REASON_MAX)

/* The 5-byte message header: length (type byte + `body_len`), type. */
uint8_t *lt__wire_header(uint8_t *h, uint8_t type, size_t body_len);
/* The header and thread index of an EVENTS message whose records are
 * `records_len` bytes; returns the bytes written (<= LT_WIRE_EVENTS_HDR_MAX). */
size_t lt__wire_events_header(uint8_t *h, uint32_t thread, size_t records_len);
/* Starts a HELLO at msg: room for its header, then magic and version.
 * Returns where the PROC_INFO fields go (msg + LT_WIRE_HELLO_START). */
uint8_t *lt__wire_hello_start(uint8_t *msg);
/* Ends the HELLO begun at msg whose PROC_INFO fields end at p: appends the
 * token (`token_len` bytes, may be 0) and fills the header. Returns the
 * message's end. */
uint8_t *lt__wire_hello_finish(uint8_t *msg, uint8_t *p, const char *token,
                               size_t token_len);
/* Whole messages; each returns its size. */
/* WELCOME; `key` (1.1) is the session key a RESUME must show, 0 for none
 * (then it is not written: the message is a 1.0 WELCOME). */
size_t lt__wire_welcome(uint8_t *msg, uint32_t index, uint64_t key);
/* RESUME (header included) into msg, which holds LT_WIRE_RESUME_START +
 * token_len bytes. */
#define LT_WIRE_RESUME_START (LT_WIRE_HEADER + LT_WIRE_MAGIC_LEN + 4u + 5u + 8u + 5u)
size_t lt__wire_resume(uint8_t *msg, uint32_t index, uint64_t key, const char *token,
                       size_t token_len);
/* RESUMED: the stream offset the daemon consumed from the process. */
size_t lt__wire_resumed(uint8_t *msg, uint64_t offset);
size_t lt__wire_refuse(uint8_t *msg, const char *reason, size_t reason_len);
size_t lt__wire_bye(uint8_t *msg, uint64_t events_sent, uint64_t events_lost);
/* EXEC (1.2): the body of BYE, the counts so far; at most LT_WIRE_BYE_MAX. */
size_t lt__wire_exec(uint8_t *msg, uint64_t events_sent, uint64_t events_lost);
/* EXEC_FAILED (1.2): an empty body; LT_WIRE_HEADER bytes. */
size_t lt__wire_exec_failed(uint8_t *msg);
/* FORK (1.3): the pid of a child the process forked, which goes on
 * running its program (PROTOCOL.md, fork); at most LT_WIRE_FORK_MAX. */
#define LT_WIRE_FORK_MAX (LT_WIRE_HEADER + 10u)
size_t lt__wire_fork(uint8_t *msg, uint64_t pid);
#define LT_WIRE_STORED_MAX (LT_WIRE_HEADER + 10u)
/* The daemon's answer to BYE: the events it stored from the client. */
size_t lt__wire_stored(uint8_t *msg, uint64_t events_stored);

/* BYE of a crash (1.2): BYE's counts, then the signal (1..64) that is
 * ending the process (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT). Only for a
 * daemon whose WELCOME says 1.2 or later: an older one refuses it. */
size_t lt__wire_bye_crash(uint8_t *msg, uint64_t events_sent, uint64_t events_lost,
                          unsigned sig);
/* The PROC_END reason of a crash by `sig`: "SIGSEGV (signal 11)", or
 * "signal N" for a signal without a name here. */
void lt__wire_signal_text(unsigned sig, char *buf, size_t n);

/* ---- Decoding ------------------------------------------------------------
 * Each takes a message body (after the 5-byte header) and returns 0, or -1
 * with *why set (a static one-line reason) when it is malformed. Strings
 * point into the body. */

/* The length field of a header: type byte + body, 0 is invalid. */
uint32_t lt__wire_length(const uint8_t *h);

typedef struct lt__wire_hello {
    unsigned major, minor;
    lt__meta_rec info;          /* the PROC_INFO, decoded */
    size_t info_len;            /* its size with its tag (as stored in files) */
    const char *token;
    size_t token_len;
} lt__wire_hello;

/* Decodes HELLO. `info` (n bytes at least) receives the PROC_INFO record
 * with its tag, as the file stores it; h->info's strings point into it.
 * A major version other than LT_WIRE_MAJOR is decoded no further: check
 * h->major first. Trailing bytes are refused up to LT_WIRE_MINOR (a later
 * minor version may add fields). */
int lt__wire_hello_decode(const uint8_t *body, size_t n, uint8_t *info,
                          lt__wire_hello *h, const char **why);
/* WELCOME and REFUSE, as the client reads them; the caller checks the major
 * version. */
int lt__wire_welcome_decode(const uint8_t *body, size_t n, unsigned *major,
                            unsigned *minor, uint32_t *index, const char **why);
/* The session key of a WELCOME (1.1); 0 when it has none (a 1.0 daemon). */
uint64_t lt__wire_welcome_key(const uint8_t *body, size_t n);
typedef struct lt__wire_resume {
    unsigned major, minor;
    uint32_t index;
    uint64_t key;
    const char *token;
    size_t token_len;
} lt__wire_resume_msg;
/* Decodes RESUME; like HELLO, another major version is decoded no further. */
int lt__wire_resume_decode(const uint8_t *body, size_t n, lt__wire_resume_msg *r,
                           const char **why);
int lt__wire_resumed_decode(const uint8_t *body, size_t n, uint64_t *offset,
                            const char **why);
int lt__wire_refuse_decode(const uint8_t *body, size_t n, unsigned *major,
                           unsigned *minor, const char **reason,
                           size_t *reason_len, const char **why);
/* EXEC: the counts, as BYE's. */
int lt__wire_exec_decode(const uint8_t *body, size_t n, uint64_t *events_sent,
                         uint64_t *events_lost, const char **why);
/* FORK: the child's pid (1 .. 2^31 - 1). */
int lt__wire_fork_decode(const uint8_t *body, size_t n, uint64_t *pid, const char **why);
int lt__wire_bye_decode(const uint8_t *body, size_t n, uint64_t *events_sent,
                        uint64_t *events_lost, const char **why);
int lt__wire_stored_decode(const uint8_t *body, size_t n, uint64_t *events_stored,
                           const char **why);
/* BYE as the daemon reads it (1.2): with or without the crash signal,
 * *crash_sig 0 when it has none; a signal of 0 or above 64 is malformed. */
int lt__wire_bye_crash_decode(const uint8_t *body, size_t n, uint64_t *events_sent,
                              uint64_t *events_lost, unsigned *crash_sig,
                              const char **why);
/* EVENTS: the thread index, then the records (validated by the caller with
 * lt__scan_events). */
int lt__wire_events_decode(const uint8_t *body, size_t n, uint64_t *thread,
                           const uint8_t **records, size_t *records_len,
                           const char **why);

#endif /* LIBTRACE_WIRE_H */
