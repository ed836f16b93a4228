/* cpu_kernels_loss.h: the cpu backend's cross-entropy over a vocabulary shard (the loss op,
 * store/ops.h): the local work of Megatron's vocab_parallel_cross_entropy on one TP rank.
 *
 * Contract (as cpu_kernels.h): row-major fp32, computed in fp32, no allocation, rows split
 * over the pool in chunks (NULL: the caller alone); the bits do not depend on the thread count.
 * logits [rows, n] are the rank's shard of the vocabulary, columns [vocab_start, vocab_start +
 * n) of the whole; targets[i] a token id of the whole vocabulary. The all-reduces between the
 * steps (the row max, then the sums, over the TP group) are not here: with TP 1 the shard is
 * the vocabulary and the statistics are the loss's own.
 */
#ifndef PDBX_CPU_KERNELS_LOSS_H
#define PDBX_CPU_KERNELS_LOSS_H

#include <stdint.h>

#include "engine/backends/cpu/cpu_threads.h"

/* Floats of the statistics the forward writes for the backward: 3 per row */
#define PDBX_XENT_STATS_PER_ROW 3

/* Forward, per row i: stats[i] = m_i = max_j logits[i, j]; stats[rows + i] = s_i = sum_j
 * exp(logits[i, j] - m_i); stats[2 rows + i] = the target's logit, logits[i, targets[i] -
 * vocab_start] when that column is in the shard, else 0 (another rank's: Megatron masks it and
 * the all-reduce sums it in). The row's loss is log(s_i) + m_i - target logit. */
void pdbx_k_xent_fwd(pdbx_cpu_pool *pool, const float *logits, const int32_t *targets,
                     int64_t rows, int64_t n, int64_t vocab_start, float *stats);

/* The row losses' mean over `rows` from the forward's statistics (double accumulation). */
double pdbx_k_xent_mean(const float *stats, int64_t rows);

/* Backward, in place (Megatron writes the gradient over its saved softmax): logits[i, j] <-
 * (exp(logits[i, j] - m_i) / s_i - [j == targets[i] - vocab_start]) * scale, scale the loss's
 * gradient per row (1 / the rows the mean is over). */
void pdbx_k_xent_bwd(pdbx_cpu_pool *pool, float *logits, const int32_t *targets, int64_t rows,
                     int64_t n, int64_t vocab_start, const float *stats, float scale);

#endif
