/* events_run.c: the event schema of the run-wide events (events.h, docs/events.md): coll,
 * infer_tokens, infer_attn, progress, warning and run_end with its causes. With events.c and
 * events_point.c the only files in pdbx that spell an event type or field name. */
#include "store/events.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/json_fields.h"
#include "store/util/err.h"

#include "store/events_internal.h"

/* done, total, point (written as null when < 0), elapsed_s, coll_done, coll_total */
static const jf_field progress_fields[] = {
    F(pdbx_ev_progress, NUM, done, "done"), F(pdbx_ev_progress, NUM, total, "total"),
    F(pdbx_ev_progress, INT, point, "point"), F(pdbx_ev_progress, NUM, elapsed_s, "elapsed_s"),
    F(pdbx_ev_progress, NUM, coll_done, "coll_done"), F(pdbx_ev_progress, NUM, coll_total, "coll_total"),
    F(pdbx_ev_progress, NUM, infer_done, "infer_done"), F(pdbx_ev_progress, NUM, infer_total, "infer_total"),
};
static const jf_field infer_attn_fields[] = {
    F(pdbx_infer_attn, INT, tp, "tp"), F(pdbx_infer_attn, INT, batch, "batch"),
    F(pdbx_infer_attn, INT, chunk, "chunk"), F(pdbx_infer_attn, INT, kv, "kv"),
    F(pdbx_infer_attn, INT, heads, "heads"), F(pdbx_infer_attn, INT, kv_heads, "kv_heads"),
};
static const jf_field coll_fields[] = {
    F(pdbx_coll_result, STR, coll, "coll"), F(pdbx_coll_result, NUM, bytes, "bytes"),
    F(pdbx_coll_result, INT, nranks, "nranks"), F(pdbx_coll_result, INT, ranks_per_node, "ranks_per_node"),
    F(pdbx_coll_result, NUM, algbw, "algbw"), F(pdbx_coll_result, NUM, busbw, "busbw"),
    F(pdbx_coll_result, INT, nodes, "nodes"), F(pdbx_coll_result, BOOL, spans_nodes, "spans_nodes"),
    F(pdbx_coll_result, BOOL, in_place, "in_place"),
};

/* ---- the run --------------------------------------------------------------------------- */

cJSON *pdbx_event_coll(const pdbx_coll_result *r)
{
    cJSON *ev = ev_new_event(PDBX_EV_COLL);
    int ok = ev && jf_put_fields(ev, r, coll_fields, 1) &&
             jf_add(ev, "stats", pdbx_stats_to_json(&r->time)) &&
             jf_put_fields(ev, r, coll_fields + 1, JF_N(coll_fields) - 1);
    return jf_done(ev, ok);
}

int pdbx_event_decode_coll(const cJSON *ev, pdbx_coll_result *r, char *err, size_t errlen)
{
    const char *coll = jf_str(ev, "coll");
    memset(r, 0, sizeof *r);
    if (!coll || !*coll)
        return pdbx_fail(err, errlen, "coll event: field \"coll\" must be a collective name");
    if (pdbx_stats_from_json(cJSON_GetObjectItemCaseSensitive(ev, "stats"), &r->time) != 0)
        return pdbx_fail(err, errlen, "coll event (%s): field \"stats\" must be a stats object", coll);
    r->algbw = r->busbw = NAN;
    r->in_place = 1;   /* runs recorded before the field ran every collective in place */
    jf_get_fields(ev, r, coll_fields, JF_N(coll_fields));
    return 0;
}

cJSON *pdbx_event_infer_tokens(const pdbx_infer_tokens *r)
{
    cJSON *ev = ev_new_event(PDBX_EV_INFER_TOKENS);
    cJSON *ops = cJSON_CreateObject();
    int ok = ev && ops && jf_put_num(ev, "tp", r->tp) && jf_put_num(ev, "tokens", r->tokens);
    for (int op = 0; ok && op < PDBX_OP_COUNT; op++)
        if (r->op[op].count > 0)
            ok = jf_add(ops, pdbx_op_name((pdbx_op)op), pdbx_stats_to_json(&r->op[op]));
    if (ok) {
        ok = jf_add(ev, "ops", ops);
        ops = NULL;
    }
    cJSON_Delete(ops);
    return jf_done(ev, ok);
}

