/* dropin_other.cpp -- the second file of tests/dropin/dropin.cpp: includes
 * "Tracy.hpp" by its bare name (-I<include>/tracy) and shares the memory
 * pools of the first file. */
#include "Tracy.hpp"

#include <cstdlib>

void *other_alloc(size_t size);
void other_free(void *p);

void *other_alloc(size_t size) {
    void *p = malloc(size);
    TracyAllocN(p, size, "main pool");
    return p;
}

void other_free(void *p) { TracyFree(p); }
