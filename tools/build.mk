# tools/build.mk -- developer tools: tracegen writes synthetic traces for
# tests and benchmarks (build/tools/tracegen); for tests/identity/,
# tracecanon prints a trace in a form free of the clock and of the zstd
# version, tracerotate copies a trace through a rotating writer.
TOOLS_BINS := $(B)/tools/tracegen $(B)/tools/tracecanon $(B)/tools/tracerotate

# tracerotate reaches into the writer and reader ("common/file_int.h",
# "format/reader_int.h"): a test tool, not a program.
$(B)/obj/tools/%.o: LT_INC = $(PROG_INC)
$(B)/tools/%: $(B)/obj/tools/%.o $(LIBTRACE_A)
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) -o $@ $^ $(ALL_LDFLAGS) $(DEP_LIBS)

all: $(TOOLS_BINS)