int pdbx_event_decode_infer_tokens(const cJSON *ev, pdbx_infer_tokens *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(ev, "ops");
    if (!jf_int(ev, "tp", &r->tp) || r->tp < 1 || r->tp > PDBX_RUN_MAX_RANKS)
        return pdbx_fail(err, errlen, "infer_tokens event: field \"tp\" must be 1..%d", PDBX_RUN_MAX_RANKS);
    if (!jf_int(ev, "tokens", &r->tokens) || r->tokens < 1)
        return pdbx_fail(err, errlen, "infer_tokens event (tp %d): field \"tokens\" must be a positive integer",
                         r->tp);
    if (!cJSON_IsObject(ops))
        return pdbx_fail(err, errlen, "infer_tokens event (tp %d, tokens %d): field \"ops\" must be an object",
                         r->tp, r->tokens);
    for (const cJSON *it = ops->child; it; it = it->next) {
        int op = pdbx_op_from_name(it->string ? it->string : "");
        if (op < 0)
            continue;   /* an op this build does not know (forward compatible) */
        if (pdbx_stats_from_json(it, &r->op[op]) != 0)
            return pdbx_fail(err, errlen, "infer_tokens event (tp %d, tokens %d, op %s): must be a stats object",
                             r->tp, r->tokens, it->string);
    }
    return 0;
}

cJSON *pdbx_event_infer_attn(const pdbx_infer_attn *r)
{
    cJSON *ev = ev_new_event(PDBX_EV_INFER_ATTN);
    int ok = ev && jf_put_fields(ev, r, infer_attn_fields, JF_N(infer_attn_fields)) &&
             jf_put_str(ev, "phase", r->chunk > 0 ? "prefill" : "decode") &&
             jf_add(ev, "stats", pdbx_stats_to_json(&r->time));
    return jf_done(ev, ok);
}

int pdbx_event_decode_infer_attn(const cJSON *ev, pdbx_infer_attn *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->chunk = r->kv = -1;
    jf_get_fields(ev, r, infer_attn_fields, JF_N(infer_attn_fields));
    if (r->tp < 1 || r->tp > PDBX_RUN_MAX_RANKS || r->batch < 1 || r->chunk < 0 || r->kv < 0)
        return pdbx_fail(err, errlen, "infer_attn event: fields tp, batch (>= 1), chunk and kv (>= 0) must be "
                         "integers, got tp %d batch %d chunk %d kv %d", r->tp, r->batch, r->chunk, r->kv);
    if (pdbx_stats_from_json(cJSON_GetObjectItemCaseSensitive(ev, "stats"), &r->time) != 0)
        return pdbx_fail(err, errlen, "infer_attn event (tp %d, batch %d, chunk %d, kv %d): field \"stats\" "
                         "must be a stats object", r->tp, r->batch, r->chunk, r->kv);
    return 0;
}

cJSON *pdbx_event_progress(const pdbx_ev_progress *p)
{
    cJSON *ev = ev_new_event(PDBX_EV_PROGRESS);
    int ok = ev && jf_put_fields(ev, p, progress_fields, 2) &&
             jf_add(ev, "point", p->point >= 0 ? cJSON_CreateNumber(p->point) : cJSON_CreateNull()) &&
             jf_put_str(ev, "op", p->op) && jf_put_fields(ev, p, progress_fields + 3, 1) &&
             jf_put_num_or_null(ev, "eta_s", p->eta_s) &&
             jf_put_fields(ev, p, progress_fields + 4, 2) &&
             (!(p->infer_total > 0) || jf_put_fields(ev, p, progress_fields + 6, 2));
    return jf_done(ev, ok);
}

void pdbx_event_decode_progress(const cJSON *ev, pdbx_ev_progress *out)
{
    jf_get_fields(ev, out, progress_fields, JF_N(progress_fields));
    out->op = jf_str(ev, "op") ? jf_str(ev, "op") : out->op;
    out->eta_s = NAN;
    jf_num(ev, "eta_s", &out->eta_s);
}

cJSON *pdbx_event_warning(const char *message)
{
    cJSON *ev = ev_new_event(PDBX_EV_WARNING);
    return jf_done(ev, ev && jf_put_str(ev, "message", message));
}

int pdbx_event_decode_warning(const cJSON *ev, const char **message, char *err, size_t errlen)
{
    if (!(*message = jf_str(ev, "message")))
        return pdbx_fail(err, errlen, "warning event: field \"message\" must be a string");
    return 0;
}

