/* launch_argv.c: the launcher's command line as a pure function (launch_argv.h). */
#include "engine/launch/launch_argv.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/util/err.h"
#include "store/util/text.h"

extern char **environ;

/* ---- words ---------------------------------------------------------------------------------- */
int pdbx_launch_split_words(const char *text, char *buf, size_t buflen, char **words, int max,
                            char *err, size_t errlen)
{
    size_t o = 0;
    int n = 0;
    const char *p = text ? text : "";
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            return n;
        if (n >= max)
            return pdbx_fail(err, errlen, "launcher-args: more than %d words", max);
        words[n++] = buf + o;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n') {
            char c = *p++;
            if (c == '\'') {
                while (*p && *p != '\'') {
                    if (o + 1 >= buflen)
                        return pdbx_fail(err, errlen, "launcher-args: too long");
                    buf[o++] = *p++;
                }
                if (*p != '\'')
                    return pdbx_fail(err, errlen, "launcher-args: '%s' has an unterminated ' quote "
                                     "(allowed: words, '...', \"...\")", text);
                p++;
                continue;
            }
            if (c == '"') {
                while (*p && *p != '"') {
                    if (*p == '\\' && p[1] && strchr("\"\\$`", p[1]))
                        p++;
                    if (o + 1 >= buflen)
                        return pdbx_fail(err, errlen, "launcher-args: too long");
                    buf[o++] = *p++;
                }
                if (*p != '"')
                    return pdbx_fail(err, errlen, "launcher-args: '%s' has an unterminated \" quote "
                                     "(allowed: words, '...', \"...\")", text);
                p++;
                continue;
            }
            if (c == '\\') {
                if (!*p)
                    return pdbx_fail(err, errlen, "launcher-args: '%s' ends in a lone backslash", text);
                c = *p++;
            }
            if (o + 1 >= buflen)
                return pdbx_fail(err, errlen, "launcher-args: too long");
            buf[o++] = c;
        }
        buf[o++] = '\0';
    }
}

static int plain_word(const char *w)
{
    if (!*w)
        return 0;
    for (; *w; w++)
        if (!isalnum((unsigned char)*w) && !strchr("_./:=,@%+-", *w))
            return 0;
    return 1;
}

void pdbx_launch_quote(char *const *argv, int argc, char *out, size_t len)
{
    size_t o = 0;
    if (len)
        out[0] = '\0';
#define PUT(ch) do { if (o + 1 < len) { out[o++] = (ch); out[o] = '\0'; } } while (0)
    for (int i = 0; i < argc; i++) {
        if (i)
            PUT(' ');
        if (plain_word(argv[i])) {
            for (const char *c = argv[i]; *c; c++)
                PUT(*c);
            continue;
        }
        PUT('\'');
        for (const char *c = argv[i]; *c; c++) {
            if (*c == '\'') {
                PUT('\'');
                PUT('\\');
                PUT('\'');
            }
            PUT(*c);
        }
        PUT('\'');
    }
#undef PUT
}

/* ---- hosts ---------------------------------------------------------------------------------- */
static int valid_host_name(const char *s)
{
    if (!*s || *s == '-' || *s == '.' || strlen(s) >= PDBX_LAUNCH_HOST_MAX)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '-' && *s != '.' && *s != '_')
            return 0;
    return 1;
}

/* Adds host name with slots (already checked) unless it is there: -1 with err. */
static int add_host(pdbx_launch_opts *o, const char *name, int slots, const char *where,
                    char *err, size_t errlen)
{
    for (int i = 0; i < o->nhosts; i++)
        if (strcmp(o->hosts[i].name, name) == 0)
            return pdbx_fail(err, errlen, "%s: host '%s' is given twice (allowed: each host once, "
                             "with its slots)", where, name);
    if (o->nhosts >= PDBX_LAUNCH_MAX_HOSTS)
        return pdbx_fail(err, errlen, "%s: more than %d hosts", where, PDBX_LAUNCH_MAX_HOSTS);
    pdbx_strcopy(o->hosts[o->nhosts].name, sizeof o->hosts[0].name, name);
    o->hosts[o->nhosts++].slots = slots;
    return 0;
}

static int parse_slots(const char *text, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || !end || *end || errno || v < 1 || v > 4096)
        return -1;
    *out = (int)v;
    return 0;
}

