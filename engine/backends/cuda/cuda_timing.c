/* cuda_timing.c: CUDA-event timing of the cuda backend (cuda_backend.h): one op between the
 * start and stop events (after the L2 flush when on, then always a short %globaltimer spin
 * that hides the launch gap; docs/cuda.md "Timing protocol"), and the
 * layer and step spans between their own event pairs.
 *
 * A span's events are recorded on the one stream at its boundaries, so the span covers every
 * kernel and collective enqueued between them, and the host gaps between their launches: the
 * wall time of that stretch of the step as the device saw it. Span events are separate from
 * ev_start/ev_stop, which the ops and collectives inside the span keep using.
 */
#include "engine/backends/cuda/cuda_backend.h"

#include <stdio.h>

#include "engine/backends/cuda/cuda_kernels.h"

int cuda_timer_spin(pdbx_compute *c, int launches, char *err, size_t errlen)
{
    int rc = -1;
    long long ns = c->spin_ns + (launches > 0 ? launches : 0) * CUDA_LAUNCH_NS;
    if (ns > CUDA_SPIN_MAX_NS)
        ns = CUDA_SPIN_MAX_NS;
    CU_TRY("ck_spin_ns", ck_spin_ns(ns, c->stream));
    return 0;
fail:
    return rc;
}

int cuda_timer_start(pdbx_compute *c, char *err, size_t errlen)
{
    int rc = -1;
    if (c->flush_l2 && c->l2_flush) {
        c->l2_flush_value ^= 0x5a;
        CU_TRY("cudaMemsetAsync(L2 flush)", cudaMemsetAsync(c->l2_flush, c->l2_flush_value,
                                                            c->l2_flush_bytes, c->stream));
    }
    /* Always, also after a flush: the memset ends long before the host has enqueued a
     * multi-kernel op (attn_core: 9-17 launches), and the GPU would wait for each launch. */
    rc = cuda_timer_spin(c, 0, err, errlen);
    if (rc)
        return rc;
    rc = -1;
    CU_TRY("cudaEventRecord(start)", cudaEventRecord(c->ev_start, c->stream));
    return 0;
fail:
    return rc;
}

int cuda_timer_stop(pdbx_compute *c, double *ms, char *err, size_t errlen)
{
    int rc = -1;
    float f = 0.0f;
    CU_TRY("cudaEventRecord(stop)", cudaEventRecord(c->ev_stop, c->stream));
    CU_TRY("cudaEventSynchronize(stop)", cudaEventSynchronize(c->ev_stop));
    CU_TRY("cudaEventElapsedTime", cudaEventElapsedTime(&f, c->ev_start, c->ev_stop));
    *ms = (double)f;
    return 0;
fail:
    return rc;
}

int cuda_span_begin(pdbx_compute *c, pdbx_span s, char *err, size_t errlen)
{
    int rc = -1;
    if (!pdbx_span_valid("cuda", s, err, errlen))
        return -1;
    CU_TRY("cudaEventRecord(span begin)", cudaEventRecord(c->ev_span[s][0], c->stream));
    return 0;
fail:
    return rc;
}

int cuda_span_end(pdbx_compute *c, pdbx_span s, double *ms, char *err, size_t errlen)
{
    int rc = -1;
    float f = 0.0f;
    if (!pdbx_span_valid("cuda", s, err, errlen))
        return -1;
    CU_TRY("cudaEventRecord(span end)", cudaEventRecord(c->ev_span[s][1], c->stream));
    CU_TRY("cudaEventSynchronize(span end)", cudaEventSynchronize(c->ev_span[s][1]));
    CU_TRY("cudaEventElapsedTime(span)",
           cudaEventElapsedTime(&f, c->ev_span[s][0], c->ev_span[s][1]));
    *ms = (double)f;
    return 0;
fail:
    return rc;
}
