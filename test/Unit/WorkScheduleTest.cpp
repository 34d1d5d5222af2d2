//===- WorkScheduleTest.cpp - The split-KV work list of the runtime -------===//
//
// kvir_schedule_work (include/kvir/Runtime/WorkSchedule.h) on seeded random
// and hand-made batches (kvir_schedule_prefill_work below): every visible key of every request is covered by
// exactly one item (replaying the kernels' chunk rule), partial rows are
// each request's contiguous range, chunk sizes respect the bounds, the item
// count respects the target and the capacity, and a skewed batch is cut
// into near-equal chunks while short requests stay whole.
//
//===----------------------------------------------------------------------===//
#include "kvir/Runtime/WorkSchedule.h"

#include "Support/Random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace {

struct Schedule {
  int64_t count = 0;
  std::vector<int32_t> items, indptr;
};

struct Params {
  int64_t windowLeft = -1, target = 132, granule = 16, minChunk = 128,
          uniform = 1;
};

Schedule schedule(const std::vector<int32_t> *lengths, int64_t batch,
                  const Params &p, int64_t maxItems = -1) {
  if (maxItems < 0)
    maxItems = kvir_schedule_max_items(batch, p.target, p.uniform);
  Schedule s;
  s.items.assign(maxItems * KVIR_WORK_FIELDS, 12345);
  s.indptr.assign(batch + 1, 12345);
  s.count = kvir_schedule_work(lengths ? lengths->data() : nullptr, batch,
                               p.windowLeft, p.target, p.granule, p.minChunk,
                               p.uniform, maxItems, s.items.data(),
                               s.indptr.data());
  return s;
}

/// The keys item `i` covers, as the decode kernel derives them.
std::pair<int64_t, int64_t> itemRange(const Schedule &s, int64_t i,
                                      int64_t kvLen, int64_t windowLeft) {
  const int32_t *item = &s.items[i * KVIR_WORK_FIELDS];
  int64_t first =
      windowLeft >= 0 ? std::max<int64_t>(0, kvLen - 1 - windowLeft) : 0;
  int64_t n = item[KVIR_WORK_NUM_CHUNKS];
  int64_t chunk = (kvLen - first + n - 1) / n;
  int64_t start = std::min(first + item[KVIR_WORK_CHUNK] * chunk, kvLen);
  return {start, std::min(start + chunk, kvLen)};
}

