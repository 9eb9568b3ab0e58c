# splice/build.mk -- tracy-merge and tracy-cut: thin programs over libtrace's
# block-level copy (libtrace/format/splice.c), sharing splice/cli.c and the
# converters' convert/common.c (messages, exit codes, opening a trace).
SPLICE_BINS := $(B)/bin/tracy-merge $(B)/bin/tracy-cut
BINS += $(SPLICE_BINS)

$(B)/obj/splice/%.o: ALL_CFLAGS += -Iconvert
$(B)/bin/tracy-merge: $(B)/obj/splice/merge.o $(B)/obj/splice/cli.o $(CONVERT_COMMON_OBJ) $(LIBTRACE_A)
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) -o $@ $^ $(ALL_LDFLAGS) $(DEP_LIBS)
$(B)/bin/tracy-cut: $(B)/obj/splice/cut.o $(B)/obj/splice/cli.o $(CONVERT_COMMON_OBJ) $(LIBTRACE_A)
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) -o $@ $^ $(ALL_LDFLAGS) $(DEP_LIBS)
