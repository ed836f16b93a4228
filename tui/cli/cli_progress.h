/* cli_progress.h: the progress line of `pdbx run` and `pdbx attach` on stderr.
 *
 * What the line says comes from the store's progress model (store/progress.h), the same one the
 * explorer's monitor prints, so both show the same percentage and ETA.
 *
 * On a terminal the line is redrawn in place (\r, erase to the end of the line) and never
 * reaches the last column, so it never wraps: pdbx_cli_progress_line() cuts it to width - 1
 * characters by dropping the lower-priority pieces first (the op, the point, elapsed time, then
 * the bar shrinks, the words go, the bar goes, the ETA goes). The width is the terminal's
 * (TIOCGWINSZ on stderr), else $COLUMNS, else 80, asked again after SIGWINCH. When stderr is
 * not a terminal, one plain line is printed when a point ends or the collectives sweep starts
 * (never more often than the watcher polls), and at most one a minute otherwise.
 */
#ifndef PDBX_CLI_PROGRESS_H
#define PDBX_CLI_PROGRESS_H

#include <stddef.h>

#include "store/progress.h"

/* The line for p in at most width - 1 characters (width < 2 gives ""); out holds len bytes.
 * Returns the length written. */
size_t pdbx_cli_progress_line(const pdbx_progress *p, int width, char *out, size_t len);

/* The terminal's columns (stderr), else $COLUMNS, else 80. */
int pdbx_cli_term_width(void);

typedef struct {
    int width;                 /* 0 until the first draw */
    int winch_installed;
    size_t last_points, last_coll_phase;   /* what the last plain line showed */
    double last_line;          /* wall time of the last plain line (0: none yet) */
} pdbx_cli_bar;

/* Draws the progress of run at wall time now on stderr: redrawn in place when tty, else a plain
 * line as described above. bar starts zeroed. */
void pdbx_cli_progress_draw(pdbx_cli_bar *bar, const pdbx_run *run, int tty, double now);

#endif
