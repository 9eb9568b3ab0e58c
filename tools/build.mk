# tools/build.mk -- developer tools: tracegen writes synthetic traces for
# tests and benchmarks (build/tools/tracegen).
TOOLS_BINS := $(B)/tools/tracegen

$(B)/tools/%: $(B)/obj/tools/%.o $(LIBTRACE_A)
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) -o $@ $^ $(ALL_LDFLAGS) $(DEP_LIBS)

all: $(TOOLS_BINS)
