/* explorer.h: entry points of the ncurses explorer, called from tui/cli/pdbx_main.c.
 *
 *   pdbx [--store DIR] [--theme NAME|FILE] [--no-color] [--ascii] [--preset NAME]
 *        opens the explorer on the runs screen (`n` opens the new-sweep form with the preset,
 *        default "quick", ready to launch with F5).
 *   pdbx replay FILE [--speed X] [--theme ..] [--no-color] [--ascii]
 *        plays a recording (a run file) through the monitor; q or Esc quits.
 * Both return the process exit status: 0, 1 on a runtime error, 2 on a usage error (with a
 * one-line message on stderr naming the argument). The terminal is restored on every exit,
 * including SIGINT/SIGTERM/SIGHUP (handlers only set a flag; the loop then ends curses).
 */
#ifndef PDBX_EXPLORER_H
#define PDBX_EXPLORER_H

#include "tui/screen.h"

/* screens: the registry indexed by ui_screen_id (tui/screens/screens.h gives the program's). */
int pdbx_explorer_main(int argc, char **argv, const ui_screen_ops *const *screens);
int pdbx_replay_main(int argc, char **argv, const ui_screen_ops *const *screens);

#endif
