# libtrace/compat/build.mk -- Tracy's instrumentation headers over the client
# API: tracy/Tracy.hpp, tracy/TracyC.h (and the lt_tracy.h they share), copied
# with libtrace's headers into build/include/ (the layout `make install` gives
# $(includedir)), so that -Ibuild/include finds <tracy/Tracy.hpp> and
# <libtrace/trace_client.h>.
TRACY_HDR_SRCS := $(wildcard libtrace/compat/tracy/*.h libtrace/compat/tracy/*.hpp)
TRACY_HDRS := $(TRACY_HDR_SRCS:libtrace/compat/tracy/%=$(B)/include/tracy/%) \
	$(LT_HEADERS:libtrace/%=$(B)/include/libtrace/%)

all: $(TRACY_HDRS)

$(B)/include/tracy/%: libtrace/compat/tracy/%
	$(Q)mkdir -p $(@D) && cp $< $@
$(B)/include/libtrace/%.h: libtrace/%.h
	$(Q)mkdir -p $(@D) && cp $< $@

.PHONY: install-tracy-headers uninstall-tracy-headers
install: install-tracy-headers
uninstall: uninstall-tracy-headers

install-tracy-headers:
	install -d $(DESTDIR)$(includedir)/tracy
	install -m 644 $(TRACY_HDR_SRCS) $(DESTDIR)$(includedir)/tracy/

uninstall-tracy-headers:
	rm -rf $(DESTDIR)$(includedir)/tracy

# Section 11 of make bench: the cost of a zone through these headers
# (bench/sec_drop.py). Built by bench-progs, never by `all`.
DROP_BENCH_BINS := $(B)/bench/drop_bench $(B)/bench/drop_bench_off
.PHONY: drop-bench-progs
bench-progs: drop-bench-progs
drop-bench-progs:
	-$(Q)$(MAKE) --no-print-directory $(DROP_BENCH_BINS)

$(B)/bench/drop_bench: bench/drop_bench.cpp bench/drop_bench_c.c $(LIBTRACE_A) $(TRACY_HDRS) | deps
	$(call say,CXX,$@)mkdir -p $(@D) && $(CC) -std=gnu11 $(OPT) -g $(WARN) -DTRACY_ENABLE \
		-I$(B)/include -c bench/drop_bench_c.c -o $@-c.o && \
		$(CXX) -std=c++17 $(OPT) -g $(WARN) -DTRACY_ENABLE -I$(B)/include -o $@ \
		bench/drop_bench.cpp $@-c.o $(LIBTRACE_A) $(ALL_LDFLAGS) $(DEP_LIBS)
$(B)/bench/drop_bench_off: bench/drop_bench.cpp bench/drop_bench_c.c $(LIBTRACE_A) $(TRACY_HDRS) | deps
	$(call say,CXX,$@)mkdir -p $(@D) && $(CC) -std=gnu11 $(OPT) -g $(WARN) \
		-I$(B)/include -c bench/drop_bench_c.c -o $@-c.o && \
		$(CXX) -std=c++17 $(OPT) -g $(WARN) -I$(B)/include -o $@ \
		bench/drop_bench.cpp $@-c.o $(LIBTRACE_A) $(ALL_LDFLAGS) $(DEP_LIBS)
