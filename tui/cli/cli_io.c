/* cli_io.c: what the `pdbx` subcommands share around a run (see cli.h): opening the store and
 * loading a run, the run table and its rows as show and diff print them, and output made safe
 * for a terminal (lines, CSV fields, JSON documents). Option parsing is cli_common.c's. */
#include "tui/cli/cli.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/util/text.h"

/* What an explicit --store DIR is: 1 a store (DIR/runs is a directory), 0 a directory a store
 * may be made in (DIR missing, or an empty directory), -1 neither (a file, or a directory
 * holding other things: making runs/ there would scatter a store into someone's files). */
static int store_dir_kind(const char *dir)
{
    char runs[4096];
    struct stat sb;
    snprintf(runs, sizeof runs, "%s/runs", dir);
    if (stat(runs, &sb) == 0 && S_ISDIR(sb.st_mode))
        return 1;
    if (stat(dir, &sb) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(sb.st_mode))
        return -1;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int empty = 1;
    for (struct dirent *e; empty && (e = readdir(d));)
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
    closedir(d);
    return empty ? 0 : -1;
}

int pdbx_cli_open_store(const char *cmd, const char *dir, int create, pdbx_store **out)
{
    char err[PDBX_CLI_ERR_MAX] = "";
    char def[4096];
    *out = NULL;
    if (dir && !*dir)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, cmd, "--store: the value is empty (allowed: a store directory)");
    if (!dir) {
        if (pdbx_store_default_dir(def, sizeof def, err, sizeof err) != 0)
            return pdbx_cli_fail(PDBX_EXIT_FAIL, cmd, "%s", err[0] ? err : "no default store");
        dir = def;
        create = 1;            /* the default store is ours to create */
    } else {
        /* The one rule for an explicit DIR (docs/cli.md): a store is a directory with runs/;
         * only a command that writes runs (create) makes one, and only where nothing else is. */
        int kind = store_dir_kind(dir);
        if (kind < 0 || (kind == 0 && !create))
            return pdbx_cli_fail(PDBX_EXIT_FAIL, cmd, "--store: '%s' is not a pdbx store (no runs/ "
                                 "directory in it; allowed: a store, or for run, import and the "
                                 "explorer a new or empty directory, which becomes one)", dir);
    }
    if (pdbx_store_open(dir, create, out, err, sizeof err) != 0) {
        *out = NULL;
        return pdbx_cli_fail(PDBX_EXIT_FAIL, cmd, "%s", err[0] ? err : dir);
    }
    return PDBX_EXIT_OK;
}

int pdbx_cli_load_run(const char *cmd, pdbx_store *st, const char *ref, pdbx_run *run)
{
    char err[PDBX_CLI_ERR_MAX] = "";
    pdbx_run_init(run);
    if (strchr(ref, '/')) {
        if (pdbx_run_load_file(ref, run, err, sizeof err) != 0) {
            pdbx_run_free(run);
            pdbx_run_init(run);
            return pdbx_cli_fail(PDBX_EXIT_FAIL, cmd, "%s", err[0] ? err : ref);
        }
        /* Any file loads (a damaged one as CORRUPT); one without a run_start is not a run. */
        if (!run->id[0]) {
            int damaged = run->status == PDBX_RUN_CORRUPT && run->end_reason[0];
            int rc = pdbx_cli_fail(PDBX_EXIT_FAIL, cmd, "%s: not a pdbx run file or recording "
                                   "(no run_start event%s%s)", ref, damaged ? "; " : "",
                                   damaged ? run->end_reason : "");
            pdbx_run_free(run);
            pdbx_run_init(run);
            return rc;
        }
        return PDBX_EXIT_OK;
    }
    char id[PDBX_RUN_ID_MAX];
    if (pdbx_store_resolve(st, ref, id, err, sizeof err) != 0)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, cmd, "%s", err[0] ? err : ref);
    if (pdbx_run_load(st, id, run, err, sizeof err) != 0) {
        pdbx_run_free(run);
        pdbx_run_init(run);
        return pdbx_cli_fail(PDBX_EXIT_FAIL, cmd, "%s", err[0] ? err : id);
    }
    return PDBX_EXIT_OK;
}