/// Checks everything a schedule promises for `lengths` (null: uniform).
void checkSchedule(const Schedule &s, const std::vector<int32_t> &lengths,
                   const Params &p, bool lengthAware) {
  int64_t batch = lengths.size();
  ASSERT_GE(s.count, batch);
  int64_t capacity = int64_t(s.items.size()) / KVIR_WORK_FIELDS;
  ASSERT_LE(s.count, capacity);
  if (lengthAware)
    EXPECT_LE(s.count, std::max(batch, p.target));
  else
    EXPECT_EQ(s.count, batch * p.uniform);
  ASSERT_EQ(s.indptr[0], 0);
  for (int64_t r = 0; r < batch; ++r)
    ASSERT_LT(s.indptr[r], s.indptr[r + 1]) << "request " << r;
  ASSERT_EQ(s.indptr[batch], s.count);
  std::vector<int> rowSeen(s.count, 0);
  std::vector<std::vector<int>> covered(batch);
  for (int64_t r = 0; r < batch; ++r)
    covered[r].assign(lengths[r], 0);
  int64_t longestChunk = 0;
  for (int64_t i = 0; i < s.count; ++i) {
    const int32_t *item = &s.items[i * KVIR_WORK_FIELDS];
    int64_t r = item[KVIR_WORK_REQUEST];
    ASSERT_GE(r, 0);
    ASSERT_LT(r, batch);
    int64_t n = s.indptr[r + 1] - s.indptr[r];
    EXPECT_EQ(item[KVIR_WORK_NUM_CHUNKS], n);
    ASSERT_GE(item[KVIR_WORK_CHUNK], 0);
    ASSERT_LT(item[KVIR_WORK_CHUNK], n);
    EXPECT_EQ(item[KVIR_WORK_PARTIAL_ROW], s.indptr[r] + item[KVIR_WORK_CHUNK]);
    ++rowSeen[item[KVIR_WORK_PARTIAL_ROW]];
    auto [start, end] = itemRange(s, i, lengths[r], p.windowLeft);
    longestChunk = std::max(longestChunk, end - start);
    for (int64_t k = start; k < end; ++k)
      ++covered[r][k];
  }
  for (int64_t row = 0; row < s.count; ++row)
    EXPECT_EQ(rowSeen[row], 1) << "partial row " << row;
  for (int64_t r = 0; r < batch; ++r) {
    int64_t first = p.windowLeft >= 0
                        ? std::max<int64_t>(0, lengths[r] - 1 - p.windowLeft)
                        : 0;
    for (int64_t k = 0; k < lengths[r]; ++k)
      ASSERT_EQ(covered[r][k], k >= first ? 1 : 0)
          << "request " << r << " key " << k;
  }
  // Padding past the items: blocks of a fixed grid with nothing to do.
  for (int64_t i = s.count; i < capacity; ++i)
    EXPECT_EQ(s.items[i * KVIR_WORK_FIELDS + KVIR_WORK_REQUEST], -1);
  if (lengthAware) {
    // A request is cut only into chunks of at least min_chunk keys (the
    // chunk size the search picked, rounded to the granule).
    for (int64_t r = 0; r < batch; ++r) {
      int64_t n = s.indptr[r + 1] - s.indptr[r];
      int64_t visible = p.windowLeft >= 0
                            ? std::min<int64_t>(lengths[r], p.windowLeft + 1)
                            : lengths[r];
      if (n > 1)
        EXPECT_GE(visible, (n - 1) * p.minChunk) << "request " << r;
    }
    // Longest chunks first.
    int64_t previous = INT64_MAX;
    for (int64_t i = 0; i < s.count; ++i) {
      int64_t r = s.items[i * KVIR_WORK_FIELDS + KVIR_WORK_REQUEST];
      int64_t n = s.indptr[r + 1] - s.indptr[r];
      int64_t visible = p.windowLeft >= 0
                            ? std::min<int64_t>(lengths[r], p.windowLeft + 1)
                            : lengths[r];
      int64_t tokens = (visible + n - 1) / n;
      EXPECT_LE(tokens, previous) << "item " << i;
      previous = tokens;
    }
  }
}

TEST(WorkSchedule, RandomBatchesCoverEveryKeyOnce) {
  kvir::test::Rng rng(7001);
  for (int trial = 0; trial < 200; ++trial) {
    int64_t batch = rng.integer(1, 40);
    std::vector<int32_t> lengths(batch);
    int64_t maxLen = rng.coin() ? 300 : 20000;
    for (int32_t &l : lengths)
      l = int32_t(rng.integer(0, maxLen));
    Params p;
    p.target = rng.integer(1, 300);
    p.granule = rng.coin() ? 16 : rng.integer(1, 64);
    p.minChunk = rng.integer(0, 512);
    p.uniform = rng.integer(1, 32);
    if (rng.coin(0.3))
      p.windowLeft = rng.integer(0, 3000);
    SCOPED_TRACE("trial " + std::to_string(trial));
    checkSchedule(schedule(&lengths, batch, p), lengths, p, true);
    checkSchedule(schedule(nullptr, batch, p), lengths, p, false);
  }
}

TEST(WorkSchedule, SkewedBatchIsCutIntoNearEqualChunks) {
  // 1 x 16384 + 31 x 64 over a target of 132 items: the long request is
  // cut into chunks of ~163-176 keys, the short ones stay whole.
  std::vector<int32_t> lengths(32, 64);
  lengths[0] = 16384;
  Params p;
  p.minChunk = 128;
  Schedule s = schedule(&lengths, 32, p);
  checkSchedule(s, lengths, p, true);
  int64_t longPieces = s.indptr[1] - s.indptr[0];
  EXPECT_EQ(s.count, 31 + longPieces);
  EXPECT_LE(s.count, 132);
  EXPECT_GE(longPieces, 90); // chunks of at most 16384 / 90 = 182 keys
  for (int64_t r = 1; r < 32; ++r)
    EXPECT_EQ(s.indptr[r + 1] - s.indptr[r], 1);
  EXPECT_EQ(s.items[KVIR_WORK_REQUEST], 0); // the long chunks go first
}

