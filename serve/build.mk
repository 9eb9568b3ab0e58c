# serve/build.mk -- tracy-serve (serve/*.c) over libview (view/build.mk).
# The page (serve/web/*: html, js, css, svg, json) is embedded into the
# program by tools/embed.sh; nothing is fetched at run time.
SERVE_SRCS := $(wildcard serve/*.c)
SERVE_OBJS := $(SERVE_SRCS:%.c=$(B)/obj/%.o)
SERVE_WEB := $(sort $(wildcard serve/web/*.html serve/web/*.js serve/web/*.css serve/web/*.svg serve/web/*.json))
BINS += $(B)/bin/tracy-serve
ALL_OBJS += $(SERVE_OBJS)
$(B)/obj/serve/%.o: LT_INC = $(PROG_INC)

# The converters' call tree and tracy-diff's engine are linked in, not copied.
SERVE_CONVERT_OBJS := $(CONVERT_CALLTREE_OBJ) $(CONVERT_COMMON_OBJ) $(B)/obj/convert/diff/diff_profile.o \
	$(B)/obj/convert/diff/diff_report.o $(B)/obj/convert/diff/diff_stats.o \
	$(B)/obj/convert/export/lines_source.o
$(B)/bin/tracy-serve: $(SERVE_OBJS) $(VIEW_A) $(SERVE_CONVERT_OBJS) $(PROG_A) $(LIBTRACE_A)
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) -o $@ $(filter %.o,$^) $(filter %.a,$^) \
		$(ALL_LDFLAGS) $(DEP_LIBS) -lz

# serve_assets.h: each file as a C string and a table of (name, data, size).
$(B)/gen/serve_assets.h: $(SERVE_WEB) tools/embed.sh serve/build.mk
	$(call say,GEN,$@)mkdir -p $(@D) && { \
		i=0; specs=; for f in $(SERVE_WEB); do specs="$$specs web_$$i=$$f"; i=$$((i+1)); done; \
		sh tools/embed.sh $$specs; \
		echo 'static const struct { const char *name; const char *data; size_t len; } web_files[] = {'; \
		i=0; for f in $(SERVE_WEB); do echo "{\"$${f##*/}\", web_$$i, sizeof web_$$i - 1},"; i=$$((i+1)); done; \
		echo '{0, 0, 0}};'; } > $@.tmp && mv $@.tmp $@
$(B)/obj/serve/assets.o: $(B)/gen/serve_assets.h
$(B)/obj/serve/assets.o $(SERVE_OBJS) $(SERVE_SRCS:%.c=$(B)/asan/obj/%.o): ALL_CFLAGS += -I$(B)/gen
$(B)/asan/obj/serve/assets.o: $(B)/gen/serve_assets.h
# The check suite tests the JSON writer directly.
$(B)/tests/check_all: $(B)/obj/serve/json.o
$(B)/asan/tests/check_all: $(B)/asan/obj/serve/json.o
$(B)/obj/tests/check_serve.o $(B)/asan/obj/tests/check_serve.o: ALL_CFLAGS += -Iserve
