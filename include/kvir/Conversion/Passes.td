//===- Passes.td - kvir conversion passes -----------------*- tablegen -*-===//
#ifndef KVIR_CONVERSION_PASSES_TD
#define KVIR_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertKVToLoops : Pass<"kv-to-loops", "::mlir::ModuleOp"> {
  let summary = "Lower every kv op to scf/memref/arith/math loops on the CPU";
  let description = [{
    The CPU reference lowering of the `kv` dialect (DESIGN.md section 2):
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
  let summary = "Lower kv.decode and state merges to GPU kernels and launches";
  let description = [{
    Generates `gpu.func` kernels (in a `gpu.module @kv_kernels`) and the host
    code that launches them for `kv.decode` over NHD/HND paged caches
    (combined or split pools, CSR or block-table page tables, f16/bf16 KV)
    and for `kv.merge` / `kv.merge_partitions` of states held in buffers.

    Decode: one block per (request, KV head, KV partition); a K/V tile is
    staged in shared memory with 16-byte loads once for the whole GQA group;
    scores reduce across the head dim with xor-shuffles; the online softmax
    runs in base 2 (exp2 becomes ex2.approx, no libdevice). The host chooses
    the number of KV partitions at run time:
    `P = min(32, max(1, ceil(2 * SMs / (batch * kv_heads))))`; with P > 1 a
    split kernel writes f32 partial states to a workspace and a merge kernel
    reduces them. Decode ops it does not handle (other layouts or table
    forms, quantized KV, RoPE, head_dim != head_dim_v) are left for
    kv-to-loops.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "Target chip (sm_80, sm_86, sm_89, sm_90, sm_90a): its SM count "
           "drives the split-KV heuristic">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
}

#endif // KVIR_CONVERSION_PASSES_TD
