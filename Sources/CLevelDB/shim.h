#ifndef SOVARIA_CLEVELDB_SHIM_H
#define SOVARIA_CLEVELDB_SHIM_H

#include <leveldb/c.h>

#endif
