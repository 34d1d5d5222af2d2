//===- WorkSchedule.cpp - Split-KV work lists ------------------------------===//
//
// No LLVM or MLIR here: this file is the runtime library C callers link.
//
//===----------------------------------------------------------------------===//
#include "kvir/Runtime/WorkSchedule.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Items of one KV head when every request's visible keys are cut into
/// chunks of at most `chunk` tokens (an empty request still gets one).
int64_t countItems(const std::vector<int64_t> &visible, int64_t chunk) {
  int64_t n = 0;
  for (int64_t v : visible)
    n += std::max<int64_t>(1, ceilDiv(v, chunk));
  return n;
}

} // namespace

extern "C" int64_t kvir_schedule_max_items(int64_t batch, int64_t target_items,
                                           int64_t uniform_chunks) {
  return std::max(batch * std::max<int64_t>(1, uniform_chunks),
                  std::max(batch, target_items));
}

extern "C" int64_t kvir_schedule_pad_batch(int64_t batch, int64_t max_batch,
                                           int32_t *merge_indptr) {
  if (batch < 0 || batch > max_batch)
    return KVIR_SCHEDULE_BAD_ARGUMENT;
  for (int64_t r = batch + 1; r <= max_batch; ++r)
    merge_indptr[r] = merge_indptr[batch];
  return 0;
}

extern "C" int64_t kvir_schedule_work(const int32_t *kv_lengths, int64_t batch,
                                      int64_t window_left, int64_t target_items,
                                      int64_t granule, int64_t min_chunk,
                                      int64_t uniform_chunks, int64_t max_items,
                                      int32_t *items, int32_t *merge_indptr) {
  if (batch < 0 || granule < 1 || min_chunk < 0 || uniform_chunks < 1 ||
      max_items < 0 || target_items < 0 || window_left < -1)
    return KVIR_SCHEDULE_BAD_ARGUMENT;
  std::vector<int64_t> chunks(batch, uniform_chunks);
  std::vector<int64_t> chunkTokens(batch, 0); // for the order only
  if (kv_lengths) {
    std::vector<int64_t> visible(batch);
    int64_t longest = 0;
    for (int64_t r = 0; r < batch; ++r) {
      if (kv_lengths[r] < 0)
        return KVIR_SCHEDULE_BAD_ARGUMENT;
      visible[r] = kv_lengths[r];
      if (window_left >= 0)
        visible[r] = std::min(visible[r], window_left + 1);
      longest = std::max(longest, visible[r]);
    }
    // The smallest chunk (in granules) whose item count fits the target;
    // the count only falls as the chunk grows, and a chunk of the longest
    // request gives one item per request, which always fits.
    int64_t budget = std::max(batch, target_items);
    int64_t lo = std::max<int64_t>(1, ceilDiv(min_chunk, granule));
    int64_t hi = std::max(lo, ceilDiv(longest, granule));
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (countItems(visible, mid * granule) <= budget)
        hi = mid;
      else
        lo = mid + 1;
    }
    int64_t chunk = lo * granule;
    for (int64_t r = 0; r < batch; ++r) {
      chunks[r] = std::max<int64_t>(1, ceilDiv(visible[r], chunk));
      chunkTokens[r] = ceilDiv(visible[r], chunks[r]);
    }
  }
  int64_t total = std::accumulate(chunks.begin(), chunks.end(), int64_t(0));
  if (total > max_items)
    return KVIR_SCHEDULE_TOO_MANY_ITEMS;

  merge_indptr[0] = 0;
  for (int64_t r = 0; r < batch; ++r)
    merge_indptr[r + 1] = int32_t(merge_indptr[r] + chunks[r]);
  // Longest chunks first (request order among equals), so that a GPU's
  // block scheduler fills the tail of the launch with short blocks. (A
  // sort with the index as tie-break: std::stable_sort's buffer is
  // deprecated in C++17's libstdc++.)
  std::vector<int64_t> order(batch);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return chunkTokens[a] != chunkTokens[b] ? chunkTokens[a] > chunkTokens[b]
                                            : a < b;
  });
  int32_t *item = items;
  for (int64_t r : order)
    for (int64_t j = 0; j < chunks[r]; ++j, item += KVIR_WORK_FIELDS) {
      item[KVIR_WORK_REQUEST] = int32_t(r);
      item[KVIR_WORK_CHUNK] = int32_t(j);
      item[KVIR_WORK_NUM_CHUNKS] = int32_t(chunks[r]);
      item[KVIR_WORK_PARTIAL_ROW] = int32_t(merge_indptr[r] + j);
    }
  for (int64_t i = total; i < max_items; ++i, item += KVIR_WORK_FIELDS) {
    item[KVIR_WORK_REQUEST] = -1;
    item[KVIR_WORK_CHUNK] = 0;
    item[KVIR_WORK_NUM_CHUNKS] = 1;
    item[KVIR_WORK_PARTIAL_ROW] = -1;
  }
  return total;
}
