/* check_wire.c -- the protocol codec (libtrace/common/wire.c) that the client and
 * the daemon share: what one side encodes the other decodes, byte for byte
 * as PROTOCOL.md lays it out, and malformed bodies are refused with a
 * reason. */
#include <check.h>
#include <stdint.h>
#include <string.h>
#include "wire.h"

/* PROC_INFO fields (without their tag): pid 4242, rank -3, host "h",
 * program "prog", argv {"prog", "-x"}, anchors 7 and 9, client "c 1". */
static uint8_t *put_info_fields(uint8_t *p) {
    p = lt__put_varint_(p, 4242);
    p = lt__put_varint_(p, 5); /* rank -3, zigzag */
    p = lt__put_str(p, "h", 1);
    p = lt__put_str(p, "prog", 4);
    p = lt__put_varint_(p, 2);
    p = lt__put_str(p, "prog", 4);
    p = lt__put_str(p, "-x", 2);
    p = lt__put_varint_(p, 7);
    p = lt__put_varint_(p, 9);
    return lt__put_str(p, "c 1", 3);
}

START_TEST(hello_round_trips_with_its_token) {
    uint8_t msg[256], info[256];
    uint8_t *p = put_info_fields(lt__wire_hello_start(msg));
    uint8_t *end = lt__wire_hello_finish(msg, p, "s3cret", 6);
    size_t n = (size_t)(end - msg);
    /* Header: length counts the type byte and the body; then the magic. */
    ck_assert_uint_eq(lt__wire_length(msg), n - 4);
    ck_assert_int_eq(msg[4], LT_MSG_HELLO);
    ck_assert_int_eq(memcmp(msg + 5, "TRCYWIRE\x01\x00", 10), 0);
    ck_assert_int_eq(msg[15] | msg[16] << 8, LT_WIRE_MINOR);
    lt__wire_hello h;
    const char *why = NULL;
    ck_assert_int_eq(lt__wire_hello_decode(msg + 5, n - 5, info, &h, &why), 0);
    ck_assert_uint_eq(h.major, LT_WIRE_MAJOR);
    ck_assert_uint_eq(h.minor, LT_WIRE_MINOR);
    ck_assert_uint_eq(h.info.pid, 4242);
    ck_assert_int_eq(h.info.rank, -3);
    ck_assert_int_eq(h.info.program.len, 4);
    ck_assert_int_eq(memcmp(h.info.program.s, "prog", 4), 0);
    ck_assert_uint_eq(h.info.argc, 2);
    ck_assert_uint_eq(h.info.anchor_mono_ns, 7);
    ck_assert_uint_eq(h.info.anchor_wall_ns, 9);
    /* The stored PROC_INFO is the fields with their tag. */
    ck_assert_uint_eq(h.info_len, (size_t)(p - msg) - LT_WIRE_HELLO_START + 1);
    ck_assert_int_eq(info[0], LT_TAG_PROC_INFO);
    ck_assert_int_eq(memcmp(info + 1, msg + LT_WIRE_HELLO_START, h.info_len - 1), 0);
    ck_assert_uint_eq(h.token_len, 6);
    ck_assert_int_eq(memcmp(h.token, "s3cret", 6), 0);
}
END_TEST

START_TEST(hello_refused_with_a_reason) {
    uint8_t msg[256], info[256];
    lt__wire_hello h;
    const char *why;
    uint8_t *p = put_info_fields(lt__wire_hello_start(msg));
    uint8_t *end = lt__wire_hello_finish(msg, p, "", 0);
    size_t n = (size_t)(end - msg) - 5;
    uint8_t *body = msg + 5;
    /* Bad magic, and too short for one. */
    body[0] = 'X';
    ck_assert_int_eq(lt__wire_hello_decode(body, n, info, &h, &why), -1);
    ck_assert_str_eq(why, "bad magic");
    body[0] = 'T';
    ck_assert_int_eq(lt__wire_hello_decode(body, 11, info, &h, &why), -1);
    /* Another major version: decoded no further, for the caller to say. */
    body[8] = 2;
    ck_assert_int_eq(lt__wire_hello_decode(body, 12, info, &h, &why), 0);
    ck_assert_uint_eq(h.major, 2);
    body[8] = 1;
    /* No token, a trailing byte, a cut PROC_INFO. */
    ck_assert_int_eq(lt__wire_hello_decode(body, n - 1, info, &h, &why), -1);
    ck_assert_str_eq(why, "missing token");
    body[n] = 0;
    ck_assert_int_eq(lt__wire_hello_decode(body, n + 1, info, &h, &why), -1);
    ck_assert_str_eq(why, "trailing bytes");
    ck_assert_int_eq(lt__wire_hello_decode(body, 20, info, &h, &why), -1);
    ck_assert_ptr_nonnull(why);
}
END_TEST

