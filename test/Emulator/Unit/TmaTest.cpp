//===- TmaTest.cpp - Tensor maps, bulk and tensor copies ------------------===//
//
// cuTensorMapEncodeTiled's documented requirements, one broken per case;
// then tile loads (2-D with 128-byte swizzle, partly out of bounds on
// either side; 3-D with an element stride and 32-byte swizzle) completing
// on an mbarrier, tile stores clipped at the tensor's edge, and bulk copies
// of bytes, against what the host computes from the PTX ISA's definition:
// the box dense in shared memory with dimension 0 innermost, out-of-bound
// elements zero, the 16-byte chunks of each swizzle-wide row permuted
// (chunk c of row r at c ^ (r % 8) for 128 bytes, c ^ (r % 8) / 4 for 32).
// Then the misuses that must be reported.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"
#include "kvir/Emulator/TensorMap.h"

#include <functional>

using namespace kvir::emu;
using namespace kvir::emu::test;

namespace {

const char *const kKernels = R"(
module attributes {gpu.container_module} {
  gpu.module @tma_kernels {
    // Thread 0 loads the box at (x, y[, z]) into shared offset 1024,
    // completing `bytes` on the mbarrier at offset 0; every thread waits
    // (mode 1: does not; mode 2: meets at a block barrier instead, which
    // does not order a bulk copy) and copies the box's `nwords` words out.
    // Thread 0 acquires the map first (mode 3: does not).
    gpu.func @tma_load2(%map: !llvm.ptr, %out: memref<?xi32>, %x: i32,
                        %y: i32, %bytes: i32, %nwords: index, %mode: i32) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c32 = arith.constant 32 : index
      %c1024 = arith.constant 1024 : index
      %i0 = arith.constant 0 : i32
      %i1 = arith.constant 1 : i32
      %dyn = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %bi = memref.extract_aligned_pointer_as_index %dyn : memref<?xi8, #gpu.address_space<workgroup>> -> index
      %bar64 = arith.index_cast %bi : index to i64
      %bar = llvm.inttoptr %bar64 : i64 to !llvm.ptr<3>
      %ti = arith.addi %bi, %c1024 : index
      %tile64 = arith.index_cast %ti : index to i64
      %tile = llvm.inttoptr %tile64 : i64 to !llvm.ptr<3>
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        nvvm.mbarrier.init %bar, %i1 : !llvm.ptr<3>, i32
      }
      gpu.barrier
      scf.if %first {
        %s = nvvm.mbarrier.arrive.expect_tx %bar, %bytes : !llvm.ptr<3>, i32 -> i64
        %i3 = arith.constant 3 : i32
        %acquire = arith.cmpi ne, %mode, %i3 : i32
        scf.if %acquire {
          %mapBytes1 = arith.constant 128 : i32
          nvvm.fence.proxy.acquire #nvvm.mem_scope<sys> %map, %mapBytes1
        }
        nvvm.cp.async.bulk.tensor.shared.cluster.global %tile, %map, %bar, box[%x, %y] {isCTAOnly = true} : !llvm.ptr<3>, !llvm.ptr
      }
      %i2 = arith.constant 2 : i32
      %noWait = arith.cmpi eq, %mode, %i1 : i32
      %syncOnly = arith.cmpi eq, %mode, %i2 : i32
      %skip = arith.ori %noWait, %syncOnly : i1
      %true = arith.constant true
      %wait = arith.xori %skip, %true : i1
      scf.if %wait {
        nvvm.mbarrier.try_wait.parity %bar, %i0, %i0 : !llvm.ptr<3>, i32, i32
      }
      scf.if %syncOnly {
        gpu.barrier
      }
      %words = memref.view %dyn[%c1024][%nwords] : memref<?xi8, #gpu.address_space<workgroup>> to memref<?xi32, #gpu.address_space<workgroup>>
      scf.for %w = %t to %nwords step %c32 {
        %v = memref.load %words[%w] : memref<?xi32, #gpu.address_space<workgroup>>
        memref.store %v, %out[%w] : memref<?xi32>
      }
      gpu.return
    }

