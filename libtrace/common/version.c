/* version.c -- the library's version at run time. */
#include "trace.h"

const char *lt_version(void) { return LT_VERSION_STRING; }
