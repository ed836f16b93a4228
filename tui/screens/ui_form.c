/* ui_form.c: the new-sweep form. Every field is applied to a copy of the preset's spec with
 * pdbx_spec_set, so each field's error is the planner's own one-line message, shown inline;
 * then pdbx_spec_validate checks the whole, pdbx_plan_expand gives the preview (points,
 * predicted memory, OOM marks) and pdbx_launch_check (engine/launch/launch_check.h) asks the
 * engine what the launch will ask it (backend there, dtype supported): the form calls a sweep
 * valid only when the launch will start it. Every message that belongs to a field marks it '!'.
 * F5 launches in the background (pdbx_launch_start) and opens the monitor.
 *
 * Fields are text with a cursor (Left/Right, Home/End, Backspace/Delete, horizontal scroll).
 * Choice fields (dtype, backend, true/false) cycle with Left/Right; the model, GPU and sweep
 * preset are text fields with presets, cycled with ^N/^P, and the text last typed in a field
 * stays one step of its cycle, so a typed path is never lost. Drawing: ui_form_draw.c. */
#include "tui/screens/ui_form_internal.h"

#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/launch/launch.h"
#include "engine/launch/launch_check.h"
#include "engine/plan/plan.h"
#include "store/util/fmt.h"
#include "tui/ui_app.h"

static const char *const dtypes[] = { "bf16", "fp16", "fp32", NULL };
static const char *const backends[] = { "auto", "cpu", "cuda", NULL };
static const char *const launchers[] = { "auto", "local", "mpirun", "srun", NULL };
static const char *const onoff[] = { "true", "false", NULL };

/* Preset name lists for the model/gpu/sweep choices, filled at open. */
static char model_names[64][64], gpu_names[32][64], sweep_names[32][64];
static const char *model_choices[65], *gpu_choices[33], *sweep_choices[33];

static void fill_choices(const char *kind, char (*names)[64], size_t cap, const char **choices)
{
    size_t n = pdbx_preset_names(kind, names, cap);
    for (size_t i = 0; i < n; i++)
        choices[i] = names[i];
    choices[n] = NULL;
}

static void add_field(form_state *f, const char *label, const char *field, const char *const *choices,
                      field_kind kind)
{
    form_field *x = &f->f[f->nf++];
    memset(x, 0, sizeof(*x));
    x->label = label;
    x->field = field;
    x->choices = choices;
    x->kind = kind;
}

static form_field *field_named(form_state *f, const char *name)
{
    for (int i = 0; i < f->nf; i++)
        if (strcmp(f->f[i].field, name) == 0) return &f->f[i];
    return NULL;
}

static void setv(form_state *f, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void setv(form_state *f, const char *name, const char *fmt, ...)
{
    form_field *x = field_named(f, name);
    if (!x) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->value, sizeof(x->value), fmt, ap);
    va_end(ap);
}

/* The field values that reproduce a spec. */
static void values_from_spec(form_state *f, const pdbx_spec *s)
{
    setv(f, "model", "%s", s->model.name);
    setv(f, "layers", "%d", s->layers_profiled);
    setv(f, "seq_len", "%d", s->seq_len);
    setv(f, "dtype", "%s", pdbx_dtype_name(s->dtype));
    setv(f, "backend", "%s", pdbx_backend_name(s->backend));
    setv(f, "gpu", "%s", s->gpu.name);
    setv(f, "gpus_per_node", "%d", s->gpus_per_node);
    setv(f, "nodes", "%d", s->nodes);
    setv(f, "launcher", "%s", pdbx_launcher_name(s->launcher));
    /* TPxPPxDP, or TPxPPxDPxEP where EP > 1: the text the field takes back, so a preset's EP
       configs survive the form */
    char cfg[256] = "";
    size_t n = 0;
    for (int i = 0; i < s->nconfigs && n + 24 < sizeof(cfg); i++) {
        const pdbx_parallel *c = &s->configs[i];
        char one[24];
        pdbx_fmt_config(PDBX_CFG_LABEL_DIMS, c->tp, c->pp, c->dp, pdbx_par_ep(c), one, sizeof one);
        n += (size_t)snprintf(cfg + n, sizeof(cfg) - n, "%s%s", i ? "," : "", one);
    }
    setv(f, "configs", "%s", cfg);
    setv(f, "gpus", "%s", "");
    setv(f, "mbs", "%d:%d", s->mbs_min, s->mbs_max);
    setv(f, "warmup", "%d", s->warmup);
    setv(f, "steps", "%d", s->steps);
    setv(f, "collectives", "%s", s->collectives ? "true" : "false");
    setv(f, "predict_oom", "%s", s->predict_oom ? "true" : "false");
}