int pdbx_launch_hosts_parse(const char *text, int default_slots, pdbx_launch_opts *opts,
                            char *err, size_t errlen)
{
    char copy[4096];
    if (!text || strlen(text) >= sizeof copy)
        return pdbx_fail(err, errlen, "hosts: too long (at most %zu characters)", sizeof copy - 1);
    pdbx_strcopy(copy, sizeof copy, text);
    opts->nhosts = 0;
    char *save = NULL;
    int any = 0;
    for (char *e = strtok_r(copy, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
        any = 1;
        char *colon = strchr(e, ':');
        int slots = default_slots;
        if (colon) {
            *colon = '\0';
            if (parse_slots(colon + 1, &slots) != 0)
                return pdbx_fail(err, errlen, "hosts: '%s:%s' has a bad slot count '%s' (allowed: "
                                 "NAME:N with N 1..4096, e.g. a:8,b:8)", e, colon + 1, colon + 1);
        }
        if (!valid_host_name(e))
            return pdbx_fail(err, errlen, "hosts: '%s' is not a host name (allowed: letters, digits, "
                             "'-', '.', '_', then :N slots, e.g. a:8,b:8)", e);
        if (add_host(opts, e, slots, "hosts", err, errlen) != 0)
            return -1;
    }
    if (!any)
        return pdbx_fail(err, errlen, "hosts: '%s' names no host (allowed: NAME:N,..., e.g. a:8,b:8)",
                         text);
    return 0;
}

int pdbx_launch_hostfile_read(const char *path, int default_slots, pdbx_launch_opts *opts,
                              char *err, size_t errlen)
{
    char abs[PDBX_PATH_MAX];
    if (!realpath(path, abs))
        return pdbx_fail(err, errlen, "hostfile: %s: %s", path, strerror(errno));
    FILE *f = fopen(abs, "r");
    if (!f)
        return pdbx_fail(err, errlen, "hostfile: %s: %s", path, strerror(errno));
    char line[1024];
    int lineno = 0, rc = 0;
    opts->nhosts = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "#\r\n")] = '\0';
        char *save = NULL, *name = strtok_r(line, " \t", &save);
        if (!name)
            continue;
        char where[PDBX_PATH_MAX + 32];
        snprintf(where, sizeof where, "hostfile %s line %d", path, lineno);
        int slots = default_slots;
        for (char *w = strtok_r(NULL, " \t", &save); w && rc == 0; w = strtok_r(NULL, " \t", &save)) {
            if (strncmp(w, "slots=", 6) == 0) {
                if (parse_slots(w + 6, &slots) != 0)
                    rc = pdbx_fail(err, errlen, "%s: '%s' has a bad slot count (allowed: slots=N, N "
                                   "1..4096)", where, w);
            } else if (strncmp(w, "max_slots=", 10) != 0 && strncmp(w, "max-slots=", 10) != 0) {
                rc = pdbx_fail(err, errlen, "%s: '%s' is not understood (allowed: NAME [slots=N] "
                               "[max_slots=N])", where, w);
            }
        }
        if (rc == 0 && !valid_host_name(name))
            rc = pdbx_fail(err, errlen, "%s: '%s' is not a host name (allowed: letters, digits, "
                           "'-', '.', '_')", where, name);
        if (rc == 0)
            rc = add_host(opts, name, slots, where, err, errlen);
    }
    fclose(f);
    if (rc == 0 && opts->nhosts == 0)
        rc = pdbx_fail(err, errlen, "hostfile %s names no host", path);
    if (rc == 0)
        pdbx_strcopy(opts->hostfile, sizeof opts->hostfile, abs);
    return rc;
}

/* ---- srun's MPI plugin ------------------------------------------------------------------ */
const char *pdbx_launch_srun_plugin(const char *mpi_list, char *buf, size_t len)
{
    int pmix = 0, pmi2 = 0;
    char versioned[32] = "";
    char copy[4096];
    pdbx_strcopy(copy, sizeof copy, mpi_list ? mpi_list : "");
    char *save = NULL;
    /* "srun: MPI types are...\nsrun: none\nsrun: pmix_v3" (older) or "MPI plugin types are...\n\tnone
     * \n\tpmi2\n\tpmix\nspecific pmix plugin versions available: pmix_v4" (newer) */
    for (char *w = strtok_r(copy, " \t\r\n,:", &save); w; w = strtok_r(NULL, " \t\r\n,:", &save)) {
        if (strcmp(w, "pmix") == 0)
            pmix = 1;
        else if (strncmp(w, "pmix_v", 6) == 0 && isdigit((unsigned char)w[6]))
            pdbx_strcopy(versioned, sizeof versioned, w);
        else if (strcmp(w, "pmi2") == 0)
            pmi2 = 1;
    }
    pdbx_strcopy(buf, len, pmix ? "pmix" : versioned[0] ? versioned : pmi2 ? "pmi2" : "none");
    return buf;
}