TEST(WorkSchedule, ShortAndEmptyRequestsStayWhole) {
  std::vector<int32_t> lengths{0, 1, 127, 128, 0};
  Params p;
  Schedule s = schedule(&lengths, 5, p);
  checkSchedule(s, lengths, p, true);
  EXPECT_EQ(s.count, 5); // nothing cut: the direct kernel's case
}

TEST(WorkSchedule, WindowLimitsTheCut) {
  std::vector<int32_t> lengths{100000};
  Params p;
  p.windowLeft = 200; // 201 visible keys: at most one cut
  Schedule s = schedule(&lengths, 1, p);
  checkSchedule(s, lengths, p, true);
  EXPECT_LE(s.count, 2);
}

TEST(WorkSchedule, RejectsBadInput) {
  std::vector<int32_t> lengths{10, -1};
  Params p;
  EXPECT_EQ(schedule(&lengths, 2, p).count, KVIR_SCHEDULE_BAD_ARGUMENT);
  std::vector<int32_t> ok{5000, 5000};
  Params tight;
  tight.target = 100;
  EXPECT_EQ(schedule(&ok, 2, tight, /*maxItems=*/10).count,
            KVIR_SCHEDULE_TOO_MANY_ITEMS);
  Params badGranule;
  badGranule.granule = 0;
  EXPECT_EQ(schedule(&ok, 2, badGranule).count, KVIR_SCHEDULE_BAD_ARGUMENT);
}

TEST(WorkSchedule, EmptyBatch) {
  std::vector<int32_t> none;
  Params p;
  Schedule s = schedule(&none, 0, p);
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.indptr[0], 0);
}

TEST(WorkSchedule, PadsMergeRowsForAFixedGrid) {
  // Three requests scheduled into a merge_indptr sized for six: entries
  // past the batch repeat the item count (requests with no rows), entries
  // of the batch stay as they were.
  std::vector<int32_t> indptr{0, 1, 5, 6, -7, -7, -7};
  EXPECT_EQ(kvir_schedule_pad_batch(3, 6, indptr.data()), 0);
  EXPECT_EQ(indptr, (std::vector<int32_t>{0, 1, 5, 6, 6, 6, 6}));
  // A full batch touches nothing; a batch past the grid is an error.
  std::vector<int32_t> full{0, 2, 3};
  EXPECT_EQ(kvir_schedule_pad_batch(2, 2, full.data()), 0);
  EXPECT_EQ(full, (std::vector<int32_t>{0, 2, 3}));
  EXPECT_EQ(kvir_schedule_pad_batch(3, 2, full.data()),
            KVIR_SCHEDULE_BAD_ARGUMENT);
  EXPECT_EQ(kvir_schedule_pad_batch(-1, 2, full.data()),
            KVIR_SCHEDULE_BAD_ARGUMENT);
}

// kvir_schedule_prefill_work: query tiles times chunks of their keys.

struct PrefillBatch {
  std::vector<int32_t> qoIndptr, kvLens;
  /// Rows of the buffers past the requests' (a CUDA graph's padding).
  int64_t padding = 0;
  int64_t batch() const { return kvLens.size(); }
  int64_t nnz() const { return qoIndptr.back() + padding; }
};

struct PrefillParams {
  int64_t tileRows = 64, causal = 1, windowLeft = -1, slots = 132,
          granule = 64, minChunk = 256, maxPartialRows = -1;
};

struct PrefillSchedule {
  int64_t count = 0, tiles = -1;
  std::vector<int32_t> items, indptr;
  const int32_t *item(int64_t i) const {
    return &items[i * KVIR_PREFILL_WORK_FIELDS];
  }
};

