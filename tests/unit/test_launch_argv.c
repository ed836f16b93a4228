/* test_launch_argv.c: the launcher's command lines (engine/launch/launch_argv.h) built from
 * given inputs, as --dry-run prints them and the supervisor execs them: mpirun with a hostfile
 * and with --hosts, srun inside an allocation with the plugin list given, local, the refusal of
 * nodes > 1 without hosts, host and hostfile parsing, shell-like word splitting and quoting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "engine/launch/launch_argv.h"

static const pdbx_launch_target target = { "/opt/pdbx/bin/pdbx-engine", "/s/logs/ID.spec.json",
                                           "/s", "ID", NULL, 0 };

/* A spec with gpus_per_node g, nodes n and configs of np ranks each (tp = np). */
static void make_spec(pdbx_spec *s, int g, int n, const int *nps, int k)
{
    pdbx_spec_defaults(s);
    s->gpus_per_node = g;
    s->nodes = n;
    s->nconfigs = k;
    for (int i = 0; i < k; i++)
        s->configs[i] = (pdbx_parallel){ nps[i], 1, 1, 1 };
}

static pdbx_launch_env plain_env(void)
{
    pdbx_launch_env e;
    memset(&e, 0, sizeof e);
    e.cpus = 64;
    e.mpirun = "mpirun";
    e.srun = "srun";
    return e;
}

/* The command line for np ranks as one shell-quoted line. */
static void line_of(const pdbx_spec *s, const pdbx_launch_opts *o, const pdbx_launch_env *e, int np,
                    char *out, size_t len, pdbx_launch_cmd *cmd)
{
    char err[512] = "";
    int rc = pdbx_launch_argv(s, o, e, &target, np, cmd, err, sizeof err);
    if (rc != 0)
        fail_msg("pdbx_launch_argv: %s", err);
    assert_null(cmd->argv[cmd->argc]);
    pdbx_launch_quote(cmd->argv, cmd->argc, out, len);
}

