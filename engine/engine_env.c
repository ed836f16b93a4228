/* engine_env.c: hosts, threads and the run_start/launch events (engine_env.h). */
#define _GNU_SOURCE          /* sched_getaffinity, CPU_COUNT */
#include "engine/engine_env.h"
#include "engine/backends/host.h"
#include "store/version.h"

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

/* NULL when out of memory (never an array with names missing). */
static cJSON *str_array(char (*v)[PDBX_HOST_MAX], int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++)
        if (!cJSON_AddItemToArray(a, cJSON_CreateString(v[i]))) {
            cJSON_Delete(a);
            return NULL;
        }
    return a;
}

/* Adds item under name, taking ownership: false (item freed) when it cannot be attached. */
static int add_item(cJSON *obj, const char *name, cJSON *item)
{
    if (!item || !cJSON_AddItemToObject(obj, name, item)) {
        cJSON_Delete(item);
        return 0;
    }
    return 1;
}

cJSON *pdbx_env_json(pdbx_engine *e)
{
    cJSON *env = cJSON_CreateObject();
    if (!env)
        return NULL;
    if (!add_item(env, "hosts", str_array(e->hosts, e->size)) ||
        e->be.compute->describe(e->compute, env) != 0) {
        cJSON_Delete(env);
        return NULL;
    }
    char cpu[256];
    pdbx_host_cpu_model(cpu, sizeof cpu);
    int ok = (cJSON_GetObjectItemCaseSensitive(env, "cpu") || cJSON_AddStringToObject(env, "cpu", cpu)) &&
             (cJSON_GetObjectItemCaseSensitive(env, "blas_threads") ||
              cJSON_AddNumberToObject(env, "blas_threads", e->blas_threads)) &&
             cJSON_AddStringToObject(env, "mpi", e->be.comm->version(e->comm)) &&
             cJSON_AddStringToObject(env, "comm", e->be.comm->name) &&
             (cJSON_GetObjectItemCaseSensitive(env, "nccl") || cJSON_AddNullToObject(env, "nccl")) &&
             (cJSON_GetObjectItemCaseSensitive(env, "cuda") || cJSON_AddNullToObject(env, "cuda")) &&
             cJSON_AddStringToObject(env, "pdbx_version", pdbx_version()) &&
             cJSON_AddStringToObject(env, "git_rev", pdbx_git_rev()) &&
             cJSON_AddNumberToObject(env, "ranks_per_node", e->ranks_per_node) &&
             cJSON_AddNumberToObject(env, "cores_per_node", (double)sysconf(_SC_NPROCESSORS_ONLN)) &&
             cJSON_AddStringToObject(env, "rank_order",
                                     "megatron tp-cp-ep-dp-pp (tp fastest, then dp, then pp)") &&
             cJSON_AddStringToObject(env, "timing",
                                     "per op: barrier-free on compute; collectives after a group barrier");
    if (!ok) {
        cJSON_Delete(env);
        return NULL;
    }
    return env;
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

cJSON *pdbx_env_start_event(pdbx_engine *e)
{
    const pdbx_spec *sp = &e->spec;
    cJSON *ev = cJSON_CreateObject();
    if (!ev)
        return NULL;
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    /* NULL (out of memory) rather than an event with fields missing */
    int ok = cJSON_AddStringToObject(ev, "type", e->append ? "launch" : "run_start") &&
             cJSON_AddStringToObject(ev, "id", e->run_id) &&
             cJSON_AddStringToObject(ev, "pdbx_version", pdbx_version()) &&
             cJSON_AddStringToObject(ev, "git_rev", pdbx_git_rev()) &&
             cJSON_AddStringToObject(ev, "host", host) &&
             cJSON_AddNumberToObject(ev, "pid", (double)launcher_pid()) &&
             cJSON_AddNumberToObject(ev, "world_size", e->size) &&
             cJSON_AddNumberToObject(ev, "ranks_per_node", e->ranks_per_node) &&
             add_item(ev, "env", pdbx_env_json(e));
    if (ok && e->append) {
        cJSON *cfgs = cJSON_AddArrayToObject(ev, "configs");
        ok = cfgs != NULL;
        for (int c = 0; ok && c < sp->nconfigs; c++) {
            const pdbx_parallel *p = &sp->configs[c];
            if (p->tp * p->pp * p->dp != e->size)
                continue;
            int v[3] = { p->tp, p->pp, p->dp };
            cJSON *one = cJSON_CreateIntArray(v, 3);
            ok = cJSON_AddItemToArray(cfgs, one);
            if (!ok)
                cJSON_Delete(one);
        }
        if (ok)
            return ev;
    }
    if (!ok || !cJSON_AddStringToObject(ev, "backend", e->be.compute->name) ||
        pdbx_plan_describe(ev, sp, e->points, e->npoints) != 0) {
        cJSON_Delete(ev);
        return NULL;
    }
    return ev;
}
