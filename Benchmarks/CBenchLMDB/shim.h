#ifndef SOVARIA_CBENCHLMDB_SHIM_H
#define SOVARIA_CBENCHLMDB_SHIM_H

#include <lmdb.h>

#endif
