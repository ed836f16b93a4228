/* screens.c: the registry of screens.h. Each screen's table is defined in its own file and
 * named only here. */
#include "tui/screens/screens.h"

extern const ui_screen_ops ui_screen_runs, ui_screen_form, ui_screen_monitor, ui_screen_runview,
    ui_screen_compare, ui_screen_export, ui_screen_advise;

const ui_screen_ops *const ui_screens[UI_SCREEN_COUNT] = {
    [UI_SCREEN_RUNS] = &ui_screen_runs,
    [UI_SCREEN_FORM] = &ui_screen_form,
    [UI_SCREEN_MONITOR] = &ui_screen_monitor,
    [UI_SCREEN_RUNVIEW] = &ui_screen_runview,
    [UI_SCREEN_COMPARE] = &ui_screen_compare,
    [UI_SCREEN_EXPORT] = &ui_screen_export,
    [UI_SCREEN_ADVISE] = &ui_screen_advise,
};
