//===- Passes.td - kvgpu configuration passes -------------*- tablegen -*-===//
#ifndef KVIR_DIALECT_KVGPU_TRANSFORMS_PASSES_TD
#define KVIR_DIALECT_KVGPU_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def KVTile : Pass<"kv-tile"> {
  let summary = "Choose the GPU work decomposition of each kv attention op";
  let description = [{
    Attaches `kvgpu.config` to every attention op that has none, chosen for
    the target chip (its TargetInfo):

    - `kv.decode` gets a `#kvgpu.decode`: 16-byte vectors along the head dim
      (the widest the pool's layout allows, as proven by
      kv-specialize-layout's contiguity analysis), lanes per head dim
      rounded to a power of two for the xor-shuffle reduction, about 128
      threads per block (more tokens in flight when the GQA group is small),
      whole warps, K/V tiles of up to 32 tokens (16 KB each).
    - `kv.prefill` gets a `#kvgpu.prefill`. On sm_90a, where its kernel
      takes wgmma (f16 / bf16, head dims of whole 64-element blocks, values
      up to 256 wide), wgmma: 128 packed query rows (two warpgroups)
      against 128-key tiles at head dim 128; 64-key tiles up to head dim
      64 and where V is converted per tile, 48-key tiles above 128.
      Otherwise mma.sync: 128 packed query rows against 64-key tiles with
      one 16-row mma tile per warp (8 warps) and the queries' fragments in
      registers up to head dim 128; 64 x 32 tiles and queries reloaded
      from shared memory for head dim 256. Either way, smaller tiles while
      they exceed the chip's shared memory per block, and a cp.async ring
      of 2 or more stages.

    `mma=mma_sync` keeps every op on mma.sync. `explain` reports, as a
    remark at each op, the configuration chosen and, where the chip has
    wgmma but the op stays on mma.sync, why.

    An op no configuration fits (e.g. a head dim wider than a warp of
    vectors) is left without one; convert-kv-to-gpu then reports why. An
    existing `kvgpu.config` is kept: convert-kv-to-gpu lowers exactly it.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "Target chip: sm_80, sm_86, sm_89, sm_90 or sm_90a">,
    Option<"mma", "mma", "std::string", /*default=*/"\"auto\"",
           "Tensor-core instruction: auto (the chip's best each kernel "
           "takes) or mma_sync">,
    Option<"explain", "explain", "bool", /*default=*/"false",
           "Report each op's configuration, and why an op on a wgmma chip "
           "stays on mma.sync, as remarks">
  ];
  let dependentDialects = ["::kvir::kvgpu::KVGPUDialect"];
}

def KVGPUBareKernelABI : Pass<"kvgpu-bare-kernel-abi", "::mlir::ModuleOp"> {
  let summary = "Give every kernel bare pointers and scalar extents as parameters";
  let description = [{
    Rewrites each `gpu.func` kernel of the module's `gpu.module`s and every
    `gpu.launch_func` of it to kvir's kernel ABI (KernelABI.h): a memref
    argument becomes a rank-0 memref of its element type (one bare pointer
    once lowered with the bare-pointer calling convention), and its dynamic
    sizes, strides and offset become trailing `index` arguments, in argument
    order. The kernel rebuilds the original memref from them with
    `memref.reinterpret_cast`; the launch site reads them with
    `memref.extract_strided_metadata`. A framework then launches a kernel
    with pointers and sizes instead of expanded memref descriptors (three
    words plus two per dimension each).

    Kernels already in this form are left as they are. A kernel argument
    that is an unranked memref or has no strided layout cannot be passed
    this way: the pass fails, naming the kernel and the argument.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::gpu::GPUDialect"];
}

#endif // KVIR_DIALECT_KVGPU_TRANSFORMS_PASSES_TD
