/* cli_run.c: `pdbx run`, `pdbx attach` and `pdbx cancel` (tui/cli/cli.h, engine/launch/launch.h).
 *
 *   pdbx run SPEC|PRESET [--FIELD VALUE ...] [--detach] [--store DIR]
 *   pdbx attach RUN [--store DIR]
 *   pdbx cancel RUN [--no-wait] [--store DIR]
 *
 * run plans (same overrides as `pdbx plan`), starts the sweep in the background
 * (pdbx_launch_start) and, unless --detach, draws a one-line progress bar on stderr until the
 * run ends; the run id goes to stdout. The bar tails the run file with pdbx_scan_file from the
 * last offset and folds events with pdbx_run_apply, the same way the explorer's monitor does.
 * Ctrl-C while watching (run or attach alike) cancels the sweep, recorded as "Ctrl-C" in its
 * run_end; a second Ctrl-C stops watching (the sweep's end is then the supervisor's business).
 * SIGTERM to the watching process only stops watching: it is not the user's Ctrl-C.
 * Exit: 0 complete, 1 failed, 3 cancelled, 2 usage.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/launch/launch.h"
#include "engine/launch/launch_check.h"
#include "store/events.h"
#include "store/util/clock.h"
#include "store/util/fmt.h"
#include "tui/cli/cli.h"
#include "tui/cli/cli_progress.h"

#define EXIT_CANCELLED 3

/* ---- shared: the progress bar ---------------------------------------------------------- */
static volatile sig_atomic_t interrupts, terminated;

static void on_interrupt(int sig)
{
    if (sig == SIGTERM)
        terminated = 1;
    else
        interrupts++;
}

/* Ctrl-C and SIGTERM are caught from before the launch until watching ends: a Ctrl-C while the
 * sweep is being started (pdbx_launch_start waits for the engine's first event) cancels it once
 * it runs, where the default action would kill pdbx run and leave the sweep running unwatched.
 * Nested calls count; the last release restores what was there. */
static int catch_depth;
static struct sigaction saved_int, saved_term;

static void catch_interrupts(void)
{
    if (catch_depth++ > 0)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &saved_int);
    sigaction(SIGTERM, &sa, &saved_term);
}

static void release_interrupts(void)
{
    if (catch_depth <= 0 || --catch_depth > 0)
        return;
    sigaction(SIGINT, &saved_int, NULL);
    sigaction(SIGTERM, &saved_term, NULL);
}

typedef struct {
    pdbx_run run;
    char err[256];
} fold_ctx;

static int fold(const cJSON *ev, void *ctx)
{
    fold_ctx *f = ctx;
    pdbx_run_apply(&f->run, ev, f->err, sizeof f->err);   /* a malformed event is skipped */
    return 0;
}

typedef struct {
    fold_ctx f;
    pdbx_cli_bar bar;
} watch_state;

/* Ctrl-C while watching: the first cancels the sweep, the next one stops watching; SIGTERM
 * stops watching at once. Returns 1 to stop watching. */
static int stop_on_interrupt(const char *cmd, pdbx_store *st, const char *id, int tty, int *cancel_sent)
{
    char err[512];
    if (tty)
        fputc('\n', stderr);
    if (!terminated && !*cancel_sent) {
        fprintf(stderr, "pdbx %s: cancelling %s (Ctrl-C again to stop watching)\n", cmd, id);
        if (pdbx_launch_cancel(st, id, PDBX_CAUSE_CTRL_C, err, sizeof err) != 0)
            fprintf(stderr, "pdbx %s: %s\n", cmd, err);
        *cancel_sent = 1;
        interrupts = 0;
        return 0;
    }
    fprintf(stderr, "pdbx %s: stopped watching; %s %s in the background (pdbx attach %s)\n", cmd, id,
            *cancel_sent ? "ends" : "goes on", id);
    return 1;
}

