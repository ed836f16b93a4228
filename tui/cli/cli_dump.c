/* cli_dump.c: `pdbx --dump-cli`, the machine-readable copy of every option table (cli.h).
 *
 * The bash completion and the man page are generated from this JSON at build time
 * (tui/cli/gen_cli_docs.py, run by tui/cli/SConscript), so they list exactly the options that
 * pdbx_cli_parse accepts and --help prints: one home, the pdbx_cli_spec tables. Each handler is
 * asked for its table by running it with the hidden option --dump-cli, which pdbx_cli_parse
 * answers like --help (pdbx_cli_dump_spec) before the handler does anything else.
 *
 * Output (stdout, one JSON document):
 *   {"program": "pdbx", "version": "0.1.0",
 *    "explorer": SPEC,                         options of `pdbx` without a command
 *    "commands": [SPEC + {"summary": "..."}, ...]}   in `pdbx --help` order
 *   SPEC = {"name", "args", "about", "min_args", "max_args",
 *           "options": [{"name", "arg" (null for a flag), "help"}, ...]}
 */
#include <stdio.h>
#include <stdlib.h>

#include "store/version.h"
#include "tui/cli/cli.h"

static FILE *dump_out;         /* where pdbx_cli_dump_spec writes; NULL: stdout */

static cJSON *spec_json(const pdbx_cli_spec *spec)
{
    cJSON *o = cJSON_CreateObject(), *opts = cJSON_CreateArray();
    if (!o || !opts || !cJSON_AddItemToObject(o, "options", opts)) {
        cJSON_Delete(o);
        cJSON_Delete(opts);
        return NULL;
    }
    int ok = cJSON_AddStringToObject(o, "name", spec->name) &&
             cJSON_AddStringToObject(o, "args", spec->args ? spec->args : "") &&
             cJSON_AddStringToObject(o, "about", spec->about ? spec->about : "") &&
             cJSON_AddNumberToObject(o, "min_args", spec->min_args) &&
             cJSON_AddNumberToObject(o, "max_args", spec->max_args);
    for (const pdbx_cli_opt *op = spec->opts; ok && op && op->name; op++) {
        cJSON *j = cJSON_CreateObject();
        ok = j && cJSON_AddItemToArray(opts, j) && cJSON_AddStringToObject(j, "name", op->name) &&
             (op->arg ? cJSON_AddStringToObject(j, "arg", op->arg) != NULL
                      : cJSON_AddNullToObject(j, "arg") != NULL) &&
             cJSON_AddStringToObject(j, "help", op->help ? op->help : "");
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

int pdbx_cli_dump_spec(const pdbx_cli_spec *spec)
{
    cJSON *o = spec_json(spec);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text)
        return -1;
    fprintf(dump_out ? dump_out : stdout, "%s\n", text);
    cJSON_free(text);
    return 0;
}

/* Runs handler with {name, "--dump-cli"} and parses what it dumped; NULL on failure. */
static cJSON *ask(pdbx_cli_handler handler, const char *name)
{
    char *buf = NULL;
    size_t len = 0;
    dump_out = open_memstream(&buf, &len);
    if (!dump_out)
        return NULL;
    char *argv[] = { (char *)name, "--dump-cli", NULL };
    int rc = handler(2, argv);
    fclose(dump_out);
    dump_out = NULL;
    cJSON *o = rc == PDBX_EXIT_OK && buf ? cJSON_Parse(buf) : NULL;
    free(buf);
    return o;
}

int pdbx_cli_dump_all(const pdbx_cli_command *cmds, size_t n)
{
    cJSON *doc = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    int ok = doc && arr && cJSON_AddItemToObject(doc, "commands", arr);
    if (!ok)
        cJSON_Delete(arr);
    ok = ok && cJSON_AddStringToObject(doc, "program", "pdbx") &&
         cJSON_AddStringToObject(doc, "version", pdbx_version());
    cJSON *ex = ok ? ask(pdbx_cmd_explore, "pdbx") : NULL;
    ok = ex && cJSON_AddItemToObject(doc, "explorer", ex);
    if (!ok)
        cJSON_Delete(ex);
    for (size_t i = 0; ok && i < n; i++) {
        cJSON *c = ask(cmds[i].run, cmds[i].name);
        ok = c && cJSON_AddStringToObject(c, "summary", cmds[i].summary) &&
             cJSON_AddItemToArray(arr, c);
        if (!ok)
            cJSON_Delete(c);   /* not in arr */
    }
    char *text = ok ? cJSON_Print(doc) : NULL;
    cJSON_Delete(doc);
    if (!text)
        return pdbx_cli_fail(PDBX_EXIT_FAIL, NULL, "--dump-cli: a command's option table could "
                             "not be read (out of memory?)");
    printf("%s\n", text);
    cJSON_free(text);
    return PDBX_EXIT_OK;
}
