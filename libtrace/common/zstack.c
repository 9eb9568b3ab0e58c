/* zstack.c -- record walking and open-zone stacks (see zstack.h). */
#include <stdlib.h>
#include <string.h>
#include "file_int.h"
#include "zstack.h"

int lt__rec_next(const uint8_t **pp, const uint8_t *end, uint8_t *tag, uint64_t *ts,
                 uint64_t *loc, const char **str, size_t *len) {
    const uint8_t *p = *pp;
    uint64_t v;
    if (p >= end) return -1;
    *tag = *p++;
    *loc = 0;
    if (*tag > LT_TAG_ZONE_BEGIN_SHORT || *tag == LT_TAG_ZONE_END) { /* most records */
        if (lt__varint(&p, end, &v) < 0) return -1;
        *ts += v;
        *loc = *tag > LT_TAG_ZONE_BEGIN_SHORT ? (uint64_t)(*tag - LT_TAG_ZONE_BEGIN_SHORT) : 0;
        *pp = p;
        return 1;
    }
    if (*tag == LT_TAG_ZONE_TEXT || *tag == LT_TAG_ZONE_NAME) {
        if (lt__get_str(&p, end, str, len) < 0) return -1;
        *pp = p;
        return 0;
    }
    if (*tag == 0 || *tag == LT_TAG_ZONE_BEGIN_SHORT ||
        (*tag > LT_TAG_LOST && *tag < LT_TAG_ZONE_BEGIN_SHORT) ||
        lt__get_varint(&p, end, &v) < 0)
        return -1;
    *ts += v;
    if (*tag > LT_TAG_ZONE_BEGIN_SHORT) *loc = *tag - LT_TAG_ZONE_BEGIN_SHORT;
    int nstr = 0;
    switch (*tag) {
    case LT_TAG_ZONE_BEGIN:
        if (lt__get_varint(&p, end, loc) < 0) return -1;
        break;
    case LT_TAG_MESSAGE: nstr = 1; break;
    case LT_TAG_SIGNPOST: nstr = 2; break;
    case LT_TAG_PLOT:
        if (lt__get_varint(&p, end, &v) < 0 || end - p < 8) return -1;
        p += 8;
        break;
    case LT_TAG_FRAME:
        if (lt__get_varint(&p, end, &v) < 0) return -1;
        break;
    case LT_TAG_LOST:
        if (lt__get_varint(&p, end, loc) < 0) return -1;
        break;
    default: break;
    }
    for (int i = 0; i < nstr; i++)
        if (lt__get_str(&p, end, str, len) < 0) return -1;
    *pp = p;
    return 1;
}

static int lt__zent_str(lt__zent *z, int is_name, const char *str, size_t len) {
    char **dst = is_name ? &z->name : &z->text;
    char *c = realloc(*dst, len ? len : 1);
    if (!c) return LT_ENOMEM;
    if (len) memcpy(c, str, len);
    *dst = c;
    *(is_name ? &z->name_len : &z->text_len) = len;
    return 0;
}

int lt__zstack_apply(lt__zstack *z, uint8_t tag, uint64_t loc, const char *str,
                     size_t len, const char **why) {
    if (tag > LT_TAG_ZONE_BEGIN_SHORT || tag == LT_TAG_ZONE_BEGIN) {
        if (z->depth >= LT_MAX_DEPTH) return *why = "zones nested too deeply", -1;
        if (z->depth == z->cap) {
            uint32_t cap = z->cap ? z->cap * 2 : 16;
            lt__zent *v = realloc(z->v, cap * sizeof *v);
            if (!v) return LT_ENOMEM;
            memset(v + z->cap, 0, (cap - z->cap) * sizeof *v);
            z->v = v;
            z->cap = cap;
        }
        lt__zent *e = &z->v[z->depth++];
        e->loc = (uint32_t)loc;
        if (__builtin_expect(e->name || e->text, 0)) { /* reused slot */
            free(e->name);
            free(e->text);
            e->name = e->text = NULL;
            e->name_len = e->text_len = 0;
        }
    } else if (tag == LT_TAG_ZONE_END || tag == LT_TAG_ZONE_END_ABORTED) {
        if (z->depth == 0) return *why = "zone end without open zone", -1;
        z->depth--;
    } else if (tag == LT_TAG_ZONE_TEXT || tag == LT_TAG_ZONE_NAME) {
        if (z->depth == 0) return *why = "zone text or name without open zone", -1;
        return lt__zent_str(&z->v[z->depth - 1], tag == LT_TAG_ZONE_NAME, str, len);
    }
    return 0;
}

size_t lt__zstack_size(const lt__zstack *z) {
    size_t n = 0;
    for (uint32_t i = 0; i < z->depth; i++)
        n += 12 + 2 * 11 + z->v[i].name_len + z->v[i].text_len;
    return n;
}

uint8_t *lt__zstack_records(const lt__zstack *z, uint8_t *p) {
    for (uint32_t i = 0; i < z->depth; i++) {
        const lt__zent *e = &z->v[i];
        *p++ = LT_TAG_ZONE_BEGIN;
        *p++ = 0; /* dt */
        p = lt__put_varint_(p, e->loc);
        if (e->name) {
            *p++ = LT_TAG_ZONE_NAME;
            p = lt__put_str(p, e->name, e->name_len);
        }
        if (e->text) {
            *p++ = LT_TAG_ZONE_TEXT;
            p = lt__put_str(p, e->text, e->text_len);
        }
    }
    return p;
}

void lt__zstack_free(lt__zstack *z) {
    for (uint32_t i = 0; i < z->cap; i++) {
        free(z->v[i].name);
        free(z->v[i].text);
    }
    free(z->v);
    z->v = NULL;
    z->depth = z->cap = 0;
}
