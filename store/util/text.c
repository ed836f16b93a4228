/* text.c: see text.h. */
#include "store/util/text.h"

#include <stdio.h>
#include <string.h>

void pdbx_strcopy(char *dst, size_t len, const char *src)
{
    if (!dst || len == 0)
        return;
    size_t n = src ? strlen(src) : 0;
    if (n >= len)
        n = len - 1;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

size_t pdbx_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 128 || lb > 128)       /* names are short; a long word is never "close" */
        return la > lb ? la : lb;
    size_t prev[129], cur[129];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            size_t best = sub < del ? sub : del;
            cur[j] = best < ins ? best : ins;
        }
        memcpy(prev, cur, (lb + 1) * sizeof prev[0]);
    }
    return prev[lb];
}

/* Close enough to suggest: one edit for short words, up to a third of the length for long. */
static size_t close_threshold(const char *word)
{
    size_t n = strlen(word);
    return n <= 3 ? 1 : (n <= 6 ? 2 : n / 3);
}

void pdbx_suggest(const char *word, const char *const *cands, size_t ncands, char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    buf[0] = '\0';
    /* Candidates the word begins ("flash" -> flash_attention; shortest first), else the candidates at the
     * smallest edit distance if that is close enough; in table order, at most four. */
    size_t pick[4], npick = 0, wlen = strlen(word);
    for (size_t want = wlen; wlen >= 3 && npick < 4 && want < wlen + 64; want++)   /* shortest first */
        for (size_t i = 0; i < ncands && npick < 4; i++)
            if (strlen(cands[i]) == want && strncmp(cands[i], word, wlen) == 0)
                pick[npick++] = i;
    size_t best = (size_t)-1;
    for (size_t i = 0; i < ncands && npick == 0; i++) {
        size_t d = pdbx_edit_distance(word, cands[i]);
        if (d < best)
            best = d;
    }
    if (npick == 0 && ncands > 0 && best <= close_threshold(word))
        for (size_t i = 0; i < ncands && npick < 4; i++)
            if (pdbx_edit_distance(word, cands[i]) == best)
                pick[npick++] = i;
    size_t used = 0;
    if (npick > 0) {
        used += (size_t)snprintf(buf + used, len - used, " (did you mean ");
        for (size_t k = 0; k < npick && used < len; k++)
            used += (size_t)snprintf(buf + used, len - used, "%s'%s'",
                                     k == 0 ? "" : (k + 1 == npick ? " or " : ", "), cands[pick[k]]);
        if (used < len)
            snprintf(buf + used, len - used, "?)");
        return;
    }
    used += (size_t)snprintf(buf + used, len - used, " (allowed: ");
    for (size_t i = 0; i < ncands && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", cands[i]);
    if (used < len)
        snprintf(buf + used, len - used, ")");
}
