/* api_range.c -- /api/t/ID/range, /api/diff and /api/trend (API.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

void sv_api_range(sv_ctx *c, sv_session *s, const sv_req *q, sv_answer *a) {
    (void)c, (void)s, (void)q;
    sv_error(a, 501, "not_implemented", "range is not built yet");
}

void sv_api_diff(sv_ctx *c, const sv_req *q, sv_answer *a) {
    (void)c, (void)q;
    sv_error(a, 501, "not_implemented", "diff is not built yet");
}

void sv_api_trend(sv_ctx *c, const sv_req *q, sv_answer *a) {
    (void)c, (void)q;
    sv_error(a, 501, "not_implemented", "trend is not built yet");
}
