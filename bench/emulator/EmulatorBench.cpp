//===- EmulatorBench.cpp - How fast the GPU emulator runs kernels ---------===//
//
// kvir-emu-bench: launches a few kernels through kvir::emu::Emulator and
// prints a markdown table of wall times and fiber switches per second.
//   barriers   1 block x 128 threads, 2000 barriers in a loop: the cost of a
//              fiber switch (each barrier switches every thread out and in)
//   shuffles   1 block x 128 threads, 2000 xor shuffles in a loop
//   reduce     256 blocks x 128 threads: a block reduction (a load, 5 xor
//              shuffles per warp, shared memory, a barrier, a store) - the
//              shape of kvir's kernel test matrices
//   stream     256 blocks x 128 threads, 16 coalesced loads + stores each:
//              the cost of checked global accesses
// Each kernel runs `--repeat` times (default 5); the table shows the median.
//
//===----------------------------------------------------------------------===//
#include "kvir/Emulator/Emulator.h"
#include "kvir/Registration/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <vector>

using namespace mlir;
using kvir::emu::Dim3;
using kvir::emu::Emulator;
using kvir::emu::LaunchStats;

static llvm::cl::opt<int> repeat("repeat", llvm::cl::desc("Runs per kernel"),
                                 llvm::cl::init(5));

