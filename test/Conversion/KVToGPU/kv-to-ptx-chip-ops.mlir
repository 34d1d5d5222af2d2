// RUN: kvir-opt %s --kv-to-ptx=chip=sm_80 -split-input-file -verify-diagnostics

// A kernel whose NVVM ops the target chip lacks is rejected at the first
// such op, naming the chip it needs, before the target is attached (which
// would leave a module that does not verify).

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @hopper() kernel {
      // expected-error @below {{'nvvm.wgmma.fence.aligned' op needs sm_90a, not the target's sm_80}}
      nvvm.wgmma.fence.aligned
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @setmaxnreg() kernel {
      // expected-error @below {{'nvvm.setmaxregister' op needs sm_90a, not the target's sm_80}}
      nvvm.setmaxregister increase 232
      gpu.return
    }
  }
}
