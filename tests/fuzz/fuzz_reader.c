/* fuzz_reader.c -- libFuzzer target: the .tracy file reader. Opens the input
 * as a file, looks up every piece of metadata, then reads every event (all
 * streams merged, then each stream alone) and the names they refer to. Any
 * crash, leak, hang or sanitizer report is a bug; errors are fine.
 *
 * An input starting with byte 0xB1 is a list of blocks instead of a file:
 * they are compressed into a valid file (correct checksums and descriptors)
 * so that mutations reach the block and record decoding, which a mutated
 * file rarely does (the zstd checksum stops it first). A block is
 *   u8 kind, u8 process, u8 thread, u8 base_ts/1000, u16 len, len bytes
 * of records (the block header is added). */
#include <stdint.h>
#include <string.h>
#include "fuzz_common.h"

static volatile size_t sink;

static void touch(const char *s) {
    if (s) sink += strlen(s);
}

static void lookups(lt_reader *r) {
    const lt_file_info *fi = lt_reader_info(r);
    touch(fi->creator);
    uint32_t np = lt_reader_nprocesses(r);
    for (uint32_t p = 0; p <= np + 1; p++) {
        const lt_process *pr = lt_reader_process(r, p);
        if (pr) {
            touch(pr->hostname);
            touch(pr->program);
            touch(pr->client);
            touch(pr->end_reason);
            for (uint32_t a = 0; a < pr->argc; a++) touch(pr->argv[a]);
        }
        uint32_t nt = lt_reader_nthreads(r, p);
        for (uint32_t t = 0; t <= nt + 1; t++) {
            const lt_thread *th = lt_reader_thread(r, p, t);
            if (th) touch(th->name);
        }
        for (uint32_t i = 0; i < 4; i++) {
            const lt_loc *l = lt_reader_loc(r, p, i);
            if (l) {
                touch(l->name);
                touch(l->file);
            }
            touch(lt_reader_plot_name(r, p, i));
            touch(lt_reader_frame_name(r, p, i));
        }
    }
    size_t ns = lt_reader_nstats(r);
    for (size_t i = 0; i <= ns; i++) {
        const lt_stat *s = lt_reader_stat(r, i);
        if (s) {
            touch(s->name);
            touch(s->description);
            uint64_t v;
            lt_reader_total(r, s->name, &v);
        }
    }
    uint64_t v;
    lt_reader_total(r, "events", &v);
}

/* Reads the current selection to its end (bounded by the input: every
 * event costs at least a byte, plus the closes of open zones). */
static void drain(lt_reader *r) {
    lt_event ev;
    int rc;
    while ((rc = lt_reader_next(r, &ev)) > 0) {
        if (ev.type == LT_EV_ZONE_END || ev.type == LT_EV_ZONE_BEGIN) {
            const lt_loc *l = lt_reader_loc(r, ev.process, ev.loc);
            if (l) touch(l->name);
            if (ev.name) sink += ev.name_len ? (uint8_t)ev.name[ev.name_len - 1] : 0;
        }
        if (ev.text && ev.text_len) sink += (uint8_t)ev.text[ev.text_len - 1];
        if (ev.text2 && ev.text2_len) sink += (uint8_t)ev.text2[ev.text2_len - 1];
        if (ev.type == LT_EV_PLOT) touch(lt_reader_plot_name(r, ev.process, ev.id));
        if (ev.type == LT_EV_FRAME) touch(lt_reader_frame_name(r, ev.process, ev.id));
    }
    if (rc < 0) touch(lt_reader_error(r));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[64];
    int fd = fz_memfd(path, sizeof path);
    fz_input(fd, path, data, size);
    lt_reader *r = NULL;
    char detail[256];
    if (lt_reader_open(&r, path, detail, sizeof detail) != 0) return 0;
    lookups(r);
    drain(r);
    uint32_t np = lt_reader_nprocesses(r);
    for (uint32_t p = 1; p <= np && p <= 8; p++)
        for (uint32_t t = 1; t <= lt_reader_nthreads(r, p) && t <= 8; t++)
            if (lt_reader_select(r, p, t) == 0) drain(r);
    lt_reader_select(r, 0, 0);
    drain(r);
    lt_reader_free(r);
    return 0;
}
