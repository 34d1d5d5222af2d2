//===- MergeGpuTest.cpp - Standalone GPU merge kernels in the emulator ----===//
//
// States held in buffers (kv.load_state) merged by kv.merge (2 and 3 inputs)
// or kv.merge_partitions and written by kv.store_state: convert-kv-to-gpu
// turns these into one merge kernel launch. Inputs are random states in base
// 2 (as FlashInfer writes them) or base e (vLLM, FlashMLA), with empty
// states (o = 0, lse = -inf) sprinkled in, rows whose inputs are all empty,
// and LSEs far apart (weights that underflow); the result is compared with
// the reference's merge of the same (rounded) inputs.
//
//===----------------------------------------------------------------------===//
#include "GpuHarness.h"

#include "TestUtil.h"

#include <limits>

using namespace kvir::test;
using namespace kvir::test::gpu;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

struct MergeCase {
  std::string name;
  DType dtype = DType::F32;
  Base base = Base::E;
  int64_t heads = 4, headDimV = 64, rows = 7;
  /// kv.merge of this many inputs, or kv.merge_partitions over `partitions`
  /// when 0.
  int inputs = 2;
  int64_t partitions = 0;
  std::string chip = "sm_90a";
  uint64_t seed = 1;
};

std::ostream &operator<<(std::ostream &os, const MergeCase &c) {
  return os << c.name;
}

/// Fills state `k` of `buffers` (partition k, or the whole buffers when
/// partition < 0) with random values rounded to the buffer types, and
/// returns the state as stored. Row 0 is empty in every input; other
/// (row, head) pairs are empty with probability 1/5.
ref::State randomState(Rng &rng, const MergeCase &c, StateBuffers &buffers,
                       int64_t partition) {
  auto at = [&](Index index) {
    if (partition >= 0)
      index.insert(index.begin(), partition);
    return index;
  };
  ref::State s(c.rows, c.heads, c.headDimV, c.base);
  for (int64_t r = 0; r < c.rows; ++r)
    for (int64_t h = 0; h < c.heads; ++h) {
      bool empty = r == 0 || rng.coin(0.2);
      // LSEs in [-12, 12] of the base: some pairs are ~24 apart, so their
      // weights underflow f16/bf16-sized contributions entirely.
      double lse = empty ? -kInf : rng.uniform(-12.0, 12.0);
      buffers.lse.set(at({r, h}), lse);
      s.lseAt(r, h) = buffers.lse.get(at({r, h}));
      for (int64_t d = 0; d < c.headDimV; ++d) {
        buffers.o.set(at({r, h, d}), empty ? 0.0 : rng.uniform(-1.5, 1.5));
        s.out(r, h, d) = buffers.o.get(at({r, h, d}));
      }
    }
  return s;
}

