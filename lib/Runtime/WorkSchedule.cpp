//===- WorkSchedule.cpp - Split-KV work lists ------------------------------===//
//
// No LLVM or MLIR here: this file is the runtime library C callers link.
//
//===----------------------------------------------------------------------===//
#include "kvir/Runtime/WorkSchedule.h"

#include <algorithm>
#include <numeric>
#include <queue>
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

/// The smallest chunk, a multiple of `granule` of at least `minChunk`
/// tokens, that cuts `visible` into at most `budget` items (at least one
/// each): the count only falls as the chunk grows, and a chunk of the
/// longest gives one item each, which fits any budget of at least
/// visible.size().
int64_t smallestChunk(const std::vector<int64_t> &visible, int64_t budget,
                      int64_t granule, int64_t minChunk) {
  int64_t longest = 0;
  for (int64_t v : visible)
    longest = std::max(longest, v);
  int64_t lo = std::max<int64_t>(1, ceilDiv(minChunk, granule));
  int64_t hi = std::max(lo, ceilDiv(longest, granule));
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (countItems(visible, mid * granule) <= budget)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo * granule;
}

/// Indices 0 .. n - 1 by `tokens`, most first (index order among equals),
/// so that a GPU's block scheduler fills the tail of a launch with short
/// blocks. (A sort with the index as tie-break: std::stable_sort's buffer
/// is deprecated in C++17's libstdc++.)
std::vector<int64_t> longestFirst(const std::vector<int64_t> &tokens) {
  std::vector<int64_t> order(tokens.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return tokens[a] != tokens[b] ? tokens[a] > tokens[b] : a < b;
  });
  return order;
}

/// Marks items [from, maxItems) of `fields` int32 each as no work.
void padItems(int32_t *items, int64_t fields, int64_t from, int64_t maxItems) {
  for (int64_t i = from; i < maxItems; ++i) {
    int32_t *item = items + i * fields;
    std::fill(item, item + fields, 0);
    item[KVIR_WORK_REQUEST] = -1;
    item[KVIR_WORK_NUM_CHUNKS] = 1;
    item[KVIR_WORK_PARTIAL_ROW] = -1;
  }
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
    for (int64_t r = 0; r < batch; ++r) {
      if (kv_lengths[r] < 0)
        return KVIR_SCHEDULE_BAD_ARGUMENT;
      visible[r] = kv_lengths[r];
      if (window_left >= 0)
        visible[r] = std::min(visible[r], window_left + 1);
    }
    int64_t chunk = smallestChunk(visible, std::max(batch, target_items),
                                  granule, min_chunk);
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
  std::vector<int64_t> order = longestFirst(chunkTokens);
  int32_t *item = items;
  for (int64_t r : order)
    for (int64_t j = 0; j < chunks[r]; ++j, item += KVIR_WORK_FIELDS) {
      item[KVIR_WORK_REQUEST] = int32_t(r);
      item[KVIR_WORK_CHUNK] = int32_t(j);
      item[KVIR_WORK_NUM_CHUNKS] = int32_t(chunks[r]);
      item[KVIR_WORK_PARTIAL_ROW] = int32_t(merge_indptr[r] + j);
    }
  padItems(items, KVIR_WORK_FIELDS, total, max_items);
  return total;
}

extern "C" int64_t kvir_schedule_prefill_max_items(int64_t nnz, int64_t batch,
                                                   int64_t tile_rows,
                                                   int64_t slots) {
  if (tile_rows < 1)
    return 0;
  return nnz / tile_rows + batch + KVIR_PREFILL_MAX_WAVES * slots;
}

