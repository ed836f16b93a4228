/* plan_moe.c: the MoE routing model and its token assignment (see plan_moe.h). Everything is
 * closed form over the route's integers: no table of E entries is kept, so nothing allocates. */
#include "engine/plan/plan_moe.h"

#include <math.h>
#include <stdio.h>

int pdbx_moe_route_check(const pdbx_moe_route *r, char *err, size_t errlen)
{
    if (r->tokens < 1 || r->tokens > PDBX_MOE_MAX_TOKENS) {
        snprintf(err, errlen, "moe tokens %lld: allowed 1 .. %lld", (long long)r->tokens,
                 (long long)PDBX_MOE_MAX_TOKENS);
        return -1;
    }
    if (r->experts < 1 || r->experts > PDBX_MOE_MAX_EXPERTS) {
        snprintf(err, errlen, "moe experts %d: allowed 1 .. %d", r->experts, PDBX_MOE_MAX_EXPERTS);
        return -1;
    }
    if (r->top_k < 1 || r->top_k > r->experts) {
        snprintf(err, errlen, "moe top_k %d: allowed 1 .. %d (experts)", r->top_k, r->experts);
        return -1;
    }
    if (r->ep < 1 || r->ep > r->experts || r->experts % r->ep != 0) {
        snprintf(err, errlen, "moe ep %d: allowed a divisor of experts (%d) in 1 .. %d", r->ep,
                 r->experts, r->experts);
        return -1;
    }
    if (!(r->imbalance >= 1.0) || !isfinite(r->imbalance)) {   /* NaN fails the first test */
        snprintf(err, errlen, "moe imbalance %g: allowed a finite number >= 1 (1: balanced)",
                 r->imbalance);
        return -1;
    }
    const double copies = (double)r->ep * (double)r->tokens * (double)r->top_k;
    if (copies > (double)PDBX_MOE_MAX_COPIES) {
        snprintf(err, errlen, "moe copies %.0f (ep x tokens x top_k): allowed up to 2^53", copies);
        return -1;
    }
    return 0;
}

/* G[0], and the quotient and remainder of the rest over experts 1 .. E-1 (plan_moe.h, 1.) */
typedef struct {
    int64_t busy, q, rem;
} shares;

static shares shares_of(const pdbx_moe_route *r)
{
    const int64_t E = r->experts;
    const int64_t copies = (int64_t)r->ep * r->tokens * r->top_k;
    const int64_t cap = (int64_t)r->ep * r->tokens;   /* every token picks it */
    const double want = r->imbalance * (double)copies / (double)E;
    int64_t busy = want >= (double)cap ? cap : (int64_t)floor(want + 0.5);
    const int64_t even = (copies + E - 1) / E;        /* <= cap, as top_k <= E */
    if (busy < even)
        busy = even;   /* f = 1 rounded down would leave another expert the busiest */
    shares s = { .busy = busy, .q = 0, .rem = 0 };
    if (E > 1) {
        s.q = (copies - busy) / (E - 1);
        s.rem = (copies - busy) % (E - 1);
    }
    return s;
}

static int64_t copies_of(const shares *s, int g)
{
    return g == 0 ? s->busy : s->q + (g - 1 < s->rem ? 1 : 0);
}

/* The first copy of expert g in the expert-by-expert layout. */
static int64_t start_of(const shares *s, int g)
{
    if (g == 0)
        return 0;
    const int64_t before = g - 1;   /* experts 1 .. g-1 */
    return s->busy + before * s->q + (before < s->rem ? before : s->rem);
}

/* Copies c in [0, x) with c % ep == s. */
static int64_t dealt_below(int64_t x, int s, int ep)
{
    return x > s ? (x - s + ep - 1) / ep : 0;
}

static int64_t source_copies(const shares *sh, int ep, int s, int g)
{
    const int64_t a = start_of(sh, g), b = a + copies_of(sh, g);
    return dealt_below(b, s, ep) - dealt_below(a, s, ep);
}

int64_t pdbx_moe_expert_copies(const pdbx_moe_route *r, int g)
{
    const shares s = shares_of(r);
    return copies_of(&s, g);
}

