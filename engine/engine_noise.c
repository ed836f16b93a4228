/* engine_noise.c: each point's host load and device state (engine_noise.h). */
#include "engine/engine_noise.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#include "store/util/clock.h"

void pdbx_noise_device_reset(pdbx_noise_device_acc *acc)
{
    acc->samples = 0;
    acc->sm_clock_min_mhz = INFINITY;
    acc->sm_clock_max_mhz = -INFINITY;
    acc->temp_max_c = -INFINITY;
    acc->throttle_reasons = 0;
}

void pdbx_noise_device_fold(pdbx_noise_device_acc *acc, const pdbx_device_noise *s)
{
    /* fmin/fmax pass over a NaN: a figure the device did not give this time */
    acc->samples++;
    if (isfinite(s->sm_clock_mhz)) {
        acc->sm_clock_min_mhz = fmin(acc->sm_clock_min_mhz, s->sm_clock_mhz);
        acc->sm_clock_max_mhz = fmax(acc->sm_clock_max_mhz, s->sm_clock_mhz);
    }
    if (isfinite(s->temp_c))
        acc->temp_max_c = fmax(acc->temp_max_c, s->temp_c);
    acc->throttle_reasons |= s->throttle_reasons;
}

static double finite_or_nan(double v)
{
    return isfinite(v) ? v : NAN;
}

void pdbx_noise_figures(const pdbx_cpu_load *host, int cores, double load1,
                        const pdbx_noise_device_acc *dev, pdbx_point_noise *out)
{
    memset(out, 0, sizeof *out);
    out->cores = cores;
    out->load1 = finite_or_nan(load1);
    out->other_busy = out->steal_pct = NAN;
    out->sm_clock_min_mhz = out->sm_clock_max_mhz = out->temp_max_c = NAN;
    if (host) {
        out->other_busy = host->other_busy;
        out->steal_pct = host->steal_pct;
        out->busy = pdbx_cpu_is_busy(host->other_busy, host->steal_pct);
    }
    if (dev && dev->samples > 0) {
        out->gpu_valid = 1;
        out->sm_clock_min_mhz = finite_or_nan(dev->sm_clock_min_mhz);
        out->sm_clock_max_mhz = finite_or_nan(dev->sm_clock_max_mhz);
        out->temp_max_c = finite_or_nan(dev->temp_max_c);
        out->throttle_reasons = (double)dev->throttle_reasons;
    }
    out->valid = host != NULL || out->gpu_valid;
}

int pdbx_noise_init(pdbx_noise *n, MPI_Comm comm)
{
    memset(n, 0, sizeof *n);
    n->comm = comm;
    n->node = MPI_COMM_NULL;
    n->ticks_per_s = sysconf(_SC_CLK_TCK);
    pdbx_noise_device_reset(&n->dev);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &n->node) != MPI_SUCCESS) {
        n->node = MPI_COMM_NULL;
        return -1;
    }
    MPI_Comm_rank(n->node, &n->node_rank);
    n->open = 1;
    return 0;
}

void pdbx_noise_fini(pdbx_noise *n)
{
    if (n->open && n->node != MPI_COMM_NULL)
        MPI_Comm_free(&n->node);
    n->open = 0;
    n->node = MPI_COMM_NULL;
}

static void device_sample_now(pdbx_noise *n, const pdbx_compute_ops *ops, pdbx_compute *c)
{
    if (!ops || !ops->device_noise || !c)
        return;
    pdbx_device_noise s = { .sm_clock_mhz = NAN, .temp_c = NAN, .throttle_reasons = 0 };
    n->dev_last_t = pdbx_mono_s();
    if (ops->device_noise(c, &s) == 0)
        pdbx_noise_device_fold(&n->dev, &s);
}

void pdbx_noise_begin(pdbx_noise *n, const pdbx_compute_ops *ops, pdbx_compute *c)
{
    pdbx_noise_device_reset(&n->dev);
    n->dev_last_t = 0;
    n->own_before_s = pdbx_self_cpu_s();
    n->host_ok = isfinite(n->own_before_s) && pdbx_cpu_snapshot_read(&n->before) == 0;
    device_sample_now(n, ops, c);
}

