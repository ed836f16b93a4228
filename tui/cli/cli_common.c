/* cli_common.c: option parsing shared by the `pdbx` subcommands (see cli.h): option tables,
 * --help, one-line errors, value checks and spec fields as options. The store, runs, the run
 * table and output are cli_io.c's. */
#include "tui/cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/util/text.h"

#define OPT_BASE 1000          /* getopt_long val of opts[i] is OPT_BASE + i */
#define OPT_DUMP 999           /* --dump-cli */

int pdbx_cli_fail(int code, const char *cmd, const char *fmt, ...)
{
    char msg[PDBX_CLI_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* One line, always: a message from a lower layer must not break the contract; and it
     * may quote a run file (a model name, a reason), so nothing in it reaches the terminal
     * as a control (text.h). */
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    pdbx_text_safe(msg, sizeof msg, msg);
    if (cmd && *cmd)
        fprintf(stderr, "pdbx %s: %s\n", cmd, msg);
    else
        fprintf(stderr, "pdbx: %s\n", msg);
    return code;
}

int pdbx_cli_parse_exit(int parse_rc)
{
    return parse_rc == PDBX_CLI_HELP_SHOWN ? PDBX_EXIT_OK : PDBX_EXIT_USAGE;
}

#define HELP_COLS 79             /* --help fits an 80-column terminal */

/* text from column indent on, cut at spaces to HELP_COLS; continuation lines indented. A word
 * longer than the room is printed whole. */
static void print_wrapped(FILE *out, const char *text, size_t indent)
{
    size_t room = indent + 20 < HELP_COLS ? HELP_COLS - indent : 20, col = 0;
    while (*text) {
        size_t word = strcspn(text, " ");
        if (col && col + 1 + word > room) {
            fprintf(out, "\n%*s", (int)indent, "");
            col = 0;
        } else if (col) {
            fputc(' ', out);
            col++;
        }
        fwrite(text, 1, word, out);
        col += word;
        text += word;
        while (*text == ' ')
            text++;
    }
    fputc('\n', out);
}

void pdbx_cli_print_help(const pdbx_cli_spec *spec, FILE *out)
{
    fprintf(out, "usage: pdbx%s%s%s%s [options]\n", *spec->name ? " " : "", spec->name,
            spec->args && *spec->args ? " " : "", spec->args ? spec->args : "");
    if (spec->about && *spec->about) {
        /* the about text is one paragraph, refilled to the width (its own line breaks are
         * where its author's editor wrapped it) */
        char para[2048];
        snprintf(para, sizeof para, "%s", spec->about);
        for (char *p = para; *p; p++)
            if (*p == '\n')
                *p = ' ';
        fputc('\n', out);
        print_wrapped(out, para, 0);
    }
    fprintf(out, "\noptions:\n");
    size_t w = strlen("-h, --help");
    for (const pdbx_cli_opt *o = spec->opts; o && o->name; o++) {
        size_t l = 2 + strlen(o->name) + (o->arg ? 1 + strlen(o->arg) : 0);
        if (l > w)
            w = l;
    }
    for (const pdbx_cli_opt *o = spec->opts; o && o->name; o++) {
        char left[256];
        snprintf(left, sizeof left, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        fprintf(out, "  %-*s  ", (int)w, left);
        print_wrapped(out, o->help ? o->help : "", w + 4);
    }
    fprintf(out, "  %-*s  %s\n", (int)w, "-h, --help", "print this help and exit");
}

/* The option within two edits of name, for "did you mean" on unknown options. */
static const char *closest_option(const pdbx_cli_spec *spec, const char *name)
{
    const char *best = NULL;
    size_t best_d = 3;         /* suggest only within two edits */
    for (const pdbx_cli_opt *o = spec->opts; o && o->name; o++) {
        size_t d = pdbx_edit_distance(name, o->name);
        if (d < best_d) {
            best_d = d;
            best = o->name;
        }
    }
    return best;
}

static int unknown_option(const pdbx_cli_spec *spec, const char *arg)
{
    char name[128];
    const char *s = arg;
    while (*s == '-')
        s++;
    snprintf(name, sizeof name, "%s", s);
    name[strcspn(name, "=")] = '\0';
    char help[96];
    snprintf(help, sizeof help, "pdbx%s%s --help", *spec->name ? " " : "", spec->name);
    const char *hint = closest_option(spec, name);
    if (hint)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, spec->name,
                             "unknown option '%s' (did you mean '--%s'? see '%s')", arg, hint, help);
    return pdbx_cli_fail(PDBX_EXIT_USAGE, spec->name, "unknown option '%s' (see '%s')", arg, help);
}

/* The getopt_long table of spec's options, --help last; NULL when out of memory. */
static struct option *long_options(const pdbx_cli_spec *spec, size_t nopts)
{
    struct option *lo = calloc(nopts + 3, sizeof *lo);
    if (!lo)
        return NULL;
    for (size_t i = 0; i < nopts; i++) {
        lo[i].name = spec->opts[i].name;
        lo[i].has_arg = spec->opts[i].arg ? required_argument : no_argument;
        lo[i].val = OPT_BASE + (int)i;
    }
    lo[nopts].name = "help";
    lo[nopts].has_arg = no_argument;
    lo[nopts].val = 'h';
    lo[nopts + 1].name = "dump-cli";      /* hidden: the option table as JSON (cli_dump.c) */
    lo[nopts + 1].has_arg = no_argument;
    lo[nopts + 1].val = OPT_DUMP;
    return lo;
}

/* getopt_long's ':' (a value is missing) and '?' (an unknown option, or a value given to a
 * flag), said in one line; returns the usage exit code. cur is the argument being read. */
static int option_error(const pdbx_cli_spec *spec, size_t nopts, int c, const char *cur)
{
    if (c == ':') {
        const char *name = cur;
        while (*name == '-')
            name++;
        for (size_t i = 0; i < nopts; i++)
            if (optopt == OPT_BASE + (int)i)
                name = spec->opts[i].name;
        char n2[128];
        snprintf(n2, sizeof n2, "%s", name);
        n2[strcspn(n2, "=")] = '\0';
        const char *what = "a value";
        for (size_t i = 0; i < nopts; i++)
            if (strcmp(spec->opts[i].name, n2) == 0 && spec->opts[i].arg)
                what = spec->opts[i].arg;
        return pdbx_cli_fail(PDBX_EXIT_USAGE, spec->name, "--%s needs a value (%s)", n2, what);
    }
    if (optopt >= OPT_BASE && optopt < OPT_BASE + (int)nopts)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, spec->name, "--%s takes no value (got '%s')",
                             spec->opts[optopt - OPT_BASE].name, cur);
    if (optopt == 'h')
        return pdbx_cli_fail(PDBX_EXIT_USAGE, spec->name, "--help takes no value");
    if (optopt > 0 && optopt < 256) {
        char shortopt[3] = { '-', (char)optopt, '\0' };
        return unknown_option(spec, shortopt);
    }
    return unknown_option(spec, cur);
}

