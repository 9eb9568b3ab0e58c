/* wire.h -- internal: constants of the client/daemon protocol (PROTOCOL.md). */
#ifndef LIBTRACE_WIRE_H
#define LIBTRACE_WIRE_H

#define LT_WIRE_MAGIC "TRCYWIRE"
#define LT_WIRE_MAGIC_LEN 8
#define LT_WIRE_MAJOR 1
#define LT_WIRE_MINOR 0
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
    LT_MSG_WELCOME = 0x81,
    LT_MSG_REFUSE = 0x82,
    LT_MSG_STORED = 0x83 /* answer to BYE: varint events stored */
};

#endif /* LIBTRACE_WIRE_H */
