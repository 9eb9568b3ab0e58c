# prog/build.mk -- the program layer: what every program shares on its
# command line (prog.c: exit codes, messages, --help and --version, argument
# checks), reading a trace with one line on failure (input.c) and the output
# helpers (out.c: buffered writer, CSV and JSON quoting). Built once into
# $(B)/lib/libprog.a, linked by the converters, tracy-merge, tracy-cut and
# tracy-serve. capture-release keeps its own options and messages
# (capture/options.c): its exit codes are not the programs' table.
#
# Programs see libtrace's public headers (trace.h, trace_client.h,
# trace_builder.h) and name any internal header by its folder
# ("format/splice.h", "common/wire.h"), the tree's root giving "prog/...",
# "convert/...": PROG_INC replaces libtrace's own include path for their
# objects. libtrace's own sources, the Python extension (the client's other
# half: it shares the client's state through client/client_internal.h and
# its fast path through client_fast.h) and the tests keep LT_INC.
PROG_INC := -I. -Ilibtrace
PROG_SRCS := $(wildcard prog/*.c)
PROG_OBJS := $(PROG_SRCS:%.c=$(B)/obj/%.o)
PROG_A := $(B)/lib/libprog.a
ALL_OBJS += $(PROG_OBJS)

$(B)/obj/prog/%.o: LT_INC = $(PROG_INC)
$(PROG_A): $(PROG_OBJS)
	$(call say,AR,$@)mkdir -p $(@D) && rm -f $@ && ar rcs $@ $^
