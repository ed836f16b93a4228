/* screens.h: the registry of the explorer's screens, indexed by ui_screen_id (tui/screen.h).
 *
 * The program hands this table to the explorer (pdbx_explorer_main, pdbx_replay_main), so the
 * loop in tui/ reaches the screens only through their tables and tui/ never links against
 * tui/screens. Adding a screen: its file defines a ui_screen_ops, one id in screen.h, one
 * line in screens.c.
 */
#ifndef PDBX_SCREENS_H
#define PDBX_SCREENS_H

#include "tui/screen.h"

extern const ui_screen_ops *const ui_screens[UI_SCREEN_COUNT];

#endif
