/* engine_noise.h: what else ran while a point was measured (store/profiledb.h,
 * pdbx_point_noise, written as point_end's "noise").
 *
 * Host: between begin and end, the node's busy CPU time from /proc/stat (user, nice, system,
 * irq, softirq, steal) less the CPU time of this run's own ranks on the node (each rank's
 * getrusage(RUSAGE_SELF): every thread, BLAS and MPI progress included, summed over the node
 * with a reduction on a per-node communicator) gives `other_busy` in cores' worth; the
 * hypervisor's share from /proc/stat's steal (`steal_pct`), /proc/loadavg's 1-minute load at
 * the end (`load1`) and the online cores. The node leader (lowest rank of the node) computes
 * them; rank 0 gets the largest of each over the nodes. `busy` is the verdict of
 * store/util/cpuload.h: other_busy > PDBX_BUSY_OTHER_CORES (0.5 core) or steal_pct >
 * PDBX_BUSY_STEAL_PCT (5%); that header says why those values.
 *
 * Device: pdbx_noise_device_sample asks the compute backend's device_noise (cuda: NVML) for
 * the SM clock, temperature and throttle reasons; begin and end sample too, and the caller
 * samples between cells. The point keeps the lowest and highest SM clock, the highest
 * temperature and the OR of the throttle reasons over every sample of every rank; gpu_valid
 * when at least one sample worked (never on the cpu backend).
 *
 * Sampling never fails a point: figures that cannot be read are left out (NaN, or valid 0 when
 * there are none). Cost: two reads of /proc/stat per rank per point and three reductions.
 */
#ifndef PDBX_ENGINE_NOISE_H
#define PDBX_ENGINE_NOISE_H

#include <mpi.h>
#include <stdint.h>

#include "engine/backends/backend.h"
#include "store/profiledb.h"
#include "store/util/cpuload.h"

/* Device samples between cells closer than this to the previous one are skipped: an NVML
 * query costs tens of microseconds and a point's clock and temperature move over seconds. */
#define PDBX_NOISE_DEVICE_MIN_INTERVAL_S 0.05

/* The device figures of one rank over a point (pure fold of pdbx_device_noise samples). */
typedef struct {
    int samples;                   /* samples that worked */
    double sm_clock_min_mhz, sm_clock_max_mhz, temp_max_c;
    uint64_t throttle_reasons;     /* OR of every sample's */
} pdbx_noise_device_acc;

/* One rank's sampler: set up once per launch, used for every point. */
typedef struct {
    int open;                      /* pdbx_noise_init succeeded (a zeroed sampler is closed) */
    MPI_Comm comm;                 /* the ranks calling begin/end together (not owned) */
    MPI_Comm node;                 /* comm's ranks on this node (owned; MPI_COMM_NULL: none) */
    int node_rank;
    long ticks_per_s;              /* USER_HZ */
    /* the point in progress */
    int host_ok;                   /* begin's readings worked */
    pdbx_cpu_snapshot before;
    double own_before_s;
    pdbx_noise_device_acc dev;
    double dev_last_t;             /* monotonic time of the last device sample */
} pdbx_noise;

/* Collective over comm: splits its per-node communicator. 0, or -1 (n is then closed). Fini
 * is safe on a closed or zeroed sampler; begin, sample and end need an open one. */
int pdbx_noise_init(pdbx_noise *n, MPI_Comm comm);
void pdbx_noise_fini(pdbx_noise *n);

/* Every rank of comm, before the point's first op (after its buffers are prepared): starts the
 * point's figures; a device sample when ops has device_noise. No communication. ops and c may
 * be NULL (no device figures). */
void pdbx_noise_begin(pdbx_noise *n, const pdbx_compute_ops *ops, pdbx_compute *c);
/* Any rank, between cells: one device sample (rate-limited by
 * PDBX_NOISE_DEVICE_MIN_INTERVAL_S). No communication. */
void pdbx_noise_device_sample(pdbx_noise *n, const pdbx_compute_ops *ops, pdbx_compute *c);
/* Collective over comm, after the point's last op: a last device sample, then the figures.
 * On comm's rank 0 *out is the point's noise (out->valid 0 when nothing could be read); on the
 * other ranks *out is zeroed. */
void pdbx_noise_end(pdbx_noise *n, const pdbx_compute_ops *ops, pdbx_compute *c,
                    pdbx_point_noise *out);

/* Pure pieces (unit-tested without MPI): an empty accumulator; one sample folded in; and the
 * point's figures from the host load (NULL: none) and the device accumulator. */
void pdbx_noise_device_reset(pdbx_noise_device_acc *acc);
void pdbx_noise_device_fold(pdbx_noise_device_acc *acc, const pdbx_device_noise *s);
void pdbx_noise_figures(const pdbx_cpu_load *host, int cores, double load1,
                        const pdbx_noise_device_acc *dev, pdbx_point_noise *out);

#endif
