# capture/build.mk -- capture-release, the capture daemon (capture/*.c).
CAPTURE_SRCS := $(wildcard capture/*.c)
CAPTURE_OBJS := $(CAPTURE_SRCS:%.c=$(B)/obj/%.o)
BINS += $(B)/bin/capture-release
ALL_OBJS += $(CAPTURE_OBJS)

$(B)/bin/capture-release: $(CAPTURE_OBJS) $(LIBTRACE_A)
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) -o $@ $(CAPTURE_OBJS) $(LIBTRACE_A) $(ALL_LDFLAGS) $(DEP_LIBS)
