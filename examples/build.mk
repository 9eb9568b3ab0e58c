# examples/build.mk -- the instrumented example programs, linked statically
# with libtrace: build/bin/example_c and build/bin/example_cpp.
EXAMPLE_BINS := $(B)/bin/example_c $(B)/bin/example_cpp

$(B)/bin/example_c: examples/example_c.c $(LIBTRACE_A) libtrace/trace_client.h | deps
	$(call say,CC,$@)mkdir -p $(@D) && $(CC) -std=gnu11 $(OPT) -g $(WARN) -Ilibtrace \
		$(CFLAGS) -o $@ $< $(LIBTRACE_A) $(ALL_LDFLAGS) $(DEP_LIBS)

$(B)/bin/example_cpp: examples/example_cpp.cpp $(LIBTRACE_A) libtrace/trace_client.h | deps
	$(call say,CXX,$@)mkdir -p $(@D) && $(CXX) $(filter-out -MMD -MP,$(ALL_CXXFLAGS)) -o $@ $< $(LIBTRACE_A) \
		$(ALL_LDFLAGS) $(DEP_LIBS)
