# tests/fuzz/build.mk -- libFuzzer targets (clang, ASan, UBSan) for the file
# reader, the record decoders and the daemon's message handling, and the
# `fuzz` rule that runs each for FUZZ_SECONDS on its seed corpus.
#
#   make fuzz                    build and run every target (60 s each)
#   make fuzz FUZZ_SECONDS=600   longer
#   make fuzz-build              build only: build/fuzz/fuzz_<target>
#
# Findings (crash-*, leak-*, timeout-*) land in build/fuzz/findings/<target>/;
# copy them to tests/regress/<target>/ where `make check` replays them.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := reader records capture convert
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS = -std=gnu11 -O1 -g $(WARN) -DLT_BUILDING $(LT_INC) -Icapture -Itests/fuzz \
	$(DEP_CFLAGS) $(FUZZ_SAN)
FUZZ_LIB_OBJS := $(LIBTRACE_SRCS:%.c=$(B)/fuzz/obj/%.o)
FUZZ_BINS := $(FUZZ_TARGETS:%=$(B)/fuzz/fuzz_%)
# memfd_create; the library's files define _GNU_SOURCE themselves.
$(B)/fuzz/obj/tests/fuzz/%.o: FUZZ_CFLAGS += -D_GNU_SOURCE

.PHONY: fuzz fuzz-build fuzz-deps fuzz-seeds

fuzz-deps:
	$(Q)DEPS_EXTRA="clang libclang-rt-14-dev" sh tools/deps.sh

$(B)/fuzz/obj/%.o: %.c | fuzz-deps
	$(call say,FUZZ-CC,$@)mkdir -p $(@D) && $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(B)/fuzz/fuzz_capture: $(B)/fuzz/obj/tests/fuzz/fuzz_capture.o $(B)/fuzz/obj/capture/store.o $(FUZZ_LIB_OBJS)
FUZZ_PROG_OBJS := $(PROG_SRCS:%.c=$(B)/fuzz/obj/%.o)
$(B)/fuzz/fuzz_convert: $(B)/fuzz/obj/tests/fuzz/fuzz_convert.o $(B)/fuzz/obj/convert/json.o \
	$(B)/fuzz/obj/convert/csv.o $(B)/fuzz/obj/convert/sql/sql_export.o \
	$(B)/fuzz/obj/convert/sql/sql_btree.o $(B)/fuzz/obj/convert/sql/sql_sort.o \
	$(B)/fuzz/obj/convert/convert.o $(B)/fuzz/obj/convert/strmap.o \
	$(B)/fuzz/obj/convert/calltree.o $(B)/fuzz/obj/convert/export/export.o \
	$(B)/fuzz/obj/convert/export/export_prof.o $(B)/fuzz/obj/convert/export/export_stacks.o \
	$(B)/fuzz/obj/convert/export/export_html.o $(FUZZ_PROG_OBJS) $(FUZZ_LIB_OBJS)
$(B)/fuzz/fuzz_%: $(B)/fuzz/obj/tests/fuzz/fuzz_%.o $(FUZZ_LIB_OBJS)
	$(call say,FUZZ-LD,$@)$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(DEP_LIBS) -lz

# The converters' mains, renamed so that one fuzzer can call them.
$(B)/fuzz/obj/convert/json.o: FUZZ_CFLAGS += -Dmain=json_main
$(B)/fuzz/obj/convert/csv.o: FUZZ_CFLAGS += -Dmain=csv_main
$(B)/fuzz/obj/convert/export/export.o: FUZZ_CFLAGS += -Dmain=export_main
$(B)/fuzz/obj/convert/export/export_html.o: FUZZ_CFLAGS += -I$(B)/gen
$(B)/fuzz/obj/convert/export/export_html.o: $(B)/gen/report_assets.h
$(B)/fuzz/obj/convert/sql/sql_export.o: FUZZ_CFLAGS += -I$(B)/gen
$(B)/fuzz/obj/convert/sql/sql_export.o: $(B)/gen/schema_sql.h

fuzz-build: $(FUZZ_BINS)

# Each target runs from a scratch copy of its seed corpus (the repository's
# corpus is not modified); -max_total_time bounds it, -timeout flags hangs.
fuzz: fuzz-build
	$(Q)for t in $(FUZZ_TARGETS); do \
		work=$(B)/fuzz/work/$$t; found=$(B)/fuzz/findings/$$t; \
		rm -rf $$work && mkdir -p $$work $$found && cp tests/fuzz/corpus/$$t/* $$work/ 2>/dev/null; \
		echo "  FUZZ    $$t ($(FUZZ_SECONDS) s)"; \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
		$(B)/fuzz/fuzz_$$t $$work -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
			-max_len=262144 -close_fd_mask=2 -print_final_stats=1 -artifact_prefix=$$found/ \
			> $(B)/fuzz/$$t.log 2>&1 \
			|| { tail -n 40 $(B)/fuzz/$$t.log; echo "fuzz: $$t found a failure: see $$found/"; exit 1; }; \
		grep -h '^stat::number_of_executed_units\|^#.*DONE' $(B)/fuzz/$$t.log | tail -n 1; \
	done

# Regenerates the seed corpus from tests/fuzz/mkseeds.c (output committed).
$(B)/fuzz/mkseeds: tests/fuzz/mkseeds.c $(LIBTRACE_A)
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) -o $@ $< $(LIBTRACE_A) $(DEP_LIBS)

fuzz-seeds: $(B)/fuzz/mkseeds
	$(Q)mkdir -p tests/fuzz/corpus/reader tests/fuzz/corpus/records tests/fuzz/corpus/capture && \
		$(B)/fuzz/mkseeds tests/fuzz/corpus
