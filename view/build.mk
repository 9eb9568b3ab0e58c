# view/build.mk -- libview.a, the level-of-detail index of a trace (view.h),
# used by tracy-serve. Needs libtrace's reader.
VIEW_SRCS := $(wildcard view/*.c)
VIEW_OBJS := $(VIEW_SRCS:%.c=$(B)/obj/%.o)
VIEW_A := $(B)/lib/libview.a
ALL_OBJS += $(VIEW_OBJS)
# Resuming the reader over a grown file is libtrace-internal: "format/resume.h".
$(B)/obj/view/%.o: LT_INC = $(PROG_INC)

$(VIEW_A): $(VIEW_OBJS)
	$(call say,AR,$@)mkdir -p $(@D) && rm -f $@ && ar rcs $@ $^

# The check suites (tests/check_view.c, tests/check_serve.c) link it too;
# libtrace comes again after it.
VIEW_SAN_A := $(B)/asan/lib/libview.a
$(VIEW_SAN_A): $(VIEW_SRCS:%.c=$(B)/asan/obj/%.o)
	$(call say,AR,$@)mkdir -p $(@D) && rm -f $@ && ar rcs $@ $^
$(B)/tests/check_all: $(VIEW_A)
$(B)/tests/check_all: ALL_LDFLAGS += $(LIBTRACE_A)
$(B)/asan/tests/check_all: $(VIEW_SAN_A)
$(B)/asan/tests/check_all: ALL_LDFLAGS += $(B)/asan/lib/libtrace.a
$(B)/obj/tests/check_view.o $(B)/asan/obj/tests/check_view.o: ALL_CFLAGS += -Iview
