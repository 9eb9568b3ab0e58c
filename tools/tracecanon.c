/* tracecanon.c -- prints what a writer decided in a trace, in a form that
 * depends neither on the clock nor on the zstd version: the header without
 * its two timestamps, every unit's descriptor without its compressed size
 * and its decompressed block, and the trailer decoded, with the figures
 * that depend on the compressor (a stream's comp_bytes, the body_bytes
 * total) left out. Two writers that make the same file from the same input
 * print the same bytes (tests/identity/run.sh hashes them).
 *
 * Usage: tracecanon FILE.tracy > CANON
 * Exit codes: 0, 1 usage or I/O error, 2 not a trace or a malformed unit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define MAGIC_HEADER 0x184D2A50u
#define MAGIC_DESC 0x184D2A51u
#define MAGIC_TRAILER 0x184D2A5Eu

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) return 0;
    }
    return -1;
}

static int bad(const char *what, size_t off) {
    fprintf(stderr, "tracecanon: %s at offset %zu\n", what, off);
    return 2;
}

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 20;
            uint8_t *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = b;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* The trailer's content, decoded: one line per stream and per total. */
static int trailer(const uint8_t *p, const uint8_t *end, size_t off) {
    uint64_t ns, nt, v;
    if (end - p < 24 || memcmp(p, "TRCYTRLR", 8) != 0) return bad("malformed trailer", off);
    p += 8;
    end -= 16;
    if (varint(&p, end, &ns) < 0) return bad("malformed trailer", off);
    for (uint64_t i = 0; i < ns; i++) {
        printf("stream");
        for (int k = 0; k < 11; k++) {
            if (varint(&p, end, &v) < 0) return bad("malformed trailer stream", off);
            if (k == 10) printf(" -"); /* comp_bytes: the compressor's */
            else printf(" %llu", (unsigned long long)v);
        }
        printf("\n");
    }
    if (varint(&p, end, &nt) < 0) return bad("malformed trailer", off);
    for (uint64_t i = 0; i < nt; i++) {
        uint64_t len;
        if (varint(&p, end, &len) < 0 || (uint64_t)(end - p) < len)
            return bad("malformed trailer total", off);
        const char *name = (const char *)p;
        p += len;
        if (varint(&p, end, &v) < 0) return bad("malformed trailer total", off);
        if (len == 10 && memcmp(name, "body_bytes", 10) == 0)
            printf("total body_bytes -\n");
        else
            printf("total %.*s %llu\n", (int)len, name, (unsigned long long)v);
    }
    return p == end ? 0 : bad("trailing bytes in the trailer", off);
}

/* One unit: its descriptor (compressed size zeroed) and decompressed block. */
static int unit(const uint8_t *p, size_t avail, size_t off, size_t *used) {
    uint8_t d[40];
    if (rd32(p + 4) != 40) return bad("malformed unit", off);
    memcpy(d, p + 8, 40);
    uint32_t raw = rd32(d + 12), comp = rd32(d + 16);
    memset(d + 16, 0, 4);
    uint8_t *out = malloc(raw ? raw : 1);
    if (!out) return bad("out of memory", off);
    size_t n = ZSTD_decompress(out, raw, p + 48, comp);
    if (ZSTD_isError(n) || n != raw) {
        free(out);
        return bad("undecodable block", off);
    }
    printf("unit %u %u\n", (unsigned)d[0], (unsigned)raw);
    fwrite(d, 1, sizeof d, stdout);
    fwrite(out, 1, raw, stdout);
    printf("\n");
    free(out);
    *used = 48 + comp;
    return 0;
}

static int canon(const uint8_t *f, size_t len) {
    if (len < 8 || rd32(f) != MAGIC_HEADER) return bad("not a trace", 0);
    size_t hl = rd32(f + 4);
    if (hl < 32 || len - 8 < hl) return bad("truncated header", 0);
    uint8_t *h = malloc(hl);
    if (!h) return bad("out of memory", 0);
    memcpy(h, f + 8, hl);
    memset(h + 16, 0, 16); /* wall-clock and monotonic times of the writing */
    printf("header %zu\n", hl);
    fwrite(h, 1, hl, stdout);
    printf("\n");
    free(h);
    size_t off = 8 + hl;
    while (off < len) {
        /* a file cut short holds its complete units: said, not an error */
        if (len - off < 8) break;
        uint32_t magic = rd32(f + off), n = rd32(f + off + 4);
        if (magic == MAGIC_TRAILER) {
            if (len - off - 8 < n) break;
            int rc = trailer(f + off + 8, f + off + 8 + n, off);
            if (rc == 0 && off + 8 + n != len) return bad("bytes after the trailer", off);
            return rc;
        }
        if (magic != MAGIC_DESC) return bad("unknown unit", off);
        if (len - off < 48 || len - off - 48 < rd32(f + off + 24)) break;
        size_t used;
        int rc = unit(f + off, len - off, off, &used);
        if (rc) return rc;
        off += used;
    }
    if (off < len) printf("cut short at %zu\n", off);
    printf("no trailer\n");
    return 0;
}

int main(int argc, char **argv) {
    size_t len;
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: tracecanon FILE.tracy\n");
        return 1;
    }
    uint8_t *f = slurp(argv[1], &len);
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    int rc = canon(f, len);
    free(f);
    if (fflush(stdout) != 0) return 1;
    return rc;
}