const char pdbx_event_by_supervisor[] = "supervisor";

static const char *const cause_names[PDBX_CAUSE_COUNT] = {
    "", "pdbx_cancel", "explorer", "ctrl_c", "signal", "supervisor_lost", "write_failed",
};
static const char *const cause_texts[PDBX_CAUSE_COUNT] = {
    "", "pdbx cancel", "the explorer's cancel", "Ctrl-C", "a signal", "supervisor lost",
    "a failed write",
};
static const char *const in_flight_names[] = { "", "none", "finished", "dropped" };

const char *pdbx_end_cause_name(pdbx_end_cause c)
{
    return (unsigned)c < PDBX_CAUSE_COUNT ? cause_names[c] : "";
}

const char *pdbx_end_cause_text(pdbx_end_cause c)
{
    return (unsigned)c < PDBX_CAUSE_COUNT ? cause_texts[c] : "";
}

pdbx_end_cause pdbx_end_cause_from_name(const char *name)
{
    int i = name && *name ? jf_name_index(name, cause_names, PDBX_CAUSE_COUNT) : -1;
    return i > 0 ? (pdbx_end_cause)i : PDBX_CAUSE_NONE;
}

const char *pdbx_in_flight_name(pdbx_in_flight f)
{
    return (unsigned)f < JF_N(in_flight_names) ? in_flight_names[f] : "";
}

cJSON *pdbx_event_run_end_ex(const pdbx_ev_run_end *e)
{
    cJSON *ev = ev_new_event(PDBX_EV_RUN_END);
    int ok = ev && jf_put_str(ev, "status", pdbx_run_status_name(e->status)) &&
             jf_put_str(ev, "reason", e->reason) && (!e->by || jf_put_str(ev, "by", e->by)) &&
             (isnan(e->elapsed_s) || jf_put_num(ev, "elapsed_s", e->elapsed_s)) &&
             (e->cause == PDBX_CAUSE_NONE || jf_put_str(ev, "cause", pdbx_end_cause_name(e->cause))) &&
             (e->in_flight == PDBX_IN_FLIGHT_UNKNOWN ||
              jf_put_str(ev, "in_flight", pdbx_in_flight_name(e->in_flight))) &&
             (e->in_flight_point < 0 || jf_put_num(ev, "in_flight_point", e->in_flight_point));
    return jf_done(ev, ok);
}

cJSON *pdbx_event_run_end(pdbx_run_status status, const char *reason, double elapsed_s,
                          const char *by)
{
    pdbx_ev_run_end e = { .status = status, .reason = reason, .elapsed_s = elapsed_s, .by = by,
                          .in_flight_point = -1 };
    return pdbx_event_run_end_ex(&e);
}

int pdbx_event_decode_run_end(const cJSON *ev, pdbx_ev_run_end *out, char *err, size_t errlen)
{
    const char *st = jf_str(ev, "status");
    out->reason = jf_str(ev, "reason");
    out->by = jf_str(ev, "by");
    out->cause = pdbx_end_cause_from_name(jf_str(ev, "cause"));
    const char *fl = jf_str(ev, "in_flight");
    int f = fl ? jf_name_index(fl, in_flight_names, JF_N(in_flight_names)) : -1;
    out->in_flight = f > 0 ? (pdbx_in_flight)f : PDBX_IN_FLIGHT_UNKNOWN;
    out->in_flight_point = -1;
    jf_int(ev, "in_flight_point", &out->in_flight_point);
    out->elapsed_s = NAN;
    jf_num(ev, "elapsed_s", &out->elapsed_s);
    int s = PDBX_RUN_COMPLETE;   /* the statuses a run ends with: COMPLETE to FAILED */
    while (s <= PDBX_RUN_FAILED && !(st && strcmp(st, pdbx_run_status_name((pdbx_run_status)s)) == 0))
        s++;
    out->status = s <= PDBX_RUN_FAILED ? (pdbx_run_status)s : PDBX_RUN_FAILED;
    if (s <= PDBX_RUN_FAILED)
        return 0;
    pdbx_errf(err, errlen, "run_end event: field \"status\" is \"%s\"; allowed: complete, cancelled, failed",
              st ? st : "(missing)");
    return -1;
}
