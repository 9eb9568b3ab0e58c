# libtrace/compat/build.mk -- Tracy's instrumentation headers over the client
# API: tracy/Tracy.hpp, tracy/TracyC.h (and the lt_tracy.h they share), copied
# with libtrace's headers into build/include/ (the layout `make install` gives
# $(includedir)), so that -Ibuild/include finds <tracy/Tracy.hpp> and
# <libtrace/trace_client.h>.
TRACY_HDR_SRCS := $(wildcard libtrace/compat/tracy/*.h libtrace/compat/tracy/*.hpp)
TRACY_HDRS := $(TRACY_HDR_SRCS:libtrace/compat/tracy/%=$(B)/include/tracy/%) \
	$(B)/include/libtrace/trace.h $(B)/include/libtrace/trace_client.h

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
