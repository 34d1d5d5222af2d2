//===- LdMatrixTest.cpp - ldmatrix against direct indexing ----------------===//
//
// ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].b16 (PTX ISA 9.7.14.5.15) from
// a 64-row shared tile of 16-byte rows, each lane pointing at a random row.
// Matrix i consists of the rows lanes 8i..8i+7 point at; register i of lane
// t holds M_i[t / 4][2 (t % 4) + e] (e = 0 low half, 1 high half), with
// .trans M_i[2 (t % 4) + e][t / 4]. Compared bit for bit.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

#include <random>

using namespace kvir::emu;
using namespace kvir::emu::test;

namespace {

std::string kernelName(int num, bool trans) {
  return "ldm_x" + std::to_string(num) + (trans ? "_trans" : "");
}

std::string kernel(int num, bool trans) {
  std::string n = std::to_string(num), n2 = std::to_string(2 * num);
  return R"(
  gpu.func @)" +
         kernelName(num, trans) + R"((%tile: memref<64x8xf16>,
      %rows: memref<32xi32>, %out: memref<?xf16>)
      workgroup(%sh: memref<64x8xf16, #gpu.address_space<workgroup>>) kernel {
    %l = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    // Lane l stages rows 2l and 2l + 1.
    %r0 = arith.muli %l, %c2 : index
    scf.for %dr = %c0 to %c2 step %c1 {
      %r = arith.addi %r0, %dr : index
      %v = vector.load %tile[%r, %c0] : memref<64x8xf16>, vector<8xf16>
      vector.store %v, %sh[%r, %c0] : memref<64x8xf16, #gpu.address_space<workgroup>>, vector<8xf16>
    }
    gpu.barrier
    %ri = memref.load %rows[%l] : memref<32xi32>
    %row = arith.index_cast %ri : i32 to index
    %m = nvgpu.ldmatrix %sh[%row, %c0] {numTiles = )" +
         n + " : i32, transpose = " + (trans ? "true" : "false") + R"(}
        : memref<64x8xf16, #gpu.address_space<workgroup>> -> vector<)" +
         n + R"(x2xf16>
    %flat = vector.shape_cast %m : vector<)" +
         n + "x2xf16> to vector<" + n2 +
         R"(xf16>
    %width = arith.constant )" +
         n2 + R"( : index
    %at = arith.muli %l, %width : index
    vector.store %flat, %out[%at] : memref<?xf16>, vector<)" +
         n2 + R"(xf16>
    gpu.return
  }
)";
}

class LdMatrixTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    std::string source = "module attributes {gpu.container_module} {\n"
                         "gpu.module @ldmatrix_kernels {\n";
    for (int num : {1, 2, 4})
      for (bool trans : {false, true})
        source += kernel(num, trans);
    source += "}\n}\n";
    prepared = prepare(source);
  }
  static bool prepared;
};
bool LdMatrixTest::prepared = false;

TEST_F(LdMatrixTest, MatchesDirectIndexing) {
  ASSERT_TRUE(prepared);
  std::mt19937 rng(99);
  for (int num : {1, 2, 4})
    for (bool trans : {false, true})
      for (int iter = 0; iter < 20; ++iter) {
        Buffer<uint16_t> tile(64 * 8), out(32 * 2 * num, 0xffff);
        Buffer<int32_t> rows(32);
        for (size_t i = 0; i < tile.size(); ++i) // no NaN/Inf patterns
          tile[i] = uint16_t((rng() % 2) << 15 | (rng() % 31) << 10 |
                             (rng() & 0x3ff));
        for (int l = 0; l < 32; ++l)
          rows[l] = int32_t(rng() % 64);
        Args args;
        args.staticMemref(tile).staticMemref(rows).memref(out);
        Emulator::get().clearResults();
        ASSERT_TRUE(llvm::succeeded(
            launch(kernelName(num, trans), {1, 1, 1}, {32, 1, 1}, args)))
            << reports();
        auto M = [&](int i, int r, int c) {
          return tile[rows[8 * i + r] * 8 + c];
        };
        for (int t = 0; t < 32; ++t)
          for (int i = 0; i < num; ++i)
            for (int e = 0; e < 2; ++e) {
              uint16_t want = trans ? M(i, 2 * (t % 4) + e, t / 4)
                                    : M(i, t / 4, 2 * (t % 4) + e);
              ASSERT_EQ(out[t * 2 * num + 2 * i + e], want)
                  << kernelName(num, trans) << " iteration " << iter << " lane "
                  << t << " register " << i << " half " << e;
            }
      }
}

} // namespace
