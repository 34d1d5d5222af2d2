// RUN: kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs --emu-stats 2>%t.stats | FileCheck %s
// RUN: FileCheck %s --check-prefix=STATS < %t.stats

// --emu-stats: barrier, mma and shuffle counts. 2 blocks of 128 threads
// (4 warps each). Every warp runs 3 iterations of: an m16n8k16 mma.sync
// accumulating A * B with A and B all ones (each adds 16 to every element of
// D), then a barrier. After the loop every lane shuffles once (xor 1).
//   mma_ops  = 2 blocks * 4 warps * 3 = 24 (one per warp-wide mma.sync)
//   tensor_core_macs = 24 * 16 * 8 * 16 = 49152
//   barriers = 2 blocks * 3 = 6 (one per barrier completed by a block)
//   shuffles = 2 blocks * 4 warps * 1 = 8 (one per warp-wide shuffle)
//   D = 3 * 16 = 48 everywhere, so out[g] = 48 + 48 = 96 for every thread.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @counts(%out: memref<256xf32>) kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c128 = arith.constant 128 : index
      %a = arith.constant dense<1.0> : vector<4x2xf16>
      %bm = arith.constant dense<1.0> : vector<2x2xf16>
      %zero = arith.constant dense<0.0> : vector<2x2xf32>
      %d = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %zero) -> vector<2x2xf32> {
        %n = nvgpu.mma.sync (%a, %bm, %acc) {mmaShape = [16, 8, 16]}
            : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
        gpu.barrier
        scf.yield %n : vector<2x2xf32>
      }
      %v = vector.extract %d[0, 0] : f32 from vector<2x2xf32>
      %one = arith.constant 1 : i32
      %w = arith.constant 32 : i32
      %s, %p = gpu.shuffle xor %v, %one, %w : f32
      %r = arith.addf %v, %s : f32
      %base = arith.muli %b, %c128 : index
      %g = arith.addi %base, %t : index
      memref.store %r, %out[%g] : memref<256xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c128 = arith.constant 128 : index
    %c255 = arith.constant 255 : index
    %out = memref.alloc() : memref<256xf32>
    gpu.launch_func @kernels::@counts blocks in (%c2, %c1, %c1)
        threads in (%c128, %c1, %c1) args(%out : memref<256xf32>)
    // CHECK: 96
    // CHECK-NEXT: 96
    %first = memref.load %out[%c0] : memref<256xf32>
    vector.print %first : f32
    %last = memref.load %out[%c255] : memref<256xf32>
    vector.print %last : f32
    return
  }
}

// STATS: "kernel": "counts"
// STATS-SAME: "barriers": 6, "mma_ops": 24, "tensor_core_macs": 49152, "shuffles": 8,
