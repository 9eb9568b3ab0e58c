# convert/build.mk -- the converters: tracy-csv, tracy-sql, tracy-json and
# tracy-info, thin programs over libtrace's reader sharing convert/common.c.
CONVERT_PROGS := tracy-csv tracy-sql tracy-json tracy-info
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
# The per-function totals count outermost zones only (calltree.c).
CONVERT_CALLTREE_OBJ := $(B)/obj/convert/calltree.o
$(B)/bin/tracy-csv $(B)/bin/tracy-sql: $(CONVERT_CALLTREE_OBJ)
