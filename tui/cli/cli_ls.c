/* cli_ls.c: `pdbx ls`: the runs in the store, newest first, as an aligned table or JSON. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tui/cli/cli.h"
#include "store/util/fmt.h"

static const pdbx_cli_opt ls_opts[] = {
    PDBX_CLI_OPT_STORE,
    { "json", NULL, "print a JSON array of run summaries" },
    { NULL, NULL, NULL },
};

static const pdbx_cli_spec ls_spec = {
    .name = "ls", .args = "", .opts = ls_opts, .min_args = 0, .max_args = 0,
    .about = "Lists the runs in the store, newest first: created, id, model, backend/GPU, TP\n"
             "degrees, MBS range, status (running ones with their progress) and file size.\n"
             "A corrupt or failed run is listed with the reason.",
};

typedef struct {
    const char *store;
    int json;
} ls_args;

static int ls_opt(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err, size_t errlen)
{
    ls_args *a = ctx;
    (void)err, (void)errlen;
    if (strcmp(opt->name, "store") == 0)
        a->store = value;
    else if (strcmp(opt->name, "json") == 0)
        a->json = 1;
    return 0;
}

static void status_text(const pdbx_run_summary *s, char *buf, size_t len)
{
    if (s->status == PDBX_RUN_RUNNING && s->points_total > 0)
        snprintf(buf, len, "running %d%%", s->percent);
    else
        snprintf(buf, len, "%s", pdbx_run_status_name(s->status));
}

static void backend_gpu(const pdbx_run_summary *s, char *buf, size_t len)
{
    if (!s->gpu[0] || strcmp(s->backend, s->gpu) == 0)
        snprintf(buf, len, "%s", s->backend[0] ? s->backend : PDBX_NA);
    else if (!s->backend[0])
        snprintf(buf, len, "%s", s->gpu);
    else
        snprintf(buf, len, "%s/%s", s->backend, s->gpu);
}

static int print_json(const pdbx_run_summary *runs, size_t n, FILE *out)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const pdbx_run_summary *s = &runs[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(arr, o))
            goto fail;
        cJSON *tp = cJSON_CreateIntArray(s->tp, s->ntp);
        if (!tp || !cJSON_AddItemToObject(o, "tp", tp))
            goto fail;
        if (!cJSON_AddStringToObject(o, "id", s->id)
            || !cJSON_AddNumberToObject(o, "created", s->created)
            || !cJSON_AddStringToObject(o, "model", s->model)
            || !cJSON_AddStringToObject(o, "backend", s->backend)
            || !cJSON_AddStringToObject(o, "gpu", s->gpu)
            || !cJSON_AddNumberToObject(o, "mbs_min", s->mbs_min)
            || !cJSON_AddNumberToObject(o, "mbs_max", s->mbs_max)
            || !cJSON_AddStringToObject(o, "status", pdbx_run_status_name(s->status))
            || !cJSON_AddNumberToObject(o, "points_done", s->points_done)
            || !cJSON_AddNumberToObject(o, "points_total", s->points_total)
            || !cJSON_AddNumberToObject(o, "percent", s->percent)
            || !cJSON_AddNumberToObject(o, "size", (double)s->size)
            || !cJSON_AddStringToObject(o, "message", s->message)
            || (s->launcher[0] && !cJSON_AddStringToObject(o, "launcher", s->launcher))
            || !cJSON_AddNumberToObject(o, "noise_points", s->noise_points)
            || !cJSON_AddNumberToObject(o, "busy_points", s->busy_points))
            goto fail;
    }
    return pdbx_cli_emit_json(out, arr);
fail:
    cJSON_Delete(arr);
    return -1;
}

enum { C_CREATED, C_ID, C_MODEL, C_BACKEND, C_TP, C_MBS, C_STATUS, C_SIZE, C_NOTE, C_NCOLS };

static int print_table(const pdbx_store *st, const pdbx_run_summary *runs, size_t n, FILE *out)
{
    if (n == 0) {
        pdbx_cli_line(out, "no runs in %s", pdbx_store_dir(st));
        return 0;
    }
    pdbx_table *t = pdbx_table_new(C_NCOLS);
    if (!t)
        return -1;
    static const struct { const char *title; pdbx_align align; } cols[C_NCOLS] = {
        [C_CREATED] = { "created", PDBX_ALIGN_LEFT },  [C_ID] = { "id", PDBX_ALIGN_LEFT },
        [C_MODEL] = { "model", PDBX_ALIGN_LEFT },      [C_BACKEND] = { "backend/gpu", PDBX_ALIGN_LEFT },
        [C_TP] = { "tp", PDBX_ALIGN_LEFT },            [C_MBS] = { "mbs", PDBX_ALIGN_LEFT },
        [C_STATUS] = { "status", PDBX_ALIGN_LEFT },    [C_SIZE] = { "size", PDBX_ALIGN_RIGHT },
        [C_NOTE] = { "note", PDBX_ALIGN_LEFT },
    };
    int any_note = 0;
    for (size_t c = 0; c < C_NCOLS; c++)
        if (pdbx_table_header(t, c, cols[c].title, cols[c].align) != 0)
            goto fail;
    for (size_t i = 0; i < n; i++) {
        const pdbx_run_summary *s = &runs[i];
        char created[32], bg[64], tps[128], mbs[32], status[32], size[32], load[64] = "";
        pdbx_fmt_time(s->created, created, sizeof created);
        backend_gpu(s, bg, sizeof bg);
        pdbx_fmt_int_list(s->tp, (size_t)(s->ntp > 0 ? s->ntp : 0), tps, sizeof tps);
        if (s->mbs_min <= 0)
            snprintf(mbs, sizeof mbs, "%s", PDBX_NA);
        else if (s->mbs_min == s->mbs_max)
            snprintf(mbs, sizeof mbs, "%d", s->mbs_min);
        else
            snprintf(mbs, sizeof mbs, "%d..%d", s->mbs_min, s->mbs_max);
        status_text(s, status, sizeof status);
        /* a run whose nodes were all this machine says so wherever it is shown */
        int simulated = strncmp(s->launcher, "simulated", 9) == 0;
        /* a run measured under load says so where it is listed (pdbx show tells how much) */
        if (s->busy_points > 0)
            snprintf(load, sizeof load, "measured under load (%d of %d points)", s->busy_points,
                     s->noise_points);
        pdbx_fmt_size((double)s->size, size, sizeof size);
        if (pdbx_table_add_row(t) != 0
            || pdbx_table_set(t, C_CREATED, "%s", created) || pdbx_table_set(t, C_ID, "%s", s->id)
            || pdbx_table_set(t, C_MODEL, "%s", s->model[0] ? s->model : PDBX_NA)
            || pdbx_table_set(t, C_BACKEND, "%s", bg) || pdbx_table_set(t, C_TP, "%s", tps)
            || pdbx_table_set(t, C_MBS, "%s", mbs) || pdbx_table_set(t, C_STATUS, "%s", status)
            || pdbx_table_set(t, C_SIZE, "%s", size)
            || pdbx_table_set(t, C_NOTE, "%s%s%s%s%s", simulated ? s->launcher : "",
                              simulated && (s->message[0] || load[0]) ? "; " : "", load,
                              load[0] && s->message[0] ? "; " : "", s->message))
            goto fail;
        any_note |= s->message[0] != '\0' || simulated || load[0];
    }
    pdbx_table_hide(t, C_NOTE, !any_note);
    pdbx_table_print(t, out, NULL);
    pdbx_table_free(t);
    return 0;
