#ifndef SOVARIA_CBENCHLEVELDB_SHIM_H
#define SOVARIA_CBENCHLEVELDB_SHIM_H

#include <leveldb/c.h>

#endif
