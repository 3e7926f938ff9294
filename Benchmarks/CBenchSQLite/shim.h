#ifndef SOVARIA_CBENCHSQLITE_SHIM_H
#define SOVARIA_CBENCHSQLITE_SHIM_H

#include <sqlite3.h>

#endif