void runMergeCase(const MergeCase &c) {
  Rng rng(c.seed);
  std::string t = stateTypeText(c.heads, c.headDimV, c.dtype, c.base);
  KernelSource src;
  std::vector<ref::State> states;
  std::vector<StateBuffers> inputs;
  std::string mustLower;
  if (c.inputs) {
    std::vector<std::string> names;
    for (int i = 0; i < c.inputs; ++i) {
      inputs.push_back(makeStateBuffers(c.rows, c.heads, c.headDimV, c.dtype));
      states.push_back(randomState(rng, c, inputs.back(), -1));
      std::string o = src.addMemref("o" + std::to_string(i), inputs.back().o);
      std::string l = src.addMemref("l" + std::to_string(i), inputs.back().lse);
      names.push_back("%s" + std::to_string(i));
      src.addLine(names.back() + " = kv.load_state " + o + ", " + l + " : " +
                  src.typeOf(o) + ", " + src.typeOf(l) + " -> " + t);
    }
    std::string operands, types;
    for (int i = 0; i < c.inputs; ++i) {
      operands += (i ? ", " : "") + names[i];
      types += (i ? ", " : "") + t;
    }
    src.addLine("%m = kv.merge " + operands + " : " + types + " -> " + t);
    mustLower = "kv.merge";
  } else {
    inputs.push_back(
        makeStateBuffers(c.rows, c.heads, c.headDimV, c.dtype, c.partitions));
    for (int64_t k = 0; k < c.partitions; ++k)
      states.push_back(randomState(rng, c, inputs.back(), k));
    std::vector<bool> oDyn{true, true, false, false}, lDyn{true, true, false};
    std::string o = src.addMemref("o", inputs.back().o, oDyn);
    std::string l = src.addMemref("l", inputs.back().lse, lDyn);
    std::string p = stateTypeText(c.heads, c.headDimV, c.dtype, c.base,
                                  /*partitioned=*/true);
    src.addLine("%p = kv.load_state " + o + ", " + l + " : " + src.typeOf(o) +
                ", " + src.typeOf(l) + " -> " + p);
    src.addLine("%m = kv.merge_partitions %p : " + p + " -> " + t);
    mustLower = "kv.merge_partitions";
  }
  StateBuffers out = makeStateBuffers(c.rows, c.heads, c.headDimV, c.dtype);
  emitStore(src, "%m", t, out);

  RunResult result;
  ASSERT_TRUE(runGpu(src, {out.o, out.lse}, c.chip, {mustLower}, result));
  EXPECT_TRUE(noReports(result));
  ASSERT_EQ(result.launches.size(), 1u) << result.describeLaunches();
  const std::string &kernel = result.launches[0].kernel;
  std::string prefix =
      c.inputs ? "merge" + std::to_string(c.inputs) + "_" : "merge_partitions";
  EXPECT_EQ(kernel.rfind(prefix, 0), 0u) << kernel;
  EXPECT_EQ(result.launches[0].grid.x, uint32_t(c.rows));
  EXPECT_EQ(result.launches[0].grid.y, uint32_t(c.heads));

  ref::State expected = ref::merge(states);
  EXPECT_TRUE(check(compareGpuState(out, expected, c.dtype)));
  // Row 0 has only empty inputs: the merge is the empty state.
  for (int64_t h = 0; h < c.heads; ++h)
    EXPECT_EQ(expected.lseAt(0, h), -kInf);
}

std::vector<MergeCase> mergeCases() {
  std::vector<MergeCase> cases;
  auto add = [&](std::string name, DType dtype, Base base, int inputs,
                 int64_t partitions, int64_t headDimV, uint64_t seed) {
    MergeCase c;
    c.name = std::move(name);
    c.dtype = dtype;
    c.base = base;
    c.inputs = inputs;
    c.partitions = partitions;
    c.headDimV = headDimV;
    c.seed = seed;
    cases.push_back(c);
  };
  add("Merge2F32Base2", DType::F32, Base::Two, 2, 0, 64, 2001);
  add("Merge2F16BaseE", DType::F16, Base::E, 2, 0, 128, 2002);
  add("Merge3BF16Base2", DType::BF16, Base::Two, 3, 0, 128, 2003);
  add("Merge3F32BaseE", DType::F32, Base::E, 3, 0, 80, 2004);
  add("Merge3F16Base2", DType::F16, Base::Two, 3, 0, 256, 2005);
  add("PartitionsF32Base2", DType::F32, Base::Two, 0, 5, 128, 2006);
  add("PartitionsF16BaseE", DType::F16, Base::E, 0, 3, 64, 2007);
  add("PartitionsBF16BaseE", DType::BF16, Base::E, 0, 9, 96, 2008);
  add("PartitionsF32BaseE32", DType::F32, Base::E, 0, 32, 64, 2009);
  add("PartitionsF16Base2One", DType::F16, Base::Two, 0, 1, 128, 2010);
  // More partitions than threads: the LSEs are staged in chunks of 64 / 80.
  add("PartitionsF16Base2Chunked", DType::F16, Base::Two, 0, 150, 64, 2011);
  add("PartitionsF32BaseEChunked", DType::F32, Base::E, 0, 81, 80, 2012);
  return cases;
}

class GpuMerge : public ::testing::TestWithParam<MergeCase> {};

TEST_P(GpuMerge, MatchesReferenceMerge) { runMergeCase(GetParam()); }

INSTANTIATE_TEST_SUITE_P(States, GpuMerge, ::testing::ValuesIn(mergeCases()),
                         [](const ::testing::TestParamInfo<MergeCase> &info) {
                           return info.param.name;
                         });

} // namespace
