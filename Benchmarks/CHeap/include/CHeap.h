// The bytes the C heap has in use, for sovaria-bench's memory rows: glibc's mallinfo2, or 0
// where there is no glibc (the row then says it was not measured).
#ifndef SOVARIA_CHEAP_H
#define SOVARIA_CHEAP_H

#include <stdlib.h>

#if defined(__GLIBC__)
#include <malloc.h>
static inline size_t sovaria_heap_in_use(void) { return mallinfo2().uordblks; }
#else
static inline size_t sovaria_heap_in_use(void) { return 0; }
#endif

#endif
