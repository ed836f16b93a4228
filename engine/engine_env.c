/* engine_env.c: hosts, threads and the run_start/launch events (engine_env.h). */
#define _GNU_SOURCE          /* sched_getaffinity, CPU_COUNT */
#include "engine/engine_env.h"
#include "engine/engine_agree.h"
#include "engine/backends/host.h"
#include "store/events.h"
#include "store/version.h"
#include "engine/plan/plan_event.h"
#include "store/util/proc.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


int pdbx_env_discover(pdbx_engine *e)
{
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, e->rank, MPI_INFO_NULL, &node) !=
        MPI_SUCCESS)
        return -1;
    MPI_Comm_rank(node, &e->local_rank);
    MPI_Comm_size(node, &e->local_size);
    MPI_Comm_free(&node);
    MPI_Allreduce(&e->local_size, &e->ranks_per_node, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (pdbx_noise_init(&e->noise, MPI_COMM_WORLD) != 0)
        return -1;
    char me[PDBX_HOST_MAX] = "";
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    if (MPI_Get_processor_name(name, &len) != MPI_SUCCESS)
        snprintf(name, sizeof name, "unknown");
    snprintf(me, sizeof me, "%.63s", name);
    e->hosts = calloc((size_t)e->size, sizeof *e->hosts);
    if (!e->hosts)
        return -1;
    MPI_Allgather(me, PDBX_HOST_MAX, MPI_CHAR, e->hosts, PDBX_HOST_MAX, MPI_CHAR, MPI_COMM_WORLD);
    return 0;
}

int pdbx_env_blas_threads(int local_size, char *note, size_t len)
{
    if (len)
        note[0] = '\0';
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    int per_rank = (int)(cores / (local_size > 0 ? local_size : 1));
    if (per_rank < 1)
        per_rank = 1;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int allowed = CPU_COUNT(&set);
        if (allowed >= 1 && allowed < per_rank) {
            snprintf(note, len, "BLAS threads capped at %d: this rank may run on %d of %ld cores "
                     "(mpirun binds ranks; launch with --bind-to none)", allowed, allowed, cores);
            per_rank = allowed;
        }
    }
    return per_rank;
}

cJSON *pdbx_env_json(pdbx_engine *e)
{
    cJSON *env = cJSON_CreateObject();
    const char **hosts = malloc(sizeof *hosts * (size_t)(e->size > 0 ? e->size : 1));
    if (!env || !hosts || e->be.compute->describe(e->compute, env) != 0) {
        cJSON_Delete(env);
        free(hosts);
        return NULL;
    }
    for (int i = 0; i < e->size; i++)
        hosts[i] = e->hosts[i];
    char cpu[256];
    pdbx_host_cpu_model(cpu, sizeof cpu);
    pdbx_ev_env f = {
        .hosts = hosts, .nhosts = (size_t)e->size, .blas_threads = e->blas_threads, .cpu = cpu,
        .mpi = e->be.comm->version(e->comm), .comm = e->be.comm->name,
        .pdbx_version = pdbx_version(), .git_rev = pdbx_git_rev(),
        .ranks_per_node = e->ranks_per_node, .cores_per_node = (int)sysconf(_SC_NPROCESSORS_ONLN),
        .rank_order = "megatron tp-cp-ep-dp-pp (tp fastest, then dp, then pp)",
        .timing = "per op: barrier-free on compute; collectives after a group barrier",
        .places = e->places, .nplaces = e->places ? (size_t)e->size : 0,
    };
    int rc = pdbx_event_env_fill(env, &f);
    free(hosts);
    if (rc != 0) {
        cJSON_Delete(env);
        return NULL;
    }
    return env;
}

int pdbx_env_gather_placement(pdbx_engine *e)
{
    pdbx_ev_rank_place me;
    memset(&me, 0, sizeof me);
    snprintf(me.host, sizeof me.host, "%s", e->hosts ? e->hosts[e->rank] : "");
    me.local_rank = e->local_rank;
    e->be.compute->device_id(e->compute, &me.device, me.uuid, sizeof me.uuid);
    pdbx_ev_rank_place *all = NULL;
    if (e->rank == 0)
        all = calloc((size_t)e->size, sizeof *all);
    if (pdbx_agree_any(e->rank == 0 && !all))     /* every rank stops together, before the gather */
        return -1;
    MPI_Gather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, 0, MPI_COMM_WORLD);
    free(e->places);
    e->places = all;
    return 0;
}