PrefillSchedule schedulePrefill(const PrefillBatch &in, const PrefillParams &p,
                                int64_t maxItems = -1) {
  if (maxItems < 0)
    maxItems = kvir_schedule_prefill_max_items(in.nnz(), in.batch(),
                                               p.tileRows, p.slots);
  PrefillSchedule s;
  s.items.assign(maxItems * KVIR_PREFILL_WORK_FIELDS, 12345);
  s.indptr.assign(in.nnz() + 1, 12345);
  s.count = kvir_schedule_prefill_work(
      in.qoIndptr.data(), in.kvLens.data(), in.batch(), in.nnz(), p.tileRows,
      p.causal,
      p.windowLeft, p.slots, p.granule, p.minChunk, maxItems, p.maxPartialRows,
      s.items.data(), s.indptr.data(), &s.tiles);
  return s;
}

/// Whether row `i` of a request of qo rows and kv keys sees key `j`.
bool sees(int64_t i, int64_t j, int64_t qo, int64_t kv, const PrefillParams &p) {
  int64_t pos = kv - qo + i;
  return (!p.causal || j <= pos) && (p.windowLeft < 0 || j >= pos - p.windowLeft);
}

/// Checks what a prefill schedule promises: every key each row sees is in
/// exactly one item of the row's tile (the kernel's rule: the tile's keys,
/// the union of its rows' ranges, cut into n pieces of whole granules),
/// partial rows are distinct and inside the workspace bound, and the
/// count, cut and order rules hold.
void checkPrefillSchedule(const PrefillSchedule &s, const PrefillBatch &in,
                          const PrefillParams &p) {
  int64_t batch = in.batch(), nnz = in.nnz();
  int64_t expectedTiles = 0;
  for (int64_t r = 0; r < batch; ++r)
    expectedTiles +=
        (in.qoIndptr[r + 1] - in.qoIndptr[r] + p.tileRows - 1) / p.tileRows;
  ASSERT_EQ(s.tiles, expectedTiles);
  ASSERT_GE(s.count, s.tiles);
  EXPECT_LE(s.count, s.tiles + KVIR_PREFILL_MAX_WAVES * p.slots);
  ASSERT_EQ(s.indptr[0], 0);
  for (int64_t row = 0; row < nnz; ++row)
    ASSERT_LE(s.indptr[row], s.indptr[row + 1]);
  int64_t workspace = s.indptr[nnz];
  EXPECT_LE(workspace,
            kvir_schedule_prefill_max_partial_rows(p.tileRows, p.slots));
  if (s.count == s.tiles)
    EXPECT_EQ(workspace, 0) << "no tile cut, no workspace";
  std::vector<int> rowSeen(workspace, 0);
  // covered[row][key]: the items covering that key for that row.
  std::vector<std::vector<int>> covered(nnz);
  for (int64_t r = 0; r < batch; ++r)
    for (int64_t row = in.qoIndptr[r]; row < in.qoIndptr[r + 1]; ++row)
      covered[row].assign(in.kvLens[r], 0);
  int64_t previous = INT64_MAX;
  for (int64_t i = 0; i < s.count; ++i) {
    const int32_t *item = s.item(i);
    int64_t r = item[KVIR_WORK_REQUEST], t = item[KVIR_WORK_QUERY_TILE];
    ASSERT_GE(r, 0);
    ASSERT_LT(r, batch);
    int64_t qo = in.qoIndptr[r + 1] - in.qoIndptr[r], kv = in.kvLens[r];
    ASSERT_GE(t, 0);
    ASSERT_LT(t * p.tileRows, qo);
    int64_t first = t * p.tileRows,
            rows = std::min(p.tileRows, qo - first);
    int64_t n = item[KVIR_WORK_NUM_CHUNKS], j = item[KVIR_WORK_CHUNK];
    ASSERT_GE(j, 0);
    ASSERT_LT(j, n);
    // The tile's keys, from its rows (brute force).
    int64_t lo = kv, hi = 0;
    for (int64_t k = 0; k < rows; ++k)
      for (int64_t key = 0; key < kv; ++key)
        if (sees(first + k, key, qo, kv, p)) {
          lo = std::min(lo, key);
          hi = std::max(hi, key + 1);
        }
    hi = std::max(lo, hi);
    int64_t granules = (hi - lo + p.granule - 1) / p.granule;
    int64_t piece = (granules + n - 1) / n * p.granule;
    int64_t start = std::min(lo + j * piece, hi), end = std::min(start + piece, hi);
    // Most keys first.
    EXPECT_LE(end - start, previous) << "item " << i;
    previous = end - start;
    for (int64_t k = 0; k < rows; ++k) {
      int64_t row = in.qoIndptr[r] + first + k;
      int64_t span = s.indptr[row + 1] - s.indptr[row];
      if (n == 1) {
        EXPECT_EQ(span, 0) << "row " << row;
      } else {
        ASSERT_EQ(span, n) << "row " << row;
        int64_t partial = item[KVIR_WORK_PARTIAL_ROW] + k * n;
        ASSERT_EQ(partial, s.indptr[row] + j);
        ++rowSeen[partial];
      }
      for (int64_t key = start; key < end; ++key)
        ++covered[row][key];
    }
    if (n > 1)
      EXPECT_GE(hi - lo, (n - 1) * p.minChunk) << "a cut below min_chunk";
  }
  for (int64_t row = 0; row < workspace; ++row)
    EXPECT_EQ(rowSeen[row], 1) << "partial row " << row;
  for (int64_t r = 0; r < batch; ++r) {
    int64_t qo = in.qoIndptr[r + 1] - in.qoIndptr[r], kv = in.kvLens[r];
    for (int64_t i = 0; i < qo; ++i)
      for (int64_t key = 0; key < kv; ++key)
        if (sees(i, key, qo, kv, p))
          ASSERT_EQ(covered[in.qoIndptr[r] + i][key], 1)
              << "request " << r << " row " << i << " key " << key;
  }
  int64_t capacity = int64_t(s.items.size()) / KVIR_PREFILL_WORK_FIELDS;
  for (int64_t i = s.count; i < capacity; ++i)
    EXPECT_EQ(s.item(i)[KVIR_WORK_REQUEST], -1);
}

