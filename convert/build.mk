# convert/build.mk -- the converters: tracy-csv, tracy-sql, tracy-json and
# tracy-info, thin programs over libtrace's reader sharing convert/common.c.
CONVERT_PROGS := tracy-csv tracy-sql tracy-json tracy-info
CONVERT_PROGS += tracy-diff
CONVERT_BINS := $(CONVERT_PROGS:%=$(B)/bin/%)
CONVERT_COMMON_OBJ := $(B)/obj/convert/common.o
BINS += $(CONVERT_BINS)

$(B)/bin/tracy-%: $(B)/obj/convert/%.o $(CONVERT_COMMON_OBJ) $(LIBTRACE_A)
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) -o $@ $^ $(ALL_LDFLAGS) $(DEP_LIBS) -lz

# tracy-sql embeds schema/schema.sql as a C string.
$(B)/gen/schema_sql.h: schema/schema.sql
	$(call say,GEN,$@)mkdir -p $(@D) && { echo '/* generated from schema/schema.sql */'; \
		echo 'static const char schema_sql[] ='; \
		sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } > $@.tmp && mv $@.tmp $@
$(B)/obj/convert/sql_export.o: $(B)/gen/schema_sql.h
$(B)/obj/convert/sql_export.o: ALL_CFLAGS += -I$(B)/gen
$(B)/bin/tracy-sql: $(B)/obj/convert/sql_export.o $(B)/obj/convert/sql_btree.o $(B)/obj/convert/sql_sort.o
$(B)/bin/tracy-diff: $(B)/obj/convert/diff_profile.o $(B)/obj/convert/diff_report.o \
	$(B)/obj/convert/diff_output.o $(B)/obj/convert/diff_stats.o
