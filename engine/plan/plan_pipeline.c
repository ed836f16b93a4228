/* plan_pipeline.c: the 1F1B schedule (plan_pipeline.h). */
#include "engine/plan/plan_pipeline.h"

const char *pdbx_pipe_kind_name(pdbx_pipe_kind k)
{
    static const char *const names[PDBX_PIPE_KIND_COUNT] = {
        "fwd", "bwd", "send_act", "recv_act", "send_grad", "recv_grad",
    };
    return k >= 0 && k < PDBX_PIPE_KIND_COUNT ? names[k] : "?";
}

int pdbx_pipe_warmup(int pp, int stage, int num_mb)
{
    if (pp < 1 || stage < 0 || stage >= pp || num_mb < 1)
        return -1;
    int w = pp - stage - 1;
    return w < num_mb ? w : num_mb;
}

size_t pdbx_pipe_max_steps(int num_mb)
{
    return num_mb > 0 ? 6 * (size_t)num_mb : 0;
}

typedef struct {
    pdbx_pipe_step *out;
    size_t n, cap;
} steps;

static void put(steps *s, pdbx_pipe_kind k, int mb)
{
    if (s->n < s->cap)
        s->out[s->n] = (pdbx_pipe_step){ k, mb };
    s->n++;
}

int pdbx_pipe_schedule(int pp, int stage, int num_mb, pdbx_pipe_step *out, size_t cap)
{
    const int warm = pdbx_pipe_warmup(pp, stage, num_mb);
    if (warm < 0 || cap < pdbx_pipe_max_steps(num_mb))
        return -1;
    const int first = stage == 0, last = stage == pp - 1, steady = num_mb - warm;
    steps s = { out, 0, cap };
    for (int i = 0; i < warm; i++) {
        if (!first)
            put(&s, PDBX_PIPE_RECV_ACT, i);
        put(&s, PDBX_PIPE_FWD, i);
        if (!last)
            put(&s, PDBX_PIPE_SEND_ACT, i);
    }
    if (steady > 0 && !first)
        put(&s, PDBX_PIPE_RECV_ACT, warm);
    for (int i = 0; i < steady; i++) {
        const int f = warm + i;
        put(&s, PDBX_PIPE_FWD, f);
        if (!last) {                       /* lower side of the exchange: send, then receive */
            put(&s, PDBX_PIPE_SEND_ACT, f);
            put(&s, PDBX_PIPE_RECV_GRAD, i);
        }
        put(&s, PDBX_PIPE_BWD, i);
        if (!first) {                      /* upper side: receive the next input, then send */
            if (i + 1 < steady)
                put(&s, PDBX_PIPE_RECV_ACT, f + 1);
            put(&s, PDBX_PIPE_SEND_GRAD, i);
        }
    }
    for (int i = steady; i < num_mb; i++) {
        if (!last)
            put(&s, PDBX_PIPE_RECV_GRAD, i);
        put(&s, PDBX_PIPE_BWD, i);
        if (!first)
            put(&s, PDBX_PIPE_SEND_GRAD, i);
    }
    return (int)s.n;
}
