# Makefile -- builds libtrace, capture-release, the converters and the Python
# hook into build/, runs the tests (make check) and installs (make install).
# Each component adds its rules in its own <dir>/build.mk.

PREFIX ?= /usr/local
DESTDIR ?=
bindir ?= $(PREFIX)/bin
libdir ?= $(PREFIX)/lib
includedir ?= $(PREFIX)/include
mandir ?= $(PREFIX)/share/man
# where PYTHON looks for packages under PREFIX (pyhook/pydir.py)
pythondir ?= $(shell $(PYTHON) pyhook/pydir.py $(PREFIX))

CC ?= cc
CXX ?= c++
# The interpreter whose headers build the extension and which runs pytest.
# Debian's python3 has python3-pytest; any CPython 3.11 can import the result.
PYTHON ?= /usr/bin/python3
B := build

V ?= 0
ifeq ($(V),0)
Q := @
say = @printf '  %-7s %s\n' $(1) $(2);
else
Q :=
say =
endif

PKGS := libuv libzstd sqlite3 libcjson
# Recursively expanded on purpose: evaluated after `make deps` has run.
DEP_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
DEP_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm
CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)

OPT ?= -O2
WARN := -Wall -Wextra -Wshadow -Wno-unused-parameter
PROJ_CFLAGS = -std=gnu11 $(OPT) -g $(WARN) -fPIC -fvisibility=hidden \
	-DLT_BUILDING $(LT_INC) -MMD -MP $(DEP_CFLAGS)
PROJ_CXXFLAGS = -std=c++17 $(OPT) -g $(WARN) $(LT_INC) -MMD -MP
ALL_CFLAGS = $(PROJ_CFLAGS) $(CFLAGS)
ALL_CXXFLAGS = $(PROJ_CXXFLAGS) $(CXXFLAGS)
ALL_LDFLAGS = $(LDFLAGS)

# Sanitizer build of the C tests (make check runs them once this way too).
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

.DEFAULT_GOAL := all
# Objects are never deleted as intermediates of chained rules (`make demo`
# must leave what the next `make` would rebuild). A `.SECONDARY:` with a list
# anywhere would cancel this one: name the files .PRECIOUS instead.
.SECONDARY:
.PHONY: all deps check check-c check-asan check-python check-cli check-identity check-pip check-shared \
	check-browser bench demo \
	install uninstall clean fuzz check-valgrind

# Filled by the fragments.
BINS :=
CHECK_SRCS :=
ALL_OBJS :=

include libtrace/build.mk
include prog/build.mk
-include libtrace/compat/build.mk
-include capture/build.mk
-include convert/build.mk
-include view/build.mk
-include serve/build.mk
-include splice/build.mk
-include pyhook/build.mk
-include examples/build.mk
-include tools/build.mk
include tests/build.mk
-include bench/build.mk
-include tests/fuzz/build.mk

all: deps $(BINS) $(B)/lib/libtrace.a $(B)/lib/libtrace.so $(B)/lib/pkgconfig/libtrace.pc $(PYHOOK_TARGETS) $(EXAMPLE_BINS)

# `make deps` and `make demo` install the missing Debian packages, `make
# check` with the test-only ones (Open MPI, mpi4py, Check, pytest); any other
# build changes nothing on the system: it asks pkg-config (tools/deps.sh
# --missing) and stops with one line naming what is missing.
DEPS_GOALS := deps demo check clean uninstall bench% fuzz%
ifeq ($(filter $(DEPS_GOALS),$(MAKECMDGOALS)),)
DEPS_MISSING := $(shell PYTHON=$(PYTHON) sh tools/deps.sh \
	$(if $(filter check-%,$(MAKECMDGOALS)),--missing-test,--missing))
ifneq ($(DEPS_MISSING),)
$(error missing Debian packages: $(DEPS_MISSING); `make deps` installs them)
endif
endif
DEPS_INSTALL := $(if $(filter check,$(MAKECMDGOALS)),--test,$(if $(filter deps demo,$(MAKECMDGOALS)),--build))

deps:
ifneq ($(DEPS_INSTALL),)
	$(Q)sh tools/deps.sh $(DEPS_INSTALL)