PrefillBatch makePrefillBatch(const std::vector<int64_t> &qo,
                              const std::vector<int64_t> &kv) {
  PrefillBatch in;
  in.qoIndptr.push_back(0);
  for (size_t r = 0; r < qo.size(); ++r) {
    in.qoIndptr.push_back(int32_t(in.qoIndptr.back() + qo[r]));
    in.kvLens.push_back(int32_t(kv[r]));
  }
  return in;
}

TEST(PrefillSchedule, RandomBatchesCoverEveryVisibleKeyOnce) {
  kvir::test::Rng rng(7002);
  for (int trial = 0; trial < 150; ++trial) {
    int64_t batch = rng.integer(1, 12);
    std::vector<int64_t> qo(batch), kv(batch);
    for (int64_t r = 0; r < batch; ++r) {
      kv[r] = rng.integer(0, rng.coin() ? 200 : 1500);
      // Rows as keys (a prompt), fewer (appends), more, or none.
      int64_t mode = rng.integer(0, 3);
      qo[r] = mode == 0 ? kv[r] : mode == 1 ? rng.integer(0, kv[r] + 1)
              : mode == 2 ? kv[r] + rng.integer(1, 40) : 0;
    }
    PrefillParams p;
    p.tileRows = rng.coin() ? 64 : rng.integer(1, 40);
    p.causal = rng.coin(0.7);
    p.slots = rng.integer(1, 60);
    p.granule = rng.coin() ? 64 : rng.integer(1, 48);
    p.minChunk = rng.integer(0, 300);
    if (rng.coin(0.3))
      p.windowLeft = rng.integer(0, 400);
    SCOPED_TRACE("trial " + std::to_string(trial));
    PrefillBatch in = makePrefillBatch(qo, kv);
    checkPrefillSchedule(schedulePrefill(in, p), in, p);
  }
}

