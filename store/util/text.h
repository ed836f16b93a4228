/* text.h: small string helpers every layer needs: bounded copies, edit distance and the
 * "did you mean" suggestion that every usage error carries. Pure; never fails on odd input.
 */
#ifndef PDBX_TEXT_H
#define PDBX_TEXT_H

#include <stddef.h>

/* strlcpy: copies at most len - 1 bytes of src (NULL = "") and always terminates dst. */
void pdbx_strcopy(char *dst, size_t len, const char *src);
/* Levenshtein distance; words longer than 128 bytes count as far from everything. */
size_t pdbx_edit_distance(const char *a, const char *b);
/* Writes " (did you mean 'x'?)" when word is a prefix of, or a few edits from, some candidates
 * (at most four, in table order), else " (allowed: a, b, c)". */
void pdbx_suggest(const char *word, const char *const *cands, size_t ncands, char *buf, size_t len);

#endif
