/* engine_env.h: what a run records about where it ran (docs/events.md, run_start.env). */
#ifndef PDBX_ENGINE_ENV_H
#define PDBX_ENGINE_ENV_H

#include <cjson/cJSON.h>

#include "engine/engine_sweep.h"

/* Gathers every rank's host name into e->hosts (collective over MPI_COMM_WORLD) and fills
 * local_rank/local_size/ranks_per_node. 0 or -1. */
int pdbx_env_discover(pdbx_engine *e);
/* Threads per rank for BLAS and own kernels: cores on the node / ranks on the node (at least
 * 1), capped by the CPUs this rank may run on. *note gets a line when the cap applied. */
int pdbx_env_blas_threads(int local_size, char *note, size_t len);
/* Gathers every rank's placement (host, local rank, device index and UUID from the compute
 * backend) into e->places on rank 0 (collective; after the backends started). 0 or -1. */
int pdbx_env_gather_placement(pdbx_engine *e);
/* The env object of run_start / launch (rank 0; the backend adds its device fields). */
cJSON *pdbx_env_json(pdbx_engine *e);
/* run_start (append == 0) or launch event for this launch. */
cJSON *pdbx_env_start_event(pdbx_engine *e);

#endif
