/* test_events_util.h: what the event-schema tests share (test_store_events.c,
 * test_store_events_run.c): the trip of an event through JSON text, field surgery, and the
 * comparisons of decoded statistics and cells. */
#ifndef PDBX_TEST_EVENTS_UTIL_H
#define PDBX_TEST_EVENTS_UTIL_H

#include <math.h>
#include <string.h>

#include "store/events.h"
#include "store/profiledb.h"

/* Prints ev, frees it, parses the text back: what a reader of the run file sees. */
static inline cJSON *through_text(cJSON *ev)
{
    assert_non_null(ev);
    char *text = cJSON_PrintUnformatted(ev);
    cJSON_Delete(ev);
    assert_non_null(text);
    cJSON *back = cJSON_Parse(text);
    free(text);
    assert_non_null(back);
    return back;
}

/* Replaces ev[name] by the JSON value text (NULL: removes it). */
static inline void set_field(cJSON *ev, const char *name, const char *text)
{
    cJSON_DeleteItemFromObjectCaseSensitive(ev, name);
    if (text) {
        cJSON *v = cJSON_Parse(text);
        assert_non_null(v);
        cJSON_AddItemToObject(ev, name, v);
    }
}

static inline void assert_mentions(const char *err, const char *a, const char *b)
{
    if (!strstr(err, a) || !strstr(err, b))
        fail_msg("message \"%s\" should name \"%s\" and \"%s\"", err, a, b);
}

static inline pdbx_stats stats_of(double base)
{
    pdbx_stats s = {5, base, base + 2, base + 1, base + 0.5, 0.25, NAN};
    return s;
}

static inline void assert_stats_equal(const pdbx_stats *a, const pdbx_stats *b)
{
    assert_int_equal(a->count, b->count);
    assert_double_equal(a->min, b->min, 0);
    assert_double_equal(a->max, b->max, 0);
    assert_double_equal(a->mean, b->mean, 0);
    assert_double_equal(a->median, b->median, 0);
    assert_double_equal(a->std, b->std, 0);
}

static inline void assert_cell_equal(const pdbx_cell *a, const pdbx_cell *b)
{
    assert_int_equal(a->valid, 1);
    assert_stats_equal(&a->stats, &b->stats);
    assert_int_equal(a->nranks, b->nranks);
    for (int i = 0; i < a->nranks; i++)
        assert_stats_equal(&a->rank[i], &b->rank[i]);
}

#endif
