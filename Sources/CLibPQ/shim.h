#ifndef SOVARIA_CLIBPQ_SHIM_H
#define SOVARIA_CLIBPQ_SHIM_H

#include <libpq-fe.h>

#endif
