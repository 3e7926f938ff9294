#ifndef SOVARIA_CSQLITE_SHIM_H
#define SOVARIA_CSQLITE_SHIM_H

#include <sqlite3.h>

#endif
