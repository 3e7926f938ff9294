#ifndef SOVARIA_CLMDB_SHIM_H
#define SOVARIA_CLMDB_SHIM_H

#include <lmdb.h>

#endif