static const char *const kKernels = R"(
module attributes {gpu.container_module} {
  gpu.module @bench {
    gpu.func @barriers(%n: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        gpu.barrier
      }
      gpu.return
    }
    gpu.func @shuffles(%out: memref<?xf32>, %n: index) kernel {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %one = arith.constant 1 : i32
      %w = arith.constant 32 : i32
      %ti = arith.index_cast %t : index to i32
      %v0 = arith.sitofp %ti : i32 to f32
      %r = scf.for %i = %c0 to %n step %c1 iter_args(%v = %v0) -> f32 {
        %s, %p = gpu.shuffle xor %v, %one, %w : f32
        %a = arith.addf %v, %s : f32
        scf.yield %a : f32
      }
      memref.store %r, %out[%t] : memref<?xf32>
      gpu.return
    }
    gpu.func @reduce(%in: memref<?xf32>, %out: memref<?xf32>)
        workgroup(%sh: memref<4xf32, #gpu.address_space<workgroup>>) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %c0 = arith.constant 0 : index
      %c32 = arith.constant 32 : index
      %c128 = arith.constant 128 : index
      %base = arith.muli %bid, %c128 : index
      %i = arith.addi %base, %tid : index
      %v = memref.load %in[%i] : memref<?xf32>
      %w = arith.constant 32 : i32
      %c16i = arith.constant 16 : i32
      %c8i = arith.constant 8 : i32
      %c4i = arith.constant 4 : i32
      %c2i = arith.constant 2 : i32
      %c1i = arith.constant 1 : i32
      %r1, %o1 = gpu.shuffle xor %v, %c16i, %w : f32
      %s1 = arith.addf %v, %r1 : f32
      %r2, %o2 = gpu.shuffle xor %s1, %c8i, %w : f32
      %s2 = arith.addf %s1, %r2 : f32
      %r3, %o3 = gpu.shuffle xor %s2, %c4i, %w : f32
      %s3 = arith.addf %s2, %r3 : f32
      %r4, %o4 = gpu.shuffle xor %s3, %c2i, %w : f32
      %s4 = arith.addf %s3, %r4 : f32
      %r5, %o5 = gpu.shuffle xor %s4, %c1i, %w : f32
      %s5 = arith.addf %s4, %r5 : f32
      %warp = arith.divui %tid, %c32 : index
      %lane = arith.remui %tid, %c32 : index
      %is0 = arith.cmpi eq, %lane, %c0 : index
      scf.if %is0 {
        memref.store %s5, %sh[%warp] : memref<4xf32, #gpu.address_space<workgroup>>
      }
      gpu.barrier
      %t0 = arith.cmpi eq, %tid, %c0 : index
      scf.if %t0 {
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %c3 = arith.constant 3 : index
        %a = memref.load %sh[%c0] : memref<4xf32, #gpu.address_space<workgroup>>
        %b = memref.load %sh[%c1] : memref<4xf32, #gpu.address_space<workgroup>>
        %c = memref.load %sh[%c2] : memref<4xf32, #gpu.address_space<workgroup>>
        %d = memref.load %sh[%c3] : memref<4xf32, #gpu.address_space<workgroup>>
        %ab = arith.addf %a, %b : f32
        %cd = arith.addf %c, %d : f32
        %s = arith.addf %ab, %cd : f32
        memref.store %s, %out[%bid] : memref<?xf32>
      }
      gpu.return
    }
    gpu.func @stream(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : index
      %c128 = arith.constant 128 : index
      %c2048 = arith.constant 2048 : index
      %base = arith.muli %bid, %c2048 : index
      %two = arith.constant 2.0 : f32
      scf.for %k = %c0 to %c16 step %c1 {
        %off = arith.muli %k, %c128 : index
        %b2 = arith.addi %base, %off : index
        %i = arith.addi %b2, %tid : index
        %v = memref.load %in[%i] : memref<?xf32>
        %m = arith.mulf %v, %two : f32
        memref.store %m, %out[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}
)";

namespace {
/// A memref<?xf32> argument (allocated, aligned, offset, size, stride) and
/// scalar arguments, as the packed kernel entry expects them.
class Args {
public:
  Args &buffer(std::vector<float> &b) {
    Emulator::get().registerAllocation(b.data(), b.size() * 4, "bench buffer");
    return ptr(b.data()).ptr(b.data()).i64(0).i64(b.size()).i64(1);
  }
  Args &ptr(void *p) {
    slots.emplace_back();
    std::memcpy(&slots.back(), &p, sizeof(p));
    params.push_back(&slots.back());
    return *this;
  }
  Args &i64(int64_t v) {
    slots.emplace_back(uint64_t(v));
    params.push_back(&slots.back());
    return *this;
  }
  void **get() { return params.data(); }

private:
  std::deque<uint64_t> slots;
  std::vector<void *> params;
};

struct Row {
  const char *name;
  Dim3 grid, block;
  std::vector<LaunchStats> runs;
};
} // namespace

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "kvir GPU emulator benchmark\n");
  DialectRegistry registry;
  kvir::registerEverything(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kKernels, &context);
  Emulator &emu = Emulator::get();
  emu.options().exitOnError = false;
  auto compileStart = std::chrono::steady_clock::now();
  if (!module || failed(emu.prepareModule(*module))) {
    llvm::errs() << "kvir-emu-bench: could not compile the kernels\n";
    return 1;
  }
  double compileSeconds = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - compileStart)
                              .count();

  std::vector<float> in(256 * 2048, 1.0f), out(256 * 2048), small(256);
  std::vector<Row> rows;
  auto bench = [&](const char *name, const char *kernel, Dim3 grid, Dim3 block,
                   Args &args) {
    Row row{name, grid, block, {}};
    for (int i = 0; i < std::max(1, repeat.getValue()); ++i) {
      emu.clearResults();
      if (failed(emu.launch(kernel, grid, block, 0, args.get()))) {
        for (const std::string &r : emu.getReports())
          llvm::errs() << r << "\n";
        std::exit(1);
      }
      row.runs.push_back(emu.getLaunchStats().back());
    }
    rows.push_back(std::move(row));
  };
  Args barriers;
  barriers.i64(2000);
  bench("barriers (2000 per thread)", "barriers", {1, 1, 1}, {128, 1, 1},
        barriers);
  Args shuffles;
  shuffles.buffer(small).i64(2000);
  bench("shuffles (2000 per thread)", "shuffles", {1, 1, 1}, {128, 1, 1},
        shuffles);
  Args reduce;
  reduce.buffer(in).buffer(small);
  bench("block reduction", "reduce", {256, 1, 1}, {128, 1, 1}, reduce);
  Args stream;
  stream.buffer(in).buffer(out);
  bench("stream (16 loads + 16 stores per thread)", "stream", {256, 1, 1},
        {128, 1, 1}, stream);

  llvm::outs() << "| kernel | grid x block | wall time (ms, median of "
               << repeat
               << ") | fiber switches | switches/s | global "
                  "accesses/s |\n|---|---|---|---|---|---|\n";
  for (Row &row : rows) {
    std::sort(row.runs.begin(), row.runs.end(),
              [](const LaunchStats &a, const LaunchStats &b) {
                return a.seconds < b.seconds;
              });
    const LaunchStats &s = row.runs[row.runs.size() / 2];
    uint64_t threads = row.grid.count() * row.block.count();
    double accesses = double(s.globalBytesLoaded + s.globalBytesStored) / 4.0;
    llvm::outs() << "| " << row.name << " | " << row.grid.count() << " x "
                 << row.block.count() << " (" << threads << " threads) | "
                 << llvm::format("%.2f", s.seconds * 1e3) << " | "
                 << s.fiberSwitches << " | "
                 << llvm::format("%.3g", s.fiberSwitches / s.seconds) << " | "
                 << llvm::format("%.3g", accesses / s.seconds) << " |\n";
  }
  llvm::outs() << "\nLowering, instrumenting and JIT-compiling the 4 kernels: "
               << llvm::format("%.1f", compileSeconds * 1e3) << " ms\n";
  return 0;
}
