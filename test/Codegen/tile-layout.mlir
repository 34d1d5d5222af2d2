// RUN: kvir-opt %s -test-kvir-codegen | FileCheck %s --check-prefix=IR
// RUN: kvir-opt %s -test-kvir-codegen | kvir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// TileLayout with the hardware's swizzles, in the emulator: 128 threads
// store each element's logical index (stage, row, col in row-major order)
// at the address the layout gives, in a shared buffer aligned to the
// swizzle's repeating pattern, and copy the buffer out as it lies. The host
// checks every element against the PTX ISA's definition, written here on
// its own: the tile cut into column blocks of the swizzle's span (32, 64 or
// 128 bytes) stored rows first, then within each pattern of 8 x span bytes
// the 16-byte chunk address bits [4, 4 + log2(span / 16)) xor-ed with the
// address bits from 7 up. The buffer is poisoned first: an element the
// layout never wrote cannot match.

// IR-LABEL: gpu.func @l128_f16
// IR-SAME: workgroup(%{{.*}} : memref<4096xi16, #gpu.address_space<workgroup>> {llvm.align = 1024 : i64})
// IR-LABEL: gpu.func @l64_f16
// IR-SAME: {llvm.align = 512 : i64}
// IR-LABEL: gpu.func @l32_i32
// IR-SAME: {llvm.align = 256 : i64}
// IR-LABEL: gpu.func @l128_i8
// IR-SAME: {llvm.align = 1024 : i64}

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // D 128 f16, two stages: two 128-byte column blocks per stage.
    gpu.func @l128_f16(%out: memref<4096xi32>) kernel
        attributes {test.component = "tile_layout", test.swizzle = "128B",
                    test.rows = 16, test.cols = 128, test.stages = 2,
                    test.element_bits = 16} {
      gpu.return
    }
    gpu.func @l64_f16(%out: memref<512xi32>) kernel
        attributes {test.component = "tile_layout", test.swizzle = "64B",
                    test.rows = 8, test.cols = 64, test.stages = 1,
                    test.element_bits = 16} {
      gpu.return
    }
    gpu.func @l32_i32(%out: memref<768xi32>) kernel
        attributes {test.component = "tile_layout", test.swizzle = "32B",
                    test.rows = 16, test.cols = 16, test.stages = 3,
                    test.element_bits = 32} {
      gpu.return
    }
    // fp8-sized elements: indices compared modulo 256.
    gpu.func @l128_i8(%out: memref<2048xi32>) kernel
        attributes {test.component = "tile_layout", test.swizzle = "128B",
                    test.rows = 8, test.cols = 256, test.stages = 1,
                    test.element_bits = 8} {
      gpu.return
    }
  }

  // The elements of `out` not where the ISA puts them (or never written).
  func.func @check(%out: memref<?xi32>, %stages: index, %rows: index,
                   %cols: index, %eb: index, %span: index, %vmask: i32) -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c7 = arith.constant 7 : index
    %c16 = arith.constant 16 : index
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %chunks = arith.divui %span, %c16 : index
    %mask = arith.subi %chunks, %c1 : index
    %span_elems = arith.divui %span, %eb : index
    %rc = arith.muli %rows, %cols : index
    %stage_bytes = arith.muli %rc, %eb : index
    %block_bytes = arith.muli %rows, %span : index
    %bad = scf.for %s = %c0 to %stages step %c1 iter_args(%n0 = %zero) -> i32 {
      %n1 = scf.for %r = %c0 to %rows step %c1 iter_args(%n2 = %n0) -> i32 {
        %n3 = scf.for %c = %c0 to %cols step %c1 iter_args(%n4 = %n2) -> i32 {
          %sr = arith.muli %s, %rows : index
          %srr = arith.addi %sr, %r : index
          %src = arith.muli %srr, %cols : index
          %e = arith.addi %src, %c : index
          %a0 = arith.muli %s, %stage_bytes : index
          %blk = arith.divui %c, %span_elems : index
          %a1 = arith.muli %blk, %block_bytes : index
          %a2 = arith.muli %r, %span : index
          %inb = arith.remui %c, %span_elems : index
          %a3 = arith.muli %inb, %eb : index
          %a01 = arith.addi %a0, %a1 : index
          %a23 = arith.addi %a2, %a3 : index
          %a = arith.addi %a01, %a23 : index
          %hi = arith.shrui %a, %c7 : index
          %phase = arith.andi %hi, %mask : index
          %shifted = arith.shli %phase, %c4 : index
          %swizzled = arith.xori %a, %shifted : index
          %slot = arith.divui %swizzled, %eb : index
          %got = memref.load %out[%slot] : memref<?xi32>
          %ei = arith.index_cast %e : index to i32
          %want = arith.andi %ei, %vmask : i32
          %ne = arith.cmpi ne, %got, %want : i32
          %inc = arith.select %ne, %one, %zero : i32
          %n5 = arith.addi %n4, %inc : i32
          scf.yield %n5 : i32
        }
        scf.yield %n3 : i32
      }
      scf.yield %n1 : i32
    }
    return %bad : i32
  }

  func.func @poison(%out: memref<?xi32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %minus1 = arith.constant -1 : i32
    %n = memref.dim %out, %c0 : memref<?xi32>
    scf.for %i = %c0 to %n step %c1 {
      memref.store %minus1, %out[%i] : memref<?xi32>
    }
    return
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %m8 = arith.constant 255 : i32
    %m16 = arith.constant 65535 : i32
    %m32 = arith.constant -1 : i32

    %o1 = memref.alloc() : memref<4096xi32>
    %d1 = memref.cast %o1 : memref<4096xi32> to memref<?xi32>
    call @poison(%d1) : (memref<?xi32>) -> ()
    gpu.launch_func @kernels::@l128_f16 blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%o1 : memref<4096xi32>)
    %b1 = call @check(%d1, %c2, %c16, %c128, %c2, %c128, %m16)
        : (memref<?xi32>, index, index, index, index, index, i32) -> i32
    // CHECK: 128B f16 mismatches: 0
    vector.print str "128B f16 mismatches: "
    vector.print %b1 : i32

    %o2 = memref.alloc() : memref<512xi32>
    %d2 = memref.cast %o2 : memref<512xi32> to memref<?xi32>
    call @poison(%d2) : (memref<?xi32>) -> ()
    gpu.launch_func @kernels::@l64_f16 blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%o2 : memref<512xi32>)
    %b2 = call @check(%d2, %c1, %c8, %c64, %c2, %c64, %m16)
        : (memref<?xi32>, index, index, index, index, index, i32) -> i32
    // CHECK-NEXT: 64B f16 mismatches: 0
    vector.print str "64B f16 mismatches: "
    vector.print %b2 : i32

    %o3 = memref.alloc() : memref<768xi32>
    %d3 = memref.cast %o3 : memref<768xi32> to memref<?xi32>
    call @poison(%d3) : (memref<?xi32>) -> ()
    gpu.launch_func @kernels::@l32_i32 blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%o3 : memref<768xi32>)
    %b3 = call @check(%d3, %c3, %c16, %c16, %c4, %c32, %m32)
        : (memref<?xi32>, index, index, index, index, index, i32) -> i32
    // CHECK-NEXT: 32B i32 mismatches: 0
    vector.print str "32B i32 mismatches: "
    vector.print %b3 : i32

    %o4 = memref.alloc() : memref<2048xi32>
    %d4 = memref.cast %o4 : memref<2048xi32> to memref<?xi32>
    call @poison(%d4) : (memref<?xi32>) -> ()
    gpu.launch_func @kernels::@l128_i8 blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%o4 : memref<2048xi32>)
    %b4 = call @check(%d4, %c1, %c8, %c256, %c1, %c128, %m8)
        : (memref<?xi32>, index, index, index, index, index, i32) -> i32
    // CHECK-NEXT: 128B i8 mismatches: 0
    vector.print str "128B i8 mismatches: "
    vector.print %b4 : i32
    return
  }
}
