/* test_advise_util.h: what the advisor's tests share (test_advise.c, test_advise_ep.c,
 * test_advise_layout.c): a run built from event texts applied as a reader applies them, the
 * statistics object of a cell whose mean is v, and assert_close (equal to 1e-9, relative above
 * 1). */
#ifndef PDBX_TEST_ADVISE_UTIL_H
#define PDBX_TEST_ADVISE_UTIL_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "store/profiledb.h"

static inline void apply(pdbx_run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void apply(pdbx_run *run, const char *fmt, ...)
{
    char buf[4096], err[256] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    cJSON *ev = cJSON_Parse(buf);
    if (!ev)
        fail_msg("bad event text: %s", buf);
    if (pdbx_run_apply(run, ev, err, sizeof err) != 0)
        fail_msg("event %s: %s", buf, err);
    cJSON_Delete(ev);
}

#define assert_close(a, b)                                                                       \
    do {                                                                                         \
        double a_ = (a), b_ = (b);                                                               \
        if (!(fabs(a_ - b_) <= 1e-9 * (fabs(b_) > 1 ? fabs(b_) : 1)))                            \
            fail_msg("%s = %.17g, expected %s = %.17g", #a, a_, #b, b_);                         \
    } while (0)

#define STATS "{\"count\":5,\"min\":%.17g,\"max\":%.17g,\"mean\":%.17g,\"median\":%.17g,\"std\":0}"
#define STATS_ARGS(v) (v), (v), (v) * 1.1, (v)

#endif
