#ifndef SOVARIA_CSODIUM_SHIM_H
#define SOVARIA_CSODIUM_SHIM_H

#include <sodium.h>

#endif
