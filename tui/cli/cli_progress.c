/* cli_progress.c: the progress line of `pdbx run` and `pdbx attach` (cli_progress.h). */
#include "tui/cli/cli_progress.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "store/util/fmt.h"
#include "store/util/text.h"

#define BAR_MAX 24
#define BAR_MIN 10

/* Which pieces a candidate line has; candidates go from everything to the bare percentage. */
typedef struct {
    int op, now, elapsed, words, eta;
    int barw;                  /* 0: no bar; -1: whatever is left, BAR_MIN..BAR_MAX */
} pieces;

static const pieces levels[] = {
    { 1, 1, 1, 1, 1, BAR_MAX },
    { 0, 1, 1, 1, 1, BAR_MAX },    /* the op goes first */
    { 0, 0, 1, 1, 1, BAR_MAX },    /* then the point */
    { 0, 0, 0, 1, 1, BAR_MAX },    /* then the elapsed time */
    { 0, 0, 0, 1, 1, -1 },         /* the bar shrinks */
    { 0, 0, 0, 0, 1, -1 },         /* "points", "collectives" go */
    { 0, 0, 0, 0, 1, 0 },          /* the bar goes */
    { 0, 0, 0, 0, 0, 0 },          /* the ETA goes: counts and percentage */
};

typedef struct {
    char *s;
    size_t len, n;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...)
{
    if (b->n + 1 >= b->len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->s + b->n, b->len - b->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        b->n = b->n + (size_t)k < b->len ? b->n + (size_t)k : b->len - 1;
}

static void duration(double s, char *buf, size_t len)
{
    if (isnan(s))
        snprintf(buf, len, "--");
    else
        pdbx_fmt_duration(s, buf, len);
}

/* Everything but the bar, after it: "37%  3/8 points  elapsed 1m02s  ETA 1m45s  point ..." */
static void tail(const pdbx_progress *p, const pieces *k, sbuf *b)
{
    put(b, "%d%%  %zu/%zu%s", p->percent, p->points_done, p->points_total, k->words ? " points" : "");
    /* the collectives' count matters while they run; before, it goes with the op */
    if (p->coll_total > 0 && (p->collectives || k->op))
        put(b, "  %s %zu/%zu", k->words ? "collectives" : "coll", p->coll_done, p->coll_total);
    char t[32];
    if (k->elapsed) {
        duration(p->elapsed_s, t, sizeof t);
        put(b, "  elapsed %s", t);
    }
    if (k->eta) {
        duration(p->eta_s, t, sizeof t);
        put(b, "  ETA %s", t);
    }
    char op[48];
    pdbx_text_safe(op, sizeof op, p->op ? p->op : "");
    if (k->now && p->point) {
        put(b, "  point %d TP%d PP%d DP%d MBS %d", p->point->index, p->point->tp, p->point->pp,
            p->point->dp, p->point->mbs);
    } else if (k->now && p->collectives) {
        put(b, "  collectives sweep");
    }
    if (k->op && op[0] && (p->point || p->collectives))
        put(b, " %s", op);
}

static void bar(const pdbx_progress *p, int w, sbuf *b)
{
    /* clamped before the product: a NaN, negative or huge fraction never reaches the int */
    double f = p->fraction > 0 ? p->fraction : 0;
    if (f > 1)
        f = 1;
    int fill = (int)floor(f * w);
    if (fill == w && p->percent < 100)
        fill = w - 1;              /* a full bar means done, as 100% does */
    put(b, "[");
    for (int i = 0; i < w; i++)
        put(b, "%c", i < fill ? '#' : '.');
    put(b, "] ");
}

size_t pdbx_cli_progress_line(const pdbx_progress *p, int width, char *out, size_t len)
{
    if (len == 0)
        return 0;
    out[0] = '\0';
    if (width < 2)
        return 0;
    size_t max = (size_t)width - 1;
    if (max > len - 1)
        max = len - 1;
    char text[512];
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        const pieces *k = &levels[i];
        sbuf t = { text, sizeof text, 0 };
        text[0] = '\0';
        tail(p, k, &t);
        int barw = k->barw;
        if (barw < 0) {
            /* "[" + bar + "] " around the tail */
            long room = (long)max - (long)t.n - 3;
            barw = room > BAR_MAX ? BAR_MAX : (int)room;
            if (barw < BAR_MIN)
                continue;
        }
        sbuf o = { out, len, 0 };
        out[0] = '\0';
        if (barw > 0)
            bar(p, barw, &o);
        put(&o, "%s", text);
        if (o.n <= max)
            return o.n;
    }
    /* not even "37%  3/8": the percentage, cut */
    snprintf(out, max + 1, "%d%%", p->percent);
    return strlen(out);
}

int pdbx_cli_term_width(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *env = getenv("COLUMNS");
    char *end;
    long c = env ? strtol(env, &end, 10) : 0;
    if (env && *end == '\0' && c > 0 && c <= 10000)
        return (int)c;
    return 80;
}

static volatile sig_atomic_t resized;

static void on_winch(int sig)
{
    (void)sig;
    resized = 1;
}

void pdbx_cli_progress_draw(pdbx_cli_bar *b, const pdbx_run *run, int tty, double now)
{
    pdbx_progress p;
    pdbx_progress_of(run, now, &p);
    char line[512];
    if (tty) {
        if (!b->winch_installed) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_winch;
            sigemptyset(&sa.sa_mask);
            sa.sa_flags = SA_RESTART;
            sigaction(SIGWINCH, &sa, NULL);
            b->winch_installed = 1;
        }
        if (b->width == 0 || resized) {
            resized = 0;
            b->width = pdbx_cli_term_width();
        }
        pdbx_cli_progress_line(&p, b->width, line, sizeof line);
        fprintf(stderr, "\r\033[K%s", line);
    } else {
        /* a log: one line per point (and when the collectives start or the run ends), else one
         * a minute to show it is alive */
        size_t phase = (size_t)p.collectives + 2 * (size_t)p.ended;
        if (b->last_line == 0 || p.points_done != b->last_points || phase != b->last_coll_phase ||
            now - b->last_line >= 60) {
            pdbx_cli_progress_line(&p, (int)sizeof line, line, sizeof line);
            fprintf(stderr, "%s\n", line);
            b->last_points = p.points_done;
            b->last_coll_phase = phase;
            b->last_line = now;
        }
    }
    fflush(stderr);
}
