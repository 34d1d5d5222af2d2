//===- Passes.td - Passes for the host CPU target ---------*- tablegen -*-===//
#ifndef KVIR_TARGET_HOST_PASSES_TD
#define KVIR_TARGET_HOST_PASSES_TD

include "mlir/Pass/PassBase.td"

def LLVMHostIndependentFloat
    : Pass<"llvm-host-independent-float", "::mlir::ModuleOp"> {
  let summary = "Make LLVM dialect floating-point code compute the same bits "
                "on every host CPU";
  let description = [{
    Rewrites the floating-point operations of the module's top-level
    `llvm.func`s (nested modules such as `gpu.module` are left alone) whose
    machine code, or the routine it calls, depends on the CPU that compiles
    it, into operations every host computes bit for bit alike. Each rewrite
    is a refinement of the LLVM semantics: it picks one of the results LLVM
    allows.

    - f16 / bf16 conversions (`llvm.fpext`, `llvm.fptrunc`, `llvm.sitofp`,
      `llvm.uitofp`, `llvm.fptosi`, `llvm.fptoui`): x86 CPUs without F16C or
      AVX512-BF16 call compiler-rt routines (`__truncsfbf2`, which Debian
      12's libgcc lacks; `__truncsfhf2`, `__extendhfsf2`), AVX512-BF16's
      conversion flushes subnormals. They become integer operations and
      exactly rounded f32 / f64 arithmetic: round to nearest even, once;
      subnormals kept; NaN quiet; overflow to infinity.
    - Arithmetic, comparisons and intrinsics on f16 / bf16: computed in f32
      (correctly rounded for +, -, *, /, sqrt: f32 has more than twice the
      precision plus two bits) and converted back; `fma` through f64 rounded
      to odd; `fneg`, `fabs`, `copysign` on the bits.
    - `llvm.intr.fmuladd` (fused or not, as the backend likes) becomes
      `llvm.intr.fma`.
    - Fast-math flags are dropped: `contract` lets an FMA host fuse, `afn`
      and `arcp` let it pick approximations.
    - `llvm.fptosi` / `llvm.fptoui` saturate out-of-range values and give 0
      for NaN (LLVM leaves them poison: x86 returns 0x80000000, AArch64
      saturates), as PTX's `cvt.rzi` does.
    - `llvm.intr.minnum` / `maxnum` (and their vector reductions) order -0.0
      below +0.0 (LLVM lets either zero come out).

    - What is left of f16 / bf16 values, which are only moved (loaded,
      stored, selected, shuffled, passed to blocks), is carried as i16 bits:
      x86's backend moves a bfloat phi through f32 (`__truncsfbf2` again),
      and LLVM's optimizer would turn phis of bitcast bits back into bfloat
      phis. Function signatures keep their types (cast at the boundary).

    Afterwards every operation on f16 / bf16 values must be one that moves
    them without converting them (loads, stores, bitcasts, selects, vector
    and aggregate element moves, calls, returns, constants); anything else
    is an error naming the operation.
  }];
}

#endif // KVIR_TARGET_HOST_PASSES_TD
