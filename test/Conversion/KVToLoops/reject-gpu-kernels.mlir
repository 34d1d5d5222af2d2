// RUN: kvir-opt %s --kv-lower-to-llvm -split-input-file -verify-diagnostics

// The CPU pipeline takes no GPU kernels: the host conversions would rewrite
// the kernel body into IR that verifies as neither (kvir-fuzz found the
// `cf.assert` case: convert-cf-to-llvm left an llvm.mlir.addressof of a
// global outside the gpu.module).

module attributes {gpu.container_module} {
  // expected-error @below {{'gpu.module': kv-lower-to-llvm lowers for the CPU, which runs no GPU kernels; run this module with kvir-runner (kvir's GPU emulator) or compile it with kv-to-ptx}}
  gpu.module @kernels {
    gpu.func @check() kernel {
      %t = gpu.thread_id x
      %c2 = arith.constant 2 : index
      %ok = arith.cmpi ult, %t, %c2 : index
      cf.assert %ok, "t must be below 2"
      gpu.return
    }
  }
}

// -----

func.func @host_launch(%n: index) {
  // expected-error @below {{'gpu.launch': kv-lower-to-llvm lowers for the CPU}}
  gpu.launch blocks(%bx, %by, %bz) in (%x = %n, %y = %n, %z = %n)
             threads(%tx, %ty, %tz) in (%a = %n, %b = %n, %c = %n) {
    gpu.terminator
  }
  return
}