static long launcher_pid(void)
{
    const char *s = getenv("PDBX_LAUNCHER_PID");
    if (s && *s) {
        char *end = NULL;
        long v = strtol(s, &end, 10);
        if (end && *end == '\0' && v > 0)
            return v;
    }
    return (long)getpid();
}

/* A fact about the launcher that the supervisor passed in environment variable name
 * (PDBX_LAUNCHER_HOST, _START, _BOOT_ID), or NULL: unset, empty, or rank 0 launched directly
 * (pid is this process: the fact is read here instead). */
static const char *launcher_env(const char *name, long pid)
{
    const char *v = getenv(name);
    return v && *v && pid != (long)getpid() ? v : NULL;
}

/* The launcher's start time (store/util/proc.h): the supervisor passes its own; rank 0 launched
 * directly is its own launcher. 0 when unknown. */
static double launcher_start(long pid)
{
    const char *s = launcher_env("PDBX_LAUNCHER_START", pid);
    if (s) {
        char *end = NULL;
        double v = strtod(s, &end);
        if (end && *end == '\0' && v > 0)
            return v;
    }
    unsigned long long ticks = 0;
    return pdbx_proc_start_ticks(pid, &ticks) == 0 ? (double)ticks : 0;
}

/* launch: the (tp, pp, dp) of the configs this launch measures. */
static cJSON *launch_event(pdbx_engine *e, const pdbx_ev_launcher *who, cJSON *env)
{
    const pdbx_spec *sp = &e->spec;
    int (*cfgs)[3] = malloc(sizeof *cfgs * (size_t)(sp->nconfigs > 0 ? sp->nconfigs : 1));
    if (!cfgs) {
        cJSON_Delete(env);
        return NULL;
    }
    size_t n = 0;
    for (int c = 0; c < sp->nconfigs; c++) {
        const pdbx_parallel *p = &sp->configs[c];
        if (p->tp * p->pp * p->dp != e->size)
            continue;
        cfgs[n][0] = p->tp;
        cfgs[n][1] = p->pp;
        cfgs[n][2] = p->dp;
        n++;
    }
    cJSON *ev = pdbx_event_launch(who, env, (const int (*)[3])cfgs, n);
    free(cfgs);
    return ev;
}

cJSON *pdbx_env_start_event(pdbx_engine *e)
{
    pdbx_ev_launcher who = { .pid = launcher_pid(), .world_size = e->size,
                             .ranks_per_node = e->ranks_per_node };
    snprintf(who.id, sizeof who.id, "%s", e->run_id);
    snprintf(who.pdbx_version, sizeof who.pdbx_version, "%s", pdbx_version());
    snprintf(who.git_rev, sizeof who.git_rev, "%s", pdbx_git_rev());
    /* the supervisor's host, where its pid means something: rank 0 may run on another */
    const char *lhost = launcher_env("PDBX_LAUNCHER_HOST", who.pid);
    if (lhost)
        snprintf(who.host, sizeof who.host, "%s", lhost);
    else
        pdbx_hostname(who.host, sizeof who.host, "unknown");
    const char *mode = getenv("PDBX_LAUNCH_MODE"), *cmd = getenv("PDBX_LAUNCH_COMMAND");
    snprintf(who.launcher, sizeof who.launcher, "%s", mode ? mode : "");
    snprintf(who.command, sizeof who.command, "%s", cmd ? cmd : "");
    who.pid_start = launcher_start(who.pid);
    const char *lboot = launcher_env("PDBX_LAUNCHER_BOOT_ID", who.pid);
    if (lboot)
        snprintf(who.boot_id, sizeof who.boot_id, "%s", lboot);
    else
        pdbx_boot_id(who.boot_id, sizeof who.boot_id);
    cJSON *env = pdbx_env_json(e);
    if (!env)
        return NULL;       /* NULL (out of memory) rather than an event with fields missing */
    if (e->append)
        return launch_event(e, &who, env);
    /* run_start: the spec, the model, the run's settings and the whole plan */
    return pdbx_plan_run_start(&who, e->be.compute->name, env, &e->spec, e->points, e->npoints);
}
