/* ui_form_internal.h: the new-sweep form's state, shared by its files only
 * (tui/screens/ui_form*.c; other screens reach the form through its id, screens.h).
 *
 *   ui_form.c        open, close, the fields and their values, planning, keys, launch
 *   ui_form_draw.c   the fields, their messages and the preview of the points
 */
#ifndef PDBX_UI_FORM_INTERNAL_H
#define PDBX_UI_FORM_INTERNAL_H

#include "engine/launch/launch.h"
#include "engine/launch/launch_check.h"
#include "engine/plan/plan.h"
#include "tui/ui_app.h"

#define FORM_FIELDS 24
typedef enum { F_TEXT, F_PRESETS, F_CHOICE } field_kind;

typedef struct {
    const char *label;
    const char *field;       /* pdbx_spec_set field name */
    char value[256];
    char typed[256];         /* the text last typed here: one step of the preset cycle */
    char error[512];         /* the message about this field, "" when fine */
    const char *const *choices;   /* NULL: free text */
    field_kind kind;
} form_field;

typedef struct {
    form_field f[FORM_FIELDS];
    int nf;
    int sel;
    int cursor;              /* byte offset in the selected field */
    int first;               /* byte offset of its first character shown (horizontal scroll) */
    char preset[64];
    pdbx_spec spec;          /* the spec the current values give */
    int spec_ok;
    char spec_error[512];    /* a message about the whole that no field takes */
    pdbx_launch_check_info check;   /* what the engine said, when spec_ok */
    pdbx_launch_opts lopts;  /* the hosts field (launch_argv.h), as pdbx run --hosts reads it */
    pdbx_plan_point *points;
    size_t npoints;
    char combos[512];        /* valid TP/PP/DP combinations for the GPU count */
    int preview_top;
} form_state;

/* Draws the form into b: the fields on the left (their messages under them), the preview of the
 * points on the right. Sets the app's text cursor into the selected field. */
void ui_form_draw(ui_app *app, void *st, ui_rect b);

#endif
