/* fuzz_cli.c: CLI arguments (tui/cli: the one argument parser pdbx_cli_parse and the spec-field
 * options pdbx_cli_parse_spec / pdbx_cli_spec_build over pdbx_spec_set).
 *
 * The option tables are the real ones, read once from the subcommands themselves through the
 * hidden --dump-cli (cli_dump.c: every handler answers it from its pdbx_cli_spec before doing
 * anything else), so a new option is fuzzed without touching this file. Per input:
 *   byte 0        which command (every subcommand of PDBX_CLI_COMMANDS, and `pdbx` itself)
 *   the rest      its arguments, split at '\n' and NUL (argv[0] is the command's name)
 * `pdbx plan` is pure (no store, no process), so its real handler runs whole: parse, build the
 * spec, validate, expand, print the table or JSON (to /dev/null). `pdbx run` goes as far as the
 * validated spec, never a launch. Every other command is parsed against its table with value
 * checks by the option's placeholder (N, STAT, FMT, ATTR) as its handler makes them; nothing
 * that opens a store or starts a process is called. The parser never exits the process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/fuzz_common.h"
#include "tui/cli/cli.h"

#define X(name, summary) { #name, summary, pdbx_cmd_##name },
static const pdbx_cli_command commands[] = { PDBX_CLI_COMMANDS(X) };
#undef X
#define NCOMMANDS (sizeof commands / sizeof commands[0])

typedef struct {
    pdbx_cli_spec spec;
    pdbx_cli_opt *opts;        /* the dumped table, NULL-name terminated (owned) */
    pdbx_cli_opt *own;         /* the options that are not spec fields (owned) */
    int has_spec_fields;
    int store_only;
} table;

static table tables[NCOMMANDS + 1];
static size_t ntables;
static cJSON *dump;            /* the strings of every table point into it */

static void free_tables(void)
{
    for (size_t i = 0; i < ntables; i++) {
        free(tables[i].opts);
        free(tables[i].own);
    }
    ntables = 0;
    cJSON_Delete(dump);
    dump = NULL;
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int is_spec_field(const char *opt)
{
    char field[64];
    snprintf(field, sizeof field, "%s", opt);
    for (char *p = field; *p; p++)
        if (*p == '-')
            *p = '_';
    for (const char *const *f = pdbx_spec_field_names(); *f; f++)
        if (strcmp(*f, field) == 0)
            return 1;
    return 0;
}

static void add_table(const cJSON *c)
{
    table *t = &tables[ntables++];
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(c, "options");
    int n = cJSON_GetArraySize(opts);
    t->opts = calloc((size_t)n + 1, sizeof *t->opts);
    t->own = calloc((size_t)n + 1, sizeof *t->own);
    if (!t->opts || !t->own)
        abort();
    int nown = 0, nfields = 0, nspec = 0;
    for (const char *const *f = pdbx_spec_field_names(); *f; f++)
        nspec++;
    for (int i = 0; i < n; i++) {
        const cJSON *o = cJSON_GetArrayItem(opts, i);
        t->opts[i] = (pdbx_cli_opt){ jstr(o, "name"), jstr(o, "arg"), jstr(o, "help") };
        if (is_spec_field(t->opts[i].name))
            nfields++;
        else
            t->own[nown++] = t->opts[i];
    }
    /* plan and run take every spec field as an option (show's --tp is its own, a filter). */
    t->has_spec_fields = nfields == nspec;
    t->store_only = n == 1 && strcmp(t->opts[0].name, "store") == 0;
    t->spec = (pdbx_cli_spec){
        .name = jstr(c, "name"), .args = jstr(c, "args"), .about = jstr(c, "about"), .opts = t->opts,
        .min_args = cJSON_GetObjectItemCaseSensitive(c, "min_args")->valueint,
        .max_args = cJSON_GetObjectItemCaseSensitive(c, "max_args")->valueint,
    };
}

/* The tables, from `pdbx --dump-cli` run in this process with stdout sent to a file. */
static void read_tables(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/cli.json", fuzz_tmpdir());
    fflush(stdout);
    int saved = dup(1);
    FILE *f = fopen(path, "w+");
    if (saved < 0 || !f || dup2(fileno(f), 1) < 0)
        abort();
    int rc = pdbx_cli_dump_all(commands, NCOMMANDS);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    long len = ftell(f);
    char *text = malloc((size_t)len + 1);
    rewind(f);
    if (rc != 0 || len <= 0 || !text || fread(text, 1, (size_t)len, f) != (size_t)len)
        abort();
    text[len] = '\0';
    fclose(f);
    unlink(path);
    dump = cJSON_Parse(text);
    free(text);
    if (!dump)
        abort();
    add_table(cJSON_GetObjectItemCaseSensitive(dump, "explorer"));
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(dump, "commands"))
        if (ntables < NCOMMANDS + 1)
            add_table(c);
    atexit(free_tables);
}