    gpu.func @tma_load3(%map: !llvm.ptr, %out: memref<?xi32>, %x: i32,
                        %y: i32, %z: i32, %bytes: i32, %nwords: index) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c32 = arith.constant 32 : index
      %c1024 = arith.constant 1024 : index
      %i0 = arith.constant 0 : i32
      %i1 = arith.constant 1 : i32
      %dyn = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %bi = memref.extract_aligned_pointer_as_index %dyn : memref<?xi8, #gpu.address_space<workgroup>> -> index
      %bar64 = arith.index_cast %bi : index to i64
      %bar = llvm.inttoptr %bar64 : i64 to !llvm.ptr<3>
      %ti = arith.addi %bi, %c1024 : index
      %tile64 = arith.index_cast %ti : index to i64
      %tile = llvm.inttoptr %tile64 : i64 to !llvm.ptr<3>
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        nvvm.mbarrier.init %bar, %i1 : !llvm.ptr<3>, i32
      }
      gpu.barrier
      scf.if %first {
        %s = nvvm.mbarrier.arrive.expect_tx %bar, %bytes : !llvm.ptr<3>, i32 -> i64
        %mapBytes2 = arith.constant 128 : i32
        nvvm.fence.proxy.acquire #nvvm.mem_scope<sys> %map, %mapBytes2
        nvvm.cp.async.bulk.tensor.shared.cluster.global %tile, %map, %bar, box[%x, %y, %z] {isCTAOnly = true} : !llvm.ptr<3>, !llvm.ptr
      }
      nvvm.mbarrier.try_wait.parity %bar, %i0, %i0 : !llvm.ptr<3>, i32, i32
      %words = memref.view %dyn[%c1024][%nwords] : memref<?xi8, #gpu.address_space<workgroup>> to memref<?xi32, #gpu.address_space<workgroup>>
      scf.for %w = %t to %nwords step %c32 {
        %v = memref.load %words[%w] : memref<?xi32, #gpu.address_space<workgroup>>
        memref.store %v, %out[%w] : memref<?xi32>
      }
      gpu.return
    }

    // The threads write in[] to the box at shared offset 1024, fence (not
    // in mode 1) and sync; thread 0 stores the box at (x, y), then (mode 2)
    // overwrites its first word before waiting for the bulk group.
    gpu.func @tma_store2(%map: !llvm.ptr, %in: memref<?xi32>, %x: i32,
                         %y: i32, %nwords: index, %mode: i32) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c32 = arith.constant 32 : index
      %c1024 = arith.constant 1024 : index
      %i1 = arith.constant 1 : i32
      %i2 = arith.constant 2 : i32
      %dyn = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %bi = memref.extract_aligned_pointer_as_index %dyn : memref<?xi8, #gpu.address_space<workgroup>> -> index
      %ti = arith.addi %bi, %c1024 : index
      %tile64 = arith.index_cast %ti : index to i64
      %tile = llvm.inttoptr %tile64 : i64 to !llvm.ptr<3>
      %words = memref.view %dyn[%c1024][%nwords] : memref<?xi8, #gpu.address_space<workgroup>> to memref<?xi32, #gpu.address_space<workgroup>>
      scf.for %w = %t to %nwords step %c32 {
        %v = memref.load %in[%w] : memref<?xi32>
        memref.store %v, %words[%w] : memref<?xi32, #gpu.address_space<workgroup>>
      }
      %noFence = arith.cmpi eq, %mode, %i1 : i32
      %true = arith.constant true
      %fence = arith.xori %noFence, %true : i1
      scf.if %fence {
        nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
      }
      gpu.barrier
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        %mapBytes3 = arith.constant 128 : i32
        nvvm.fence.proxy.acquire #nvvm.mem_scope<sys> %map, %mapBytes3
        nvvm.cp.async.bulk.tensor.global.shared.cta %map, %tile, box[%x, %y] : !llvm.ptr, !llvm.ptr<3>
        nvvm.cp.async.bulk.commit.group
        %early = arith.cmpi eq, %mode, %i2 : i32
        scf.if %early {
          %zero = arith.constant 0 : i32
          memref.store %zero, %words[%c0] : memref<?xi32, #gpu.address_space<workgroup>>
        }
        nvvm.cp.async.bulk.wait_group 0 {read}
      }
      gpu.return
    }

    // Bytes: src -> shared (completing on an mbarrier) -> dst (a bulk
    // group), `size` bytes at shared offset 16 + `shift`.
    gpu.func @bulk_copy(%src: memref<?xi8>, %dst: memref<?xi8>, %size: i32,
                        %shift: index) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c16 = arith.constant 16 : index
      %i0 = arith.constant 0 : i32
      %i1 = arith.constant 1 : i32
      %dyn = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
      %bi = memref.extract_aligned_pointer_as_index %dyn : memref<?xi8, #gpu.address_space<workgroup>> -> index
      %bar64 = arith.index_cast %bi : index to i64
      %bar = llvm.inttoptr %bar64 : i64 to !llvm.ptr<3>
      %at0 = arith.addi %bi, %c16 : index
      %at = arith.addi %at0, %shift : index
      %buf64 = arith.index_cast %at : index to i64
      %buf = llvm.inttoptr %buf64 : i64 to !llvm.ptr<3>
      %si = memref.extract_aligned_pointer_as_index %src : memref<?xi8> -> index
      %si64 = arith.index_cast %si : index to i64
      %sp = llvm.inttoptr %si64 : i64 to !llvm.ptr<1>
      %di = memref.extract_aligned_pointer_as_index %dst : memref<?xi8> -> index
      %di64 = arith.index_cast %di : index to i64
      %dp = llvm.inttoptr %di64 : i64 to !llvm.ptr<1>
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        nvvm.mbarrier.init %bar, %i1 : !llvm.ptr<3>, i32
        %s = nvvm.mbarrier.arrive.expect_tx %bar, %size : !llvm.ptr<3>, i32 -> i64
        nvvm.cp.async.bulk.shared.cluster.global %buf, %sp, %bar, %size : !llvm.ptr<3>, !llvm.ptr<1>
        nvvm.mbarrier.try_wait.parity %bar, %i0, %i0 : !llvm.ptr<3>, i32, i32
        nvvm.cp.async.bulk.global.shared.cta %dp, %buf, %size : !llvm.ptr<1>, !llvm.ptr<3>
        nvvm.cp.async.bulk.commit.group
        nvvm.cp.async.bulk.wait_group 0
      }
      gpu.return
    }
  }
}
)";

