/* clock.c: see clock.h. */
#include "store/util/clock.h"

#include <errno.h>

static double seconds_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double pdbx_mono_s(void) { return seconds_of(CLOCK_MONOTONIC); }
double pdbx_wall_s(void) { return seconds_of(CLOCK_REALTIME); }

struct timespec pdbx_mono_deadline(double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (!(seconds > 0))
        seconds = 0;
    long long whole = (long long)seconds;
    long long ns = ts.tv_nsec + (long long)((seconds - (double)whole) * 1e9);
    ts.tv_sec += (time_t)(whole + ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    return ts;
}

void pdbx_sleep_ms(long ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}
