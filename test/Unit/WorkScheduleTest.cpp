//===- WorkScheduleTest.cpp - The split-KV work list of the runtime -------===//
//
// kvir_schedule_work (include/kvir/Runtime/WorkSchedule.h) on seeded random
// and hand-made batches: every visible key of every request is covered by
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

} // namespace
