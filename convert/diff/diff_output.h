/* diff_output.h -- tracy-diff's four outputs of a comparison. */
#ifndef CONVERT_DIFF_OUTPUT_H
#define CONVERT_DIFF_OUTPUT_H

#include "convert/convert.h"
#include "convert/diff/diff_report.h"

/* Writes the report in its options' format: DR_TABLE (summary, then one
 * aligned table per section), DR_MARKDOWN (the same in Markdown), DR_JSON
 * or DR_CSV (every row). Output errors are left in out->err. */
void dr_write(const dr_report *r, cv_out *out);

#endif /* CONVERT_DIFF_OUTPUT_H */
