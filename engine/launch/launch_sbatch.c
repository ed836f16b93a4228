/* launch_sbatch.c: the batch script of `pdbx run --sbatch` (launch_argv.h), a pure function of
 * its inputs. */
#include "engine/launch/launch_argv.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/util/err.h"

int pdbx_launch_valid_time(const char *t)
{
    /* [D-]H[:M[:S]] or M[:S]: digit groups separated by at most one '-' (first) and two ':' */
    int dash = 0, colons = 0, digits = 0;
    if (!t || !*t || strlen(t) > 16)
        return 0;
    for (const char *p = t; *p; p++) {
        if (isdigit((unsigned char)*p)) {
            digits++;
            continue;
        }
        if (!digits)
            return 0;
        if (*p == '-' && !dash && !colons)
            dash = 1;
        else if (*p == ':' && colons < 2)
            colons++;
        else
            return 0;
        digits = 0;
    }
    return digits > 0;
}

typedef struct {
    char *buf;
    size_t len, cap;
    int oom;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    for (;;) {
        if (t->oom)
            return;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->oom = 1;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = (t->cap + (size_t)n) * 2;
        char *b = realloc(t->buf, cap);
        if (!b) {
            t->oom = 1;
            return;
        }
        t->buf = b;
        t->cap = cap;
    }
}

/* s as one shell word. */
static void put_quoted(text *t, const char *s)
{
    char *argv[1] = { (char *)s };
    size_t need = strlen(s) * 4 + 3;
    char *q = malloc(need);
    if (!q) {
        t->oom = 1;
        return;
    }
    pdbx_launch_quote(argv, 1, q, need);
    put(t, "%s", q);
    free(q);
}

static int uses_gpus(const pdbx_spec *s)
{
    if (s->backend == PDBX_BACKEND_CUDA)
        return 1;
    return s->backend == PDBX_BACKEND_AUTO && strcmp(s->gpu.name, "cpu") != 0;
}

char *pdbx_launch_sbatch_script(const pdbx_spec *spec, const pdbx_launch_env *env,
                                const pdbx_launch_target *t, const int *ranks, int nranks,
                                const char *time_limit, const char *log_path,
                                const char *spec_json, char *err, size_t errlen)
{
    if (!pdbx_launch_valid_time(time_limit)) {
        pdbx_errf(err, errlen, "time: '%s' is not a Slurm time (allowed: M, M:S, H:M:S, D-H, "
                  "D-H:M, D-H:M:S, e.g. 1:00:00)", time_limit ? time_limit : "");
        return NULL;
    }
    if (t->engine[0] != '/' || t->store_dir[0] != '/' || t->spec_path[0] != '/' || log_path[0] != '/') {
        pdbx_errf(err, errlen, "sbatch: the engine, store and log paths must be absolute");
        return NULL;
    }
    pdbx_launch_opts o;
    memset(&o, 0, sizeof o);
    o.kind = PDBX_LAUNCHER_SRUN;
    pdbx_launch_cmd *cmd = malloc(sizeof *cmd);
    text s = { NULL, 0, 0, 0 };
    if (!cmd) {
        pdbx_errf(err, errlen, "out of memory");
        return NULL;
    }
    int maxnp = 1;
    for (int i = 0; i < nranks; i++)
        maxnp = ranks[i] > maxnp ? ranks[i] : maxnp;
    int per_node = spec->gpus_per_node < maxnp ? spec->gpus_per_node : maxnp;
    int nodes = (maxnp + per_node - 1) / per_node;
    put(&s, "#!/bin/bash\n");
    put(&s, "# pdbx sweep '%s' (run %s), written by pdbx run --sbatch. Submit: sbatch FILE.\n",
        spec->name, t->run_id);
    put(&s, "# The run shows in 'pdbx ls --store %s' as it progresses; docs/launch.md.\n",
        t->store_dir);
    put(&s, "#SBATCH --job-name=pdbx-%s\n", t->run_id);
    put(&s, "#SBATCH --nodes=%d\n", nodes);
    put(&s, "#SBATCH --ntasks-per-node=%d\n", per_node);
    if (uses_gpus(spec))
        put(&s, "#SBATCH --gpus-per-node=%d\n", per_node);
    put(&s, "#SBATCH --time=%s\n", time_limit);
    put(&s, "#SBATCH --output=%s\n", log_path);   /* #SBATCH lines are not shell: no quotes */
    put(&s, "set -u\n");
    put(&s, "STORE=");
    put_quoted(&s, t->store_dir);
    put(&s, "\nSPEC=");
    put_quoted(&s, t->spec_path);
    put(&s, "\nmkdir -p \"$STORE/runs\" \"$(dirname \"$SPEC\")\" || exit 1\n");
    put(&s, "cat > \"$SPEC\" <<'PDBX_SPEC_END'\n%s\nPDBX_SPEC_END\n", spec_json);
    put(&s, "# this shell is the run's launcher: liveness on this node, and a SIGTERM (pdbx cancel\n"
            "# here, scancel --batch --signal=TERM) goes to srun as SIGUSR1, which it forwards\n"
            "# to every rank: the engine ends the run cancelled\n");
    put(&s, "export PDBX_LAUNCHER_PID=$$ PDBX_LAUNCHER_HOST=\"$(hostname)\"\n");
    put(&s, "pid=\n");
    put(&s, "trap 'if [ -n \"$pid\" ]; then kill -USR1 \"$pid\"; fi' TERM INT\n");
    int rc = 0;
    for (int i = 0; i < nranks && rc == 0; i++) {
        char line[4096];
        rc = pdbx_launch_argv(spec, &o, env, t, ranks[i], cmd, err, errlen);
        if (rc != 0)
            break;
        pdbx_launch_quote(cmd->argv, cmd->argc, line, sizeof line);
        put(&s, "export PDBX_LAUNCH_MODE=\"%s in sbatch job ${SLURM_JOB_ID:-?}\"\n", cmd->mode);
        put(&s, "export PDBX_LAUNCH_COMMAND=");
        put_quoted(&s, line);
        put(&s, "\n%s &\npid=$!\n", line);
        put(&s, "while :; do wait \"$pid\"; st=$?; kill -0 \"$pid\" 2>/dev/null || break; done\n");
        put(&s, "pid=\n[ \"$st\" -eq 0 ] || exit \"$st\"\n");
    }
    free(cmd);
    if (rc != 0 || s.oom) {
        if (s.oom)
            pdbx_errf(err, errlen, "out of memory writing the batch script");
        free(s.buf);
        return NULL;
    }
    return s.buf;
}
