# splice/build.mk -- tracy-merge and tracy-cut: thin programs over libtrace's
# block-level copy (libtrace/format/splice.c), sharing splice/output.c (the
# output's options, creating and filling it) and the program layer
# (prog/build.mk: messages, exit codes, opening a trace).
SPLICE_BINS := $(B)/bin/tracy-merge $(B)/bin/tracy-cut
BINS += $(SPLICE_BINS)

$(B)/obj/splice/%.o: LT_INC = $(PROG_INC)
$(B)/bin/tracy-merge: $(B)/obj/splice/tracy_merge.o
$(B)/bin/tracy-cut: $(B)/obj/splice/tracy_cut.o
$(SPLICE_BINS): $(B)/obj/splice/output.o $(PROG_A) $(LIBTRACE_A)
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) -o $@ $(filter %.o,$^) $(filter %.a,$^) \
		$(ALL_LDFLAGS) $(DEP_LIBS)