/* The line saying how the run ended, and the exit status for it. */
static int report_end(const char *cmd, const char *id, const pdbx_run *run)
{
    switch (run->status) {
    case PDBX_RUN_COMPLETE:
        fprintf(stderr, "pdbx %s: run %s complete (%zu points)\n", cmd, id, run->npoints);
        return PDBX_EXIT_OK;
    case PDBX_RUN_CANCELLED:
        fprintf(stderr, "pdbx %s: run %s cancelled%s%s\n", cmd, id, run->end_reason[0] ? ": " : "",
                run->end_reason);
        return EXIT_CANCELLED;
    default:
        fprintf(stderr, "pdbx %s: run %s %s%s%s\n", cmd, id, pdbx_run_status_name(run->status),
                run->end_reason[0] ? ": " : "", run->end_reason);
        return PDBX_EXIT_FAIL;
    }
}

/* Watches run `id` until it ends (or stops being alive, or the user gives up). Returns the
 * exit code for the run's final status. */
static int watch(const char *cmd, pdbx_store *st, const char *id)
{
    char path[PDBX_PATH_MAX];
    pdbx_store_run_path(st, id, path, sizeof path);
    watch_state w;
    memset(&w, 0, sizeof w);
    pdbx_run_init(&w.f.run);
    uint64_t off = 0;
    int tty = isatty(2), cancel_sent = 0, rc;
    catch_interrupts();
    double next_live = 0;
    for (;;) {
        pdbx_scan_result res;
        char err[256];
        if (pdbx_scan_file(path, off, fold, &w.f, &res, err, sizeof err) != 0) {
            rc = pdbx_cli_fail(PDBX_EXIT_FAIL, cmd, "%s", err);
            goto out;
        }
        off = res.next_offset;
        if (res.corrupt) {
            rc = pdbx_cli_fail(PDBX_EXIT_FAIL, cmd, "%s", res.corrupt_msg);
            goto out;
        }
        /* the progress line (cli_progress.h): the store's progress model, cut to the terminal */
        pdbx_cli_progress_draw(&w.bar, &w.f.run, tty, pdbx_wall_s());
        if (w.f.run.have_end)
            break;
        double now = pdbx_wall_s();
        if (now >= next_live) {          /* the supervisor died without run_end? */
            pdbx_run_refresh_liveness(&w.f.run);
            if (w.f.run.status == PDBX_RUN_FAILED)
                break;
            next_live = now + 2.0;
        }
        if ((interrupts || terminated) && stop_on_interrupt(cmd, st, id, tty, &cancel_sent)) {
            rc = PDBX_EXIT_OK;
            goto out;
        }
        struct timespec ts = { 0, 200 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    if (tty)
        fputc('\n', stderr);
    rc = report_end(cmd, id, &w.f.run);
out:
    release_interrupts();
    pdbx_run_free(&w.f.run);
    return rc;
}

/* ---- pdbx run ------------------------------------------------------------------------------ */
typedef struct {
    int detach, force, dry_run, simulate_nodes;
    const char *store, *hosts, *hostfile, *launcher_args, *sbatch, *time;
    pdbx_cli_spec_opts so;
} run_args;

static const pdbx_cli_opt run_opts[] = {
    { "detach", NULL, "start the sweep and return at once (prints the run id)" },
    { "force", NULL, "start even while another sweep of the store runs on this host's devices" },
    { "hosts", "H:N,...", "mpirun on these hosts with N slots each (e.g. a:8,b:8)" },
    { "hostfile", "FILE", "mpirun on the hosts of an OpenMPI hostfile (NAME slots=N per line)" },
    { "launcher-args", "ARGS", "extra arguments for mpirun/srun, split like a shell (quotes kept)" },
    { "simulate-nodes", NULL, "local launcher: run every node's ranks on this machine (recorded)" },
    { "dry-run", NULL, "print the launch command line(s) and exit; creates nothing" },
    { "sbatch", "FILE", "write a Slurm batch script for the sweep (srun) instead of starting it" },
    { "time", "T", "--sbatch: the job's time limit (Slurm syntax, default 1:00:00)" },
    PDBX_CLI_OPT_STORE,
    { NULL, NULL, NULL },
};

static const char *const run_about =
    "Plans the sweep (SPEC|PRESET and the same field options as 'pdbx plan'), starts it in the\n"
    "background (mpirun -np N pdbx-engine, once per distinct rank count) and shows a one-line\n"
    "progress bar on stderr until it ends; the run id is printed on stdout. Closing the terminal\n"
    "does not stop the sweep: 'pdbx attach RUN' watches it again, 'pdbx cancel RUN' ends it.\n"
    "Ctrl-C while watching cancels the sweep (a second one stops watching).\n"
    "Launchers (--launcher, docs/launch.md): local (this machine; nodes > 1 needs\n"
    "--simulate-nodes), mpirun (--hosts/--hostfile, ranks node by node), srun (inside or\n"
    "outside a Slurm allocation; the MPI plugin from srun --mpi=list); auto = srun when\n"
    "SLURM_JOB_ID is set, mpirun when hosts are given, else local.\n"
    "While another sweep of the store runs on the same devices of this host, run asks\n"
    "first (y/N) on a terminal and refuses without one (exit 2) unless --force.\n"
    "A local launch first watches this machine's CPUs for a tenth of a second and warns (and goes\n"
    "on) when other processes use more than half a core or the hypervisor steals more than 5%.\n"
    "Exit: 0 complete, 1 failed, 3 cancelled.";

static int run_opt(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    run_args *a = ctx;
    if (strcmp(opt->name, "detach") == 0)
        a->detach = 1;
    else if (strcmp(opt->name, "force") == 0)
        a->force = 1;
    else if (strcmp(opt->name, "store") == 0)
        a->store = value;
    else if (strcmp(opt->name, "hosts") == 0)
        a->hosts = value;
    else if (strcmp(opt->name, "hostfile") == 0)
        a->hostfile = value;
    else if (strcmp(opt->name, "launcher-args") == 0)
        a->launcher_args = value;
    else if (strcmp(opt->name, "simulate-nodes") == 0)
        a->simulate_nodes = 1;
    else if (strcmp(opt->name, "dry-run") == 0)
        a->dry_run = 1;
    else if (strcmp(opt->name, "sbatch") == 0)
        a->sbatch = value;
    else if (strcmp(opt->name, "time") == 0)
        a->time = value;
    return 0;
}

/* The launcher options of the command line (launch_argv.h); 0 or the usage exit. */
static int launch_opts(const run_args *a, const pdbx_spec *spec, pdbx_launch_opts *o)
{
    char err[1024];
    memset(o, 0, sizeof *o);
    o->simulate_nodes = a->simulate_nodes;
    if (a->hosts && a->hostfile)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, "run", "--hosts and --hostfile: give one of them");
    if (a->hosts && pdbx_launch_hosts_parse(a->hosts, spec->gpus_per_node, o, err, sizeof err) != 0)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, "run", "%s", err);
    if (a->hostfile &&
        pdbx_launch_hostfile_read(a->hostfile, spec->gpus_per_node, o, err, sizeof err) != 0)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, "run", "%s", err);
    if (a->launcher_args) {
        char words[PDBX_LAUNCH_ARGS_MAX + 1], *w[64];
        if (strlen(a->launcher_args) >= sizeof o->launcher_args)
            return pdbx_cli_fail(PDBX_EXIT_USAGE, "run", "launcher-args: longer than %zu characters",
                                 sizeof o->launcher_args - 1);
        if (pdbx_launch_split_words(a->launcher_args, words, sizeof words, w, 64, err, sizeof err) < 0)
            return pdbx_cli_fail(PDBX_EXIT_USAGE, "run", "%s", err);
        snprintf(o->launcher_args, sizeof o->launcher_args, "%s", a->launcher_args);
    }
    return 0;
}