/* Every valid TPxPPxDP with TP*PP*DP == gpus under the current spec, into f->combos. */
static void list_combos(form_state *f, int gpus)
{
    f->combos[0] = '\0';
    size_t n = 0;
    int count = 0;
    for (int tp = 1; tp <= gpus; tp++) {
        if (gpus % tp) continue;
        for (int pp = 1; pp <= gpus / tp; pp++) {
            if ((gpus / tp) % pp) continue;
            int dp = gpus / tp / pp;
            char c[48], err[256];
            snprintf(c, sizeof(c), "%dx%dx%d", tp, pp, dp);
            pdbx_spec s = f->spec;
            if (pdbx_spec_set(&s, "configs", c, err, sizeof(err)) != 0 || pdbx_spec_validate(&s, err, sizeof(err)) != 0)
                continue;
            if (n + strlen(c) + 2 < sizeof(f->combos))
                n += (size_t)snprintf(f->combos + n, sizeof(f->combos) - n, "%s%s", count ? "," : "", c);
            count++;
        }
    }
}

/* The field a message is about: planner and engine messages start with the spec field's name
 * ("dtype: ...", "backend cuda: ...", "mbs_min: ...", "tp: ..."). Moves the message onto that
 * field (marked '!'); it stays in spec_error when no field takes it. */
static void mark_field(form_state *f, char *msg)
{
    static const struct { const char *word, *field; } alias[] = {
        { "mbs_min", "mbs" }, { "mbs_max", "mbs" }, { "tp", "configs" }, { "pp", "configs" },
        { "dp", "configs" }, { "ep", "configs" }, { "layers_profiled", "layers" }, { "simulate-nodes", "launcher" },
    };
    char word[32];
    size_t n = strcspn(msg, ": ");
    if (n == 0 || n >= sizeof(word))
        return;
    memcpy(word, msg, n);
    word[n] = '\0';
    const char *name = word;
    for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
        if (strcmp(word, alias[i].word) == 0) name = alias[i].field;
    form_field *x = field_named(f, name);
    if (!x)
        return;
    snprintf(x->error, sizeof(x->error), "%s", msg);
    msg[0] = '\0';
}

/* Applies every field to the preset's spec; sets per-field errors, the spec error and the
 * preview points. */
