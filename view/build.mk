# view/build.mk -- libview.a, the level-of-detail index of a trace (view.h),
# used by tracy-serve. Needs libtrace's reader.
VIEW_SRCS := $(wildcard view/*.c)
VIEW_OBJS := $(VIEW_SRCS:%.c=$(B)/obj/%.o)
VIEW_A := $(B)/lib/libview.a
ALL_OBJS += $(VIEW_OBJS)

$(VIEW_A): $(VIEW_OBJS)
	$(call say,AR,$@)mkdir -p $(@D) && rm -f $@ && ar rcs $@ $^
