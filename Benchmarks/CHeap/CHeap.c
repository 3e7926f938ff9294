// Header-only: the function is inline in include/CHeap.h.
#include "CHeap.h"
