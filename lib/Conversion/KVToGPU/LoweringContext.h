//===- LoweringContext.h - What convert-kv-to-gpu's patterns share -*- C++ -*-===//
//
// The kernel module and its kernels (built once per symbol), the target
// chip, the launch plans recorded on the module, and the two questions
// every op family's pattern asks: where its result state goes (the buffers
// of a kv.store_state, or new ones) and how its arguments are described in
// a launch plan.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_CONVERSION_KVTOGPU_LOWERINGCONTEXT_H
#define KVIR_LIB_CONVERSION_KVTOGPU_LOWERINGCONTEXT_H

#include "kvir/Codegen/KernelFunc.h"
#include "kvir/Dialect/KV/IR/KVOps.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"
#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"
#include "kvir/Target/GPU/TargetInfo.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/StringMap.h"

#include <functional>

namespace kvir::gpu_lowering {

class PlanBuilder;

class LoweringContext {
public:
  LoweringContext(mlir::ModuleOp module, const target::TargetInfo &target,
                  int64_t graphMaxBatch = 0)
      : module(module), target(target), graphMaxBatch(graphMaxBatch) {}

  const target::TargetInfo &getTarget() const { return target; }
  /// The batch fixed grids are sized for (CUDA graphs), or 0: grids sized
  /// per call.
  int64_t getGraphMaxBatch() const { return graphMaxBatch; }
  /// The module's `@kv_kernels` gpu.module, created on first use.
  mlir::gpu::GPUModuleOp getKernelModule();
  /// The kernel named `symbol`, built by `build` the first time it is asked
  /// for (the symbol covers everything that changes its code).
  mlir::gpu::GPUFuncOp
  getOrBuildKernel(llvm::StringRef symbol,
                   llvm::function_ref<codegen::KernelFunc(mlir::gpu::GPUModuleOp)>
                       build);
  /// Builds `plan`, records it in the module's kvgpu.launch_plans (once
  /// per name) and emits its launches at `b` with the arguments
  /// `bindings`; fails (reported at `loc`) on a bad plan.
  mlir::LogicalResult launch(mlir::ImplicitLocOpBuilder &b,
                             const PlanBuilder &plan,
                             const llvm::StringMap<mlir::Value> &bindings,
                             mlir::Location loc);

private:
  void recordPlan(kvgpu::LaunchPlanAttr plan);

  mlir::ModuleOp module;
  const target::TargetInfo &target;
  int64_t graphMaxBatch;
  mlir::gpu::GPUModuleOp kernels;
  llvm::StringMap<mlir::gpu::GPUFuncOp> built;
};

/// A type as MLIR prints it.
std::string typeName(mlir::Type type);

/// Where a lowered attention op writes its state.
struct StateDestination {
  /// The kv.store_state that consumed the state (erased by the lowering),
  /// or null when the state has other users.
  kv::StoreStateOp store;
  /// The insertion point of the launches.
  mlir::Operation *at = nullptr;
};

/// Whether `op`'s state can be written straight into the buffers of its
/// only user, a kv.store_state: the buffers exist at `op` already, or
/// nothing between the two writes memory (the state is a value: a
/// kv.append in between must not change it).
StateDestination findStateDestination(mlir::Operation *op);

/// The buffers a lowered attention op writes its state into: those of the
/// kv.store_state it writes through, or new ones (the LSE buffer is new
/// also when the store keeps none).
class StateOutputs {
public:
  /// Sets the rewriter's insertion point where the launches go. `rows`
  /// gives the dynamic row count of new buffers (the queries).
  StateOutputs(mlir::PatternRewriter &rewriter, mlir::Operation *op,
               kv::StateType type, mlir::Value rows);
  mlir::Value getOutput() const { return out; }
  mlir::Value getLse() const { return lse; }
  /// Replaces `op`: erases it and the kv.store_state, or hands the buffers
  /// to the other users as a kv.load_state.
  mlir::LogicalResult finish(mlir::PatternRewriter &rewriter);

private:
  mlir::Operation *op;
  kv::StateType type;
  StateDestination dest;
  mlir::Value out, lse;
  bool ownsLse = false;
};

/// Builds a #kvgpu.plan: arguments (their dynamic dims become named sizes),
/// computed sizes, kernels.
class PlanBuilder {
public:
  PlanBuilder(mlir::MLIRContext *ctx, llvm::StringRef op, llvm::StringRef name)
      : ctx(ctx), op(op.str()), name(name.str()) {}

