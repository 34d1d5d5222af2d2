// AddressSanitizer handles the fault itself in a sanitizer build.
// UNSUPPORTED: sanitizers
// RUN: not --crash kvir-runner %s -e main --entry-point-result=void \
// RUN:   --shared-libs=%mlir_runner_libs 2>&1 | FileCheck %s

// A program whose own host code crashes (a store through a null pointer)
// makes kvir-runner print a stack dump, as mlir-runner does, instead of
// exiting 139 with nothing on stderr.

// CHECK: Stack dump:
// CHECK: kvir-runner
func.func @main() {
  %p = llvm.mlir.zero : !llvm.ptr
  %v = llvm.mlir.constant(1 : i32) : i32
  llvm.store volatile %v, %p : i32, !llvm.ptr
  return
}
