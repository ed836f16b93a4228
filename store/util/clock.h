/* clock.h: the two clocks pdbx reads. Monotonic time for intervals, timeouts and heartbeats
 * (a wall-clock step must never stretch or shorten them); wall time only for what is recorded
 * or shown (event "t", run ids, created). Both in seconds as double; never fail.
 */
#ifndef PDBX_CLOCK_H
#define PDBX_CLOCK_H

#include <time.h>

/* CLOCK_MONOTONIC in seconds. */
double pdbx_mono_s(void);
/* CLOCK_REALTIME (unix time) in seconds. */
double pdbx_wall_s(void);
/* The CLOCK_MONOTONIC timespec `seconds` from now (for pthread_cond_timedwait with a
 * monotonic condattr, and nanosleep-style deadlines). */
struct timespec pdbx_mono_deadline(double seconds);
/* Sleeps `ms` milliseconds, resuming after signals (a handler that must cut the wait short
 * sets a flag that the caller's polling loop reads). ms <= 0 returns at once. */
void pdbx_sleep_ms(long ms);

#endif
