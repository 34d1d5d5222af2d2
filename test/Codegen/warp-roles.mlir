// RUN: kvir-opt %s -test-kvir-codegen | FileCheck %s --check-prefix=IR
// RUN: kvir-opt %s -test-kvir-codegen | kvir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s

// WarpRoles: a block of three roles (1, 4 and 2 warps: 224 threads) runs
// each role's code under its own branch; every thread stores
// 1000 role + 32 (its warp within the role) + lane, run in the emulator and
// checked thread by thread against the roles' warp ranges. One role takes
// no branch.

// IR-LABEL: gpu.func @three_roles
// IR-SAME: nvvm.reqntid = array<i32: 224, 1, 1>
// IR: scf.if
// IR: scf.if
// IR: scf.if
// IR-NOT: scf.if
// IR-LABEL: gpu.func @one_role
// IR-SAME: nvvm.reqntid = array<i32: 64, 1, 1>
// IR-NOT: scf.if
// IR: gpu.return

// Register budgets: a thread of a 384-thread block starts with 168 at one
// block per SM (which the kernel declares, so that ptxas knows it); the
// producer warpgroup moves down to 72, the consumers up to 216, each at its
// role's entry; a role at the launch's count moves nowhere.
// IR-LABEL: gpu.func @budgets
// IR-SAME: nvvm.minctasm = 1 : i32, nvvm.reqntid = array<i32: 384, 1, 1>
// IR: scf.if
// IR-NEXT: nvvm.setmaxregister  decrease 72
// IR: scf.if
// IR-NEXT: nvvm.setmaxregister  increase 216
// IR-LABEL: gpu.func @budget_at_launch
// IR-SAME: nvvm.minctasm = 1 : i32
// IR-NOT: nvvm.setmaxregister
// IR: gpu.return

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @three_roles(%out: memref<224xi32>) kernel
        attributes {test.component = "warp_roles", test.role_warps = array<i64: 1, 4, 2>} {
      gpu.return
    }
    gpu.func @one_role(%out: memref<64xi32>) kernel
        attributes {test.component = "warp_roles", test.role_warps = array<i64: 2>} {
      gpu.return
    }
    gpu.func @budgets(%out: memref<384xi32>) kernel
        attributes {test.component = "warp_roles", test.role_warps = array<i64: 4, 8>, test.role_registers = array<i64: 72, 216>} {
      gpu.return
    }
    gpu.func @budget_at_launch(%out: memref<384xi32>) kernel
        attributes {test.component = "warp_roles", test.role_warps = array<i64: 4, 8>, test.role_registers = array<i64: 168, 0>} {
      gpu.return
    }
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c5 = arith.constant 5 : index
    %c32 = arith.constant 32 : index
    %c224 = arith.constant 224 : index
    %c1000 = arith.constant 1000 : index
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %poison = arith.constant -1 : i32
    %out = memref.alloc() : memref<224xi32>
    scf.for %t = %c0 to %c224 step %c1 {
      memref.store %poison, %out[%t] : memref<224xi32>
    }
    gpu.launch_func @kernels::@three_roles blocks in (%c1, %c1, %c1) threads in (%c224, %c1, %c1)
        args(%out : memref<224xi32>)
    // Warp w: role 0 for w < 1, role 1 for w < 5, role 2 after; its warp
    // in the role counts from the role's first warp.
    %bad = scf.for %t = %c0 to %c224 step %c1 iter_args(%n = %zero) -> i32 {
      %w = arith.divui %t, %c32 : index
      %lane = arith.remui %t, %c32 : index
      %r0 = arith.cmpi ult, %w, %c1 : index
      %r1 = arith.cmpi ult, %w, %c5 : index
      %c2 = arith.constant 2 : index
      %role = arith.select %r0, %c0, %c1 : index
      %role2 = arith.select %r1, %role, %c2 : index
      %first1 = arith.select %r0, %c0, %c1 : index
      %first = arith.select %r1, %first1, %c5 : index
      %inRole = arith.subi %w, %first : index
      %a = arith.muli %role2, %c1000 : index
      %b = arith.muli %inRole, %c32 : index
      %ab = arith.addi %a, %b : index
      %want = arith.addi %ab, %lane : index
      %wanti = arith.index_cast %want : index to i32
      %got = memref.load %out[%t] : memref<224xi32>
      %e = arith.cmpi ne, %got, %wanti : i32
      %inc = arith.select %e, %one, %zero : i32
      %n2 = arith.addi %n, %inc : i32
      scf.yield %n2 : i32
    }
    // CHECK: mismatches: 0
    vector.print str "mismatches: "
    vector.print %bad : i32
    // Thread 200: warp 6, the second of role 2, lane 8.
    // CHECK-NEXT: thread 200: 2040
    vector.print str "thread 200: "
    %c200 = arith.constant 200 : index
    %v = memref.load %out[%c200] : memref<224xi32>
    vector.print %v : i32
    memref.dealloc %out : memref<224xi32>
    return
  }
}
