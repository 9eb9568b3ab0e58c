/* assets.c -- the page's files, embedded from serve/web/ at build time
 * (serve/build.mk). Without serve/web/index.html a minimal page says so. */
#include <stddef.h>
#include <string.h>

#include "serve.h"
#include "serve_assets.h"

static const char fallback[] =
    "<!doctype html><meta charset=utf-8><title>tracy-serve</title>"
    "<p>tracy-serve: this build has no page (serve/web/ is empty). "
    "The JSON API is at <a href=\"/api/sessions\">/api/sessions</a>.</p>\n";

static const char *type_of(const char *name, size_t len) {
    static const struct { const char *ext, *type; } t[] = {
        {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},   {".svg", "image/svg+xml"},
        {".json", "application/json; charset=utf-8"}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        size_t el = strlen(t[i].ext);
        if (len > el && !memcmp(name + len - el, t[i].ext, el)) return t[i].type;
    }
    return "application/octet-stream";
}

int sv_asset(const char *name, size_t len, const char **data, size_t *dlen, const char **type) {
    for (size_t i = 0; web_files[i].name; i++)
        if (strlen(web_files[i].name) == len && !memcmp(web_files[i].name, name, len)) {
            *data = web_files[i].data;
            *dlen = web_files[i].len;
            *type = type_of(name, len);
            return 0;
        }
    if (len == 10 && !memcmp(name, "index.html", 10)) {
        *data = fallback;
        *dlen = sizeof fallback - 1;
        *type = type_of(name, len);
        return 0;
    }
    return -1;
}