TensorMapFields fields2d(void *base, uint64_t cols, uint64_t rows,
                         uint32_t boxCols, uint32_t boxRows, uint32_t swizzle) {
  TensorMapFields f;
  f.dataType = TmaUInt16;
  f.rank = 2;
  f.globalAddress = reinterpret_cast<uint64_t>(base);
  f.globalDim[0] = cols;
  f.globalDim[1] = rows;
  f.globalStrides[0] = cols * 2;
  f.boxDim[0] = boxCols;
  f.boxDim[1] = boxRows;
  f.elementStrides[0] = f.elementStrides[1] = 1;
  f.swizzle = swizzle;
  return f;
}

/// Where byte `offset` of a dense box lands: its 16-byte chunk permuted
/// within its row of `span` bytes (the ISA's swizzle figures).
uint64_t swizzledOffset(uint64_t offset, uint32_t span) {
  if (!span)
    return offset;
  uint64_t row = offset / span, chunk = offset % span / 16;
  uint64_t line = offset / 128; // rows of 128 bytes' worth
  uint64_t phase = span == 128 ? row % 8 : span == 64 ? line % 4 : line % 2;
  (void)row;
  return offset / span * span + ((chunk ^ phase) * 16) + offset % 16;
}

class TmaTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() { ok = prepare(kKernels); }
  static bool ok;
};
bool TmaTest::ok = false;

