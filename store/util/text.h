/* text.h: small string helpers every layer needs: bounded copies, edit distance, the
 * "did you mean" suggestion that every usage error carries, and making untrusted text safe to
 * print. Pure; never fails on odd input.
 */
#ifndef PDBX_TEXT_H
#define PDBX_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* strlcpy: copies at most len - 1 bytes of src (NULL = "") and always terminates dst. */
void pdbx_strcopy(char *dst, size_t len, const char *src);
/* Levenshtein distance; words longer than 128 bytes count as far from everything. */
size_t pdbx_edit_distance(const char *a, const char *b);
/* Writes " (did you mean 'x'?)" when word is a prefix of, or a few edits from, some candidates
 * (at most four, in table order), else " (allowed: a, b, c)". */
void pdbx_suggest(const char *word, const char *const *cands, size_t ncands, char *buf, size_t len);

/* ---- untrusted text at output ----------------------------------------------------------
 * Strings from run files and recordings (model name and tag, gpu, device, host, messages, end
 * reasons, op and spec names) are untrusted: a crafted recording can carry terminal escape
 * sequences or bytes that are not UTF-8. The store keeps them as recorded (an export or a
 * record round-trips the bytes); they are made safe where they leave the program:
 *  - text for a terminal or a text file (tables, CSV, messages, every explorer screen) goes
 *    through pdbx_text_safe (the table printer of fmt.h, pdbx_csv_field, pdbx_cli_fail and
 *    the explorer's ui_put and canvas drawing call it);
 *  - a printed JSON document goes through pdbx_json_text_safe (every JSON the CLI prints and
 *    every JSON file an export writes).
 * One rule for both: a byte that does not begin a well-formed UTF-8 sequence (RFC 3629: no
 * overlong form, no surrogate, nothing above U+10FFFF, no truncated sequence or stray
 * continuation byte) is replaced, one replacement per byte, and decoding resumes at the next
 * byte, so a damaged sequence never swallows the character after it. */

/* Length (1..4) of the well-formed UTF-8 sequence at s, reading at most n bytes, and its code
 * point in *cp (may be NULL); 0 when s[0] does not begin one (or n == 0). */
size_t pdbx_utf8_next(const char *s, size_t n, uint32_t *cp);
/* 1 when code point cp may be written to a terminal: not a C0 control (U+0000..U+001F, ESC
 * and newline included), DEL, a C1 control (U+0080..U+009F: U+009B is a one-character CSI for
 * some terminals), a surrogate or above U+10FFFF. */
int pdbx_text_cp_safe(uint32_t cp);
/* Terminal-safe copy of src (NULL = "") into dst of len bytes, always terminated: every
 * unsafe code point and every byte of ill-formed UTF-8 becomes '?' (one column, ASCII, so it
 * shows in any locale and keeps columns aligned); valid UTF-8 is kept and never cut
 * mid-character at the end. dst may be src: the result is never longer. Returns dst. */
char *pdbx_text_safe(char *dst, size_t len, const char *src);
/* Columns of s on a terminal when it is valid UTF-8: its code points (East Asian wide
 * characters count one; the names printed here are Latin). Counts bytes of a non-UTF-8 s. */
size_t pdbx_text_width(const char *s);
/* A malloc'ed copy of a printed JSON document (cJSON_Print's output) that is valid UTF-8 and
 * moves no terminal: every byte of ill-formed UTF-8 becomes U+FFFD, DEL and the C1 controls
 * become \u escapes (lossless for a JSON reader). Every byte >= 0x7F of a JSON text is inside
 * a string, so the document stays valid JSON. NULL when json is NULL or out of memory. */
char *pdbx_json_text_safe(const char *json);

#endif