START_TEST(welcome_and_refuse_round_trip) {
    uint8_t msg[LT_WIRE_REFUSE_MAX + 64];
    unsigned maj, min;
    uint32_t index;
    const char *why, *reason;
    size_t rl, n = lt__wire_welcome(msg, 300, 0); /* 1.0: no key */
    ck_assert_uint_le(n, LT_WIRE_WELCOME_MAX);
    ck_assert_int_eq(msg[4], LT_MSG_WELCOME);
    ck_assert_uint_eq(lt__wire_length(msg), n - 4);
    ck_assert_int_eq(lt__wire_welcome_decode(msg + 5, n - 5, &maj, &min, &index, &why), 0);
    ck_assert_uint_eq(maj, LT_WIRE_MAJOR);
    ck_assert_uint_eq(index, 300);
    ck_assert_uint_eq(lt__wire_welcome_key(msg + 5, n - 5), 0);
    ck_assert_int_eq(lt__wire_welcome_decode(msg + 5, n - 6, &maj, &min, &index, &why), -1);
    /* 1.1: the session key follows; a 1.0 reader ignores it. */
    n = lt__wire_welcome(msg, 300, 0x0123456789abcdefull);
    ck_assert_uint_le(n, LT_WIRE_WELCOME_MAX);
    ck_assert_int_eq(lt__wire_welcome_decode(msg + 5, n - 5, &maj, &min, &index, &why), 0);
    ck_assert_uint_eq(index, 300);
    ck_assert_uint_eq(lt__wire_welcome_key(msg + 5, n - 5), 0x0123456789abcdefull);
    ck_assert_uint_eq(lt__wire_welcome_key(msg + 5, n - 6), 0);
    n = lt__wire_refuse(msg, "no room", 7);
    ck_assert_int_eq(msg[4], LT_MSG_REFUSE);
    ck_assert_int_eq(lt__wire_refuse_decode(msg + 5, n - 5, &maj, &min, &reason, &rl, &why), 0);
    ck_assert_uint_eq(maj, LT_WIRE_MAJOR);
    ck_assert_uint_eq(rl, 7);
    ck_assert_int_eq(memcmp(reason, "no room", 7), 0);
    /* A reason past the bound is cut to it. */
    char big[LT_WIRE_REFUSE_REASON_MAX + 50];
    memset(big, 'r', sizeof big);
    n = lt__wire_refuse(msg, big, sizeof big);
    ck_assert_uint_le(n, LT_WIRE_REFUSE_MAX);
    ck_assert_int_eq(lt__wire_refuse_decode(msg + 5, n - 5, &maj, &min, &reason, &rl, &why), 0);
    ck_assert_uint_eq(rl, LT_WIRE_REFUSE_REASON_MAX);
    ck_assert_int_eq(lt__wire_refuse_decode(msg + 5, 3, &maj, &min, &reason, &rl, &why), -1);
}
END_TEST

