/* cuda_memtally.h: the cuda backend's own tally of the device memory it cudaMalloc'd for a
 * prepared point (pure: sums the sizes cuda_backend.c and cuda_backward.c recorded when they
 * allocated; no CUDA call).
 *
 * cuda_point_alloc_bytes: the point's buffers (bytes[]), every instantiated layer's weights
 * in every copy of the L2 rotation (wbytes[] x layers x wcopies) and, with bwd, the gradient
 * buffers (gbytes[]); 0 for NULL. Not counted:
 * what init allocated (cuBLASLt workspace, L2 flush buffer) and the comm buffer, which lie in
 * the baseline or come from comm_buffer(). mem_peak uses it as the floor of the point's peak.
 */
#ifndef PDBX_CUDA_MEMTALLY_H
#define PDBX_CUDA_MEMTALLY_H

struct cuda_point;

double cuda_point_alloc_bytes(const struct cuda_point *pt);

#endif