TEST_F(TmaTest, EncoderChecksTheDriversRequirements) {
  TensorMapBuffer map;
  Buffer<uint16_t> g(64 * 64);
  auto good = [&] { return fields2d(g.ptr(), 64, 64, 64, 8, TmaSwizzle128B); };
  EXPECT_EQ(encodeTensorMap(map.bytes, good()), "");
  TensorMapFields back;
  ASSERT_TRUE(decodeTensorMap(map.bytes, back));
  EXPECT_EQ(back.boxDim[0], 64u);
  EXPECT_EQ(back.globalStrides[0], 128u);
  EXPECT_EQ(back.boxBytes(), 64u * 8 * 2);

  struct Broken {
    std::function<void(TensorMapFields &)> breakIt;
    const char *error;
  };
  const Broken cases[] = {
      {[](TensorMapFields &f) { f.rank = 0; }, "tensorRank must be non-zero"},
      {[](TensorMapFields &f) { f.rank = 6; }, "tensorRank must be non-zero"},
      {[](TensorMapFields &f) { f.globalAddress += 8; },
       "globalAddress must be 16-byte aligned"},
      {[](TensorMapFields &f) { f.globalDim[1] = 0; },
       "globalDim[1] must be non-zero"},
      {[](TensorMapFields &f) { f.globalStrides[0] = 136; },
       "globalStrides[0] must be a multiple of 16"},
      {[](TensorMapFields &f) { f.globalStrides[0] = uint64_t(1) << 40; },
       "less than 2^40"},
      {[](TensorMapFields &f) { f.boxDim[1] = 257; },
       "boxDim[1] must be non-zero and at most 256"},
      {[](TensorMapFields &f) {
         f.boxDim[0] = 4;
         f.swizzle = TmaSwizzleNone;
       },
       "boxDim[0] * elementSize (8 bytes) must be a multiple of 16 bytes"},
      {[](TensorMapFields &f) { f.elementStrides[1] = 9; },
       "elementStrides[1] must be non-zero and at most 8"},
      {[](TensorMapFields &f) { f.swizzle = TmaSwizzle64B; },
       "(128 bytes) must be at most the 64-byte swizzle"},
      {[](TensorMapFields &f) { f.oobFill = 1; },
       "oobFill NAN_REQUEST_ZERO_FMA needs a floating-point data type"},
      {[](TensorMapFields &f) { f.interleave = 2; },
       "with interleave, tensorRank must be at least 3"},
  };
  for (const Broken &c : cases) {
    TensorMapFields f = good();
    c.breakIt(f);
    EXPECT_NE(encodeTensorMap(map.bytes, f).find(c.error), std::string::npos)
        << c.error << ": got '" << encodeTensorMap(map.bytes, f) << "'";
  }
  EXPECT_NE(encodeTensorMap(map.bytes + 32, good()).find("aligned to 64"),
            std::string::npos);
}

/// Loads the box at (x, y) of an 80 x 20 tensor of u16 with a 64 x 8 box
/// and 128-byte swizzle; returns the box's words and checks them.
void checkLoad2d(int32_t x, int32_t y) {
  const uint64_t cols = 80, rows = 20;
  Buffer<uint16_t> g(cols * rows);
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = uint16_t(1 + i * 7);
  TensorMapBuffer map;
  ASSERT_EQ(encodeTensorMap(map.bytes, fields2d(g.ptr(), cols, rows, 64, 8,
                                                TmaSwizzle128B)),
            "");
  const uint32_t bytes = 64 * 8 * 2;
  Buffer<int32_t> out(bytes / 4, -1);
  Args args;
  args.pointer(map.bytes).memref(out).scalar(x).scalar(y).scalar(bytes);
  args.scalar(int64_t(bytes / 4)).scalar(int32_t(0));
  ASSERT_TRUE(
      succeeded(launch("tma_load2", {1, 1, 1}, {32, 1, 1}, args, 1024 + bytes)))
      << reports();
  const uint8_t *shared = reinterpret_cast<const uint8_t *>(out.ptr());
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 64; ++c) {
      int64_t gx = x + c, gy = y + r;
      bool in = gx >= 0 && gx < int64_t(cols) && gy >= 0 && gy < int64_t(rows);
      uint16_t want = in ? g[gy * cols + gx] : 0;
      uint16_t got;
      std::memcpy(&got, shared + swizzledOffset(r * 128 + c * 2, 128), 2);
      ASSERT_EQ(got, want) << "box (" << r << ", " << c << ") at (" << x << ", "
                           << y << ")";
    }
}

TEST_F(TmaTest, TileLoad2dSwizzled) {
  ASSERT_TRUE(ok);
  checkLoad2d(0, 0);
  checkLoad2d(8, 3);
  checkLoad2d(40, 15); // past the right and bottom edges
  checkLoad2d(-8, -2); // before the left and top edges
  const LaunchStats &s = Emulator::get().getLaunchStats().back();
  EXPECT_EQ(s.tmaCopies, 1u);
  EXPECT_EQ(s.tmaBytesLoaded, 56u * 6 * 2); // the in-bound elements
}