void pdbx_noise_device_sample(pdbx_noise *n, const pdbx_compute_ops *ops, pdbx_compute *c)
{
    if (n->dev.samples > 0 && pdbx_mono_s() - n->dev_last_t < PDBX_NOISE_DEVICE_MIN_INTERVAL_S)
        return;
    device_sample_now(n, ops, c);
}

/* What each rank contributes to rank 0's MPI_MAX reduction; "none" is -INFINITY, a minimum
 * goes in negated. busy needs no slot: "some node busy" is the verdict on the largest
 * other_busy and the largest steal_pct, the verdict being an OR of two thresholds. */
enum { R_HOST, R_OTHER, R_STEAL, R_LOAD, R_CORES, R_GPU, R_NEG_SM_MIN, R_SM_MAX, R_TEMP, R_N };

void pdbx_noise_end(pdbx_noise *n, const pdbx_compute_ops *ops, pdbx_compute *c,
                    pdbx_point_noise *out)
{
    device_sample_now(n, ops, c);
    memset(out, 0, sizeof *out);
    /* 1. this node's own CPU time: every rank's, summed on the node (and whether all of them
     *    could read it: one missing rank would count as another process) */
    double own = pdbx_self_cpu_s() - n->own_before_s;
    double mine[2] = { own, n->host_ok && isfinite(own) ? 0 : 1 }, node[2] = { 0, 1 };
    int leader = 1;
    if (n->node != MPI_COMM_NULL) {
        MPI_Allreduce(mine, node, 2, MPI_DOUBLE, MPI_SUM, n->node);
        leader = n->node_rank == 0;
    } else {
        memcpy(node, mine, sizeof node);
    }
    /* 2. the leader's figures for the node (other ranks' host slots stay "none") */
    double v[R_N], all[R_N];
    for (int i = 0; i < R_N; i++)
        v[i] = -INFINITY;
    pdbx_cpu_snapshot after;
    pdbx_cpu_load load;
    if (leader && node[1] == 0 && pdbx_cpu_snapshot_read(&after) == 0 &&
        pdbx_cpu_load_between(&n->before, &after, node[0], n->ticks_per_s, &load) == 0) {
        double load1 = NAN;
        pdbx_loadavg_read(&load1);
        v[R_HOST] = 1;
        v[R_OTHER] = load.other_busy;
        v[R_STEAL] = load.steal_pct;
        v[R_LOAD] = isfinite(load1) ? load1 : -INFINITY;
        v[R_CORES] = pdbx_online_cores();
    }
    /* 3. every rank's device figures */
    if (n->dev.samples > 0) {
        v[R_GPU] = 1;
        v[R_NEG_SM_MIN] = -n->dev.sm_clock_min_mhz;
        v[R_SM_MAX] = n->dev.sm_clock_max_mhz;
        v[R_TEMP] = n->dev.temp_max_c;
    }
    uint64_t throttle = n->dev.throttle_reasons, throttle_all = 0;
    MPI_Reduce(v, all, R_N, MPI_DOUBLE, MPI_MAX, 0, n->comm);
    MPI_Reduce(&throttle, &throttle_all, 1, MPI_UINT64_T, MPI_BOR, 0, n->comm);
    int rank = 0;
    MPI_Comm_rank(n->comm, &rank);
    if (rank != 0)
        return;
    /* 4. rank 0: the largest over the nodes, as one point's figures */
    pdbx_cpu_load host = { .other_busy = all[R_OTHER], .steal_pct = all[R_STEAL] };
    pdbx_noise_device_acc dev = { .samples = all[R_GPU] > 0, .sm_clock_min_mhz = -all[R_NEG_SM_MIN],
                                  .sm_clock_max_mhz = all[R_SM_MAX], .temp_max_c = all[R_TEMP],
                                  .throttle_reasons = throttle_all };
    pdbx_noise_figures(all[R_HOST] > 0 ? &host : NULL, all[R_HOST] > 0 ? (int)all[R_CORES] : 0,
                       all[R_LOAD], &dev, out);
}
