// RUN: split-file %s %t
// RUN: not kvir-runner %t/unmodeled.mlir -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %t/unmodeled.mlir
// RUN: not kvir-runner %t/guarded.mlir -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %t/guarded.mlir
// RUN: not kvir-runner %t/short-d.mlir -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %t/short-d.mlir
// RUN: not kvir-runner %t/untied.mlir -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %t/untied.mlir
// RUN: not kvir-runner %t/f16-accumulator.mlir -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %t/f16-accumulator.mlir
// RUN: not kvir-runner %t/shape.mlir -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %t/shape.mlir

// Inline PTX the emulator does not model is refused at the llvm.inline_asm
// op, with the statement and the reason, and the runner exits non-zero:
// never compiled for the host, never guessed at.

//--- unmodeled.mlir
// CHECK: unmodeled.mlir":[[@LINE+6]]:{{[0-9]+}}): error: the emulator cannot execute
// CHECK-SAME: statement 'mov.b32 $0, $1' is not modeled
// CHECK-NOT: Stack dump
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%x: i32, %d: i64) kernel {
      %r = llvm.inline_asm has_side_effects asm_dialect = att
          "mov.b32 $0, $1;", "=r,r" %x : (i32) -> i32
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %x = arith.constant 0 : i32
    %d = arith.constant 0 : i64
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%x : i32, %d : i64)
    return
  }
}

//--- guarded.mlir
// CHECK: guarded.mlir":[[@LINE+6]]:{{[0-9]+}}): error: the emulator cannot execute
// CHECK-SAME: guarded statement '@p wgmma.fence.sync.aligned'
// CHECK-NOT: Stack dump
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%x: i32, %d: i64) kernel {
      llvm.inline_asm has_side_effects asm_dialect = att
          "@p wgmma.fence.sync.aligned;", ""  : () -> ()
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %x = arith.constant 0 : i32
    %d = arith.constant 0 : i64
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%x : i32, %d : i64)
    return
  }
}

//--- short-d.mlir
// CHECK: short-d.mlir":[[@LINE+6]]:{{[0-9]+}}): error: the emulator cannot execute
// CHECK-SAME: d must be a vector of 4 f32 registers
// CHECK-NOT: Stack dump
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%x: i32, %d: i64) kernel {
      %r = llvm.inline_asm has_side_effects asm_dialect = att
          "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0, $1, $2}, {$4, $5, $6, $7}, $8, 1, 1, 1, 0;", "=f,=f,=f,=f,r,r,r,r,l" %x, %x, %x, %x, %d : (i32, i32, i32, i32, i64) -> !llvm.struct<(f32, f32, f32, f32)>
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %x = arith.constant 0 : i32
    %d = arith.constant 0 : i64
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%x : i32, %d : i64)
    return
  }
}

//--- untied.mlir
// CHECK: untied.mlir":[[@LINE+6]]:{{[0-9]+}}): error: the emulator cannot execute
// CHECK-SAME: output $0 accumulates but is tied to no input
// CHECK-NOT: Stack dump
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%x: i32, %d: i64) kernel {
      %r = llvm.inline_asm has_side_effects asm_dialect = att
          "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0, $1, $2, $3}, {$4, $5, $6, $7}, $8, 1, 1, 1, 0;", "=f,=f,=f,=f,r,r,r,r,l" %x, %x, %x, %x, %d : (i32, i32, i32, i32, i64) -> !llvm.struct<(f32, f32, f32, f32)>
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %x = arith.constant 0 : i32
    %d = arith.constant 0 : i64
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%x : i32, %d : i64)
    return
  }
}

//--- f16-accumulator.mlir
// CHECK: f16-accumulator.mlir":[[@LINE+6]]:{{[0-9]+}}): error: the emulator cannot execute
// CHECK-SAME: the emulator models f32 accumulators with f16, bf16, e4m3 or e5m2 inputs
// CHECK-NOT: Stack dump
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%x: i32, %d: i64) kernel {
      %r = llvm.inline_asm has_side_effects asm_dialect = att
          "wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {$0, $1}, {$2, $3, $4, $5}, $6, 0, 1, 1, 0;", "=r,=r,r,r,r,r,l" %x, %x, %x, %x, %d : (i32, i32, i32, i32, i64) -> !llvm.struct<(i32, i32)>
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %x = arith.constant 0 : i32
    %d = arith.constant 0 : i64
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%x : i32, %d : i64)
    return
  }
}

//--- shape.mlir
// CHECK: shape.mlir":[[@LINE+6]]:{{[0-9]+}}): error: the emulator cannot execute
// CHECK-SAME: shape m64n12k16 is not one of the ISA's
// CHECK-NOT: Stack dump
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%x: i32, %d: i64) kernel {
      %r = llvm.inline_asm has_side_effects asm_dialect = att
          "wgmma.mma_async.sync.aligned.m64n12k16.f32.bf16.bf16 {$0, $1, $2, $3, $4, $5}, {$6, $7, $8, $9}, $10, 0, 1, 1, 0;", "=f,=f,=f,=f,=f,=f,r,r,r,r,l" %x, %x, %x, %x, %d : (i32, i32, i32, i32, i64) -> !llvm.struct<(f32, f32, f32, f32, f32, f32)>
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %x = arith.constant 0 : i32
    %d = arith.constant 0 : i64
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%x : i32, %d : i64)
    return
  }
}
