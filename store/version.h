/* version.h: the pdbx version and the git revision it was built from, recorded with every run
 * and export. The revision is compiled into version.c alone, so a new commit rebuilds one file. */
#ifndef PDBX_VERSION_H
#define PDBX_VERSION_H

const char *pdbx_version(void);   /* e.g. "0.1.0" */
const char *pdbx_git_rev(void);   /* short hash, or "unknown" outside a git checkout */

#endif
