//===- KVGPUDialect.td - GPU configurations of kv ops -----*- tablegen -*-===//
#ifndef KVIR_DIALECT_KVGPU_IR_KVGPUDIALECT_TD
#define KVIR_DIALECT_KVGPU_IR_KVGPUDIALECT_TD

include "mlir/IR/OpBase.td"

def KVGPU_Dialect : Dialect {
  let name = "kvgpu";
  let cppNamespace = "::kvir::kvgpu";
  let summary = "GPU work decompositions and launch plans of kv ops";
  let description = [{
    Attributes only. `kv-tile` attaches a configuration (`#kvgpu.decode`,
    `#kvgpu.prefill`) to each attention op as the discardable attribute
    `kvgpu.config`: the work decomposition convert-kv-to-gpu lowers exactly.
    convert-kv-to-gpu records, per lowered op, a typed launch plan
    (`#kvgpu.plan`) in the module attribute `kvgpu.launch_plans`: the
    kernels with their roles, grids and blocks as expressions of run-time
    sizes (`#kvgpu.size`), the split-KV rule and the workspace. The host
    launch code, the JSON manifests and the C header are all derived from
    that one attribute. A module attribute `kvgpu.graph_max_batch = N :
    i64` asks for fixed grids for up to N requests (CUDA graphs), as the
    pass option graph-max-batch does. Each `gpu.launch_func` of a lowered
    op carries `kvgpu.plan = "<plan name>"` and `kvgpu.call = N : i64`, the
    same N for every launch of one run of the plan in its function: what
    the manifests' description of a host function (its chain of plans)
    reads.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// `kvgpu.config`: the configuration of a kv op.
    static constexpr ::llvm::StringLiteral getConfigAttrName() {
      return ::llvm::StringLiteral("kvgpu.config");
    }
    /// `kvgpu.launch_plans`: the module's array of #kvgpu.plan.
    static constexpr ::llvm::StringLiteral getLaunchPlansAttrName() {
      return ::llvm::StringLiteral("kvgpu.launch_plans");
    }
    /// `kvgpu.graph_max_batch`: a module's fixed grids for CUDA graphs
    /// (convert-kv-to-gpu's graph-max-batch, carried by the module: a
    /// spec's kernels are compiled and emulated with it).
    static constexpr ::llvm::StringLiteral getGraphMaxBatchAttrName() {
      return ::llvm::StringLiteral("kvgpu.graph_max_batch");
    }
    /// `kvgpu.plan` on a gpu.launch_func: the launch plan it is of.
    static constexpr ::llvm::StringLiteral getPlanOfLaunchAttrName() {
      return ::llvm::StringLiteral("kvgpu.plan");
    }
    /// `kvgpu.call` on a gpu.launch_func: which run of its plan in the
    /// function (the launches of one kv op share it).
    static constexpr ::llvm::StringLiteral getPlanCallAttrName() {
      return ::llvm::StringLiteral("kvgpu.call");
    }
  }];
}

#endif // KVIR_DIALECT_KVGPU_IR_KVGPUDIALECT_TD
