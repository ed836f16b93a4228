/* plan_pipeline.h: the 1F1B pipeline schedule of one training iteration, per stage.
 *
 * Megatron-LM's non-interleaved 1F1B (forward_backward_pipelining_without_interleaving): stage s
 * of pp runs W = min(pp - s - 1, num_mb) warm-up forwards, then R = num_mb - W steady
 * iterations of one forward and one backward, then W cool-down backwards. Between adjacent
 * stages the activations of micro-batch i go up (send_act / recv_act) after F(i), and its
 * gradients come down (send_grad / recv_grad) after B(i).
 *
 * Megatron posts the two messages of a steady exchange together (send_forward_recv_backward,
 * send_backward_recv_forward: batch_isend_irecv). Here each message is one blocking
 * point-to-point call, ordered so that the pair of stages meets: in an exchange between stages
 * s (lower) and s + 1 (upper), the lower stage sends its activation and then receives the
 * gradient, the upper one receives the activation and then sends its gradient. With that order
 * the schedule cannot deadlock even when a send waits for its receive (a rendezvous), which
 * tests/unit/test_plan_pipeline.c checks by running every stage's list together.
 *
 * Contract: pure (no I/O, no allocation).
 */
#ifndef PDBX_PLAN_PIPELINE_H
#define PDBX_PLAN_PIPELINE_H

#include <stddef.h>

typedef enum {
    PDBX_PIPE_FWD = 0,       /* forward of micro-batch mb through the stage's layers */
    PDBX_PIPE_BWD,           /* backward of mb */
    PDBX_PIPE_SEND_ACT,      /* mb's output activations to stage s + 1 */
    PDBX_PIPE_RECV_ACT,      /* mb's input activations from stage s - 1 */
    PDBX_PIPE_SEND_GRAD,     /* mb's input gradients to stage s - 1 */
    PDBX_PIPE_RECV_GRAD,     /* mb's output gradients from stage s + 1 */
    PDBX_PIPE_KIND_COUNT
} pdbx_pipe_kind;

typedef struct {
    pdbx_pipe_kind kind;
    int mb;                  /* micro-batch, 0 .. num_mb - 1 */
} pdbx_pipe_step;

const char *pdbx_pipe_kind_name(pdbx_pipe_kind k);   /* "fwd", "bwd", "send_act" ... */

/* Warm-up forwards of stage `stage` of pp: min(pp - stage - 1, num_mb); -1 on bad arguments. */
int pdbx_pipe_warmup(int pp, int stage, int num_mb);
/* The most steps a stage's list has: 6 per micro-batch. */
size_t pdbx_pipe_max_steps(int num_mb);
/* Stage `stage`'s steps in execution order into out (room for cap); returns the count, or -1
 * when pp < 1, stage outside 0..pp-1, num_mb < 1 or cap is too small. */
int pdbx_pipe_schedule(int pp, int stage, int num_mb, pdbx_pipe_step *out, size_t cap);

#endif
