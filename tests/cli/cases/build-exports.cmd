# libtrace.so exports exactly the public API (libtrace/libtrace.map): the
# functions of trace.h, trace_client.h and trace_builder.h, no lt__ internals.
B=$(dirname "$(command -v tracy-csv)")/..
nm -D --defined-only "$B/lib/libtrace.so" | awk '{print $3}' | LC_ALL=C sort
