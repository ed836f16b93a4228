/* json_fields.h: typed reads and writes of JSON object members, for the store's own JSON
 * (the event schema in events*.c, the index in store_index.c). Internal to store/.
 *
 *  - Readers return 1 (or a value) when the member exists with the right type, else 0 (NULL)
 *    and leave *out alone: absent fields keep the caller's default.
 *  - Writers return 1 on success and 0 when out of memory; writers that take an item
 *    attach it or delete it, so callers chain them with && and never leak.
 *  - A field table (jf_field) describes a struct's scalar members once, for both directions.
 */
#ifndef PDBX_JSON_FIELDS_H
#define PDBX_JSON_FIELDS_H

#include <stddef.h>
#include <cjson/cJSON.h>

int jf_num(const cJSON *obj, const char *name, double *out);
int jf_int(const cJSON *obj, const char *name, int *out);     /* a number in int range */
const char *jf_str(const cJSON *obj, const char *name);
int jf_strbuf(const cJSON *obj, const char *name, char *dst, size_t cap);   /* cut to fit */
/* The first cap strings of the array obj[name] (non-strings skipped); returns the count. */
size_t jf_strings(const cJSON *obj, const char *name, const char **out, size_t cap);
/* 1 when arr is [string, n numbers, ...] with at least n + 1 items: *s and v[0..n) set. */
int jf_tuple(const cJSON *arr, const char **s, double *v, int n);

int jf_add(cJSON *obj, const char *name, cJSON *item);        /* takes item (NULL: fails) */
int jf_push(cJSON *arr, cJSON *item);                         /* takes item (NULL: fails) */
int jf_put_num(cJSON *obj, const char *name, double v);
int jf_put_num_or_null(cJSON *obj, const char *name, double v);   /* JSON has no NaN */
int jf_put_str(cJSON *obj, const char *name, const char *s);      /* NULL: "" */
/* obj when ok, else NULL (obj deleted): never an object with members missing. */
cJSON *jf_done(cJSON *obj, int ok);

typedef enum {
    JF_INT,       /* int */
    JF_NUM,       /* double; NaN written as null */
    JF_STR,       /* char[]: cut to fit when read */
    JF_ID,        /* char[]: a value that does not fit is not read (ids are not cut) */
    JF_PID,       /* long, read when in 0..INT_MAX */
    JF_BOOL,      /* int 0/1 */
} jf_kind;
typedef struct {
    const char *name;
    jf_kind kind;
    size_t off, cap;
} jf_field;
#define JF_FIELD(T, kind, member, name) {name, kind, offsetof(T, member), sizeof(((T *)0)->member)}
#define JF_N(f) (sizeof f / sizeof f[0])

int jf_put_fields(cJSON *obj, const void *src, const jf_field *f, size_t n);
/* Overlays: members whose field is absent or mistyped keep their value. */
void jf_get_fields(const cJSON *obj, void *dst, const jf_field *f, size_t n);
/* Strict reading of JF_NUM fields that must all be present: a number, or null read as NaN.
 * -1 when one is absent or not a number (dst is then partly written). */
int jf_get_numbers_or_null(const cJSON *obj, void *dst, const jf_field *f, size_t n);
/* The position of name in names[0..n), -1 when absent (or name is NULL): the reverse of every
 * name table in store/ (event types, ops, stats, comm kinds). */
int jf_name_index(const char *name, const char *const *names, size_t n);

#endif