/* The checks the handlers make on option values, by the value's placeholder. */
static int check_value(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err, size_t errlen)
{
    (void)ctx;
    int v;
    if (!opt->arg)
        return 0;
    if (strcmp(opt->arg, "N") == 0)
        return pdbx_cli_int(opt->name, value, 1, 1 << 20, &v, err, errlen);
    if (strcmp(opt->arg, "STAT") == 0)
        return pdbx_cli_stat(opt->name, value, &v, err, errlen);
    if (strcmp(opt->arg, "FMT") == 0)
        return pdbx_cli_choice(opt->name, value, pdbx_cli_formats, &v, err, errlen);
    if (strcmp(opt->arg, "ATTR") == 0)
        return pdbx_cli_choice(opt->name, value, pdbx_cli_attributions, &v, err, errlen);
    if (*value == '\0') {
        snprintf(err, errlen, "--%s: the value is empty", opt->name);
        return -1;
    }
    return 0;
}

static void parse_spec_command(const table *t, int argc, char **argv)
{
    pdbx_cli_spec_opts so;
    if (pdbx_cli_spec_opts_init(&so, t->own) != 0)
        abort();
    pdbx_cli_spec spec = t->spec;
    spec.opts = so.opts;
    char **pos;
    int npos;
    if (pdbx_cli_parse_spec(&spec, &so, argc, argv, check_value, NULL, &pos, &npos) == 0) {
        pdbx_spec *s = calloc(1, sizeof *s);
        char err[1024];
        if (!s)
            abort();
        if (pdbx_cli_spec_build(spec.name, npos >= 1 ? pos[0] : NULL, &so, s) == 0)
            (void)pdbx_spec_validate(s, err, sizeof err);
        free(s);
    }
    pdbx_cli_spec_opts_free(&so);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    if (!ntables)
        read_tables();
    if (size == 0)
        return 0;
    const table *t = &tables[data[0] % ntables];
    char *text = fuzz_strndup(data + 1, size - 1);
    enum { MAX_ARGS = 64 };
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    argv[argc++] = (char *)(*t->spec.name ? t->spec.name : "pdbx");
    /* Arguments end at '\n' or NUL; the text after the last separator is one more. */
    for (char *p = text, *end = text + (size - 1); argc < MAX_ARGS && p <= end;) {
        char *q = p;
        while (q < end && *q != '\n' && *q != '\0')
            q++;
        *q = '\0';
        argv[argc++] = p;
        p = q + 1;
    }
    argv[argc] = NULL;
    if (strcmp(t->spec.name, "plan") == 0)
        (void)pdbx_cmd_plan(argc, argv);      /* the real handler: pure, prints to /dev/null */
    else if (t->has_spec_fields)
        parse_spec_command(t, argc, argv);
    else if (t->store_only) {
        const char *store = NULL;
        char **pos;
        (void)pdbx_cli_parse_store_only(&t->spec, argc, argv, &store, &pos);
    } else {
        char **pos;
        int npos;
        (void)pdbx_cli_parse(&t->spec, argc, argv, check_value, NULL, &pos, &npos);
    }
    free(text);
    return 0;
}
