# libtrace/build.mk -- the library every program links. Its parts:
#   common/  what every part shares: errors, the record codec (records.c),
#            the wire codec (wire.c), open-zone stacks, the version
#   format/  the file: writer, builder, reader, merge, rotation, splicing
#   client/  what runs inside the profiled program: buffers, sender, clock
# The public headers (trace.h, trace_client.h, trace_builder.h) stay here.
# The version is written once, in trace.h.
LT_VERSION := $(shell sed -n 's/^\#define LT_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$$/\2/p' \
	libtrace/trace.h | paste -sd.)
LT_SONAME := libtrace.so.$(firstword $(subst ., ,$(LT_VERSION)))
LT_HEADERS := libtrace/trace.h libtrace/trace_client.h libtrace/trace_builder.h
LT_PARTS := common format client
LT_INC := -I. -Ilibtrace $(LT_PARTS:%=-Ilibtrace/%)
LIBTRACE_SRCS := $(foreach p,$(LT_PARTS),$(wildcard libtrace/$(p)/*.c))
LIBTRACE_OBJS := $(LIBTRACE_SRCS:%.c=$(B)/obj/%.o)
LIBTRACE_SAN_OBJS := $(LIBTRACE_SRCS:%.c=$(B)/asan/obj/%.o)
LIBTRACE_A := $(B)/lib/libtrace.a

$(B)/lib/libtrace.a: $(LIBTRACE_OBJS)
	$(call say,AR,$@)mkdir -p $(@D) && rm -f $@ && ar rcs $@ $^

# Only the public API is exported (libtrace.map). The soname link sits next
# to the library so that a program linked against the build tree starts.
$(B)/lib/libtrace.so: $(LIBTRACE_OBJS) libtrace/libtrace.map
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) -shared -Wl,-soname,$(LT_SONAME) \
		-Wl,--version-script=libtrace/libtrace.map -o $@ $(LIBTRACE_OBJS) $(ALL_LDFLAGS) $(DEP_LIBS) && \
		ln -sf libtrace.so $(@D)/$(LT_SONAME)

$(B)/asan/lib/libtrace.a: $(LIBTRACE_SAN_OBJS)
	$(call say,AR,$@)mkdir -p $(@D) && rm -f $@ && ar rcs $@ $^

$(B)/lib/pkgconfig/libtrace.pc: libtrace/libtrace.pc.in libtrace/build.mk libtrace/trace.h
	$(Q)mkdir -p $(@D) && sed -e 's|@PREFIX@|$(CURDIR)/$(B)|' -e 's|@libdir@|$(CURDIR)/$(B)/lib|' \
		-e 's|@includedir@|$(CURDIR)/$(B)/include|' -e 's|@VERSION@|$(LT_VERSION)|' \
		-e 's|@RPATH@|-Wl,-rpath,$${libdir} |' $< > $@