static void test_mpirun_hostfile(void **state)
{
    (void)state;
    char path[] = "/tmp/pdbx-hostfile-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "# two nodes\nnode-a slots=8\nnode-b slots=8 max_slots=8\n\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    pdbx_spec s;
    int nps[] = { 8, 16 };
    make_spec(&s, 8, 2, nps, 2);
    pdbx_launch_opts o;
    memset(&o, 0, sizeof o);
    char err[512] = "", line[4096], want[4096];
    assert_int_equal(pdbx_launch_hostfile_read(path, 8, &o, err, sizeof err), 0);
    assert_int_equal(o.nhosts, 2);
    pdbx_launch_env e = plain_env();
    e.env_names[e.nenv++] = "LD_LIBRARY_PATH";
    e.env_names[e.nenv++] = "PDBX_LAUNCHER_PID";      /* given twice: exported once */
    pdbx_launch_cmd *cmd = malloc(sizeof *cmd);
    line_of(&s, &o, &e, 16, line, sizeof line, cmd);
    snprintf(want, sizeof want, "mpirun --bind-to none --hostfile %s --map-by ppr:8:node "
             "-x PDBX_LAUNCHER_PID -x PDBX_LAUNCHER_START -x PDBX_LAUNCHER_HOST "
             "-x PDBX_LAUNCHER_BOOT_ID -x PDBX_LAUNCH_MODE -x PDBX_LAUNCH_COMMAND "
             "-x LD_LIBRARY_PATH -np 16 /opt/pdbx/bin/pdbx-engine --spec /s/logs/ID.spec.json "
             "--store /s --run-id ID", path);
    assert_string_equal(line, want);
    assert_string_equal(cmd->mode, "mpirun on 2 hosts");
    assert_int_equal(cmd->kind, PDBX_LAUNCHER_MPIRUN);      /* auto with hosts */
    assert_null(strstr(line, "oversubscribe"));
    /* the 8-rank config goes on the first host only */
    line_of(&s, &o, &e, 8, line, sizeof line, cmd);
    assert_non_null(strstr(line, "--map-by ppr:8:node"));
    assert_string_equal(cmd->mode, "mpirun on 1 host");
    free(cmd);
    /* a bad entry is named with its line */
    fd = open(path, O_WRONLY | O_TRUNC);
    const char *bad = "node-a slots=8\nnode-b slots=eight\n";
    assert_int_equal(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
    close(fd);
    assert_int_equal(pdbx_launch_hostfile_read(path, 8, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "line 2"));
    assert_non_null(strstr(err, "slots=eight"));
    unlink(path);
}

static void test_mpirun_hosts(void **state)
{
    (void)state;
    pdbx_spec s;
    int nps[] = { 4 };
    make_spec(&s, 2, 2, nps, 1);
    pdbx_launch_opts o;
    memset(&o, 0, sizeof o);
    char err[512] = "", line[4096];
    assert_int_equal(pdbx_launch_hosts_parse("a:2,b.example.org:2", 2, &o, err, sizeof err), 0);
    snprintf(o.launcher_args, sizeof o.launcher_args, "--mca btl 'tcp,self' -x \"A B\"");
    pdbx_launch_env e = plain_env();
    e.is_root = 1;
    pdbx_launch_cmd *cmd = malloc(sizeof *cmd);
    line_of(&s, &o, &e, 4, line, sizeof line, cmd);
    assert_string_equal(line, "mpirun --allow-run-as-root --mca btl tcp,self -x 'A B' --bind-to none "
                        "--host a:2,b.example.org:2 --map-by ppr:2:node "
                        "-x PDBX_LAUNCHER_PID -x PDBX_LAUNCHER_START -x PDBX_LAUNCHER_HOST "
                        "-x PDBX_LAUNCHER_BOOT_ID -x PDBX_LAUNCH_MODE -x PDBX_LAUNCH_COMMAND "
                        "-np 4 /opt/pdbx/bin/pdbx-engine --spec /s/logs/ID.spec.json --store /s "
                        "--run-id ID");
    free(cmd);
    /* too few slots for the largest rank count */
    assert_int_equal(pdbx_launch_hosts_parse("a:2", 2, &o, err, sizeof err), 0);
    assert_int_equal(pdbx_launch_plan_check(&s, &o, &e, err, sizeof err), -1);
    assert_string_equal(err, "hosts: 4 ranks at 2 per node (gpus_per_node) need 2 hosts with 2 "
                        "slots each; --hosts gives 1 host");
    assert_int_equal(pdbx_launch_hosts_parse("a:1,b:4", 2, &o, err, sizeof err), 0);
    assert_int_equal(pdbx_launch_plan_check(&s, &o, &e, err, sizeof err), -1);
    assert_non_null(strstr(err, "a has 1 slots"));
    /* bad entries are named */
    assert_int_equal(pdbx_launch_hosts_parse("a:8,b:x", 2, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "'b:x'"));
    assert_int_equal(pdbx_launch_hosts_parse("a:8,-b:8", 2, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "'-b'"));
    assert_int_equal(pdbx_launch_hosts_parse("a:8,a:8", 2, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "'a' is given twice"));
    assert_int_equal(pdbx_launch_hosts_parse("a:0", 2, &o, err, sizeof err), -1);
    assert_int_equal(pdbx_launch_hosts_parse(",", 2, &o, err, sizeof err), -1);
    /* a host without :N has gpus_per_node slots */
    assert_int_equal(pdbx_launch_hosts_parse("a,b", 2, &o, err, sizeof err), 0);
    assert_int_equal(o.hosts[1].slots, 2);
}

static void test_srun_in_allocation(void **state)
{
    (void)state;
    pdbx_spec s;
    int nps[] = { 2, 4 };
    make_spec(&s, 2, 2, nps, 2);
    pdbx_launch_opts o;
    memset(&o, 0, sizeof o);
    pdbx_launch_env e = plain_env();
    e.slurm_job_id = "41";
    e.slurm_nodes = 2;
    e.srun_mpi_list = "MPI plugin types are...\n\tnone\n\tcray_shasta\n\tpmi2\n\tpmix\n"
                      "specific pmix plugin versions available: pmix_v4\n";
    char line[4096];
    pdbx_launch_cmd *cmd = malloc(sizeof *cmd);
    line_of(&s, &o, &e, 4, line, sizeof line, cmd);
    assert_int_equal(cmd->kind, PDBX_LAUNCHER_SRUN);        /* auto inside an allocation */
    assert_string_equal(line, "srun --mpi=pmix --nodes=2 --ntasks=4 --ntasks-per-node=2 "
                        "--kill-on-bad-exit=1 --cpu-bind=none /opt/pdbx/bin/pdbx-engine --spec "
                        "/s/logs/ID.spec.json --store /s --run-id ID");
    assert_string_equal(cmd->mode, "srun (pmix) in job 41");
    assert_string_equal(cmd->warning, "");
    line_of(&s, &o, &e, 2, line, sizeof line, cmd);
    assert_non_null(strstr(line, "--nodes=1 --ntasks=2 --ntasks-per-node=2"));
    /* older Slurm's list, pmi2 only, nothing */
    char buf[32];
    assert_string_equal(pdbx_launch_srun_plugin("srun: MPI types are...\nsrun: none\nsrun: pmix_v3\n"
                                                "srun: pmi2\n", buf, sizeof buf), "pmix_v3");
    assert_string_equal(pdbx_launch_srun_plugin("srun: none\nsrun: pmi2\n", buf, sizeof buf), "pmi2");
    e.srun_mpi_list = "MPI plugin types are...\n\tnone\n";
    line_of(&s, &o, &e, 2, line, sizeof line, cmd);
    assert_non_null(strstr(line, "--mpi=none"));
    assert_non_null(strstr(cmd->warning, "neither pmix nor pmi2"));
    free(cmd);
    /* more nodes than the allocation has */
    int big[] = { 8 };
    make_spec(&s, 2, 4, big, 1);
    char err[512];
    assert_int_equal(pdbx_launch_plan_check(&s, &o, &e, err, sizeof err), -1);
    assert_string_equal(err, "nodes: 8 ranks at 2 per node need 4 nodes; Slurm job 41 has 2");
}

static void test_local(void **state)
{
    (void)state;
    pdbx_spec s;
    int nps[] = { 4 };
    make_spec(&s, 4, 1, nps, 1);
    pdbx_launch_opts o;
    memset(&o, 0, sizeof o);
    pdbx_launch_env e = plain_env();
    e.cpus = 2;
    char line[4096], err[512];
    pdbx_launch_cmd *cmd = malloc(sizeof *cmd);
    line_of(&s, &o, &e, 4, line, sizeof line, cmd);
    assert_string_equal(line, "mpirun --bind-to none --oversubscribe -np 4 /opt/pdbx/bin/pdbx-engine "
                        "--spec /s/logs/ID.spec.json --store /s --run-id ID");
    assert_string_equal(cmd->mode, "local");
    /* nodes > 1 without hosts: refused, unless simulated */
    make_spec(&s, 2, 2, nps, 1);
    assert_int_equal(pdbx_launch_plan_check(&s, &o, &e, err, sizeof err), -1);
    assert_string_equal(err, "nodes: 2 needs 2 machines and the local launcher has this one: give "
                        "hosts (--hostfile FILE or --hosts a:2,b:2), use --launcher srun (Slurm), "
                        "or --simulate-nodes to run every rank here");
    o.simulate_nodes = 1;
    line_of(&s, &o, &e, 4, line, sizeof line, cmd);
    assert_string_equal(cmd->mode, "simulated 2 nodes");
    /* the spec's launcher field, and the option over it */
    s.launcher = PDBX_LAUNCHER_SRUN;
    assert_int_equal(pdbx_launch_resolve(&s, &o, &e), PDBX_LAUNCHER_SRUN);
    o.kind = PDBX_LAUNCHER_LOCAL;
    assert_int_equal(pdbx_launch_resolve(&s, &o, &e), PDBX_LAUNCHER_LOCAL);
    free(cmd);
}

static void test_words(void **state)
{
    (void)state;
    char buf[256], err[256], *w[16], line[512];
    int n = pdbx_launch_split_words("  -a 'b c' \"d \\\"e\\\"\" f\\ g 'it'\\''s' ", buf, sizeof buf,
                                    w, 16, err, sizeof err);
    assert_int_equal(n, 5);
    assert_string_equal(w[0], "-a");
    assert_string_equal(w[1], "b c");
    assert_string_equal(w[2], "d \"e\"");
    assert_string_equal(w[3], "f g");
    assert_string_equal(w[4], "it's");
    pdbx_launch_quote(w, n, line, sizeof line);
    assert_string_equal(line, "-a 'b c' 'd \"e\"' 'f g' 'it'\\''s'");
    /* quoting and splitting are inverse */
    char buf2[256], *w2[16];
    assert_int_equal(pdbx_launch_split_words(line, buf2, sizeof buf2, w2, 16, err, sizeof err), 5);
    for (int i = 0; i < 5; i++)
        assert_string_equal(w[i], w2[i]);
    assert_int_equal(pdbx_launch_split_words("a 'b", buf, sizeof buf, w, 16, err, sizeof err), -1);
    assert_non_null(strstr(err, "unterminated ' quote"));
    assert_int_equal(pdbx_launch_split_words("a \"b", buf, sizeof buf, w, 16, err, sizeof err), -1);
    assert_int_equal(pdbx_launch_split_words("", buf, sizeof buf, w, 16, err, sizeof err), 0);
}

/* The batch script: #SBATCH lines from the plan, one srun line per rank count with its command
 * recorded, and bash -n clean. */
static void test_sbatch_script(void **state)
{
    (void)state;
    pdbx_spec s;
    int nps[] = { 2, 4 };
    make_spec(&s, 2, 2, nps, 2);
    s.backend = PDBX_BACKEND_CUDA;
    pdbx_launch_env e = plain_env();
    e.srun_mpi_list = "srun: MPI types are...\nsrun: none\nsrun: pmi2\n";
    char err[512] = "";
    int ranks[] = { 2, 4 };
    char *text = pdbx_launch_sbatch_script(&s, &e, &target, ranks, 2, "2:00:00", "/s/logs/ID.log",
                                           "{\"name\": \"it's\"}", err, sizeof err);
    if (!text)
        fail_msg("%s", err);
    const char *want[] = {
        "#!/bin/bash\n", "\n#SBATCH --job-name=pdbx-ID\n", "\n#SBATCH --nodes=2\n",
        "\n#SBATCH --ntasks-per-node=2\n", "\n#SBATCH --gpus-per-node=2\n",
        "\n#SBATCH --time=2:00:00\n", "\n#SBATCH --output=/s/logs/ID.log\n",
        "\n{\"name\": \"it's\"}\nPDBX_SPEC_END\n",
        /* one line split in two: parenthesised, so it reads (to clang too) as one element */
        ("\nsrun --mpi=pmi2 --nodes=1 --ntasks=2 --ntasks-per-node=2 --kill-on-bad-exit=1 "
         "--cpu-bind=none /opt/pdbx/bin/pdbx-engine --spec /s/logs/ID.spec.json --store /s --run-id ID &\n"),
        "\nsrun --mpi=pmi2 --nodes=2 --ntasks=4 --ntasks-per-node=2 ",
        "\nexport PDBX_LAUNCH_MODE=\"srun (pmi2) in sbatch job ${SLURM_JOB_ID:-?}\"\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(text, want[i]))
            fail_msg("the script lacks %s:\n%s", want[i], text);
    char path[] = "/tmp/pdbx-sbatch-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "bash -n %s", path);
    assert_int_equal(system(cmd), 0);
    unlink(path);
    free(text);
    /* a CPU sweep asks for no GPUs; a bad time is refused naming it */
    s.backend = PDBX_BACKEND_CPU;
    text = pdbx_launch_sbatch_script(&s, &e, &target, ranks, 2, "1:00:00", "/s/logs/ID.log", "{}",
                                     err, sizeof err);
    assert_non_null(text);
    assert_null(strstr(text, "gpus-per-node"));
    free(text);
    assert_null(pdbx_launch_sbatch_script(&s, &e, &target, ranks, 2, "1h", "/s/logs/ID.log", "{}",
                                          err, sizeof err));
    assert_non_null(strstr(err, "time: '1h' is not a Slurm time"));
    assert_true(pdbx_launch_valid_time("30"));
    assert_true(pdbx_launch_valid_time("1-12:00:00"));
    assert_false(pdbx_launch_valid_time("1:2:3:4"));
}

/* A foreground mode's target (pdbx validate): no --store or --run-id, its own words after
 * --spec, in order. */
static void test_foreground_target(void **state)
{
    (void)state;
    pdbx_spec s;
    int nps[] = { 2 };
    make_spec(&s, 2, 1, nps, 1);
    pdbx_launch_env e = plain_env();
    char *extra[] = { "--validate", "1x1x2", "--mbs", "1", "--out", "/tmp/r x.json" };
    const pdbx_launch_target t = { "/b/pdbx-engine", "/tmp/spec.json", NULL, NULL, extra, 6 };
    pdbx_launch_cmd *cmd = malloc(sizeof *cmd);
    char err[512] = "", line[4096];
    assert_int_equal(pdbx_launch_argv(&s, NULL, &e, &t, 2, cmd, err, sizeof err), 0);
    pdbx_launch_quote(cmd->argv, cmd->argc, line, sizeof line);
    assert_string_equal(line, "mpirun --bind-to none -np 2 /b/pdbx-engine --spec /tmp/spec.json "
                              "--validate 1x1x2 --mbs 1 --out '/tmp/r x.json'");
    free(cmd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mpirun_hostfile), cmocka_unit_test(test_mpirun_hosts),
        cmocka_unit_test(test_srun_in_allocation), cmocka_unit_test(test_local),
        cmocka_unit_test(test_words), cmocka_unit_test(test_sbatch_script),
        cmocka_unit_test(test_foreground_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
