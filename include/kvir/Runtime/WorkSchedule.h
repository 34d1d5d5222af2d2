/*===- WorkSchedule.h - Split-KV work lists for the attention kernels -----===*
 *
 * The host side of a split-KV launch, in C so that C and Python callers,
 * kvir's host code and its tests all run the same rule. A work list cuts
 * each request's visible keys into chunks: item i of the list is
 * (request, chunk, num_chunks, partial_row): the block that takes item i
 * attends to chunk `chunk` of `num_chunks` equal pieces (the last may be
 * shorter) of the request's visible keys and writes its partial state to
 * row `partial_row` of the workspace; the rows of request r are
 * [merge_indptr[r], merge_indptr[r + 1]), which the merge kernel reduces.
 * The kernels derive the token range from the request's own table, so a
 * stale or wrong length makes a plan slow, never wrong.
 *
 * With the requests' lengths on the host, chunks have near-equal token
 * counts (as FlashInfer's plan() cuts them): the smallest chunk size, a
 * multiple of `granule` and at least `min_chunk`, for which the items of
 * one KV head number at most max(batch, target_items); items are listed
 * longest first, so that the last blocks a GPU schedules are short ones.
 * Without lengths (kv_lengths NULL), every request is cut into
 * `uniform_chunks` pieces.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KVIR_RUNTIME_WORKSCHEDULE_H
#define KVIR_RUNTIME_WORKSCHEDULE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The int32 fields of one work item, in order. */
enum {
  KVIR_WORK_REQUEST = 0,
  KVIR_WORK_CHUNK = 1,
  KVIR_WORK_NUM_CHUNKS = 2,
  KVIR_WORK_PARTIAL_ROW = 3,
  KVIR_WORK_FIELDS = 4
};

/* Errors kvir_schedule_work returns (negative). */
enum {
  KVIR_SCHEDULE_BAD_ARGUMENT = -1, /* a negative length or parameter */
  KVIR_SCHEDULE_TOO_MANY_ITEMS = -2 /* more items than max_items */
};

/* Fills `items` ([max_items][KVIR_WORK_FIELDS], items past the returned
 * count get request -1: blocks of a fixed grid that have no work) and
 * `merge_indptr` ([batch + 1]); returns the number of items (at least
 * batch; more than batch exactly when some request is split) or a
 * KVIR_SCHEDULE_* error. `kv_lengths[r]` is request r's kv_len; with
 * window_left >= 0 a request sees only its last window_left + 1 keys. */
int64_t kvir_schedule_work(const int32_t *kv_lengths, int64_t batch,
                           int64_t window_left, int64_t target_items,
                           int64_t granule, int64_t min_chunk,
                           int64_t uniform_chunks, int64_t max_items,
                           int32_t *items, int32_t *merge_indptr);

/* For a fixed grid sized for `max_batch` requests (CUDA graphs: the
 * launches replay with the grids they were captured with): sets
 * merge_indptr[batch + 1 .. max_batch] to merge_indptr[batch], so that the
 * merge blocks of requests past the batch find no rows and do nothing.
 * merge_indptr holds max_batch + 1 entries. Returns 0, or
 * KVIR_SCHEDULE_BAD_ARGUMENT when batch > max_batch or batch < 0. */
int64_t kvir_schedule_pad_batch(int64_t batch, int64_t max_batch,
                                int32_t *merge_indptr);
/* The most items kvir_schedule_work can return for these parameters:
 * the size of `items` that never fails. */
int64_t kvir_schedule_max_items(int64_t batch, int64_t target_items,
                                int64_t uniform_chunks);

#ifdef __cplusplus
}
#endif

#endif /* KVIR_RUNTIME_WORKSCHEDULE_H */
