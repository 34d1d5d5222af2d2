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

#endif // KVIR_CONVERSION_PASSES_TD
