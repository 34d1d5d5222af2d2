// RUN: not kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s

// An address computed from a kernel argument must stay inside the buffer
// that argument points into, even when it lands in another live buffer.
// The kernel reads a[i] with i chosen by the host so that &a[i] is
// &b[2]: any-live-allocation checking would let it pass; the emulator
// blames the argument the address came from (#0, a's bare pointer in
// kvir's kernel ABI) and names the buffer it hit.

// CHECK: kvir-emu: kernel 'read': out-of-bounds global load of 4 bytes at 0x{{[0-9A-F]+}} through kernel argument #0, {{[0-9]+}} bytes {{past the end|before the start}} of host allocation [0x{{[0-9A-F]+}}, 0x{{[0-9A-F]+}}) of 64 bytes (inside host allocation [0x{{[0-9A-F]+}}, 0x{{[0-9A-F]+}}) of 128 bytes, another allocation)

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @read(%a: memref<16xf32>, %i: index, %out: memref<1xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %a[%i] : memref<16xf32>
      memref.store %v, %out[%c0] : memref<1xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %a = memref.alloc() : memref<16xf32>
    %b = memref.alloc() : memref<32xf32>
    %out = memref.alloc() : memref<1xf32>
    %pa = memref.extract_aligned_pointer_as_index %a : memref<16xf32> -> index
    %pb = memref.extract_aligned_pointer_as_index %b : memref<32xf32> -> index
    %d = arith.subi %pb, %pa : index
    %e = arith.divsi %d, %c4 : index
    %i = arith.addi %e, %c2 : index
    gpu.launch_func @kernels::@read blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%a : memref<16xf32>, %i : index, %out : memref<1xf32>)
    return
  }
}
