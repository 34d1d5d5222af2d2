// RUN: kvir-opt %s --kvgpu-bare-kernel-abi --split-input-file --verify-diagnostics

// A kernel argument the ABI cannot pass as a pointer and extents.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{kernel argument #0 ('memref<*xf32>') is an unranked memref: a kernel takes ranked memrefs (a pointer and its extents)}}
    gpu.func @unranked(%x: memref<*xf32>) kernel {
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{kernel argument #1 ('memref<4x4xf32, affine_map<(d0, d1) -> (d0 * 4 + d1 floordiv 2)>>') has no strided layout: a kernel takes memrefs a pointer and strides describe}}
    gpu.func @affine(%n: index, %x: memref<4x4xf32, affine_map<(d0, d1) -> (d0 * 4 + d1 floordiv 2)>>) kernel {
      gpu.return
    }
  }
}
