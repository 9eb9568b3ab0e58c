# bench/build.mk -- `make bench`: builds the benchmark programs into
# build/bench/ and runs bench/run.py, which writes BENCHMARKS.md.
# Benchmarks are not tests: nothing here is a prerequisite of `make check`.

BENCH_DEPS := hyperfine valgrind python3-yappi python3-line-profiler
# The driver runs on Debian's interpreter (it has yappi and line_profiler).
BENCH_PYTHON ?= /usr/bin/python3
BENCH_PY_INC = $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
BENCH_PY_EXT = $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')

# C benchmark programs: each bench/<name>.c present becomes build/bench/<name>,
# linked with libtrace (some are written alongside the library they measure).
BENCH_C_NAMES := $(filter ingest_load traceinfo client_bench reader_bench, \
	$(basename $(notdir $(wildcard bench/*.c))))
BENCH_BINS := $(BENCH_C_NAMES:%=$(B)/bench/%)
BENCH_EXT = $(B)/bench/emptyprof$(BENCH_PY_EXT)

$(B)/bench/%: $(B)/obj/bench/%.o $(LIBTRACE_A)
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) -o $@ $^ $(ALL_LDFLAGS) $(DEP_LIBS)

$(B)/bench/emptyprof$(BENCH_PY_EXT): bench/emptyprof.c | deps
	$(call say,CC,$@)mkdir -p $(@D) && $(CC) -shared -fPIC $(OPT) -g $(WARN) \
		-I$(BENCH_PY_INC) $(CFLAGS) -o $@ $< $(ALL_LDFLAGS)

.PHONY: bench-deps bench-progs
bench-deps:
	$(Q)DEPS_EXTRA="$(BENCH_DEPS)" sh tools/deps.sh

# Builds what it can: a component that does not build yet is reported as
# n/a by the driver instead of stopping the suite.
bench-progs: bench-deps
	-$(Q)$(MAKE) --no-print-directory -k all
	-$(Q)$(MAKE) --no-print-directory -k $(BENCH_EXT) $(BENCH_BINS)
	-$(Q)$(MAKE) --no-print-directory -k python-all # section 7: every interpreter

bench: bench-progs
	$(Q)$(BENCH_PYTHON) bench/run.py --build $(B) --out BENCHMARKS.md