void pdbx_cli_line(FILE *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *line = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!line)
        return;
    va_start(ap, fmt);
    vsnprintf(line, (size_t)n + 1, fmt, ap);
    va_end(ap);
    /* The format is ours and has no control characters, so making the whole line safe is
     * making each argument safe. */
    pdbx_text_safe(line, (size_t)n + 1, line);
    fprintf(out, "%s\n", line);
    free(line);
}

void pdbx_csv_field(FILE *out, const char *s)
{
    /* Made terminal-safe first (text.h): a CSV goes to terminals and pagers too, and an op
     * name can come from a run file. Out of memory prints an empty field, never the raw one. */
    char *safe = strdup(s ? s : "");
    if (safe)
        pdbx_text_safe(safe, strlen(safe) + 1, safe);
    const char *p = safe ? safe : "";
    if (!strpbrk(p, ",\"\n\r")) {
        fputs(p, out);
        free(safe);
        return;
    }
    fputc('"', out);
    for (; *p; p++) {
        if (*p == '"')
            fputc('"', out);
        fputc(*p, out);
    }
    fputc('"', out);
    free(safe);
}

size_t pdbx_cli_run_configs(const pdbx_run *run, int only_tp, int (*out)[PDBX_CFG_DIMS], size_t cap)
{
    int all[256][PDBX_CFG_DIMS];
    size_t n = pdbx_run_configs(run, all, sizeof all / sizeof all[0]);
    size_t k = 0;
    for (size_t i = 0; i < n && k < cap; i++) {
        if (only_tp > 0 && all[i][0] != only_tp)
            continue;
        memcpy(out[k++], all[i], sizeof all[i]);
    }
    return k;
}

pdbx_attribution pdbx_cli_attr(int cli_attribution)
{
    return cli_attribution == PDBX_CLI_ATTR_FASOP ? PDBX_ATTR_FASOP : PDBX_ATTR_PURE;
}

int pdbx_cli_runtable(const char *cmd, const pdbx_run *run, int only_tp, pdbx_pass_sel pass,
                      pdbx_runtable *t)
{
    char err[256];
    memset(t, 0, sizeof *t);
    if (pdbx_pass_sel_check(run, pass, "--pass", err, sizeof err) != 0)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, cmd, "%s", err);
    if (pdbx_runtable_build_pass(run, only_tp, pass, t) != 0)
        return pdbx_cli_fail(PDBX_EXIT_FAIL, cmd, "out of memory");
    return 0;
}

void pdbx_cli_row_fill(const pdbx_rt_point *p, const pdbx_rt_col *cols, size_t ncols,
                       pdbx_stat_kind stat, pdbx_cli_row *r)
{
    memset(r, 0, sizeof *r);
    for (size_t c = 0; c < ncols && c < PDBX_RT_MAX_COLS; c++) {
        r->v[c] = pdbx_rt_col_value(p, &cols[c], stat);
        r->valid[c] = isfinite(r->v[c]);
        for (int op = 0; op < PDBX_OP_COUNT; op++)
            if (cols[c].ops & PDBX_OP_BIT(op))
                r->noisy[c] |= pdbx_rt_cell_noisy(&p->op[op]);
    }
    /* measured, never the sum of the columns (store/runtable.h) */
    r->layer = pdbx_rt_value(&p->layer, stat);
    r->total = pdbx_rt_value(&p->total, stat);
    r->layer_valid = isfinite(r->layer);
    r->total_valid = isfinite(r->total);
}

int pdbx_cli_emit_json(FILE *out, cJSON *doc)
{
    /* The printed text, not the tree, is made safe (text.h): one pass covers keys and values
     * of every document, whatever fields a command adds, and the store keeps the bytes as
     * recorded. cJSON escapes the C0 controls itself; invalid UTF-8 it would copy raw. */
    char *text = doc ? cJSON_Print(doc) : NULL;
    cJSON_Delete(doc);
    char *safe = pdbx_json_text_safe(text);
    cJSON_free(text);
    if (!safe)
        return -1;
    fprintf(out, "%s\n", safe);
    free(safe);
    return 0;
}
