/* explorer.h: the entry point of the ncurses explorer, called by the command lines of
 * tui/cli/cli_explore.c (`pdbx [options]` and `pdbx replay FILE`).
 *
 * Without replay_file the explorer opens on the runs screen (`n` opens the new-sweep form with
 * the preset, default "quick", ready to launch with F5; a store without runs starts on the
 * form). With replay_file it plays that recording through the monitor, and leaving the monitor
 * leaves the program. Returns the process exit status: 0, or 1 on a runtime error (said on
 * stderr). The terminal is restored on every exit, including SIGINT/SIGTERM/SIGHUP (handlers
 * only set a flag; the loop then ends curses).
 */
#ifndef PDBX_EXPLORER_H
#define PDBX_EXPLORER_H

#include "tui/screen.h"

typedef struct {
    const char *store;       /* --store DIR, NULL: the default store */
    const char *theme;       /* --theme NAME|FILE, NULL: the saved choice */
    const char *preset;      /* --preset NAME of the new-sweep form, NULL: quick */
    const char *replay_file; /* a recording to play, NULL: the explorer */
    int no_color, ascii;
    double speed;            /* replay speed */
} pdbx_explorer_opts;

/* screens: the registry indexed by ui_screen_id (tui/screens/screens.h gives the program's). */
int pdbx_explorer_run(const pdbx_explorer_opts *o, const ui_screen_ops *const *screens);

#endif
