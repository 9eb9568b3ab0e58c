# A program built against the build tree, as the README says, starts (the
# soname link libtrace.so.0 is there) and finds the library's version.
B=$(dirname "$(command -v tracy-csv)")/..
cat > prog.c <<'C'
#include <stdio.h>
#include <string.h>
#include <libtrace/trace.h>
#include <trace_builder.h>
int main(void) {
    printf("%s %s\n", lt_version(), strcmp(lt_version(), LT_VERSION_STRING) ? "differs" : "same");
    return 0;
}
C
export PKG_CONFIG_PATH="$B/lib/pkgconfig"
cc -o prog prog.c $(pkg-config --cflags --libs libtrace) && ./prog
readlink "$B/lib/libtrace.so.0"