fail:
    pdbx_table_free(t);
    return -1;
}

int pdbx_cli_list_runs(const char *cmd, pdbx_store *st, int json, FILE *out)
{
    char err[1024] = "";
    pdbx_run_summary *runs = NULL;
    size_t n = 0;
    if (pdbx_store_list(st, &runs, &n, err, sizeof err) != 0)
        return pdbx_cli_fail(PDBX_EXIT_FAIL, cmd, "%s", err[0] ? err : "cannot list the store");
    int rc = json ? print_json(runs, n, out) : print_table(st, runs, n, out);
    free(runs);
    if (rc != 0)
        return pdbx_cli_fail(PDBX_EXIT_FAIL, cmd, "out of memory");
    return PDBX_EXIT_OK;
}

int pdbx_cmd_ls(int argc, char **argv)
{
    ls_args a = { 0 };
    char **pos;
    int npos;
    int rc = pdbx_cli_parse(&ls_spec, argc, argv, ls_opt, &a, &pos, &npos);
    if (rc != 0)
        return pdbx_cli_parse_exit(rc);
    pdbx_store *st;
    if ((rc = pdbx_cli_open_store(ls_spec.name, a.store, 0, &st)) != 0)
        return rc;
    rc = pdbx_cli_list_runs(ls_spec.name, st, a.json, stdout);
    pdbx_store_close(st);
    return rc;
}