TEST_F(TmaTest, TileLoad3dElementStrides) {
  ASSERT_TRUE(ok);
  const uint64_t d0 = 32, d1 = 6, d2 = 8;
  Buffer<uint16_t> g(d0 * d1 * d2);
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = uint16_t(3 + i * 5);
  TensorMapFields f;
  f.dataType = TmaUInt16;
  f.rank = 3;
  f.globalAddress = reinterpret_cast<uint64_t>(g.ptr());
  f.globalDim[0] = d0;
  f.globalDim[1] = d1;
  f.globalDim[2] = d2;
  f.globalStrides[0] = d0 * 2;
  f.globalStrides[1] = d0 * d1 * 2;
  f.boxDim[0] = 16;
  f.boxDim[1] = 4;
  f.boxDim[2] = 4;
  f.elementStrides[0] = 1;
  f.elementStrides[1] = 2; // rows y, y + 2
  f.elementStrides[2] = 1;
  f.swizzle = TmaSwizzle32B;
  TensorMapBuffer map;
  ASSERT_EQ(encodeTensorMap(map.bytes, f), "");
  const uint32_t bytes = 16 * 2 * 4 * 2; // 16 x ceil(4 / 2) x 4 elements
  ASSERT_EQ(f.boxBytes(), bytes);
  // y + 2 = 5 is in bounds, z + 3 = 8 is not; 256 bytes: two 128-byte
  // lines, the 32-byte swizzle swaps the 16-byte halves of the second's
  // rows (z + 2, in bounds, and z + 3).
  int32_t x = 16, y = 3, z = 5;
  Buffer<int32_t> out(bytes / 4, -1);
  Args args;
  args.pointer(map.bytes).memref(out).scalar(x).scalar(y).scalar(z);
  args.scalar(bytes).scalar(int64_t(bytes / 4));
  ASSERT_TRUE(
      succeeded(launch("tma_load3", {1, 1, 1}, {32, 1, 1}, args, 1024 + bytes)))
      << reports();
  const uint8_t *shared = reinterpret_cast<const uint8_t *>(out.ptr());
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 2; ++j)
      for (int i = 0; i < 16; ++i) {
        int64_t gz = z + k, gy = y + 2 * j, gx = x + i;
        bool in = gz < int64_t(d2) && gy < int64_t(d1) && gx < int64_t(d0);
        uint16_t want = in ? g[(gz * d1 + gy) * d0 + gx] : 0;
        uint64_t dense = 2 * (i + 16 * (j + 2 * k));
        uint16_t got;
        std::memcpy(&got, shared + swizzledOffset(dense, 32), 2);
        ASSERT_EQ(got, want) << "(" << i << ", " << j << ", " << k << ")";
      }
}

TEST_F(TmaTest, TileStoreClipsAtTheEdge) {
  ASSERT_TRUE(ok);
  const uint64_t cols = 80, rows = 20;
  Buffer<uint16_t> g(cols * rows, 0xdead);
  TensorMapBuffer map;
  ASSERT_EQ(encodeTensorMap(map.bytes, fields2d(g.ptr(), cols, rows, 64, 8,
                                                TmaSwizzle128B)),
            "");
  const uint32_t bytes = 64 * 8 * 2;
  Buffer<int32_t> in(bytes / 4);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = int32_t(0x10001 * (i + 1));
  int32_t x = 32, y = 16;
  Args args;
  args.pointer(map.bytes).memref(in).scalar(x).scalar(y);
  args.scalar(int64_t(bytes / 4)).scalar(int32_t(0));
  ASSERT_TRUE(succeeded(
      launch("tma_store2", {1, 1, 1}, {32, 1, 1}, args, 1024 + bytes)))
      << reports();
  const uint8_t *shared = reinterpret_cast<const uint8_t *>(in.ptr());
  for (uint64_t gy = 0; gy < rows; ++gy)
    for (uint64_t gx = 0; gx < cols; ++gx) {
      int64_t r = int64_t(gy) - y, c = int64_t(gx) - x;
      uint16_t want = 0xdead;
      if (r >= 0 && r < 8 && c >= 0 && c < 64)
        std::memcpy(&want, shared + swizzledOffset(r * 128 + c * 2, 128), 2);
      ASSERT_EQ(g[gy * cols + gx], want) << "(" << gx << ", " << gy << ")";
    }
}

