# convert/build.mk -- the converters: tracy-csv, tracy-sql, tracy-json,
# tracy-info, tracy-diff and tracy-export, thin programs over libtrace's
# reader sharing convert/convert.c (names, zone numbering),
# convert/strmap.c and the program layer (prog/build.mk). Families with
# several files have their folder: sql/, diff/, export/.
CONVERT_BINS := $(B)/bin/tracy-csv $(B)/bin/tracy-json $(B)/bin/tracy-info \
	$(B)/bin/tracy-sql $(B)/bin/tracy-diff
CONVERT_COMMON_OBJ := $(B)/obj/convert/convert.o $(B)/obj/convert/strmap.o
BINS += $(CONVERT_BINS)
$(B)/obj/convert/%.o: LT_INC = $(PROG_INC)

$(B)/bin/tracy-csv: $(B)/obj/convert/csv.o
$(B)/bin/tracy-json: $(B)/obj/convert/json.o
$(B)/bin/tracy-info: $(B)/obj/convert/info.o
$(B)/bin/tracy-sql: $(B)/obj/convert/sql/sql.o
$(B)/bin/tracy-diff: $(B)/obj/convert/diff/diff.o
$(B)/bin/tracy-export: $(B)/obj/convert/export/export.o
# The objects first, then the archives they draw on (whatever the order in
# which the rules above name them).
$(CONVERT_BINS) $(B)/bin/tracy-export: $(CONVERT_COMMON_OBJ) $(PROG_A) $(LIBTRACE_A)
	$(call say,LD,$@)mkdir -p $(@D) && $(CC) -o $@ $(filter %.o,$^) $(filter %.a,$^) \
		$(ALL_LDFLAGS) $(DEP_LIBS) -lz

# tracy-sql embeds schema/schema.sql as a C string.
$(B)/gen/schema_sql.h: schema/schema.sql
	$(call say,GEN,$@)mkdir -p $(@D) && { echo '/* generated from schema/schema.sql */'; \
		echo 'static const char schema_sql[] ='; \
		sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } > $@.tmp && mv $@.tmp $@
$(B)/obj/convert/sql/sql_export.o: $(B)/gen/schema_sql.h
$(B)/obj/convert/sql/sql_export.o: ALL_CFLAGS += -I$(B)/gen
$(B)/bin/tracy-sql: $(B)/obj/convert/sql/sql_export.o $(B)/obj/convert/sql/sql_btree.o \
	$(B)/obj/convert/sql/sql_sort.o
$(B)/bin/tracy-diff: $(B)/obj/convert/diff/diff_profile.o $(B)/obj/convert/diff/diff_report.o \
	$(B)/obj/convert/diff/diff_output.o $(B)/obj/convert/diff/diff_stats.o
# The per-function totals count outermost zones only (calltree.c).
CONVERT_CALLTREE_OBJ := $(B)/obj/convert/calltree.o
$(B)/bin/tracy-csv $(B)/bin/tracy-sql: $(CONVERT_CALLTREE_OBJ)

# tracy-export: pstats, callgrind, folded stacks, speedscope and the HTML
# report. The report embeds d3 and d3-flame-graph, which npm installs into
# $(B)/npm from tools/npm (pinned by its package-lock.json); `make deps`
# installs them too, with speedscope (its schema and viewer are used by the
# tests).
EXPORT_OBJS := $(B)/obj/convert/export/export_prof.o $(B)/obj/convert/export/export_stacks.o \
	$(B)/obj/convert/export/export_html.o $(B)/obj/convert/export/export_lines.o \
	$(B)/obj/convert/export/export_ranks.o $(B)/obj/convert/export/lines_source.o \
	$(CONVERT_CALLTREE_OBJ)
BINS += $(B)/bin/tracy-export
$(B)/bin/tracy-export: $(EXPORT_OBJS)
NPM_DIR := $(B)/npm
NPM_STAMP := $(NPM_DIR)/node_modules/.tracy-stamp
NPM_MODS := $(NPM_DIR)/node_modules
$(NPM_STAMP): tools/npm/package.json tools/npm/package-lock.json
	$(call say,NPM,$(NPM_DIR))mkdir -p $(NPM_DIR) && cp $^ $(NPM_DIR)/ && \
		cd $(NPM_DIR) && npm ci --no-audit --no-fund --loglevel=error >/dev/null && \
		touch node_modules/.tracy-stamp
deps: $(NPM_STAMP)
REPORT_ASSETS := asset_d3_js=$(NPM_MODS)/d3/dist/d3.min.js \
	asset_flamegraph_js=$(NPM_MODS)/d3-flame-graph/dist/d3-flamegraph.umd.min.js \
	asset_flamegraph_css=$(NPM_MODS)/d3-flame-graph/dist/d3-flamegraph.css \
	asset_report_css=convert/export/report/report.css asset_report_html=convert/export/report/report.html \
	asset_report_js=convert/export/report/report.js asset_d3_license=$(NPM_MODS)/d3/LICENSE \
	asset_flamegraph_license=$(NPM_MODS)/d3-flame-graph/LICENSE
$(B)/gen/report_assets.h: $(NPM_STAMP) convert/export/report/report.css convert/export/report/report.html \
		convert/export/report/report.js tools/embed.sh convert/build.mk
	$(call say,GEN,$@)mkdir -p $(@D) && sh tools/embed.sh $(REPORT_ASSETS) > $@.tmp && mv $@.tmp $@
$(B)/obj/convert/export/export_html.o: $(B)/gen/report_assets.h
$(B)/obj/convert/export/export_html.o: ALL_CFLAGS += -I$(B)/gen
