//===- StMatrixTest.cpp - stmatrix against direct indexing ----------------===//
//
// stmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16 (PTX ISA
// 9.7.14.5.16): each lane holds random registers and points at a distinct
// random row of a 32-row shared tile of 16-byte rows. Matrix i is stored to
// the rows lanes 8i..8i+7 point at: row r, column c of it is element
// (r, c) of fragment i — register i of lane 4r + c / 2, half c % 2 (low
// first) — or, with .trans, element (c, r). Compared bit for bit with the
// tile the kernel copies out.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

#include <algorithm>
#include <random>

using namespace kvir::emu;
using namespace kvir::emu::test;

namespace {

std::string kernelName(int num, bool trans) {
  return "stm_x" + std::to_string(num) + (trans ? "_trans" : "");
}

std::string kernel(int num, bool trans) {
  std::string regs, srcs;
  for (int i = 0; i < num; ++i) {
    std::string n = std::to_string(i);
    regs += "    %ri" + n + " = arith.addi %regBase, %c" + n + " : index\n" +
            "    %r" + n + " = memref.load %regs[%ri" + n +
            "] : memref<?xi32>\n";
    srcs += ", %r" + n;
  }
  std::string types;
  for (int i = 0; i < num; ++i)
    types += ", i32";
  return "  gpu.func @" + kernelName(num, trans) +
         R"((%regs: memref<?xi32>, %rows: memref<?xi32>, %out: memref<?xi32>)
      workgroup(%sh: memref<128xi32, #gpu.address_space<workgroup>>) kernel {
    %l = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %regBase = arith.muli %l, %c4 : index
)" + regs +
         R"(    %ri = memref.load %rows[%l] : memref<?xi32>
    %row = arith.index_cast %ri : i32 to index
    %base = memref.extract_aligned_pointer_as_index %sh : memref<128xi32, #gpu.address_space<workgroup>> -> index
    %rowOff = arith.muli %row, %c16 : index
    %addr = arith.addi %base, %rowOff : index
    %addr64 = arith.index_cast %addr : index to i64
    %p = llvm.inttoptr %addr64 : i64 to !llvm.ptr<3>
    nvvm.stmatrix %p)" +
         srcs + " {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = " +
         "#nvvm.mma_layout<" + (trans ? "col" : "row") +
         ">, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : !llvm.ptr<3>" +
         types + R"(
    gpu.barrier
    scf.for %w = %l to %c32 step %c32 {
      scf.for %k = %c0 to %c4 step %c1 {
        %wi = arith.muli %w, %c4 : index
        %i = arith.addi %wi, %k : index
        %v = memref.load %sh[%i] : memref<128xi32, #gpu.address_space<workgroup>>
        memref.store %v, %out[%i] : memref<?xi32>
      }
    }
    gpu.return
  }
)";
}

class StMatrixTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    std::string source = "module attributes {gpu.container_module} {\n"
                         "gpu.module @stmatrix_kernels {\n";
    for (int num : {1, 2, 4})
      for (bool trans : {false, true})
        source += kernel(num, trans);
    source += "}\n}\n";
    prepared = prepare(source);
  }
  static bool prepared;
};
bool StMatrixTest::prepared = false;

TEST_F(StMatrixTest, MatchesDirectIndexing) {
  ASSERT_TRUE(prepared);
  std::mt19937 rng(7);
  for (int num : {1, 2, 4})
    for (bool trans : {false, true})
      for (int iter = 0; iter < 10; ++iter) {
        Buffer<int32_t> regs(32 * 4), rows(32), out(128, -1);
        for (size_t i = 0; i < regs.size(); ++i)
          regs[i] = int32_t(rng());
        std::vector<int32_t> perm(32);
        for (int r = 0; r < 32; ++r)
          perm[r] = r;
        std::shuffle(perm.begin(), perm.end(), rng);
        for (int l = 0; l < 32; ++l)
          rows[l] = perm[l];
        Args args;
        args.memref(regs).memref(rows).memref(out);
        ASSERT_TRUE(llvm::succeeded(
            launch(kernelName(num, trans), {1, 1, 1}, {32, 1, 1}, args)))
            << reports();
        // Fragment element (r, c) of matrix i.
        auto fragment = [&](int i, int r, int c) {
          uint32_t word = uint32_t(regs[(4 * r + c / 2) * 4 + i]);
          return uint16_t(c % 2 ? word >> 16 : word & 0xffff);
        };
        for (int i = 0; i < num; ++i)
          for (int r = 0; r < 8; ++r)
            for (int c = 0; c < 8; ++c) {
              int at = rows[8 * i + r] * 8 + c; // 16-bit index in the tile
              uint32_t word = uint32_t(out[at / 2]);
              uint16_t got = uint16_t(at % 2 ? word >> 16 : word & 0xffff);
              uint16_t want = trans ? fragment(i, c, r) : fragment(i, r, c);
              ASSERT_EQ(got, want) << kernelName(num, trans) << " matrix " << i
                                   << " row " << r << " column " << c;
            }
      }
}

} // namespace
