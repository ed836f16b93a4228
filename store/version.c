/* version.c: see version.h. PDBX_GIT_REV is defined for this object only (store/SConscript). */
#include "store/version.h"

#ifndef PDBX_GIT_REV
#define PDBX_GIT_REV "unknown"
#endif

const char *pdbx_version(void) { return PDBX_VERSION; }
const char *pdbx_git_rev(void) { return PDBX_GIT_REV; }