endif

$(B)/obj/%.o: %.c | deps
	$(call say,CC,$@)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) -c $< -o $@

$(B)/asan/obj/%.o: %.c | deps
	$(call say,CC-SAN,$@)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) $(SAN_FLAGS) $(CHECK_CFLAGS) -c $< -o $@

# Two groups side by side, each in order: the pytest matrix (the longest:
# two interpreters at a time), and the rest (the C suites natively and under
# the sanitizers, three suites at a time; CLI; the writers' files against
# the reference; pip; two users; the browser). Much of each waits on
# daemons, children and timeouts, so together they take little longer than
# the longer one. Everything is built first.
CHECK_GROUP_C := check-c check-asan check-cli check-identity check-pip check-shared check-browser
CHECK_GROUP_PY := check-python
check: all $(B)/tests/check_all $(B)/asan/tests/check_all
	$(Q)$(MAKE) --no-print-directory -j2 check-group-c check-group-py

.PHONY: check-group-c check-group-py
check-group-c:
	$(Q)$(MAKE) --no-print-directory -j1 $(CHECK_GROUP_C)
check-group-py:
	$(Q)$(MAKE) --no-print-directory -j1 $(CHECK_GROUP_PY)

install: all
	install -d $(DESTDIR)$(bindir) $(DESTDIR)$(libdir)/pkgconfig $(DESTDIR)$(includedir)/libtrace \
		$(DESTDIR)$(mandir)/man1 $(DESTDIR)$(mandir)/man3 $(DESTDIR)$(pythondir)
	install -m 755 $(BINS) $(DESTDIR)$(bindir)/
	install -m 644 $(B)/lib/libtrace.a $(DESTDIR)$(libdir)/
	install -m 755 $(B)/lib/libtrace.so $(DESTDIR)$(libdir)/libtrace.so.$(LT_VERSION)
	ln -sf libtrace.so.$(LT_VERSION) $(DESTDIR)$(libdir)/$(LT_SONAME)
	ln -sf $(LT_SONAME) $(DESTDIR)$(libdir)/libtrace.so
	install -m 644 $(LT_HEADERS) $(DESTDIR)$(includedir)/libtrace/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@libdir@|$(libdir)|' -e 's|@includedir@|$(includedir)|' \
		-e 's|@VERSION@|$(LT_VERSION)|' -e 's|@RPATH@||' libtrace/libtrace.pc.in > $(DESTDIR)$(libdir)/pkgconfig/libtrace.pc
	for f in man/*.1 man/*.3; do \
		sed -e '1,3s/"\(libtrace\|tracy toolkit\)"/"\1 $(LT_VERSION)"/' $$f > \
			$(DESTDIR)$(mandir)/man$${f##*.}/$${f##*/} && chmod 644 $(DESTDIR)$(mandir)/man$${f##*.}/$${f##*/}; done
	if [ -d $(B)/python/tracy ]; then cp -r $(B)/python/tracy $(DESTDIR)$(pythondir)/ && \
		install -m 644 pyhook/tracy-isolated.pth $(DESTDIR)$(pythondir)/; fi
	if [ -f $(B)/bin/tracy ]; then install -m 755 $(B)/bin/tracy $(DESTDIR)$(bindir)/; fi

uninstall:
	rm -f $(addprefix $(DESTDIR)$(bindir)/,$(notdir $(BINS))) $(DESTDIR)$(bindir)/tracy
	rm -f $(DESTDIR)$(libdir)/libtrace.a $(DESTDIR)$(libdir)/libtrace.so* $(DESTDIR)$(libdir)/pkgconfig/libtrace.pc
	rm -rf $(DESTDIR)$(includedir)/libtrace $(DESTDIR)$(pythondir)/tracy \
		$(DESTDIR)$(pythondir)/tracy-isolated.pth
	rm -f $(DESTDIR)$(mandir)/man1/capture-release.1 $(DESTDIR)$(mandir)/man1/tracy*.1 $(DESTDIR)$(mandir)/man3/libtrace.3

clean:
	rm -rf $(B)

-include $(shell find $(B) -name '*.d' 2>/dev/null)
