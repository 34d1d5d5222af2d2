// RUN: kvir-opt %s --kv-to-ptx --split-input-file --verify-diagnostics | FileCheck %s

// Kernel ops LLVM's NVPTX backend cannot compile are errors at the op
// (kvir-check-ptx-lowerable, the last pass of the kernel pipeline) instead
// of the backend ending the process inside gpu-module-to-binary. The
// .approx forms PTX has compile.

// (exp, exp2, log, sin, cos and pow are refused earlier, by
// convert-gpu-to-nvvm, which only lowers their math dialect forms.)

// CHECK-LABEL: gpu.binary @ok
// CHECK-SAME: tanh.approx.f32
module attributes {gpu.container_module} {
  gpu.module @ok {
    llvm.func @k(%x: f32) -> f32 attributes {gpu.kernel, nvvm.kernel} {
      %a = llvm.intr.tanh(%x) {fastmathFlags = #llvm.fastmath<afn>} : (f32) -> f32
      llvm.return %a : f32
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @tan {
    llvm.func @k(%x: f32) -> f32 attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @+1 {{'llvm.intr.tan' op cannot be compiled for the GPU: PTX has no instruction for it}}
      %a = llvm.intr.tan(%x) : (f32) -> f32
      llvm.return %a : f32
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @exp10 {
    llvm.func @k(%x: f32) -> f32 attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @+1 {{'llvm.intr.exp10' op cannot be compiled for the GPU: PTX has no instruction for it}}
      %a = llvm.intr.exp10(%x) : (f32) -> f32
      llvm.return %a : f32
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @exact_tanh {
    llvm.func @k(%x: f32) -> f32 attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @+1 {{'llvm.intr.tanh' op cannot be compiled for the GPU: PTX computes it only approximately (tanh.approx.f32): mark it `afn`}}
      %a = llvm.intr.tanh(%x) : (f32) -> f32
      llvm.return %a : f32
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @tanh_f16 {
    llvm.func @k(%x: f16) -> f16 attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @+1 {{'llvm.intr.tanh' op cannot be compiled for the GPU: PTX computes it only approximately (tanh.approx.f32): mark it `afn`}}
      %a = llvm.intr.tanh(%x) {fastmathFlags = #llvm.fastmath<afn>} : (f16) -> f16
      llvm.return %a : f16
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @wide_int {
    llvm.func @k(%x: f32) -> i128 attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @+1 {{'llvm.fptosi' op cannot be compiled for the GPU: PTX converts between floats and integers of up to 64 bits}}
      %a = llvm.fptosi %x : f32 to i128
      llvm.return %a : i128
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @wide_int_source {
    llvm.func @k(%x: i128) -> f32 attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @+1 {{'llvm.uitofp' op cannot be compiled for the GPU: PTX converts between floats and integers of up to 64 bits}}
      %a = llvm.uitofp %x : i128 to f32
      llvm.return %a : f32
    }
  }
}