/* The store directory a launch would use, without creating or opening it (--dry-run). */
static int dry_run_store(const char *cmd, const char *store, char *dir, size_t len)
{
    char err[512] = "";
    if (!store)
        return pdbx_store_default_dir(dir, len, err, sizeof err) == 0
                   ? 0 : pdbx_cli_fail(PDBX_EXIT_FAIL, cmd, "%s", err);
    char abs[PDBX_PATH_MAX];
    if (realpath(store, abs))
        snprintf(dir, len, "%s", abs);
    else
        snprintf(dir, len, "%s", store);
    return 0;
}

/* Another sweep of the store on this host's devices would disturb both sweeps' numbers: ask
 * on a terminal, refuse without one, unless --force. 0 to go on, else the exit status. */
static int check_running(const pdbx_spec *spec, const char *store_dir, int force)
{
    char id[PDBX_RUN_ID_MAX], what[256], err[512];
    int r = pdbx_launch_find_running(spec, store_dir, id, what, sizeof what, err, sizeof err);
    if (r < 0) {
        fprintf(stderr, "pdbx run: cannot tell whether a sweep runs already: %s\n", err);
        return 0;
    }
    if (r == 0)
        return 0;
    if (force) {
        fprintf(stderr, "pdbx run: %s is running on this host (%s); starting anyway (--force): "
                "both sweeps' numbers suffer\n", id, what);
        return 0;
    }
    if (!isatty(0))          /* nobody to ask: a script */
        return pdbx_cli_fail(PDBX_EXIT_USAGE, "run", "%s is running on this host (%s): a second "
                             "sweep on the same devices disturbs both; wait for it, cancel it "
                             "(pdbx cancel %s) or start anyway with --force", id, what, id);
    /* the question goes to the terminal even when stderr is redirected */
    FILE *tty = fopen("/dev/tty", "w");
    FILE *q = tty ? tty : stderr;
    fprintf(q, "pdbx run: %s is running on this host (%s); a second sweep on the same devices "
            "disturbs both. Start anyway? [y/N] ", id, what);
    fflush(q);
    char line[32] = "";
    int yes = fgets(line, sizeof line, stdin) && (line[0] == 'y' || line[0] == 'Y');
    if (!yes)
        fprintf(q, "pdbx run: not started\n");
    if (tty)
        fclose(tty);
    if (!yes)
        return PDBX_EXIT_USAGE;
    return 0;
}