/// The makespan of `costs` handed in order to the least loaded of
/// `slots` (a GPU's block scheduler), over a perfect split.
double listMakespan(const std::vector<int64_t> &costs, int64_t slots) {
  std::vector<int64_t> load(slots, 0);
  int64_t total = 0;
  for (int64_t c : costs) {
    *std::min_element(load.begin(), load.end()) += c;
    total += c;
  }
  return double(*std::max_element(load.begin(), load.end())) /
         (double(total) / double(slots));
}

TEST(PrefillSchedule, SkewedCausalBatchIsBalanced) {
  // One 8192-row causal prompt among 63 of 128 on 264 block slots: the
  // prompt's late tiles (up to 8192 keys) are cut, the short prompts'
  // tiles stay whole, and handed out in order the items end within 1.15x
  // of a perfect split (whole tiles: 3.9x).
  std::vector<int64_t> qo(64, 128);
  qo[17] = 8192;
  PrefillBatch in = makePrefillBatch(qo, qo);
  PrefillParams p;
  p.slots = 264;
  PrefillSchedule s = schedulePrefill(in, p);
  checkPrefillSchedule(s, in, p);
  EXPECT_EQ(s.tiles, 63 * 2 + 128);
  EXPECT_GT(s.count, s.tiles);
  std::vector<int64_t> costs;
  for (int64_t i = 0; i < s.count; ++i) {
    const int32_t *item = s.item(i);
    int64_t r = item[KVIR_WORK_REQUEST], t = item[KVIR_WORK_QUERY_TILE];
    // The kernel's piece of the tile's keys: whole granules.
    int64_t keys = std::min<int64_t>(qo[r], (t + 1) * p.tileRows);
    int64_t n = item[KVIR_WORK_NUM_CHUNKS];
    int64_t piece = ((keys + p.granule - 1) / p.granule + n - 1) / n * p.granule;
    int64_t start = std::min(item[KVIR_WORK_CHUNK] * piece, keys);
    costs.push_back(std::min(start + piece, keys) - start);
    if (r != 17)
      EXPECT_EQ(item[KVIR_WORK_NUM_CHUNKS], 1);
  }
  EXPECT_EQ(s.item(0)[KVIR_WORK_REQUEST], 17);
  EXPECT_LE(listMakespan(costs, 264), 1.15);
}

TEST(PrefillSchedule, FixedWorkspaceBoundsThePartialRows) {
  // The skewed batch under workspaces of several sizes (CUDA graphs fix
  // it): the rows taken never exceed the bound, the schedule is still
  // exact, and no workspace at all keeps every tile whole.
  std::vector<int64_t> qo(64, 128);
  qo[17] = 8192;
  PrefillBatch in = makePrefillBatch(qo, qo);
  PrefillParams p;
  p.slots = 264;
  int64_t unbounded = schedulePrefill(in, p).indptr.back();
  ASSERT_GT(unbounded, 0);
  for (int64_t bound : {int64_t(0), unbounded / 3, unbounded - 1, unbounded}) {
    p.maxPartialRows = bound;
    PrefillSchedule s = schedulePrefill(in, p);
    checkPrefillSchedule(s, in, p);
    EXPECT_LE(s.indptr.back(), bound);
    if (bound == 0)
      EXPECT_EQ(s.count, s.tiles);
    if (bound == unbounded)
      EXPECT_EQ(s.indptr.back(), unbounded);
  }
  p.maxPartialRows = -2;
  EXPECT_EQ(schedulePrefill(in, p).count, KVIR_SCHEDULE_BAD_ARGUMENT);
}