int64_t pdbx_moe_source_copies(const pdbx_moe_route *r, int s, int g)
{
    const shares sh = shares_of(r);
    return source_copies(&sh, r->ep, s, g);
}

int pdbx_moe_rank_load(const pdbx_moe_route *r, int rank, pdbx_moe_load *out, int64_t *counts,
                       int64_t *send, int64_t *recv, int64_t *own, char *err, size_t errlen)
{
    if (pdbx_moe_route_check(r, err, errlen) < 0)
        return -1;
    if (rank < 0 || rank >= r->ep) {
        snprintf(err, errlen, "moe rank %d: allowed 0 .. %d (ep - 1)", rank, r->ep - 1);
        return -1;
    }
    const shares sh = shares_of(r);
    const int local = r->experts / r->ep, g0 = rank * local;
    pdbx_moe_load L = { .rank = rank, .local_experts = local,
                        .sent = r->tokens * r->top_k, .received = 0, .busiest = 0 };
    for (int e = 0; e < local; e++) {
        const int64_t n = copies_of(&sh, g0 + e);
        L.received += n;
        L.busiest = n > L.busiest ? n : L.busiest;
        if (counts)
            counts[e] = n;
    }
    for (int q = 0; q < r->ep && (send || recv); q++) {
        int64_t to = 0, from = 0;
        for (int e = 0; e < local; e++) {
            to += source_copies(&sh, r->ep, rank, q * local + e);   /* q's experts, my tokens */
            from += source_copies(&sh, r->ep, q, g0 + e);           /* my experts, q's tokens */
        }
        if (send)
            send[q] = to;
        if (recv)
            recv[q] = from;
    }
    for (int g = 0; own && g < r->experts; g++)
        own[g] = source_copies(&sh, r->ep, rank, g);
    if (out)
        *out = L;
    return 0;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        const int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int assign_check(int64_t tokens, int top_k, int experts, const int64_t *counts, char *err,
                        size_t errlen)
{
    if (tokens < 1 || tokens > PDBX_MOE_MAX_TOKENS) {
        snprintf(err, errlen, "moe tokens %lld: allowed 1 .. %lld", (long long)tokens,
                 (long long)PDBX_MOE_MAX_TOKENS);
        return -1;
    }
    if (experts < 1 || experts > PDBX_MOE_MAX_EXPERTS) {
        snprintf(err, errlen, "moe experts %d: allowed 1 .. %d", experts, PDBX_MOE_MAX_EXPERTS);
        return -1;
    }
    if (top_k < 1 || top_k > experts) {
        snprintf(err, errlen, "moe top_k %d: allowed 1 .. %d (experts)", top_k, experts);
        return -1;
    }
    int64_t sum = 0;
    for (int g = 0; g < experts; g++) {
        if (counts[g] < 0 || counts[g] > tokens) {
            snprintf(err, errlen, "moe counts[%d] %lld: allowed 0 .. %lld (tokens)", g,
                     (long long)counts[g], (long long)tokens);
            return -1;
        }
        sum += counts[g];
    }
    if (sum != tokens * top_k) {
        snprintf(err, errlen, "moe counts sum %lld: allowed exactly %lld (tokens x top_k)",
                 (long long)sum, (long long)(tokens * top_k));
        return -1;
    }
    return 0;
}

int pdbx_moe_assign(int64_t tokens, int top_k, int experts, const int64_t *counts, int32_t *idx,
                    char *err, size_t errlen)
{
    if (assign_check(tokens, top_k, experts, counts, err, errlen) < 0)
        return -1;
    /* the stride of the token permutation: coprime to T, so t -> t*m mod T is a bijection */
    int64_t m = (int64_t)ceil(0.618 * (double)tokens);
    while (gcd64(m, tokens) != 1)
        m++;
    /* copies c of expert g are consecutive, at most T of them: c % T gives distinct tokens, so a
     * token never gets one expert twice; c / T is the choice slot, filled in expert order */
    int64_t c = 0;
    for (int g = 0; g < experts; g++) {
        for (int64_t i = 0; i < counts[g]; i++, c++) {
            const int64_t t = (c % tokens) * m % tokens;
            idx[t * top_k + c / tokens] = (int32_t)g;
        }
    }
    return 0;
}
