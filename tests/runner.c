/* runner.c -- runs every Check suite of tests/check_*.c (list generated). */
#include <check.h>
#include <stdlib.h>

#define SUITE(name) Suite *name##_suite(void);
#include "suites.h"
#undef SUITE

int main(void) {
    SRunner *r = srunner_create(NULL);
#define SUITE(name) srunner_add_suite(r, name##_suite());
#include "suites.h"
#undef SUITE
    srunner_run_all(r, CK_ENV);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