/* A machine busy with other processes makes every number of the sweep noisy: watch it before a
 * local launch (launch_check.h; the sweep's own ranks would count once started) and say so once
 * the launch is accepted (a refused launch says only why); the engine records each point's
 * load in the run. */
static void warn_if_busy(const char *busy)
{
    if (busy[0])
        fprintf(stderr, "pdbx run: warning: %s\n", busy);
}

/* --sbatch FILE or --dry-run: what would run, written or printed; nothing is launched. */
static int run_without_launch(const run_args *a, const pdbx_spec *spec, const pdbx_launch_opts *lo)
{
    char dir[PDBX_PATH_MAX], err[1024] = "";
    int usage = 0;
    int rc = dry_run_store("run", a->store, dir, sizeof dir);
    if (rc != 0)
        return rc;
    if (a->dry_run && !a->sbatch) {
        if (pdbx_launch_dry_run(spec, lo, dir, stdout, &usage, err, sizeof err) != 0)
            rc = pdbx_cli_fail(usage ? PDBX_EXIT_USAGE : PDBX_EXIT_FAIL, "run", "%s", err);
        return rc;
    }
    char id[PDBX_RUN_ID_MAX], script[PDBX_PATH_MAX];
    if (pdbx_launch_sbatch(spec, lo, dir, a->time, a->sbatch, id, script, &usage, err,
                           sizeof err) != 0)
        return pdbx_cli_fail(usage ? PDBX_EXIT_USAGE : PDBX_EXIT_FAIL, "run", "%s", err);
    fprintf(stderr, "pdbx run: wrote %s for run %s (store %s); submit it with:\n", script, id, dir);
    printf("sbatch %s\n", script);
    return 0;
}

