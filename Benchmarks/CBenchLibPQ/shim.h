#ifndef SOVARIA_CBENCHLIBPQ_SHIM_H
#define SOVARIA_CBENCHLIBPQ_SHIM_H

#include <libpq-fe.h>

#endif
