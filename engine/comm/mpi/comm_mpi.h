/* comm_mpi.h: the `mpi` comm backend (MPI collectives timed with CLOCK_MONOTONIC).
 *
 * Buffers are treated as float32 arrays (MPI has no bf16 reduction): a message of S bytes is
 * S/4 floats, so the bytes on the wire are what the spec asks for; only the reduction
 * arithmetic is fp32. all_gather and reduce_scatter use S as the total array (nccl-tests), each
 * rank contributing S/n. send_recv: group rank 2i sends S bytes to 2i+1 (an odd last rank
 * idles). Each run() times the call on this rank; the engine barriers before it and combines
 * ranks' times (max: a collective is done when its last rank is). MPI counts are int: a
 * message of more than 2^30 floats (per rank block for all_gather and reduce_scatter) is moved
 * by consecutive calls of at most 2^30 elements, timed together. */
#ifndef PDBX_COMM_MPI_H
#define PDBX_COMM_MPI_H

#include "engine/backends/backend.h"

extern const pdbx_comm_ops pdbx_mpi_comm_ops;

#endif