static void recompute(form_state *f)
{
    char err[256];
    pdbx_spec s;
    pdbx_spec_defaults(&s);
    if (f->preset[0] && pdbx_spec_load(f->preset, &s, err, sizeof(err)) != 0)
        pdbx_spec_defaults(&s);
    int bad = 0;
    int gpus = 0;
    memset(&f->lopts, 0, sizeof f->lopts);
    for (int i = 0; i < f->nf; i++) {
        form_field *x = &f->f[i];
        x->error[0] = '\0';
        if (strcmp(x->field, "preset") == 0) continue;
        if (strcmp(x->field, "hosts") == 0) {    /* not a spec field: pdbx run's --hosts */
            if (x->value[0] && pdbx_launch_hosts_parse(x->value, s.gpus_per_node, &f->lopts, x->error,
                                                       sizeof(x->error)) != 0)
                bad = 1;
            continue;
        }
        if (!x->value[0]) {
            if (strcmp(x->field, "gpus") != 0) {
                snprintf(x->error, sizeof(x->error), "%s: empty (give a value)", x->field);
                bad = 1;
            }
            continue;
        }
        if (pdbx_spec_set(&s, x->field, x->value, x->error, sizeof(x->error)) != 0)
            bad = 1;
        else if (!strcmp(x->field, "model") && s.layers_profiled > 1 && !strcmp(field_named(f, "layers")->value, "1"))
            setv(f, "layers", "%d", s.layers_profiled);   /* one layer of each kind (pdbx_model_layer_kinds) */
        else if (strcmp(x->field, "gpus") == 0)
            gpus = atoi(x->value);
    }
    f->spec = s;
    free(f->points);
    f->points = NULL;
    f->npoints = 0;
    f->spec_ok = 0;
    f->spec_error[0] = '\0';
    f->combos[0] = '\0';
    if (bad)
        return;
    /* the whole: the planner, then what the launch asks the engine (same function) */
    pdbx_launch_env env;
    pdbx_launch_env_probe(&env, &s, &f->lopts, NULL, 0);
    if (pdbx_spec_validate(&s, f->spec_error, sizeof(f->spec_error)) != 0 ||
        pdbx_plan_expand(&s, &f->points, &f->npoints, f->spec_error, sizeof(f->spec_error)) != 0 ||
        pdbx_launch_plan_check(&s, &f->lopts, &env, f->spec_error, sizeof(f->spec_error)) != 0 ||
        pdbx_launch_check(&s, &f->check, f->spec_error, sizeof(f->spec_error)) != 0) {
        mark_field(f, f->spec_error);
        return;
    }
    f->spec_ok = 1;
    if (gpus > 0)
        list_combos(f, gpus);
}

static void form_close(void *st)
{
    form_state *f = st;
    if (f)
        free(f->points);
    free(f);
}

static void *form_open(ui_app *app, const void *arg)
{
    const char *preset = arg;
    form_state *f = ui_screen_state_new(app, sizeof(*f), "the form");
    if (!f)
        return NULL;
    fill_choices("models", model_names, 63, model_choices);
    fill_choices("gpus", gpu_names, 31, gpu_choices);
    fill_choices("sweeps", sweep_names, 31, sweep_choices);
    snprintf(f->preset, sizeof(f->preset), "%s", preset && *preset ? preset : "quick");
    add_field(f, "sweep preset", "preset", sweep_choices, F_PRESETS);
    add_field(f, "model", "model", model_choices, F_PRESETS);
    add_field(f, "layers to profile", "layers", NULL, F_TEXT);
    add_field(f, "seq_len", "seq_len", NULL, F_TEXT);
    add_field(f, "dtype", "dtype", dtypes, F_CHOICE);
    add_field(f, "backend", "backend", backends, F_CHOICE);
    add_field(f, "GPU preset", "gpu", gpu_choices, F_PRESETS);
    add_field(f, "GPUs per node", "gpus_per_node", NULL, F_TEXT);
    add_field(f, "nodes", "nodes", NULL, F_TEXT);
    add_field(f, "TPxPPxDP configs", "configs", NULL, F_TEXT);
    add_field(f, "or a GPU count", "gpus", NULL, F_TEXT);
    add_field(f, "MBS min:max", "mbs", NULL, F_TEXT);
    add_field(f, "warmup steps", "warmup", NULL, F_TEXT);
    add_field(f, "measured steps", "steps", NULL, F_TEXT);
    add_field(f, "collectives", "collectives", onoff, F_CHOICE);
    add_field(f, "stop at pred. OOM", "predict_oom", onoff, F_CHOICE);
    /* where it runs, last: on a small terminal the list scrolls to them (draw_fields) */
    add_field(f, "launcher", "launcher", launchers, F_CHOICE);
    add_field(f, "hosts (a:8,b:8)", "hosts", NULL, F_TEXT);
    char err[256];
    pdbx_spec s;
    pdbx_spec_defaults(&s);
    if (pdbx_spec_load(f->preset, &s, err, sizeof(err)) != 0) {
        ui_app_message(app, 1, "%s (using the built-in defaults)", err);
        f->preset[0] = '\0';
        pdbx_spec_defaults(&s);
    }
    snprintf(f->f[0].value, sizeof(f->f[0].value), "%s", f->preset);
    values_from_spec(f, &s);
    f->sel = 1;
    f->cursor = (int)strlen(f->f[1].value);
    recompute(f);
    return f;
}