TEST(PrefillSchedule, FillingBatchesAreNotCut) {
  // 320 equal tiles (not causal) on 80 slots: four waves of whole tiles
  // end together, so none is cut and there is no workspace.
  std::vector<int64_t> qo(40, 512);
  PrefillBatch in = makePrefillBatch(qo, qo);
  PrefillParams p;
  p.causal = 0;
  p.slots = 80;
  PrefillSchedule s = schedulePrefill(in, p);
  checkPrefillSchedule(s, in, p);
  EXPECT_EQ(s.count, s.tiles);
  EXPECT_EQ(s.indptr.back(), 0);
}

TEST(PrefillSchedule, OnePromptIsCutToFillTheChip) {
  // 64 tiles of 4096 keys on 132 slots (or 264, where registers allow):
  // whole, they would leave half the slots idle or more; cut in four, 256
  // items of 1024 keys keep 128 of 132 slots busy twice over, or 256 of
  // 264 once (in two, 128 items would leave half of 264 idle).
  PrefillBatch in = makePrefillBatch({4096}, {4096});
  PrefillParams p;
  p.causal = 0;
  PrefillSchedule s = schedulePrefill(in, p);
  checkPrefillSchedule(s, in, p);
  EXPECT_EQ(s.tiles, 64);
  EXPECT_EQ(s.count, 256);
}

TEST(PrefillSchedule, RejectsBadInput) {
  PrefillParams p;
  PrefillBatch falling = makePrefillBatch({4, 4}, {4, 4});
  falling.qoIndptr = {0, 5, 3};
  EXPECT_EQ(schedulePrefill(falling, p).count, KVIR_SCHEDULE_BAD_INDPTR);
  PrefillBatch offset = makePrefillBatch({4}, {4});
  offset.qoIndptr = {1, 5};
  EXPECT_EQ(schedulePrefill(offset, p).count, KVIR_SCHEDULE_BAD_INDPTR);
  PrefillBatch negative = makePrefillBatch({4}, {-1});
  EXPECT_EQ(schedulePrefill(negative, p).count, KVIR_SCHEDULE_BAD_ARGUMENT);
  PrefillBatch ok = makePrefillBatch({4096}, {4096});
  EXPECT_EQ(schedulePrefill(ok, p, /*maxItems=*/10).count,
            KVIR_SCHEDULE_TOO_MANY_ITEMS);
  PrefillParams noRows = p;
  noRows.tileRows = 0;
  EXPECT_EQ(schedulePrefill(ok, noRows, 200).count, KVIR_SCHEDULE_BAD_ARGUMENT);
}

TEST(PrefillSchedule, EmptyBatchAndRequests) {
  PrefillParams p;
  PrefillSchedule none = schedulePrefill(makePrefillBatch({}, {}), p);
  EXPECT_EQ(none.count, 0);
  EXPECT_EQ(none.tiles, 0);
  // Requests without rows have no tile; rows without keys one item each.
  PrefillBatch in = makePrefillBatch({0, 3, 0, 70}, {10, 0, 0, 0});
  PrefillSchedule s = schedulePrefill(in, p);
  checkPrefillSchedule(s, in, p);
  EXPECT_EQ(s.count, 3);
}

TEST(PrefillSchedule, PaddingRowsHaveNoWorkspace) {
  // Buffers of more rows than the requests' (a CUDA graph captured for a
  // larger batch): the rows past qo_indptr[batch] get no workspace rows,
  // and merge_indptr is written whole; fewer rows than the requests' is an
  // error.
  PrefillParams p;
  p.slots = 8;
  PrefillBatch in = makePrefillBatch({300, 1, 40}, {2000, 700, 40});
  in.padding = 37;
  PrefillSchedule s = schedulePrefill(in, p);
  checkPrefillSchedule(s, in, p);
  ASSERT_GT(s.count, s.tiles);
  int64_t used = s.indptr[in.qoIndptr.back()];
  EXPECT_GT(used, 0);
  for (int64_t row = in.qoIndptr.back(); row <= in.nnz(); ++row)
    EXPECT_EQ(s.indptr[row], used) << "row " << row;
  in.padding = -1;
  EXPECT_EQ(schedulePrefill(in, p).count, KVIR_SCHEDULE_BAD_INDPTR);
}

} // namespace
