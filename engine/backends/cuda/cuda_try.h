/* cuda_try.h: the one error-jump pattern of libpdbx_cuda.so's C files.
 *
 * CUDA_TRY_STATUS evaluates expr (a call returning a status of `type`); when it is not `ok`
 * it sets the caller's rc to on_fail (an expression that may use the status as s_: the
 * library's *_fail function that writes the one-line message) and jumps to the caller's
 * `fail:` label. The callers need `rc` (and, for their *_fail, `err` and `errlen`) in scope.
 */
#ifndef PDBX_CUDA_TRY_H
#define PDBX_CUDA_TRY_H

#define CUDA_TRY_STATUS(type, ok, expr, on_fail) \
    do {                                         \
        type s_ = (expr);                        \
        if (s_ != (ok)) {                        \
            rc = (on_fail);                      \
            goto fail;                           \
        }                                        \
    } while (0)

#endif