START_TEST(resume_and_resumed_round_trip) {
    uint8_t msg[LT_WIRE_RESUME_START + 16];
    lt__wire_resume_msg r;
    const char *why;
    uint64_t off;
    size_t n = lt__wire_resume(msg, 7, UINT64_MAX - 1, "sesame", 6);
    ck_assert_uint_le(n, LT_WIRE_RESUME_START + 6);
    ck_assert_int_eq(msg[4], LT_MSG_RESUME);
    ck_assert_uint_eq(lt__wire_length(msg), n - 4);
    ck_assert_int_eq(lt__wire_resume_decode(msg + 5, n - 5, &r, &why), 0);
    ck_assert_uint_eq(r.major, LT_WIRE_MAJOR);
    ck_assert_uint_eq(r.minor, LT_WIRE_MINOR);
    ck_assert_uint_eq(r.index, 7);
    ck_assert_uint_eq(r.key, UINT64_MAX - 1);
    ck_assert_uint_eq(r.token_len, 6);
    ck_assert_int_eq(memcmp(r.token, "sesame", 6), 0);
    ck_assert_int_eq(lt__wire_resume_decode(msg + 5, n - 6, &r, &why), -1);
    ck_assert_int_eq(lt__wire_resume_decode(msg + 5, 20, &r, &why), -1);
    ck_assert_str_eq(why, "missing session key");
    msg[n] = 0;
    ck_assert_int_eq(lt__wire_resume_decode(msg + 5, n - 4, &r, &why), -1);
    ck_assert_str_eq(why, "trailing bytes");
    n = lt__wire_resumed(msg, 1ull << 40);
    ck_assert_uint_le(n, LT_WIRE_RESUMED_MAX);
    ck_assert_int_eq(msg[4], LT_MSG_RESUMED);
    ck_assert_int_eq(lt__wire_resumed_decode(msg + 5, n - 5, &off, &why), 0);
    ck_assert_uint_eq(off, 1ull << 40);
    ck_assert_int_eq(lt__wire_resumed_decode(msg + 5, n - 4, &off, &why), -1);
}
END_TEST

/* 1.2: a crash's BYE names the signal after the counts; the daemon reads
 * both kinds of BYE. */
START_TEST(a_crash_bye_names_its_signal) {
    uint8_t msg[64];
    uint64_t sent, lost;
    unsigned sig = 99;
    const char *why;
    size_t n = lt__wire_bye(msg, UINT64_MAX, 5);
    ck_assert_int_eq(lt__wire_bye_crash_decode(msg + 5, n - 5, &sent, &lost, &sig, &why), 0);
    ck_assert_uint_eq(sig, 0);
    n = lt__wire_bye_crash(msg, UINT64_MAX, 5, 11);
    ck_assert_uint_le(n, LT_WIRE_BYE_MAX);
    ck_assert_int_eq(msg[4], LT_MSG_BYE);
    ck_assert_uint_eq(lt__wire_length(msg), n - 4);
    ck_assert_int_eq(lt__wire_bye_crash_decode(msg + 5, n - 5, &sent, &lost, &sig, &why), 0);
    ck_assert_uint_eq(sent, UINT64_MAX);
    ck_assert_uint_eq(lost, 5);
    ck_assert_uint_eq(sig, 11);
    /* a 1.1 daemon's decoder refuses it */
    ck_assert_int_eq(lt__wire_bye_decode(msg + 5, n - 5, &sent, &lost, &why), -1);
    msg[n - 1] = 65; /* no such signal */
    ck_assert_int_eq(lt__wire_bye_crash_decode(msg + 5, n - 5, &sent, &lost, &sig, &why), -1);
    ck_assert_str_eq(why, "malformed BYE");
    msg[n - 1] = 0;
    ck_assert_int_eq(lt__wire_bye_crash_decode(msg + 5, n - 5, &sent, &lost, &sig, &why), -1);
    char text[64];
    lt__wire_signal_text(11, text, sizeof text);
    ck_assert_str_eq(text, "SIGSEGV (signal 11)");
    lt__wire_signal_text(40, text, sizeof text);
    ck_assert_str_eq(text, "signal 40");
}
END_TEST