/* Starts the sweep and opens its monitor (the form's checks passed). */
static void start_sweep(ui_app *app, void *st)
{
    form_state *f = st;
    char err[512];
    pdbx_launch l;
    char busy[256];
    ui_app_busy(app, "starting the sweep (%s) ...", pdbx_engine_path());
    /* pdbx run's warning (launch_check.h): the tenth of a second it watches the CPUs is inside the
     * wait for the launch that the busy line already announces */
    int noisy = pdbx_launch_busy_warning(&f->spec, &f->lopts, busy, sizeof busy);
    if (pdbx_launch_start_ex(&f->spec, &f->lopts, app->store_dir, &l, NULL, err, sizeof(err)) != 0) {
        ui_app_message(app, 1, "launch failed: %s", err);
        return;
    }
    if (ui_app_replace(app, UI_SCREEN_MONITOR, &(ui_monitor_arg){ .id = l.run_id }) != 0)
        return;
    if (noisy)
        ui_app_message(app, 1, "launched %s; warning: %s", l.run_id, busy);
    else
        ui_app_message(app, 0, "launched %s in the background (log: %s); Esc keeps it running",
                       l.run_id, l.log_path);
}

static void do_launch(ui_app *app, form_state *f)
{
    char err[512];
    recompute(f);
    if (!f->spec_ok) {
        for (int i = 0; i < f->nf; i++)
            if (f->f[i].error[0]) {
                f->sel = i;         /* the field to fix, with its cursor at the end */
                f->cursor = (int)strlen(f->f[i].value);
                f->first = 0;
                ui_app_message(app, 1, "%s", f->f[i].error);
                return;
            }
        ui_app_message(app, 1, "%s", f->spec_error[0] ? f->spec_error : "the sweep is not valid");
        return;
    }
    /* a second sweep on the same devices disturbs both: say so and ask (pdbx run's rule) */
    char id[PDBX_RUN_ID_MAX], what[256];
    if (pdbx_launch_find_running(&f->spec, app->store_dir, id, what, sizeof what, err,
                                 sizeof err) == 1) {
        ui_app_confirm(app, start_sweep, f, "launch anyway? %s runs here (%s); two sweeps on "
                       "the same devices disturb both", id, what);
        return;
    }
    start_sweep(app, f);
}

/* One step through a field's choices, with the text last typed there as one more step when it
 * is none of them: cycling never loses what was typed. */
static void cycle_choice(form_state *f, form_field *x, int d)
{
    const char *steps[72];
    int n = 0, cur = -1, typed_is_choice = 0;
    for (int i = 0; x->choices[i] && n < 71; i++) {
        steps[n++] = x->choices[i];
        typed_is_choice |= strcasecmp(x->choices[i], x->typed) == 0;
    }
    if (x->typed[0] && !typed_is_choice)
        steps[n++] = x->typed;
    if (n == 0)
        return;
    for (int i = 0; i < n && cur < 0; i++)
        if (strcasecmp(steps[i], x->value) == 0) cur = i;
    cur = cur < 0 ? (d > 0 ? 0 : n - 1) : (cur + n + d) % n;
    char v[sizeof(x->value)];
    snprintf(v, sizeof(v), "%s", steps[cur]);      /* steps may point at x->typed */
    memcpy(x->value, v, sizeof(v));
    f->cursor = (int)strlen(x->value);
}

/* A changed value: a new preset reloads every field when it names a real preset; then the
 * planner checks the whole again (keeping the preset field's own error). */