namespace {

/// One query tile of a prefill: its request, index and visible keys.
struct QueryTileWork {
  int64_t request, tile, firstRow, rows, visible;
};

/// The query tiles of a batch and the keys each sees (as the prefill
/// kernel derives them: the union of its rows' visible ranges), or an
/// error.
int64_t listQueryTiles(const int32_t *qo_indptr, const int32_t *kv_lengths,
                       int64_t batch, int64_t tileRows, bool causal,
                       int64_t windowLeft, std::vector<QueryTileWork> &tiles) {
  if (qo_indptr[0] != 0)
    return KVIR_SCHEDULE_BAD_INDPTR;
  for (int64_t r = 0; r < batch; ++r) {
    int64_t qo = int64_t(qo_indptr[r + 1]) - qo_indptr[r];
    int64_t kv = kv_lengths[r];
    if (qo < 0)
      return KVIR_SCHEDULE_BAD_INDPTR;
    if (kv < 0)
      return KVIR_SCHEDULE_BAD_ARGUMENT;
    for (int64_t t = 0; t * tileRows < qo; ++t) {
      int64_t rows = std::min(tileRows, qo - t * tileRows);
      // Positions of the tile's first and last rows (negative: rows
      // before the first key, which see none under causal).
      int64_t first = kv - qo + t * tileRows, last = first + rows - 1;
      int64_t hi = causal ? std::clamp<int64_t>(last + 1, 0, kv) : kv;
      int64_t lo =
          windowLeft >= 0 ? std::clamp<int64_t>(first - windowLeft, 0, kv) : 0;
      tiles.push_back({r, t, qo_indptr[r] + t * tileRows, rows,
                       std::max<int64_t>(0, hi - lo)});
    }
  }
  return 0;
}

/// The keys of piece j of n of a tile of `visible` keys, as the kernel cuts
/// it: n pieces of the same number of whole granules, the last shorter
/// (some may be empty).
int64_t pieceKeys(int64_t visible, int64_t n, int64_t j, int64_t granule) {
  int64_t piece = ceilDiv(ceilDiv(visible, granule), n) * granule;
  int64_t start = std::min(j * piece, visible);
  return std::min(start + piece, visible) - start;
}

/// The chunk counts of `visible` keys per tile under chunks of `chunk`.
std::vector<int64_t> chunkCounts(const std::vector<int64_t> &visible,
                                 int64_t chunk) {
  std::vector<int64_t> n(visible.size());
  for (size_t t = 0; t < visible.size(); ++t)
    n[t] = std::max<int64_t>(1, ceilDiv(visible[t], chunk));
  return n;
}

/// The items (tile, piece) of chunk counts `n`, with the cost of each (its
/// keys plus `overhead`), most costly first (tile order among equals).
struct PieceList {
  std::vector<std::pair<int64_t, int64_t>> items; // (tile, piece)
  std::vector<int64_t> cost;
};
PieceList listPieces(const std::vector<int64_t> &visible,
                     const std::vector<int64_t> &n, int64_t granule,
                     int64_t overhead) {
  PieceList list;
  for (size_t t = 0; t < visible.size(); ++t)
    for (int64_t j = 0; j < n[t]; ++j) {
      list.items.push_back({int64_t(t), j});
      list.cost.push_back(pieceKeys(visible[t], n[t], j, granule) + overhead);
    }
  std::vector<int64_t> order = longestFirst(list.cost);
  PieceList sorted;
  for (int64_t i : order) {
    sorted.items.push_back(list.items[i]);
    sorted.cost.push_back(list.cost[i]);
  }
  return sorted;
}

/// The workspace rows of chunk counts `n`: n per row of a cut tile.
int64_t partialRows(const std::vector<QueryTileWork> &tiles,
                    const std::vector<int64_t> &n) {
  int64_t rows = 0;
  for (size_t t = 0; t < tiles.size(); ++t)
    if (n[t] > 1)
      rows += n[t] * tiles[t].rows;
  return rows;
}

/// When the last of `costs` ends, handed out in order to the first free of
/// `slots` (a GPU's block scheduler).
int64_t makespan(const std::vector<int64_t> &costs, int64_t slots) {
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>>
      free;
  for (int64_t i = 0; i < std::max<int64_t>(1, slots); ++i)
    free.push(0);
  int64_t end = 0;
  for (int64_t c : costs) {
    int64_t at = free.top() + c;
    free.pop();
    free.push(at);
    end = std::max(end, at);
  }
  return end;
}

} // namespace