/* ---- the launch ------------------------------------------------------------------------- */
static int largest_np(const pdbx_spec *s)
{
    int m = 1;
    for (int c = 0; c < s->nconfigs; c++) {
        int n = s->configs[c].tp * s->configs[c].pp * s->configs[c].dp;
        if (n > m)
            m = n;
    }
    return m;
}

static int ranks_per_node(const pdbx_spec *s, int np)
{
    int r = s->gpus_per_node > 0 ? s->gpus_per_node : 1;
    return np < r ? np : r;
}

pdbx_launcher_kind pdbx_launch_resolve(const pdbx_spec *spec, const pdbx_launch_opts *opts,
                                       const pdbx_launch_env *env)
{
    if (opts && opts->kind != PDBX_LAUNCHER_AUTO)
        return opts->kind;
    if (spec->launcher != PDBX_LAUNCHER_AUTO)
        return spec->launcher;
    if (env && env->slurm_job_id && env->slurm_job_id[0])
        return PDBX_LAUNCHER_SRUN;
    if (opts && opts->nhosts > 0)
        return PDBX_LAUNCHER_MPIRUN;
    return PDBX_LAUNCHER_LOCAL;
}

/* Hosts used by np ranks at r per node, and whether they have the slots. */
static int check_hosts(const pdbx_launch_opts *o, int np, int r, char *err, size_t errlen)
{
    int need = (np + r - 1) / r;
    if (need > o->nhosts)
        return pdbx_fail(err, errlen, "hosts: %d ranks at %d per node (gpus_per_node) need %d hosts "
                         "with %d slots each; %s gives %d host%s", np, r, need, r,
                         o->hostfile[0] ? "the hostfile" : "--hosts", o->nhosts,
                         o->nhosts == 1 ? "" : "s");
    for (int i = 0; i < need; i++)
        if (o->hosts[i].slots < r)
            return pdbx_fail(err, errlen, "hosts: %s has %d slots, fewer than the %d ranks per node "
                             "(gpus_per_node) that %d ranks need", o->hosts[i].name,
                             o->hosts[i].slots, r, np);
    return 0;
}

int pdbx_launch_plan_check(const pdbx_spec *spec, const pdbx_launch_opts *opts,
                           const pdbx_launch_env *env, char *err, size_t errlen)
{
    pdbx_launcher_kind k = pdbx_launch_resolve(spec, opts, env);
    int np = largest_np(spec), r = ranks_per_node(spec, np);
    int nodes = spec->nodes > (np + r - 1) / r ? spec->nodes : (np + r - 1) / r;
    switch (k) {
    case PDBX_LAUNCHER_LOCAL:
        if (opts && opts->nhosts > 0)
            return pdbx_fail(err, errlen, "launcher: local runs on this machine only; hosts need "
                             "--launcher mpirun (or leave the launcher auto)");
        if (nodes > 1 && !(opts && opts->simulate_nodes))
            return pdbx_fail(err, errlen, "nodes: %d needs %d machines and the local launcher has "
                             "this one: give hosts (--hostfile FILE or --hosts a:%d,b:%d), use "
                             "--launcher srun (Slurm), or --simulate-nodes to run every rank here",
                             nodes, nodes, spec->gpus_per_node, spec->gpus_per_node);
        return 0;
    case PDBX_LAUNCHER_MPIRUN:
        if (opts && opts->simulate_nodes)
            return pdbx_fail(err, errlen, "simulate-nodes: only with the local launcher");
        if (!opts || opts->nhosts == 0) {
            if (nodes > 1)
                return pdbx_fail(err, errlen, "launcher: mpirun on %d nodes needs hosts (--hostfile "
                                 "FILE or --hosts a:%d,b:%d)", nodes, spec->gpus_per_node,
                                 spec->gpus_per_node);
            return 0;
        }
        return check_hosts(opts, np, r, err, errlen);
    case PDBX_LAUNCHER_SRUN:
        if (opts && (opts->simulate_nodes || opts->nhosts > 0))
            return pdbx_fail(err, errlen, "launcher: srun takes its nodes from Slurm: %s is for "
                             "mpirun/local", opts->simulate_nodes ? "--simulate-nodes" : "hosts");
        if (env && env->slurm_job_id && env->slurm_job_id[0] && env->slurm_nodes > 0 &&
            (np + r - 1) / r > env->slurm_nodes)
            return pdbx_fail(err, errlen, "nodes: %d ranks at %d per node need %d nodes; Slurm job "
                             "%s has %d", np, r, (np + r - 1) / r, env->slurm_job_id,
                             env->slurm_nodes);
        return 0;
    default:
        return pdbx_fail(err, errlen, "launcher: %d is not a launcher", (int)k);
    }
}