/* The sweep on this machine (or the hosts of the launch options): started after the running-run
 * check, then watched to its end, or left in the background with --detach. Takes lo. */
static int run_launch(const run_args *a, const pdbx_spec *spec, pdbx_launch_opts *lo)
{
    pdbx_store *st = NULL;
    char err[1024] = "";
    int usage = 0;
    int rc = pdbx_cli_open_store("run", a->store, 1, &st);
    if (rc == 0)
        rc = check_running(spec, pdbx_store_dir(st), a->force);
    if (rc != 0) {
        free(lo);
        goto done;
    }
    char busy[256];
    pdbx_launch_busy_warning(spec, lo, busy, sizeof busy);
    pdbx_launch L;
    if (!a->detach)
        catch_interrupts();
    int started = pdbx_launch_start_ex(spec, lo, pdbx_store_dir(st), &L, &usage, err, sizeof err);
    free(lo);
    if (started != 0) {
        rc = pdbx_cli_fail(usage ? PDBX_EXIT_USAGE : PDBX_EXIT_FAIL, "run", "%s", err);
        goto done;
    }
    warn_if_busy(busy);
    if (a->detach) {
        printf("%s\n", L.run_id);
        fprintf(stderr, "pdbx run: %s started in the background (supervisor pid %ld, log %s)\n",
                L.run_id, (long)L.supervisor, L.log_path);
        goto done;
    }
    fprintf(stderr, "pdbx run: %s (log %s)\n", L.run_id, L.log_path);
    rc = watch("run", st, L.run_id);
    printf("%s\n", L.run_id);
done:
    release_interrupts();
    if (st)
        pdbx_store_close(st);
    return rc;
}

int pdbx_cmd_run(int argc, char **argv)
{
    run_args a = { 0 };
    pdbx_spec *spec = calloc(1, sizeof *spec);
    pdbx_launch_opts *lo = NULL;
    int rc = PDBX_EXIT_FAIL;
    if (!spec || pdbx_cli_spec_opts_init(&a.so, run_opts) != 0) {
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, "run", "out of memory");
        goto done;
    }
    pdbx_cli_spec cli = { .name = "run", .args = "SPEC|PRESET", .about = run_about, .opts = a.so.opts,
                          .min_args = 1, .max_args = 1 };
    char **pos;
    int npos;
    char err[1024] = "";
    rc = pdbx_cli_parse_spec(&cli, &a.so, argc, argv, run_opt, &a, &pos, &npos);
    if (rc != 0) {
        rc = pdbx_cli_parse_exit(rc);
        goto done;
    }
    rc = pdbx_cli_spec_build("run", pos[0], &a.so, spec);
    if (rc != 0)
        goto done;
    if (pdbx_spec_validate(spec, err, sizeof err) != 0) {
        rc = pdbx_cli_fail(PDBX_EXIT_USAGE, "run", "%s", err);
        goto done;
    }
    if (!(lo = calloc(1, sizeof *lo))) {
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, "run", "out of memory");
        goto done;
    }
    rc = launch_opts(&a, spec, lo);
    if (rc == 0 && a.time && !a.sbatch)
        rc = pdbx_cli_fail(PDBX_EXIT_USAGE, "run", "--time is the time limit of --sbatch's job: "
                           "give --sbatch FILE too");
    if (rc != 0)
        goto done;
    if (a.sbatch || a.dry_run) {
        rc = run_without_launch(&a, spec, lo);
        goto done;
    }
    rc = run_launch(&a, spec, lo);
    lo = NULL;                       /* run_launch freed it */
done:
    free(lo);
    pdbx_cli_spec_opts_free(&a.so);
    free(spec);
    return rc;
}

/* ---- pdbx attach / cancel ------------------------------------------------------------------ */
typedef struct {
    const char *store;
    int no_wait;
} ref_args;

static int ref_opt(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    ref_args *a = ctx;
    if (strcmp(opt->name, "store") == 0)
        a->store = value;
    else if (strcmp(opt->name, "no-wait") == 0)
        a->no_wait = 1;
    return 0;
}