static void value_changed(form_state *f, form_field *x)
{
    if (strcmp(x->field, "preset") == 0) {
        pdbx_spec s;
        char err[256];
        pdbx_spec_defaults(&s);
        if (pdbx_spec_load(x->value, &s, err, sizeof(err)) == 0) {
            snprintf(f->preset, sizeof(f->preset), "%.63s", x->value);
            values_from_spec(f, &s);
            x->error[0] = '\0';
        } else {
            snprintf(x->error, sizeof(x->error), "%s", err);
        }
    }
    char keep[sizeof(f->f[0].error)];
    snprintf(keep, sizeof(keep), "%s", f->f[0].error);
    recompute(f);
    if (strcmp(x->field, "preset") == 0)
        snprintf(f->f[0].error, sizeof(f->f[0].error), "%s", keep);
}

/* Keys that move between fields or scroll the preview; UI_H_NONE for the others. */
static int nav_key(form_state *f, int key, ui_action act)
{
    if (act == UI_ACT_UP)
        f->sel = (f->sel + f->nf - 1) % f->nf;
    else if (act == UI_ACT_DOWN || key == '\n' || key == '\r' || key == KEY_ENTER)
        f->sel = (f->sel + 1) % f->nf;
    else if (act == UI_ACT_PGUP)
        f->preview_top = f->preview_top > 10 ? f->preview_top - 10 : 0;
    else if (act == UI_ACT_PGDN)
        f->preview_top += 10;
    else
        return UI_H_NONE;
    if (act != UI_ACT_PGUP && act != UI_ACT_PGDN) {
        f->cursor = (int)strlen(f->f[f->sel].value);
        f->first = 0;
    }
    return UI_H_HANDLED;
}

/* The keys that change the selected field's value or its cursor. */
static ui_edit_result edit_key(ui_app *app, form_state *f, form_field *x, int key, ui_action act)
{
    int cycle = act == UI_ACT_PRESET_PREV || act == UI_ACT_PRESET_NEXT;
    int prev = act == UI_ACT_PRESET_PREV || act == UI_ACT_CHOICE_PREV;
    /* Left/Right choose only in a choice field; in text (a path) they move the cursor */
    if (x->kind == F_CHOICE && (act == UI_ACT_CHOICE_PREV || act == UI_ACT_CHOICE_NEXT))
        cycle = 1;
    if (cycle && !x->choices) {
        ui_app_message(app, 1, "%s has no presets: type a value", x->label);
        return UI_EDIT_NOOP;
    }
    if (cycle) {
        cycle_choice(f, x, prev ? -1 : 1);
        return UI_EDIT_CHANGED;
    }
    ui_edit_result r = ui_keys_edit(x->value, sizeof(x->value), &f->cursor, key, act);
    if (r == UI_EDIT_CHANGED)
        memcpy(x->typed, x->value, sizeof(x->typed));
    return r;
}

static int form_key(ui_app *app, void *st, int key, ui_action act)
{
    form_state *f = st;
    form_field *x = &f->f[f->sel];
    if (act == UI_ACT_BACK) {
        ui_app_pop(app);
        return UI_H_HANDLED;
    }
    if (act == UI_ACT_LAUNCH) {
        do_launch(app, f);
        return UI_H_HANDLED;
    }
    if (nav_key(f, key, act) != UI_H_NONE)
        return UI_H_HANDLED;
    ui_edit_result r;
    if (act == UI_ACT_USE_COMBOS) {
        if (!f->combos[0]) {
            ui_app_message(app, 1, "give a GPU count first: the valid combinations are listed for it");
            return UI_H_HANDLED;
        }
        setv(f, "configs", "%s", f->combos);
        setv(f, "gpus", "%s", "");
        r = UI_EDIT_CHANGED;
    } else {
        r = edit_key(app, f, x, key, act);
    }
    if (r == UI_EDIT_NONE)
        return UI_H_NONE;
    if (r == UI_EDIT_CHANGED)
        value_changed(f, x);
    return UI_H_HANDLED;
}


const ui_screen_ops ui_screen_form = { "new sweep", UI_SCR_FORM, 0, form_open, form_close, ui_form_draw, form_key,
                                       NULL, NULL, NULL };