TEST_F(TmaTest, BulkCopies) {
  ASSERT_TRUE(ok);
  Buffer<uint8_t> src(256), dst(256, 0);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = uint8_t(i * 13 + 1);
  Args args;
  args.memref(src).memref(dst).scalar(int32_t(256)).scalar(int64_t(0));
  ASSERT_TRUE(
      succeeded(launch("bulk_copy", {1, 1, 1}, {32, 1, 1}, args, 16 + 256)))
      << reports();
  for (size_t i = 0; i < 256; ++i)
    ASSERT_EQ(dst[i], src[i]) << i;

  // Sizes and shared addresses must be multiples of 16.
  Args odd;
  odd.memref(src).memref(dst).scalar(int32_t(200)).scalar(int64_t(0));
  EXPECT_FALSE(
      succeeded(launch("bulk_copy", {1, 1, 1}, {32, 1, 1}, odd, 16 + 256)));
  EXPECT_NE(reports().find("the size must be a multiple of 16"),
            std::string::npos);
  Args shifted;
  shifted.memref(src).memref(dst).scalar(int32_t(128)).scalar(int64_t(8));
  EXPECT_FALSE(
      succeeded(launch("bulk_copy", {1, 1, 1}, {32, 1, 1}, shifted, 16 + 256)));
  EXPECT_NE(reports().find("is not 16-byte aligned"), std::string::npos);
}

TEST_F(TmaTest, MisuseIsReported) {
  ASSERT_TRUE(ok);
  Buffer<uint16_t> g(80 * 20, 1);
  TensorMapBuffer map;
  ASSERT_EQ(encodeTensorMap(map.bytes,
                            fields2d(g.ptr(), 80, 20, 64, 8, TmaSwizzle128B)),
            "");
  const uint32_t bytes = 64 * 8 * 2;
  Buffer<int32_t> words(bytes / 4, 0);
  auto load = [&](const void *m, int32_t mode, uint32_t expect) {
    Args args;
    args.pointer(const_cast<void *>(m)).memref(words).scalar(int32_t(0));
    args.scalar(int32_t(0)).scalar(expect).scalar(int64_t(bytes / 4));
    args.scalar(mode);
    return succeeded(
        launch("tma_load2", {1, 1, 1}, {32, 1, 1}, args, 1024 + bytes));
  };
  // Reading the destination without waiting for the mbarrier.
  EXPECT_FALSE(load(map.bytes, 1, bytes));
  EXPECT_NE(reports().find("which thread (a bulk copy completing on the "
                           "mbarrier at shared offset 0) wrote"),
            std::string::npos)
      << reports();
  // A block barrier does not order a bulk copy: only its mbarrier does.
  EXPECT_FALSE(load(map.bytes, 2, bytes));
  EXPECT_NE(reports().find("which thread (a bulk copy completing on the "
                           "mbarrier at shared offset 0) wrote"),
            std::string::npos)
      << reports();
  // Expecting more bytes than the box brings: the phase never completes,
  // and the waiting threads are reported with the transaction count left.
  EXPECT_FALSE(load(map.bytes, 0, bytes + 16));
  EXPECT_NE(reports().find("transaction count 16"), std::string::npos)
      << reports();
  // The map read by the tensormap proxy without the thread's acquire of
  // what the host wrote.
  EXPECT_FALSE(load(map.bytes, 3, bytes));
  EXPECT_NE(reports().find("has not acquired it for the tensormap proxy"),
            std::string::npos)
      << reports();
  // Not a tensor map.
  TensorMapBuffer garbage;
  std::memset(garbage.bytes, 0, 128);
  EXPECT_FALSE(load(garbage.bytes, 0, bytes));
  EXPECT_NE(reports().find("does not hold a tensor map"), std::string::npos);

  // Stores: the source written without fence.proxy.async, and overwritten
  // before the bulk group is waited for.
  auto store = [&](int32_t mode) {
    Args args;
    args.pointer(map.bytes).memref(words).scalar(int32_t(0));
    args.scalar(int32_t(0)).scalar(int64_t(bytes / 4)).scalar(mode);
    return succeeded(
        launch("tma_store2", {1, 1, 1}, {32, 1, 1}, args, 1024 + bytes));
  };
  EXPECT_FALSE(store(1));
  EXPECT_NE(reports().find("through the generic proxy without a "
                           "fence.proxy.async"),
            std::string::npos)
      << reports();
  EXPECT_FALSE(store(2));
  EXPECT_NE(reports().find("still reads (before its "
                           "cp.async.bulk.wait_group.read)"),
            std::string::npos)
      << reports();
}

} // namespace