/* Argument building into cmd->buf. */
typedef struct {
    pdbx_launch_cmd *c;
    size_t used;
    int overflow;
} builder;

static void add(builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(builder *b, const char *fmt, ...)
{
    if (b->c->argc >= PDBX_LAUNCH_MAX_ARGS || b->used >= sizeof b->c->buf) {
        b->overflow = 1;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->c->buf + b->used, sizeof b->c->buf - b->used, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof b->c->buf - b->used) {
        b->overflow = 1;
        return;
    }
    b->c->argv[b->c->argc++] = b->c->buf + b->used;
    b->used += (size_t)n + 1;
}

static int add_launcher_args(builder *b, const pdbx_launch_opts *o, char *err, size_t errlen)
{
    if (!o || !o->launcher_args[0])
        return 0;
    char buf[PDBX_LAUNCH_ARGS_MAX + 1];
    char *words[64];
    int n = pdbx_launch_split_words(o->launcher_args, buf, sizeof buf, words, 64, err, errlen);
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++)
        add(b, "%s", words[i]);
    return 0;
}

/* The variables remote ranks need, whether or not this process has them yet: the supervisor
 * sets these just before it execs. */
static const char *const launch_vars[] = {
    "PDBX_LAUNCHER_PID", "PDBX_LAUNCHER_START", "PDBX_LAUNCHER_HOST", "PDBX_LAUNCHER_BOOT_ID",
    "PDBX_LAUNCH_MODE",
    "PDBX_LAUNCH_COMMAND",
};

static void add_exports(builder *b, const pdbx_launch_env *env)
{
    const char *names[PDBX_LAUNCH_MAX_ENV + 8];
    int n = 0;
    for (size_t i = 0; i < sizeof launch_vars / sizeof launch_vars[0]; i++)
        names[n++] = launch_vars[i];
    for (int i = 0; env && i < env->nenv && i < PDBX_LAUNCH_MAX_ENV; i++) {
        int seen = 0;
        for (int k = 0; k < n; k++)
            seen |= strcmp(names[k], env->env_names[i]) == 0;
        if (!seen)
            names[n++] = env->env_names[i];
    }
    for (int i = 0; i < n; i++) {
        add(b, "-x");
        add(b, "%s", names[i]);
    }
}

static void add_engine(builder *b, const pdbx_launch_target *t)
{
    add(b, "%s", t->engine);
    add(b, "--spec");
    add(b, "%s", t->spec_path);
    if (t->store_dir) {
        add(b, "--store");
        add(b, "%s", t->store_dir);
    }
    if (t->run_id) {
        add(b, "--run-id");
        add(b, "%s", t->run_id);
    }
    for (int i = 0; i < t->nextra; i++)
        add(b, "%s", t->extra[i]);
}

