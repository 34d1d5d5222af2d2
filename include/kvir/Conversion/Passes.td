//===- Passes.td - kvir conversion passes -----------------*- tablegen -*-===//
#ifndef KVIR_CONVERSION_PASSES_TD
#define KVIR_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertKVToLoops : Pass<"kv-to-loops", "::mlir::ModuleOp"> {
  let summary = "Lower every kv op to scf/memref/arith/math loops on the CPU";
  let description = [{
    The CPU reference lowering of the `kv` dialect (docs/Semantics.md):
    plain loop nests with f32 accumulation that compute exactly the
    normative semantics for every layout, table form, quantization, mask and
    variant. States become an output buffer (of the state's element type) and
    an f32 LSE buffer; paged views become the memrefs they view. The result
    runs under `mlir-runner` after the standard LLVM lowering; the
    `kv-lower-to-llvm` pipeline does both.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::affine::AffineDialect"
  ];
}

def ConvertKVToGPU : Pass<"convert-kv-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower kv ops to GPU kernels, launch plans and launches";
  let description = [{
    Generates `gpu.func` kernels (in a `gpu.module @kv_kernels`), records a
    typed launch plan per lowered op (`#kvgpu.plan` in the module attribute
    `kvgpu.launch_plans`) and emits the host code that launches them,
    derived from that plan. One pattern per op family, each composing the
    kernel-building components of lib/Codegen:

    - `kv.decode` over a paged cache (any layout whose head dim is
      contiguous, every table form, f16/bf16): one block per (request, KV
      head, KV partition), the decomposition of the op's `#kvgpu.decode`
      (kv-tile's, or chosen here the same way). The host chooses the
      number of KV partitions at run time with the plan's rule
      `min(max_partitions, max(1, ceildiv(2 * SMs, max(1, batch *
      kv_heads))))`; with more than one, a split kernel writes f32 partial
      states to a workspace and a merge kernel reduces them.
    - `kv.merge` / `kv.merge_partitions` of states held in buffers.

    A kernel's symbol covers everything that changes its code (the op, all
    its attributes, every operand and buffer type, the configuration, the
    chip): two ops that differ in any of them never share a kernel.

    Any other kv op that reads or writes data is an error naming the op and
    the reason it has no kernel, unless `allow-host-loops` is set: then it
    stays for kv-to-loops (kvir-runner's choice, where device memory is
    host memory; on a GPU such host loops would read device pointers).
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "Target chip (sm_80, sm_86, sm_89, sm_90, sm_90a): its TargetInfo "
           "sizes the split-KV rule">,
    Option<"allowHostLoops", "allow-host-loops", "bool", /*default=*/"false",
           "Leave kv ops without a kernel to kv-to-loops instead of failing">,
    Option<"graphMaxBatch", "graph-max-batch", "int64_t", /*default=*/"0",
           "Fixed grids for batches of at most this many requests, for "
           "CUDA-graph capture (0: grids sized per call, or the module's "
           "kvgpu.graph_max_batch)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::cf::ControlFlowDialect",
    "::mlir::func::FuncDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::nvgpu::NVGPUDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect", "::kvir::kvgpu::KVGPUDialect"
  ];
}

#endif // KVIR_CONVERSION_PASSES_TD
