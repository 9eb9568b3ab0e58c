# libtrace/build.mk -- the library every program links.
LT_VERSION := 0.1.0
LIBTRACE_SRCS := $(wildcard libtrace/*.c)
LIBTRACE_OBJS := $(LIBTRACE_SRCS:%.c=$(B)/obj/%.o)
LIBTRACE_SAN_OBJS := $(LIBTRACE_SRCS:%.c=$(B)/asan/obj/%.o)
LIBTRACE_A := $(B)/lib/libtrace.a

$(B)/lib/libtrace.a: $(LIBTRACE_OBJS)
	$(call say,AR,$@)mkdir -p $(@D) && rm -f $@ && ar rcs $@ $^

$(B)/lib/libtrace.so: $(LIBTRACE_OBJS)
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) -shared -Wl,-soname,libtrace.so.0 -o $@ $^ $(ALL_LDFLAGS) $(DEP_LIBS)

$(B)/asan/lib/libtrace.a: $(LIBTRACE_SAN_OBJS)
	$(call say,AR,$@)mkdir -p $(@D) && rm -f $@ && ar rcs $@ $^

$(B)/lib/pkgconfig/libtrace.pc: libtrace/libtrace.pc.in libtrace/build.mk
	$(Q)mkdir -p $(@D) && sed -e 's|@PREFIX@|$(CURDIR)/$(B)|' -e 's|@libdir@|$(CURDIR)/$(B)/lib|' \
		-e 's|@includedir@|$(CURDIR)/$(B)/include|' -e 's|@VERSION@|$(LT_VERSION)|' $< > $@
