/* text.h: small string helpers every layer needs: bounded copies, edit distance, the
 * "did you mean" suggestion that every usage error carries, and the rule for names that become
 * file names. Pure; never fails on odd input.
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
/* 1 when name can stand alone as a file name in a directory of ours (run ids name run files):
 * 1..max-1 bytes of A-Z a-z 0-9 '-' '_' '.', not starting with '.' (no "..", no hidden file,
 * no '/'); else 0. NULL is not a name. */
int pdbx_is_file_name(const char *name, size_t max);

#endif
