/* ui_chart_internal.h: helpers the chart files share (tui/ui_canvas.c, ui_chart.c,
 * ui_chart_scatter.c only; views use ui_chart.h).
 *
 *   ui_canvas.c         the canvas and the glyphs of segments and series
 *   ui_scale.c          scales, units and ticks
 *   ui_chart.c          bars, stacked bars, share axis, line charts, legend layout
 *   ui_chart_scatter.c  the scatter chart
 */
#ifndef PDBX_UI_CHART_INTERNAL_H
#define PDBX_UI_CHART_INTERNAL_H

#include <stdint.h>

#include "tui/ui_chart.h"

/* The code point at (y, x); 0 outside the canvas. */
uint32_t chart_at(const ui_canvas *c, int y, int x);

/* An x-axis label centred under column col of an axis w columns wide starting at x0, kept
 * inside it; skipped when it would touch the previous label (*label_end, -1 before the first). */
void chart_axis_label(ui_canvas *c, int y, int x0, int w, int col, const char *lab, int *label_end);

/* The y label column of a chart: the widest tick label and the x axis' name, at most 12. */
int chart_label_width(const ui_tick *ticks, int nticks, ui_unit yunit, const char *xname);

/* Row of value fraction f on a plot of ph rows (row 0 at the top). */
int chart_frac_row(double f, int ph);

#endif
