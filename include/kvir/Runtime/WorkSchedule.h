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
  KVIR_SCHEDULE_TOO_MANY_ITEMS = -2, /* more items than max_items */
  KVIR_SCHEDULE_BAD_INDPTR = -3 /* qo_indptr not starting at 0 and rising, or
                                   past the rows */
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

/* Prefill work lists: a request of several query rows is cut into query
 * tiles of `tile_rows` consecutive rows (the last may be shorter), and each
 * tile's visible keys into chunks. An item holds KVIR_PREFILL_WORK_FIELDS
 * int32 fields: the four above (request, chunk, chunk count, partial row)
 * and the tile's index within its request. A tile's visible keys are
 * those any of its rows sees: rows sit at positions kv_len - qo_len + i,
 * so under `causal` a tile ends at its last row's position, and with
 * window_left >= 0 it starts window_left keys before its first row's.
 *
 * `slots` is the number of items the chip runs at once. The chunk size is
 * the one whose items, handed out longest first to the first free slot
 * (a GPU's block scheduler), end soonest: tiles whole, or chunks of about
 * keys / (w * slots) keys (a multiple of `granule`, at least `min_chunk`)
 * for w = 1 .. KVIR_PREFILL_MAX_WAVES; an item costs its keys plus one
 * granule (its query tile, epilogue and partial state), and a tile is cut
 * into pieces of whole granules as the kernel cuts it. Items are listed
 * most costly first; there are at most tiles + KVIR_PREFILL_MAX_WAVES *
 * slots (kvir_schedule_prefill_max_items).
 *
 * A tile of one chunk writes its rows' final states. A tile of n > 1
 * chunks writes n partial states per row: row k of the tile (query row
 * qo_indptr[r] + t * tile_rows + k of the batch) keeps them in workspace
 * rows merge_indptr[row] .. merge_indptr[row + 1] (n rows), chunk j in
 * row merge_indptr[row] + j; an item's partial row is its tile's first
 * row's, so row k's is partial_row + k * n. Rows of whole tiles have no
 * workspace rows (merge_indptr[row + 1] == merge_indptr[row]).
 * `merge_indptr` holds num_rows + 1 entries: num_rows is the query rows of
 * the buffers, at least qo_indptr[batch] (rows past it, a CUDA graph's
 * padding, belong to no request and have no workspace rows); the
 * workspace rows used are merge_indptr[num_rows]. `*num_tiles` (when not NULL)
 * gets the number of query tiles: some tile is cut exactly when the count
 * exceeds it. With max_partial_rows >= 0 (a fixed workspace: CUDA graphs)
 * no chunk size whose cut tiles need more workspace rows is taken (tiles
 * whole need none); -1: no bound. Returns the number of items or a
 * KVIR_SCHEDULE_* error; items past it up to max_items get request -1. */
enum {
  KVIR_WORK_QUERY_TILE = 4,
  KVIR_PREFILL_WORK_FIELDS = 5,
  KVIR_PREFILL_MAX_WAVES = 4
};
int64_t kvir_schedule_prefill_work(const int32_t *qo_indptr,
                                   const int32_t *kv_lengths, int64_t batch,
                                   int64_t num_rows, int64_t tile_rows,
                                   int64_t causal, int64_t window_left,
                                   int64_t slots, int64_t granule,
                                   int64_t min_chunk, int64_t max_items,
                                   int64_t max_partial_rows, int32_t *items,
                                   int32_t *merge_indptr, int64_t *num_tiles);
/* The most items kvir_schedule_prefill_work can return for a batch of
 * `nnz` query rows: the size of `items` that never fails. */
int64_t kvir_schedule_prefill_max_items(int64_t nnz, int64_t batch,
                                        int64_t tile_rows, int64_t slots);
/* The most workspace rows kvir_schedule_prefill_work takes for any batch:
 * a tile cut into n > 1 chunks of c keys sees more than (n - 1) c >= n c / 2
 * keys, so the cut tiles' items are at most 2 keys / c <= 2 waves x slots
 * (chunks of at least keys / (waves x slots)), each of at most tile_rows
 * rows. A workspace this large (CUDA graphs: fixed before the batch) never
 * limits the schedule. */
static inline int64_t kvir_schedule_prefill_max_partial_rows(int64_t tile_rows,
                                                             int64_t slots) {
  return 2 * KVIR_PREFILL_MAX_WAVES * slots * tile_rows;
}

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
