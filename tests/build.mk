# tests/build.mk -- Check suites (tests/check_*.c, one runner), the sanitizer
# run, CLI golden tests (tests/cli/) and pytest (tests/python/).
CHECK_SRCS := $(wildcard tests/check_*.c)
# The suites' harness: starting daemons and clients, the wire encoder.
HARNESS_SRCS := $(wildcard tests/harness/*.c)
CHECK_OBJS := $(CHECK_SRCS:%.c=$(B)/obj/%.o) $(HARNESS_SRCS:%.c=$(B)/obj/%.o)
CHECK_SAN_OBJS := $(CHECK_SRCS:%.c=$(B)/asan/obj/%.o) $(HARNESS_SRCS:%.c=$(B)/asan/obj/%.o)
$(CHECK_OBJS) $(CHECK_SAN_OBJS): ALL_CFLAGS += -Itests/harness

# Every `Suite *NAME_suite(void)` defined in tests/check_*.c is run.
$(B)/gen/suites.h: $(CHECK_SRCS)
	$(Q)mkdir -p $(@D) && sed -n 's/^Suite \*\([a-z0-9_]*\)_suite(void).*/SUITE(\1)/p' $(CHECK_SRCS) > $@.tmp && \
		(cmp -s $@.tmp $@ || mv $@.tmp $@); rm -f $@.tmp

$(B)/obj/tests/runner.o: tests/runner.c $(B)/gen/suites.h | deps
	$(call say,CC,$@)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -I$(B)/gen -c $< -o $@
$(B)/asan/obj/tests/runner.o: tests/runner.c $(B)/gen/suites.h | deps
	$(call say,CC-SAN,$@)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) $(SAN_FLAGS) $(CHECK_CFLAGS) -I$(B)/gen -c $< -o $@
$(B)/obj/tests/%.o: tests/%.c | deps
	$(call say,CC,$@)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -c $< -o $@

$(B)/tests/check_all: $(B)/obj/tests/runner.o $(CHECK_OBJS) $(LIBTRACE_A)
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) -o $@ $^ $(ALL_LDFLAGS) $(CHECK_LIBS) $(DEP_LIBS)

$(B)/asan/tests/check_all: $(B)/asan/obj/tests/runner.o $(CHECK_SAN_OBJS) $(B)/asan/lib/libtrace.a
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) $(SAN_FLAGS) -o $@ $^ $(ALL_LDFLAGS) $(CHECK_LIBS) $(DEP_LIBS)

# Each suite a process of its own, CHECK_JOBS at a time (tests/checkpool.sh:
# natively 280 s one after the other, 83 s three at a time; under the
# sanitizers 745 s and 225 s). Check's default of 4 s a test is too short
# for tests of microseconds while the machine runs other suites: 30 s.
CHECK_JOBS ?= 3
check-c: $(B)/tests/check_all all
	$(Q)LT_BUILD=$(CURDIR)/$(B) CK_DEFAULT_TIMEOUT=30 \
		sh tests/checkpool.sh $(CHECK_JOBS) $(B)/tests/check_all $(B)/gen/suites.h

# (each test is a forked child whose exit LeakSanitizer checks; the
# sanitizers' build runs two to three times slower, and its three suites
# share two cores with the pytest matrix: every timeout is tripled, or
# check_view's index builds and check_capture's memory limit ran past
# their 120 s)
check-asan: $(B)/asan/tests/check_all all
	$(Q)LT_BUILD=$(CURDIR)/$(B) CK_EXCLUDE_TAGS=fork_with_threads CK_DEFAULT_TIMEOUT=30 \
		CK_TIMEOUT_MULTIPLIER=3 \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		sh tests/checkpool.sh $(CHECK_JOBS) $(B)/asan/tests/check_all $(B)/gen/suites.h

check-valgrind: $(B)/tests/check_all all
	$(Q)LT_BUILD=$(CURDIR)/$(B) CK_FORK=no valgrind -q --error-exitcode=1 --leak-check=full \
		$(B)/tests/check_all

check-cli: all
	$(Q)if [ -d tests/cli ]; then sh tests/cli/run.sh $(B); fi

# The traces the writers make (builder, splice, rotation; a capture and a
# flight dump as inputs) against the reference commit's: the same in all
# but the clock's readings and zstd's bytes (tests/identity/run.sh).
check-identity: all
	$(Q)sh tests/identity/run.sh $(B)

# README's `pip install .` into fresh virtual environments (the oldest and
# newest interpreter), then python -m tracy without the build tree.
check-pip: all
	$(Q)sh tests/pipinstall.sh $(B)

# Two real local users against one another (tests/shared): useradd makes
# them, so it needs root, as make check has on CI; the transport is the same
# for every interpreter, so it runs once, under Debian's python3.
check-shared: all
	$(Q)LT_BUILD=$(CURDIR)/$(B) $(PYTHON) -m pytest -q -p no:cacheprovider tests/shared

# The Python suite once per interpreter found (pyhook/pythons.sh), two at a
# time, pytest always under /usr/bin/python3: one line per interpreter.
check-python: all python-all
	$(Q)if [ -d tests/python ] && ls tests/python/test_*.py >/dev/null 2>&1; then \
		PYTHON=$(PYTHON) sh tests/pymatrix.sh $(CURDIR)/$(B); fi
-include tests/browser/build.mk
