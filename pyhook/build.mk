# pyhook/build.mk -- the CPython extension tracy._tracy and the tracy package,
# in build/python/tracy/ (PYTHONPATH=build/python python3 -m tracy ...).
#
# One build per interpreter ABI: the objects of PYTHON go to
# build/py/<tag>/obj (tag = its EXT_SUFFIX without dots, e.g.
# cpython-313-x86_64-linux-gnu) and its extension to
# build/python/tracy/_tracy<EXT_SUFFIX>, next to those of the other
# interpreters built: each interpreter imports its own. `make PYTHON=X` after
# `make PYTHON=Y` adds X's build and keeps Y's; `make python-all` builds for
# every interpreter pyhook/pythons.sh finds. libtrace's objects do not
# include Python.h and are shared.
PY_CFG := $(shell $(PYTHON) -c 'import sysconfig as s;print(s.get_paths()["include"], s.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
PY_INCLUDE := $(word 1,$(PY_CFG))
PY_EXT_SUFFIX := $(word 2,$(PY_CFG))
PY_TAG := $(patsubst .%.so,%,$(PY_EXT_SUFFIX))
PY_B := $(B)/py/$(PY_TAG)
PYHOOK_SRCS := $(wildcard pyhook/*.c)
PYHOOK_OBJS := $(PYHOOK_SRCS:%.c=$(PY_B)/obj/%.o)
PYHOOK_PY := $(wildcard pyhook/tracy/*.py) $(wildcard pyhook/tracy/_child/*.py)
PYHOOK_PY_OUT := $(PYHOOK_PY:pyhook/%=$(B)/python/%)
PYHOOK_EXT := $(B)/python/tracy/_tracy$(PY_EXT_SUFFIX)
# A call the compiler does not know would be an undefined symbol at import.
PYHOOK_CFLAGS := -Werror=implicit-function-declaration -I$(PY_INCLUDE)
# The per-call paths call CPython through the GOT, without a PLT jump. (What
# the extension's load costs is the number of symbols it uses, not how it
# calls them: CPython loads extensions with RTLD_NOW, which binds every
# symbol, PLT slot or GOT entry alike, some 0.6K instructions each.)
PYHOOK_HOT := hook.c mech_monitor.c
ifeq ($(PY_TAG),)
PYHOOK_TARGETS := pyhook-no-python
else
PYHOOK_TARGETS := $(PYHOOK_EXT) $(PYHOOK_PY_OUT) $(PY_B)/pyc.stamp $(B)/bin/tracy
endif
.PHONY: pyhook pyhook-no-python python-all

pyhook: $(PYHOOK_TARGETS)

pyhook-no-python:
	@echo "pyhook: PYTHON=$(PYTHON) does not run or has no sysconfig (want CPython 3.8-3.13)" >&2; exit 1

$(PY_B)/obj/pyhook/%.o: pyhook/%.c | deps
	$(call say,CC,$@)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) $(PYHOOK_CFLAGS) \
		$(if $(filter $(PYHOOK_HOT),$(notdir $<)),-fno-plt) -c $< -o $@

# Only PyInit__tracy is exported: the statically linked client stays private
# to the extension.
# tracy.top's totals come from the converters' call-tree model (calltree.c,
# with strmap.c's map): one model, not a copy in Python.
PYHOOK_CONVERT_OBJS := $(B)/obj/convert/calltree.o $(B)/obj/convert/strmap.o
$(PYHOOK_EXT): $(PYHOOK_OBJS) $(PYHOOK_CONVERT_OBJS) $(LIBTRACE_OBJS) pyhook/_tracy.map
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) -shared -o $@ $(PYHOOK_OBJS) $(PYHOOK_CONVERT_OBJS) $(LIBTRACE_OBJS) \
		-Wl,--version-script=pyhook/_tracy.map -Wl,--as-needed $(ALL_LDFLAGS) $(DEP_LIBS)

$(B)/python/tracy/%.py: pyhook/tracy/%.py
	$(Q)mkdir -p $(@D) && cp $< $@

# The tracy command: python -m tracy without runpy (pyhook/cmd/tracy).
$(B)/bin/tracy: pyhook/cmd/tracy
	$(Q)mkdir -p $(@D) && cp $< $@ && chmod 755 $@

# The package is byte-compiled by each interpreter (its own __pycache__ tag):
# a run under PYTHONDONTWRITEBYTECODE, or from a tree it cannot write, would
# otherwise compile it at every start (some 20M instructions). Checked-hash
# pycs stay valid through `make install`'s copy, which changes mtimes.
$(PY_B)/pyc.stamp: $(PYHOOK_PY_OUT)
	$(Q)$(PYTHON) -m compileall -q --invalidation-mode checked-hash $(B)/python/tracy && \
		mkdir -p $(@D) && touch $@

# Every interpreter found (one a line from pyhook/pythons.sh, which says on
# stderr which versions it skips), one after the other: they share libtrace.
python-all: deps
	$(Q)for p in $$(sh pyhook/pythons.sh); do \
		$(MAKE) --no-print-directory PYTHON=$$p pyhook || exit 1; done

# make demo: profile examples/demo.py on an embedded daemon, with the report.
DEMO_OUT := $(B)/demo
demo: all
	$(Q)rm -rf $(DEMO_OUT) && mkdir -p $(DEMO_OUT)
	$(Q)PATH=$(CURDIR)/$(B)/bin:$$PATH PYTHONPATH=$(CURDIR)/$(B)/python TRACY_PORT=0 \
		$(PYTHON) -m tracy -r -o $(DEMO_OUT)/ examples/demo.py
	$(Q)echo "Ten functions with the most self time:"
	$(Q)PYTHONPATH=$(CURDIR)/$(B)/python $(PYTHON) -m tracy.top $(DEMO_OUT)/demo.tracy 10
	$(Q)echo "Look at the timeline in a browser (prints the URL to open):"
	$(Q)echo "  $(B)/bin/tracy-serve $(DEMO_OUT)/demo.tracy"