/* n positional arguments against spec's bounds: 0, or the usage exit code after one line. */
static int check_positionals(const pdbx_cli_spec *spec, int n, char **rest)
{
    if (n < spec->min_args)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, spec->name, "missing argument: usage: pdbx %s %s",
                             spec->name, spec->args);
    if (n > spec->max_args)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, spec->name,
                             "unexpected argument '%s' (usage: pdbx%s%s%s%s)",
                             rest[spec->max_args], *spec->name ? " " : "", spec->name,
                             spec->args && *spec->args ? " " : "", spec->args ? spec->args : "");
    return 0;
}

int pdbx_cli_parse(const pdbx_cli_spec *spec, int argc, char **argv, pdbx_cli_opt_fn fn,
                   void *ctx, char ***pos, int *npos)
{
    int rc = PDBX_EXIT_USAGE;
    size_t nopts = 0;
    while (spec->opts && spec->opts[nopts].name)
        nopts++;
    struct option *lo = long_options(spec, nopts);
    if (!lo)
        return pdbx_cli_fail(PDBX_EXIT_FAIL, spec->name, "out of memory");
    opterr = 0;                /* our own one-line messages */
    optind = 0;                /* glibc: full re-initialisation (a second parse in-process) */
    for (;;) {
        int c = getopt_long(argc, argv, ":h", lo, NULL);
        if (c == -1)
            break;
        const char *cur = argv[optind - 1 < argc ? optind - 1 : argc - 1];
        if (c == 'h') {
            pdbx_cli_print_help(spec, stdout);
            rc = PDBX_CLI_HELP_SHOWN;
            goto done;
        }
        if (c == OPT_DUMP) {
            rc = pdbx_cli_dump_spec(spec) == 0 ? PDBX_CLI_HELP_SHOWN
                                               : pdbx_cli_fail(PDBX_EXIT_FAIL, spec->name, "out of memory");
            goto done;
        }
        if (c == ':' || c == '?') {
            rc = option_error(spec, nopts, c, cur);
            goto done;
        }
        if (c < OPT_BASE || c >= OPT_BASE + (int)nopts) {
            rc = pdbx_cli_fail(PDBX_EXIT_USAGE, spec->name, "unexpected option '%s'", cur);
            goto done;
        }
        char err[PDBX_CLI_ERR_MAX] = "";
        if (fn && fn(&spec->opts[c - OPT_BASE], optarg, ctx, err, sizeof err) != 0) {
            rc = pdbx_cli_fail(PDBX_EXIT_USAGE, spec->name, "%s", err[0] ? err : "bad option value");
            goto done;
        }
    }
    rc = check_positionals(spec, argc - optind, argv + optind);
    if (rc == 0) {
        *pos = argv + optind;
        *npos = argc - optind;
    }
done:
    free(lo);
    return rc;
}