extern "C" int64_t kvir_schedule_prefill_work(
    const int32_t *qo_indptr, const int32_t *kv_lengths, int64_t batch,
    int64_t num_rows, int64_t tile_rows, int64_t causal, int64_t window_left,
    int64_t slots, int64_t granule, int64_t min_chunk, int64_t max_items,
    int64_t max_partial_rows, int32_t *items, int32_t *merge_indptr,
    int64_t *num_tiles) {
  if (batch < 0 || tile_rows < 1 || granule < 1 || min_chunk < 0 ||
      max_items < 0 || max_partial_rows < -1 || slots < 1 || window_left < -1 ||
      !qo_indptr || (batch > 0 && !kv_lengths))
    return KVIR_SCHEDULE_BAD_ARGUMENT;
  std::vector<QueryTileWork> tiles;
  if (int64_t error = listQueryTiles(qo_indptr, kv_lengths, batch, tile_rows,
                                     causal != 0, window_left, tiles))
    return error;
  if (qo_indptr[batch] > num_rows)
    return KVIR_SCHEDULE_BAD_INDPTR;
  int64_t numTiles = tiles.size();
  std::vector<int64_t> visible(numTiles);
  int64_t keys = 0, longest = 0;
  for (int64_t t = 0; t < numTiles; ++t) {
    visible[t] = tiles[t].visible;
    keys += visible[t];
    longest = std::max(longest, visible[t]);
  }
  // The chunk size whose items, handed out longest first, end soonest on
  // the chip's slots: tiles whole, or chunks of about keys / (w * slots)
  // for w waves of items; an item costs its keys and one granule more
  // (its query tile, epilogue and partial state). The chip runs `slots`
  // items at once, or twice as many where the kernel's registers allow
  // (which ptxas decides after the plan): a chunk size is judged by the
  // worse of the two makespans over its perfect split, ties keeping fewer
  // items. A chunk size whose cut tiles need more than max_partial_rows
  // workspace rows (a fixed workspace) is not taken; whole tiles need none.
  int64_t shortest =
      std::max<int64_t>(1, ceilDiv(min_chunk, granule)) * granule;
  std::vector<int64_t> chunks;
  PieceList list;
  double bestRatio = -1;
  for (int64_t w = 0; w <= KVIR_PREFILL_MAX_WAVES; ++w) {
    int64_t chunk =
        w == 0 ? std::max<int64_t>(longest, 1)
               : std::max(shortest,
                          ceilDiv(ceilDiv(keys, w * slots), granule) * granule);
    if (w > 0 && chunk >= longest)
      continue; // cuts nothing
    std::vector<int64_t> counts = chunkCounts(visible, chunk);
    if (max_partial_rows >= 0 && partialRows(tiles, counts) > max_partial_rows)
      continue;
    PieceList candidate = listPieces(visible, counts, granule, granule);
    double work = double(std::accumulate(candidate.cost.begin(),
                                         candidate.cost.end(), int64_t(0)));
    double ratio = 0;
    for (int64_t s : {slots, 2 * slots})
      ratio = std::max(ratio, double(makespan(candidate.cost, s)) /
                                  std::max(1.0, work / double(s)));
    int64_t count = candidate.items.size();
    if (bestRatio < 0 || ratio < bestRatio ||
        (ratio == bestRatio && count < int64_t(list.items.size()))) {
      chunks = std::move(counts);
      list = std::move(candidate);
      bestRatio = ratio;
    }
  }
  int64_t total = list.items.size();
  if (total > max_items)
    return KVIR_SCHEDULE_TOO_MANY_ITEMS;

  // Workspace rows: n per row of a cut tile, none for a whole one (nor
  // for the rows past the requests').
  int64_t nnz = num_rows;
  merge_indptr[0] = 0;
  int64_t row = 0;
  for (int64_t t = 0; t < numTiles; ++t) {
    for (; row < tiles[t].firstRow; ++row) // rows of no tile: none
      merge_indptr[row + 1] = merge_indptr[row];
    int64_t per = chunks[t] > 1 ? chunks[t] : 0;
    for (int64_t k = 0; k < tiles[t].rows; ++k, ++row)
      merge_indptr[row + 1] = int32_t(merge_indptr[row] + per);
  }
  for (; row < nnz; ++row)
    merge_indptr[row + 1] = merge_indptr[row];

  int32_t *item = items;
  for (auto [t, j] : list.items) {
    item[KVIR_WORK_REQUEST] = int32_t(tiles[t].request);
    item[KVIR_WORK_CHUNK] = int32_t(j);
    item[KVIR_WORK_NUM_CHUNKS] = int32_t(chunks[t]);
    item[KVIR_WORK_PARTIAL_ROW] =
        chunks[t] > 1 ? int32_t(merge_indptr[tiles[t].firstRow] + j) : -1;
    item[KVIR_WORK_QUERY_TILE] = int32_t(tiles[t].tile);
    item += KVIR_PREFILL_WORK_FIELDS;
  }
  padItems(items, KVIR_PREFILL_WORK_FIELDS, total, max_items);
  if (num_tiles)
    *num_tiles = numTiles;
  return total;
}