int pdbx_launch_argv(const pdbx_spec *spec, const pdbx_launch_opts *opts,
                     const pdbx_launch_env *env, const pdbx_launch_target *t, int np,
                     pdbx_launch_cmd *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (pdbx_launch_plan_check(spec, opts, env, err, errlen) != 0)
        return -1;
    builder b = { out, 0, 0 };
    pdbx_launcher_kind k = pdbx_launch_resolve(spec, opts, env);
    int r = ranks_per_node(spec, np), nodes = (np + r - 1) / r;
    out->kind = k;
    if (k == PDBX_LAUNCHER_SRUN) {
        char plugin[32];
        pdbx_launch_srun_plugin(env ? env->srun_mpi_list : NULL, plugin, sizeof plugin);
        if (strcmp(plugin, "none") == 0)
            snprintf(out->warning, sizeof out->warning, "srun offers neither pmix nor pmi2 (srun "
                     "--mpi=list%s): launching with --mpi=none, which works only when the MPI "
                     "library finds Slurm by itself", env && env->srun_mpi_list ? "" : " failed");
        add(&b, "%s", env && env->srun ? env->srun : "srun");
        if (add_launcher_args(&b, opts, err, errlen) != 0)
            return -1;
        add(&b, "--mpi=%s", plugin);
        add(&b, "--nodes=%d", nodes);
        add(&b, "--ntasks=%d", np);
        add(&b, "--ntasks-per-node=%d", r);
        add(&b, "--kill-on-bad-exit=1");
        add(&b, "--cpu-bind=none");
        snprintf(out->mode, sizeof out->mode, "srun (%s)%s%s", plugin,
                 env && env->slurm_job_id && env->slurm_job_id[0] ? " in job " : "",
                 env && env->slurm_job_id ? env->slurm_job_id : "");
    } else {
        add(&b, "%s", env && env->mpirun ? env->mpirun : "mpirun");
        if (env && env->is_root)
            add(&b, "--allow-run-as-root");
        if (add_launcher_args(&b, opts, err, errlen) != 0)
            return -1;
        /* the engine sets BLAS threads per rank itself (cores / ranks per node): no binding */
        add(&b, "--bind-to");
        add(&b, "none");
        int hosts = opts && opts->nhosts > 0 && k == PDBX_LAUNCHER_MPIRUN;
        if (hosts) {
            if (opts->hostfile[0]) {
                add(&b, "--hostfile");
                add(&b, "%s", opts->hostfile);
            } else {
                char list[4096];
                size_t o = 0;
                list[0] = '\0';
                for (int i = 0; i < opts->nhosts && o < sizeof list; i++)
                    o += (size_t)snprintf(list + o, sizeof list - o, "%s%s:%d", i ? "," : "",
                                          opts->hosts[i].name, opts->hosts[i].slots);
                add(&b, "--host");
                add(&b, "%s", list);
            }
            add(&b, "--map-by");
            add(&b, "ppr:%d:node", r);
            add_exports(&b, env);
            snprintf(out->mode, sizeof out->mode, "mpirun on %d host%s", nodes, nodes == 1 ? "" : "s");
        } else {
            if (env && env->cpus > 0 && env->cpus < np)
                add(&b, "--oversubscribe");
            int simulated = opts && opts->simulate_nodes && spec->nodes > 1;
            if (simulated)
                snprintf(out->mode, sizeof out->mode, "simulated %d nodes", spec->nodes);
            else
                snprintf(out->mode, sizeof out->mode, "%s", k == PDBX_LAUNCHER_LOCAL ? "local" : "mpirun");
        }
        add(&b, "-np");
        add(&b, "%d", np);
    }
    add_engine(&b, t);
    if (b.overflow)
        return pdbx_fail(err, errlen, "launcher: the command line is too long");
    out->argv[out->argc] = NULL;
    return 0;
}

/* ---- the environment (the one impure part) --------------------------------------------- */
void pdbx_launch_env_probe(pdbx_launch_env *env, const pdbx_spec *spec,
                           const pdbx_launch_opts *opts, char *mpi_list, size_t len)
{
    memset(env, 0, sizeof *env);
    env->slurm_job_id = getenv("SLURM_JOB_ID");
    const char *nn = getenv("SLURM_JOB_NUM_NODES");
    env->slurm_nodes = nn ? atoi(nn) : 0;
    env->is_root = geteuid() == 0;
    env->cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const char *m = getenv("PDBX_MPIRUN"), *s = getenv("PDBX_SRUN");
    env->mpirun = m && *m ? m : "mpirun";
    env->srun = s && *s ? s : "srun";
    /* names only: the values go with mpirun's -x NAME, read from its environment */
    static char names[PDBX_LAUNCH_MAX_ENV][128];
    for (char **e = environ; e && *e && env->nenv < PDBX_LAUNCH_MAX_ENV; e++) {
        size_t n = strcspn(*e, "=");
        if (n >= sizeof names[0] || (strncmp(*e, "PDBX_", 5) != 0 &&
                                     strncmp(*e, "LD_LIBRARY_PATH=", 16) != 0))
            continue;
        memcpy(names[env->nenv], *e, n);
        names[env->nenv][n] = '\0';
        env->env_names[env->nenv] = names[env->nenv];
        env->nenv++;
    }
    if (len)
        mpi_list[0] = '\0';
    if (pdbx_launch_resolve(spec, opts, env) != PDBX_LAUNCHER_SRUN || !len)
        return;
    char cmd[PDBX_PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "'%s' --mpi=list 2>&1", env->srun);
    FILE *p = popen(cmd, "r");
    if (!p)
        return;
    size_t got = fread(mpi_list, 1, len - 1, p);
    mpi_list[got] = '\0';
    if (pclose(p) == 0)
        env->srun_mpi_list = mpi_list;
}