int pdbx_cli_int(const char *opt, const char *value, long min, long max, int *out,
                 char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (!*value || *end || errno == ERANGE) {
        snprintf(err, errlen, "--%s: '%s' is not an integer", opt, value);
        return -1;
    }
    if (v < min || v > max || v < INT_MIN || v > INT_MAX) {
        snprintf(err, errlen, "--%s: %ld is out of range (allowed: %ld..%ld)", opt, v, min, max);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int pdbx_cli_choice(const char *opt, const char *value, const char *const *choices, int *out,
                    char *err, size_t errlen)
{
    for (int i = 0; choices[i]; i++) {
        if (strcmp(value, choices[i]) == 0) {
            *out = i;
            return 0;
        }
    }
    size_t used = (size_t)snprintf(err, errlen, "--%s: '%s' is not one of ", opt, value);
    for (int i = 0; choices[i] && used < errlen; i++)
        used += (size_t)snprintf(err + used, errlen - used, "%s%s", i ? ", " : "", choices[i]);
    return -1;
}

int pdbx_cli_stat(const char *opt, const char *value, int *out, char *err, size_t errlen)
{
    const char *names[PDBX_STAT_COUNT_KINDS + 1];
    for (int k = 0; k < PDBX_STAT_COUNT_KINDS; k++)
        names[k] = pdbx_stat_name((pdbx_stat_kind)k);
    names[PDBX_STAT_COUNT_KINDS] = NULL;
    return pdbx_cli_choice(opt, value, names, out, err, errlen);
}

const char *const pdbx_cli_attributions[] = { "pure", "fasop", NULL };
const char *const pdbx_cli_formats[] = { "table", "json", "csv", NULL };

int pdbx_cli_pass(const char *opt, const char *value, int *out, char *err, size_t errlen)
{
    static const char *const passes[] = { "fwd", "bwd", "both", NULL };
    return pdbx_cli_choice(opt, value, passes, out, err, errlen);
}

/* ---- spec fields as options ---------------------------------------------------------------- */
/* The help line of a spec-field option, from the planner's field table: what it is, what is
 * allowed, the default. malloc'ed; NULL when out of memory. */
static char *spec_field_help(const pdbx_spec_field_doc *d)
{
    char buf[512];
    if (d->def[0])
        snprintf(buf, sizeof buf, "%s; allowed: %s; default: %s", d->about, d->allowed, d->def);
    else
        snprintf(buf, sizeof buf, "%s; allowed: %s", d->about, d->allowed);
    return strdup(buf);
}

int pdbx_cli_spec_opts_init(pdbx_cli_spec_opts *so, const pdbx_cli_opt *extra)
{
    memset(so, 0, sizeof *so);
    size_t nf = 0, ne = 0;
    pdbx_spec_field_doc d;
    while (pdbx_spec_field_doc_get(nf, &d) == 0)
        nf++;
    while (extra && extra[ne].name)
        ne++;
    so->opts = calloc(ne + nf + 1, sizeof *so->opts);
    if (!so->opts)
        return -1;
    memcpy(so->opts, extra, ne * sizeof *extra);
    so->nextra = ne;
    for (size_t i = 0; i < nf; i++) {
        pdbx_spec_field_doc_get(i, &d);
        char *name = strdup(d.name), *help = spec_field_help(&d);
        if (!name || !help) {
            free(name);
            free(help);
            pdbx_cli_spec_opts_free(so);
            return -1;
        }
        for (char *p = name; *p; p++)
            if (*p == '_')
                *p = '-';
        so->opts[ne + i] = (pdbx_cli_opt){ name, d.value, help };
    }
    return 0;
}

void pdbx_cli_spec_opts_free(pdbx_cli_spec_opts *so)
{
    for (size_t i = so->nextra; so->opts && so->opts[i].name; i++) {
        free((char *)so->opts[i].name);   /* the field options own their name and help */
        free((char *)so->opts[i].help);
    }
    free(so->opts);
    free(so->ov);
    memset(so, 0, sizeof *so);
}

static int spec_opts_is_field(const pdbx_cli_spec_opts *so, const pdbx_cli_opt *opt)
{
    return opt >= so->opts + so->nextra && opt->name != NULL;
}

static int spec_opts_add(pdbx_cli_spec_opts *so, const pdbx_cli_opt *opt, const char *value,
                         char *err, size_t errlen)
{
    if (so->nov == so->cap) {
        size_t cap = so->cap ? so->cap * 2 : 16;
        void *ov = realloc(so->ov, cap * sizeof *so->ov);
        if (!ov) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        so->ov = ov;
        so->cap = cap;
    }
    so->ov[so->nov].field = opt->name;
    so->ov[so->nov].value = value;
    so->nov++;
    return 0;
}

typedef struct {
    pdbx_cli_spec_opts *so;
    pdbx_cli_opt_fn own;
    void *ctx;
} spec_route;

static int spec_route_opt(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err,
                          size_t errlen)
{
    spec_route *r = ctx;
    if (spec_opts_is_field(r->so, opt))
        return spec_opts_add(r->so, opt, value, err, errlen);
    return r->own ? r->own(opt, value, r->ctx, err, errlen) : 0;
}

int pdbx_cli_parse_spec(const pdbx_cli_spec *spec, pdbx_cli_spec_opts *so, int argc, char **argv,
                        pdbx_cli_opt_fn own, void *ctx, char ***pos, int *npos)
{
    spec_route r = { so, own, ctx };
    return pdbx_cli_parse(spec, argc, argv, spec_route_opt, &r, pos, npos);
}

int pdbx_cli_spec_build(const char *cmd, const char *name, const pdbx_cli_spec_opts *so,
                        pdbx_spec *spec)
{
    char err[1024] = "";
    pdbx_spec_defaults(spec);
    if (name && pdbx_spec_load(name, spec, err, sizeof err) != 0)
        return pdbx_cli_fail(PDBX_EXIT_USAGE, cmd, "%s", err);
    for (size_t i = 0; i < so->nov; i++) {
        char field[64];
        snprintf(field, sizeof field, "%s", so->ov[i].field);
        for (char *p = field; *p; p++)
            if (*p == '-')
                *p = '_';
        if (pdbx_spec_set(spec, field, so->ov[i].value, err, sizeof err) != 0) {
            /* The planner's message names the field already ("seq_len: ..."); else say which. */
            if (strncmp(err, field, strlen(field)) == 0)
                return pdbx_cli_fail(PDBX_EXIT_USAGE, cmd, "%s", err);
            return pdbx_cli_fail(PDBX_EXIT_USAGE, cmd, "--%s: %s", so->ov[i].field, err);
        }
    }
    return 0;
}

const pdbx_cli_opt pdbx_cli_store_only_opts[] = {
    PDBX_CLI_OPT_STORE,
    { NULL, NULL, NULL },
};

static int store_only_opt(const pdbx_cli_opt *opt, const char *value, void *ctx, char *err,
                          size_t errlen)
{
    (void)opt;
    if (*value == '\0') {
        snprintf(err, errlen, "--store: the value is empty");
        return -1;
    }
    *(const char **)ctx = value;
    return 0;
}

int pdbx_cli_parse_store_only(const pdbx_cli_spec *spec, int argc, char **argv, const char **store,
                              char ***pos)
{
    int npos;
    return pdbx_cli_parse(spec, argc, argv, store_only_opt, (void *)store, pos, &npos);
}
