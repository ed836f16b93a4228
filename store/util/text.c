/* text.c: see text.h. */
#include "store/util/text.h"

#include <stdio.h>
#include <stdlib.h>
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

/* ---- untrusted text at output ------------------------------------------------------------ */
size_t pdbx_utf8_next(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    if (n == 0)
        return 0;
    uint32_t c = p[0];
    size_t k;
    uint32_t min;
    if (c < 0x80) {
        if (cp)
            *cp = c;
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {     /* C0 and C1 lead bytes only make overlong forms */
        k = 2, min = 0x80, c &= 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        k = 3, min = 0x800, c &= 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {     /* F5..FF would be above U+10FFFF */
        k = 4, min = 0x10000, c &= 0x07;
    } else {
        return 0;
    }
    if (n < k)
        return 0;
    for (size_t i = 1; i < k; i++) {
        if ((p[i] & 0xC0) != 0x80)           /* truncated (a NUL ends it too) */
            return 0;
        c = (c << 6) | (p[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;                            /* overlong, too large, or a surrogate */
    if (cp)
        *cp = c;
    return k;
}

int pdbx_text_cp_safe(uint32_t cp)
{
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
        return 0;
    return cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
}

char *pdbx_text_safe(char *dst, size_t len, const char *src)
{
    if (!dst || len == 0)
        return dst;
    if (!src)
        src = "";
    size_t n = strlen(src), i = 0, o = 0;
    while (i < n) {
        uint32_t cp;
        size_t k = pdbx_utf8_next(src + i, n - i, &cp);
        if (k == 0 || !pdbx_text_cp_safe(cp)) {
            if (o + 1 >= len)
                break;
            dst[o++] = '?';
            i += k ? k : 1;                  /* an unsafe character is one '?', a bad byte too */
            continue;
        }
        if (o + k >= len)                    /* never cut a character */
            break;
        memmove(dst + o, src + i, k);        /* o <= i: in place is safe */
        o += k;
        i += k;
    }
    dst[o] = '\0';
    return dst;
}

size_t pdbx_text_width(const char *s)
{
    size_t w = 0;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
        w += (*p & 0xC0) != 0x80;            /* count everything but continuation bytes */
    return w;
}

/* Writes the safe form of json into out (when non-NULL); returns its length. */
static size_t json_safe_pass(const char *json, char *out)
{
    size_t n = strlen(json), i = 0, o = 0;
    while (i < n) {
        uint32_t cp;
        size_t k = pdbx_utf8_next(json + i, n - i, &cp);
        if (k == 0) {                        /* a bad byte: U+FFFD */
            if (out)
                memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3, i += 1;
        } else if (cp >= 0x7F && cp <= 0x9F) {
            if (out)
                snprintf(out + o, 7, "\\u%04x", (unsigned)cp);
            o += 6, i += k;
        } else {
            if (out)
                memcpy(out + o, json + i, k);
            o += k, i += k;
        }
    }
    if (out)
        out[o] = '\0';
    return o;
}

char *pdbx_json_text_safe(const char *json)
{
    if (!json)
        return NULL;
    char *out = malloc(json_safe_pass(json, NULL) + 1);
    if (out)
        json_safe_pass(json, out);
    return out;
}