  kvgpu::SizeExprAttr sym(llvm::StringRef s) {
    return kvgpu::SizeExprAttr::symbolRef(ctx, s);
  }
  kvgpu::SizeExprAttr cst(int64_t v) {
    return kvgpu::SizeExprAttr::constant(ctx, v);
  }

  /// Adds argument `argName` of memref type `type`. For each dim: a static
  /// size is a constant; a dynamic one is `shape[i]` if given (non-null),
  /// else a new size read from this dim, named `dimNames[i]` if given (and
  /// not defined yet) or `<argName>_dim<i>`.
  void addBuffer(llvm::StringRef argName, kvgpu::ArgRole role,
                 mlir::MemRefType type,
                 llvm::ArrayRef<kvgpu::SizeExprAttr> shape = {},
                 llvm::ArrayRef<llvm::StringRef> dimNames = {});
  /// Adds a float argument `argName` the caller passes by value.
  void addScalar(llvm::StringRef argName, mlir::Type type);
  /// Adds tensor-map argument `argName` (tensorMapType), encoded by the
  /// host as `map` says.
  void addTensorMap(llvm::StringRef argName, kvgpu::TensorMapAttr map);
  /// Defines size `sizeName` as `value` (after the sizes it reads).
  void defineSize(llvm::StringRef sizeName, kvgpu::SizeExprAttr value);
  bool hasSize(llvm::StringRef sizeName) const;
  void setPartitions(llvm::StringRef sizeName) { partitions = sizeName.str(); }
  /// The host-side work list that selects and feeds the kernels.
  void setSchedule(kvgpu::WorkScheduleAttr attr) { schedule = attr; }
  /// The #kvgpu configuration the plan's kernels were built with.
  void setConfig(mlir::Attribute attr) { config = attr; }
  /// The page tables of the plan's paged KV (for run-time checks).
  void setTables(kvgpu::PagedTablesAttr attr) { tables = attr; }
  void addKernel(llvm::StringRef role, mlir::gpu::GPUFuncOp kernel,
                 kvgpu::LaunchCondition when,
                 llvm::ArrayRef<kvgpu::SizeExprAttr> grid,
                 llvm::ArrayRef<llvm::StringRef> args);
  /// The plan, or null after reporting at `loc` why it is inconsistent.
  kvgpu::LaunchPlanAttr build(mlir::Location loc) const;

private:
  mlir::MLIRContext *ctx;
  std::string op, name, partitions;
  kvgpu::WorkScheduleAttr schedule;
  kvgpu::PagedTablesAttr tables;
  mlir::Attribute config;
  llvm::SmallVector<kvgpu::PlanArgAttr> args;
  llvm::SmallVector<kvgpu::SizeDefAttr> sizes;
  llvm::SmallVector<kvgpu::KernelLaunchAttr> kernels;
};

/// int8 groups: how many scales one cp.async copies into a kernel's scale
/// tiles, the widest run of up to 16 bytes that divides a K and a V row's
/// head_dim / quant_group scales and that both scale pools prove contiguous and
/// aligned; nullopt when that is under 4 bytes (cp.async's least).
std::optional<int64_t> int8ScaleChunkElements(kv::PagedViewOp view);

/// Why a kernel (`kernel`: "decode", "prefill") cannot stage `view`'s V
/// pool transposed (kvgpu::transposedVChunk: vLLM's V pool), or nullopt
/// (also when V is not staged transposed): chunks under 4 bytes, strides
/// that are not multiples of a chunk, int8 groups.
std::optional<std::string> whyNoTransposedV(kv::PagedViewOp view,
                                            llvm::StringRef kernel);

/// Adds `op`'s variant operands (codegen::getVariantOperands; none without
/// variants) to `plan` as inputs and to `bindings`: `sinks`,
/// `alibi_slopes`, and `capture<i>` for what its regions use from above
/// (memrefs as buffers, f32 as scalars); returns their names in that order
/// (the order of the kernels' last parameters).
llvm::SmallVector<std::string>
addVariantArguments(PlanBuilder &plan, mlir::Operation *op,
                    llvm::StringMap<mlir::Value> &bindings);

/// Adds the pools and tables of a paged KV as input arguments of `plan`
/// (pool, k_pool / v_pool, and the table form's names, with shapes over
/// the size `batch`, defined from the first table if the plan has none
/// yet) and returns their names in PagedOperands::flatten() order.
llvm::SmallVector<llvm::StringRef> addPagedKVArguments(PlanBuilder &plan,
                                                       const kv::PagedOperands &kv);

/// Adds a top-k selection `topk` ([rows, K] i32; its rows the size `rows`,
/// K the size `topk_len`) to `plan` as the input `topk` and to `bindings`.
void addTopkArgument(PlanBuilder &plan, mlir::Value topk, llvm::StringRef rows,
                     llvm::StringMap<mlir::Value> &bindings);

/// The work schedule's host-side lengths for the requests of `kv` (one per
/// row of `queries`): each request's kv_len, or with a top-k selection the
/// entries of its list (K), which are the kernels' work.
mlir::Value emitScheduleLengths(mlir::ImplicitLocOpBuilder &b,
                                mlir::Value queries,
                                const kv::PagedOperands &kv, mlir::Value topk);

/// A split-KV plan's work schedule (include/kvir/Runtime/WorkSchedule.h).
struct WorkSchedulePlan {
  /// kvir_schedule_work's parameters: the items the chip runs at once, the
  /// chunk granule in keys, the shortest chunk, the sliding window (-1:
  /// none).
  int64_t targetItems = 1, granule = 16, minChunk = 128, windowLeft = -1;
  /// Callers without the lengths on the host cut every request into
  /// `num_partitions` = min(maxPartitions, ceil(2 SMs / (batch x
  /// blocksPerItem))) chunks: enough blocks to fill the chip about twice.
  int64_t maxPartitions = 1, blocksPerItem = 1;
  /// CUDA graphs: grids fixed for this many requests (0: sized per call).
  int64_t fixedBatch = 0;
};

/// Adds a work schedule to `plan` (which has the size `batch`): the sizes
/// `num_partitions`, `max_work` (kvir_schedule_max_items) and, with fixed
/// grids, `max_batch`; the host buffer `kv_lengths`, the schedule's
/// `work_items` [max_work, 4] and `merge_indptr` [grid batch + 1]; and the
/// #kvgpu.work_schedule defining `num_work`. Returns the grid's batch
/// (`batch`, or `max_batch` with fixed grids).
kvgpu::SizeExprAttr addWorkSchedule(PlanBuilder &plan,
                                    const WorkSchedulePlan &schedule,
                                    const target::TargetInfo &target);

/// The work list's type: [items, fields] i32 (WorkSchedule.h's fields: 4,
/// or KVIR_PREFILL_WORK_FIELDS for a prefill's query tiles).
mlir::MemRefType workItemsType(mlir::MLIRContext *ctx, int64_t fields = 4);

/// A tensor-map argument's type: the 128 bytes of a CUtensorMap as
/// memref<16xi64>.
mlir::MemRefType tensorMapType(mlir::MLIRContext *ctx);

} // namespace kvir::gpu_lowering

#endif // KVIR_LIB_CONVERSION_KVTOGPU_LOWERINGCONTEXT_H
