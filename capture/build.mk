# capture/build.mk -- capture-release, the capture daemon (capture/*.c).
CAPTURE_SRCS := $(wildcard capture/*.c)
CAPTURE_OBJS := $(CAPTURE_SRCS:%.c=$(B)/obj/%.o)
BINS += $(B)/bin/capture-release
ALL_OBJS += $(CAPTURE_OBJS)
# The daemon speaks the wire protocol and writes the file itself: it names
# libtrace's internal headers by their folder ("common/wire.h",
# "common/file_int.h", "format/splice.h"), see prog/build.mk.
$(B)/obj/capture/%.o: LT_INC = $(PROG_INC)

$(B)/bin/capture-release: $(CAPTURE_OBJS) $(LIBTRACE_A)
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) -o $@ $(CAPTURE_OBJS) $(LIBTRACE_A) $(ALL_LDFLAGS) $(DEP_LIBS)