START_TEST(bye_and_events_round_trip) {
    uint8_t msg[64];
    uint64_t sent, lost, thread;
    const uint8_t *recs;
    size_t rn;
    const char *why;
    size_t n = lt__wire_bye(msg, UINT64_MAX, 5);
    ck_assert_uint_le(n, LT_WIRE_BYE_MAX);
    ck_assert_int_eq(msg[4], LT_MSG_BYE);
    ck_assert_int_eq(lt__wire_bye_decode(msg + 5, n - 5, &sent, &lost, &why), 0);
    ck_assert_uint_eq(sent, UINT64_MAX);
    ck_assert_uint_eq(lost, 5);
    msg[n] = 0;
    ck_assert_int_eq(lt__wire_bye_decode(msg + 5, n - 4, &sent, &lost, &why), -1);
    ck_assert_str_eq(why, "malformed BYE");
    ck_assert_int_eq(lt__wire_bye_decode(msg + 5, n - 6, &sent, &lost, &why), -1);
    /* EVENTS: header and thread index before the records. */
    n = lt__wire_events_header(msg, 200, 3);
    ck_assert_uint_le(n, LT_WIRE_EVENTS_HDR_MAX);
    ck_assert_int_eq(msg[4], LT_MSG_EVENTS);
    memcpy(msg + n, "\x02\x05\x06", 3);
    ck_assert_uint_eq(lt__wire_length(msg), n + 3 - 4);
    ck_assert_int_eq(lt__wire_events_decode(msg + 5, n + 3 - 5, &thread, &recs, &rn, &why), 0);
    ck_assert_uint_eq(thread, 200);
    ck_assert_uint_eq(rn, 3);
    ck_assert_ptr_eq(recs, msg + n);
    ck_assert_int_eq(lt__wire_events_decode(msg + 5, 0, &thread, &recs, &rn, &why), -1);
}
END_TEST

START_TEST(exec_and_exec_failed_round_trip) {
    uint8_t msg[64];
    uint64_t sent, lost;
    const char *why;
    size_t n = lt__wire_exec(msg, 1u << 20, 7);
    ck_assert_uint_le(n, LT_WIRE_BYE_MAX);
    ck_assert_int_eq(msg[4], LT_MSG_EXEC);
    ck_assert_uint_eq(lt__wire_length(msg), n - 4);
    ck_assert_int_eq(lt__wire_exec_decode(msg + 5, n - 5, &sent, &lost, &why), 0);
    ck_assert_uint_eq(sent, 1u << 20);
    ck_assert_uint_eq(lost, 7);
    msg[n] = 0;
    ck_assert_int_eq(lt__wire_exec_decode(msg + 5, n - 4, &sent, &lost, &why), -1);
    ck_assert_str_eq(why, "malformed EXEC");
    ck_assert_int_eq(lt__wire_exec_decode(msg + 5, n - 6, &sent, &lost, &why), -1);
    n = lt__wire_exec_failed(msg);
    ck_assert_uint_eq(n, LT_WIRE_HEADER);
    ck_assert_int_eq(msg[4], LT_MSG_EXEC_FAILED);
    ck_assert_uint_eq(lt__wire_length(msg), 1);
}
END_TEST

START_TEST(fork_round_trips_and_refuses_a_pid_out_of_range) {
    uint8_t msg[LT_WIRE_FORK_MAX + 8];
    uint64_t pid;
    const char *why;
    size_t n = lt__wire_fork(msg, 4194304);
    ck_assert_uint_le(n, LT_WIRE_FORK_MAX);
    ck_assert_int_eq(msg[4], LT_MSG_FORK);
    ck_assert_uint_eq(lt__wire_length(msg), n - 4);
    ck_assert_int_eq(lt__wire_fork_decode(msg + 5, n - 5, &pid, &why), 0);
    ck_assert_uint_eq(pid, 4194304);
    msg[n] = 0; /* a byte too many */
    ck_assert_int_eq(lt__wire_fork_decode(msg + 5, n - 4, &pid, &why), -1);
    ck_assert_str_eq(why, "malformed FORK");
    for (uint64_t bad = 0; bad < 2; bad++) { /* 0, and past a pid_t */
        n = lt__wire_fork(msg, bad ? (uint64_t)INT32_MAX + 1 : 0);
        ck_assert_int_eq(lt__wire_fork_decode(msg + 5, n - 5, &pid, &why), -1);
    }
}
END_TEST

Suite *wire_suite(void) {
    Suite *s = suite_create("wire");
    TCase *tc = tcase_create("codec");
    tcase_add_test(tc, hello_round_trips_with_its_token);
    tcase_add_test(tc, hello_refused_with_a_reason);
    tcase_add_test(tc, welcome_and_refuse_round_trip);
    tcase_add_test(tc, bye_and_events_round_trip);
    tcase_add_test(tc, exec_and_exec_failed_round_trip);
    tcase_add_test(tc, fork_round_trips_and_refuses_a_pid_out_of_range);
    tcase_add_test(tc, resume_and_resumed_round_trip);
    tcase_add_test(tc, a_crash_bye_names_its_signal);
    suite_add_tcase(s, tc);
    return s;
}
