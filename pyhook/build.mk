# pyhook/build.mk -- the CPython extension tracy._tracy and the tracy package,
# in build/python/tracy/ (PYTHONPATH=build/python python3 -m tracy ...).
PY_INCLUDE := $(shell $(PYTHON) -c 'import sysconfig;print(sysconfig.get_paths()["include"])' 2>/dev/null)
PY_EXT_SUFFIX := $(shell $(PYTHON) -c 'import sysconfig;print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
PYHOOK_SRCS := $(wildcard pyhook/*.c)
PYHOOK_OBJS := $(PYHOOK_SRCS:%.c=$(B)/obj/%.o)
PYHOOK_PY := $(wildcard pyhook/tracy/*.py) $(wildcard pyhook/tracy/_child/*.py)
PYHOOK_PY_OUT := $(PYHOOK_PY:pyhook/%=$(B)/python/%)
PYHOOK_EXT := $(B)/python/tracy/_tracy$(PY_EXT_SUFFIX)
PYHOOK_TARGETS := $(PYHOOK_EXT) $(PYHOOK_PY_OUT)

$(B)/obj/pyhook/%.o: pyhook/%.c | deps
	$(call say,CC,$@)mkdir -p $(@D) && $(CC) $(ALL_CFLAGS) -fno-plt -I$(PY_INCLUDE) -c $< -o $@

# Only PyInit__tracy is exported: the statically linked client stays private
# to the extension.
$(PYHOOK_EXT): $(PYHOOK_OBJS) $(LIBTRACE_OBJS) pyhook/_tracy.map
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) -shared -o $@ $(PYHOOK_OBJS) $(LIBTRACE_OBJS) \
		-Wl,--version-script=pyhook/_tracy.map -Wl,--as-needed $(ALL_LDFLAGS) $(DEP_LIBS)

# Each module is byte-compiled next to its copy: a run under
# PYTHONDONTWRITEBYTECODE, or from a tree it cannot write, would otherwise
# compile the package at every start (some 20M instructions). Checked-hash
# pycs stay valid through `make install`'s copy, which changes mtimes.
$(B)/python/tracy/%.py: pyhook/tracy/%.py
	$(Q)mkdir -p $(@D) && cp $< $@ && \
		$(PYTHON) -m compileall -q --invalidation-mode checked-hash $@

# make demo: profile examples/demo.py on an embedded daemon, with the report.
DEMO_OUT := $(B)/demo
demo: all
	$(Q)rm -rf $(DEMO_OUT) && mkdir -p $(DEMO_OUT)
	$(Q)PATH=$(CURDIR)/$(B)/bin:$$PATH PYTHONPATH=$(CURDIR)/$(B)/python TRACY_PORT=0 \
		$(PYTHON) -m tracy -r -o $(DEMO_OUT)/ examples/demo.py
	$(Q)echo "Ten functions with the most self time:"
	$(Q)PYTHONPATH=$(CURDIR)/$(B)/python $(PYTHON) -m tracy.top $(DEMO_OUT)/demo.tracy 10