static int open_run(const char *cmd, const pdbx_cli_spec *cli, int argc, char **argv, ref_args *a,
                    pdbx_store **st, char id[PDBX_RUN_ID_MAX])
{
    char **pos;
    int npos;
    int rc = pdbx_cli_parse(cli, argc, argv, ref_opt, a, &pos, &npos);
    if (rc != 0)
        return pdbx_cli_parse_exit(rc);
    rc = pdbx_cli_open_store(cmd, a->store, 0, st);
    if (rc != 0)
        return rc;
    char err[512];
    if (pdbx_store_resolve(*st, pos[0], id, err, sizeof err) != 0) {
        pdbx_store_close(*st);
        *st = NULL;
        return pdbx_cli_fail(PDBX_EXIT_USAGE, cmd, "%s", err);
    }
    return 0;
}

/* cancel takes both options, attach only --store (the table's tail). */
static const pdbx_cli_opt ref_opts[] = {
    { "no-wait", NULL, "return once the signal is sent instead of waiting for the run end" },
    PDBX_CLI_OPT_STORE,
    { NULL, NULL, NULL },
};

static const pdbx_cli_spec attach_spec = {
    .name = "attach", .args = "RUN", .opts = ref_opts + 1, .min_args = 1, .max_args = 1,
    .about = "Shows the progress bar of a running sweep until it ends. Ctrl-C\n"
             "cancels the sweep, as in 'pdbx run'; a second Ctrl-C stops\n"
             "watching. Exit: 0 complete, 1 failed, 3 cancelled.",
};

static const pdbx_cli_spec cancel_spec = {
    .name = "cancel", .args = "RUN", .opts = ref_opts, .min_args = 1, .max_args = 1,
    .about = "Ends a running sweep cleanly: the measurement in flight finishes\n"
             "or is dropped and the run ends 'cancelled'. Waits (up to 2\n"
             "minutes) for the run end unless --no-wait.",
};

int pdbx_cmd_attach(int argc, char **argv)
{
    ref_args a = { 0 };
    pdbx_store *st = NULL;
    char id[PDBX_RUN_ID_MAX];
    int rc = open_run("attach", &attach_spec, argc, argv, &a, &st, id);
    if (rc != 0 || !st)        /* !st: --help was printed */
        return rc;
    rc = watch("attach", st, id);
    pdbx_store_close(st);
    return rc;
}

int pdbx_cmd_cancel(int argc, char **argv)
{
    ref_args a = { 0 };
    pdbx_store *st = NULL;
    char id[PDBX_RUN_ID_MAX], err[512];
    int rc = open_run("cancel", &cancel_spec, argc, argv, &a, &st, id);
    if (rc != 0 || !st)        /* !st: --help was printed */
        return rc;
    if (pdbx_launch_cancel(st, id, PDBX_CAUSE_CANCEL, err, sizeof err) != 0) {
        rc = pdbx_cli_fail(PDBX_EXIT_FAIL, "cancel", "%s", err);
        goto out;
    }
    fprintf(stderr, "pdbx cancel: sent SIGTERM to the sweep of %s\n", id);
    if (a.no_wait)
        goto out;
    for (int i = 0; i < 1200; i++) {
        pdbx_run run;
        if (pdbx_run_load(st, id, &run, err, sizeof err) == 0) {
            int ended = run.have_end || run.status != PDBX_RUN_RUNNING;
            if (ended) {
                fprintf(stderr, "pdbx cancel: run %s %s%s%s\n", id, pdbx_run_status_name(run.status),
                        run.end_reason[0] ? ": " : "", run.end_reason);
                pdbx_run_free(&run);
                goto out;
            }
            pdbx_run_free(&run);
        }
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    rc = pdbx_cli_fail(PDBX_EXIT_FAIL, "cancel", "run %s did not end within 2 minutes", id);
out:
    pdbx_store_close(st);
    return rc;
}
