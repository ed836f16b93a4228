/* store_frames.h: internal API of the run-file frame layer (store/ only).
 *
 * A run file is a sequence of independent zstd frames with the content checksum on, each one
 * JSON event. The encoder turns an event into one frame; pdbx_frame_append() writes that frame
 * with a single write() and fdatasync()s it, and on a short or failed write cuts off what it
 * wrote so a later append never lands after a partial frame. The scanner (store_scan.c:
 * pdbx_scan_file, declared in store.h) is the only reader. Events larger than
 * PDBX_MAX_EVENT_BYTES (store.h) are refused by the encoder and reported as damage by the
 * scanner.
 */
#ifndef PDBX_STORE_FRAMES_H
#define PDBX_STORE_FRAMES_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "store/store.h"

typedef struct pdbx_frame_encoder pdbx_frame_encoder;

int pdbx_frame_encoder_new(pdbx_frame_encoder **out, char *err, size_t errlen);
void pdbx_frame_encoder_free(pdbx_frame_encoder *enc);
/* Compresses json[0..len) into one frame; *frame points into the encoder's buffer (valid
 * until the next call). */
int pdbx_frame_encode(pdbx_frame_encoder *enc, const char *json, size_t len,
                      const void **frame, size_t *frame_len, char *err, size_t errlen);
/* Serialises event (adding "t" = now when absent) and encodes it. */
int pdbx_frame_encode_event(pdbx_frame_encoder *enc, const cJSON *event,
                            const void **frame, size_t *frame_len, char *err, size_t errlen);

/* Appends one frame to fd (opened O_APPEND) whose current size is *size; durable on return 0,
 * *size advanced. On failure the bytes this call wrote (a partial or unsynced frame) are cut
 * off again (errno then says why the append failed). path is for messages. */
int pdbx_frame_append(int fd, uint64_t *size, const void *frame, size_t len, const char *path,
                      char *err, size_t errlen);

/* Decides from an event's verified JSON text (NUL-terminated) whether to parse and deliver
 * it: 1 parse, 0 skip (the frame still counts in res->events). Lets a summary skip the bulk
 * of a run (measurements) without paying for JSON parsing; the checksum is verified for
 * every frame regardless. */
typedef int (*pdbx_frame_filter_fn)(const char *json, size_t len, void *ctx);
/* pdbx_scan_file with a filter (NULL: parse every frame). */
int pdbx_scan_file_filtered(const char *path, uint64_t from, pdbx_frame_filter_fn filter,
                            pdbx_event_fn fn, void *ctx, pdbx_scan_result *res,
                            char *err, size_t errlen);

#endif
