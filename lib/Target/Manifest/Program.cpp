//===- Program.cpp - A host function as a chain of launch plans -----------===//
//
// A lowered host function runs its kv ops' plans one after another, over
// its arguments and buffers it allocates between them (a cascade's
// positions and level states). Each of its gpu.launch_func carries the plan
// and the run of it (kvgpu.plan, kvgpu.call); the bare kernel ABI passes a
// buffer as a rank-0 reinterpret_cast of it, so each plan argument a kernel
// takes leads back to a function argument or an allocation. A host without
// the JIT (kvir.gpu) replays the chain from this description: the
// allocations with their shapes, then each run of a plan with its bindings.
//
//===----------------------------------------------------------------------===//
#include "kvir/Target/Manifest/Manifest.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::kvgpu;

namespace {
/// Builds the description of one function, or the reason it has none.
class ProgramBuilder {
public:
  ProgramBuilder(func::FuncOp func, ArrayRef<LaunchPlanAttr> plans)
      : func(func) {
    for (LaunchPlanAttr plan : plans)
      plansByName[plan.getName()] = plan;
  }

  /// Whether the function launches anything of a plan.
  bool launchesPlans() {
    bool any = false;
    func.walk([&](gpu::LaunchFuncOp launch) {
      any |= bool(launch->getAttr(KVGPUDialect::getPlanOfLaunchAttrName()));
    });
    return any;
  }

  llvm::json::Object build() {
    if (!describe())
      return llvm::json::Object{{"function", func.getSymName()},
                                {"error", reason}};
    return llvm::json::Object{{"function", func.getSymName()},
                              {"args", argsJson()},
                              {"temps", std::move(temps)},
                              {"steps", std::move(steps)}};
  }

private:
  bool fail(const Twine &why) {
    if (reason.empty())
      reason = why.str();
    return false;
  }

  llvm::json::Array argsJson() {
    llvm::json::Array args;
    for (BlockArgument arg : func.getArguments()) {
      std::string type;
      llvm::raw_string_ostream os(type);
      os << arg.getType();
      args.push_back(llvm::json::Object{{"index", arg.getArgNumber()},
                                        {"type", type}});
    }
    return args;
  }

  /// `dim`, a dynamic size of an allocation: an axis of a function
  /// argument or a constant.
  std::optional<llvm::json::Value> sizeSource(Value dim) {
    if (auto cst = dim.getDefiningOp<arith::ConstantIndexOp>())
      return llvm::json::Value(cst.value());
    auto of = dim.getDefiningOp<memref::DimOp>();
    if (!of)
      return std::nullopt;
    auto arg = dyn_cast<BlockArgument>(of.getSource());
    std::optional<int64_t> axis = of.getConstantIndex();
    if (!arg || arg.getOwner() != &func.getBody().front() || !axis)
      return std::nullopt;
    return llvm::json::Value(llvm::json::Object{
        {"arg", arg.getArgNumber()}, {"axis", *axis}});
  }

  /// The temp an allocation is (numbered on first use), or none.
  std::optional<int64_t> temp(memref::AllocOp alloc) {
    auto it = tempIds.find(alloc);
    if (it != tempIds.end())
      return it->second;
    MemRefType type = alloc.getType();
    llvm::json::Array shape;
    unsigned next = 0;
    for (int64_t i = 0; i < type.getRank(); ++i) {
      if (!type.isDynamicDim(i)) {
        shape.push_back(type.getDimSize(i));
        continue;
      }
      std::optional<llvm::json::Value> size =
          sizeSource(alloc.getDynamicSizes()[next++]);
      if (!size) {
        fail("a buffer it allocates has a size that is not an argument's "
             "extent");
        return std::nullopt;
      }
      shape.push_back(std::move(*size));
    }
    std::string dtype;
    llvm::raw_string_ostream os(dtype);
    os << type.getElementType();
    int64_t id = tempIds.size();
    tempIds[alloc] = id;
    temps.push_back(llvm::json::Object{
        {"temp", id}, {"dtype", dtype}, {"shape", std::move(shape)}});
    return id;
  }

  /// What plan argument `arg` is bound to by launch operand `operand`.
  std::optional<llvm::json::Value> bindingOf(PlanArgAttr arg, Value operand) {
    if (!isa<MemRefType>(arg.getType())) {
      // An f32 scalar: a function argument, or a constant of the function.
      if (auto a = dyn_cast<BlockArgument>(operand))
        if (a.getOwner() == &func.getBody().front())
          return llvm::json::Value(
              llvm::json::Object{{"arg", a.getArgNumber()}});
      if (auto cst = operand.getDefiningOp<arith::ConstantFloatOp>())
        return llvm::json::Value(llvm::json::Object{
            {"value", cst.value().convertToDouble()}});
      fail("plan argument '" + arg.getName() + "' is not an argument or a "
           "constant of the function");
      return std::nullopt;
    }
    // The bare ABI's rank-0 view of the whole buffer.
    auto view = operand.getDefiningOp<memref::ReinterpretCastOp>();
    Value root = view ? view.getSource() : operand;
    if (root.getType() != arg.getType()) {
      fail("plan argument '" + arg.getName() + "' is a view of a buffer, " +
           "not the buffer");
      return std::nullopt;
    }
    if (auto a = dyn_cast<BlockArgument>(root))
      if (a.getOwner() == &func.getBody().front())
        return llvm::json::Value(
            llvm::json::Object{{"arg", a.getArgNumber()}});
    if (auto alloc = root.getDefiningOp<memref::AllocOp>()) {
      std::optional<int64_t> id = temp(alloc);
      if (!id)
        return std::nullopt;
      return llvm::json::Value(llvm::json::Object{{"temp", *id}});
    }
    fail("plan argument '" + arg.getName() + "' is not an argument of the "
         "function or a buffer it allocates");
    return std::nullopt;
  }

  /// Binds the caller's arguments of `plan` that `launch` passes.
  bool bindLaunch(LaunchPlanAttr plan, gpu::LaunchFuncOp launch,
                  llvm::json::Object &bindings) {
    StringRef kernelName = launch.getKernelName().getValue();
    const KernelLaunchAttr *kernel =
        llvm::find_if(plan.getKernels(), [&](KernelLaunchAttr k) {
          return k.getKernel().getLeafReference() == kernelName;
        });
    if (kernel == plan.getKernels().end())
      return fail("a launch of plan '" + plan.getName() +
                  "' runs a kernel the plan does not list");
    SmallVector<manifest::KernelParam> params =
        manifest::getKernelParams(plan, *kernel);
    if (params.size() != launch.getKernelOperands().size())
      return fail("a launch of plan '" + plan.getName() +
                  "' passes another count of parameters than the plan's");
    for (auto [param, operand] :
         llvm::zip(params, launch.getKernelOperands())) {
      using Kind = manifest::KernelParam::Kind;
      if (param.kind != Kind::pointer && param.kind != Kind::scalar)
        continue;
      ArgRole role = param.arg.getRole();
      // The plan's own buffers (host copies, schedule, workspace, tensor
      // maps) are made by whoever runs it.
      if (role != ArgRole::input && role != ArgRole::output &&
          role != ArgRole::scalar)
        continue;
      std::optional<llvm::json::Value> binding =
          bindingOf(param.arg, operand);
      if (!binding)
        return false;
      if (const llvm::json::Value *before = bindings.get(param.arg.getName()))
        if (*before != *binding)
          return fail("the launches of plan '" + plan.getName() +
                      "' pass '" + param.arg.getName() +
                      "' different buffers");
      bindings[param.arg.getName()] = std::move(*binding);
    }
    return true;
  }

  /// Every launch in the function's order, grouped by the run of its plan;
  /// nothing may run but plans, under no loop.
  bool describe() {
    struct Run {
      LaunchPlanAttr plan;
      llvm::json::Object bindings;
    };
    llvm::MapVector<int64_t, Run> runs;
    bool ok = true;
    func.walk([&](Operation *op) {
      if (!ok)
        return;
      if (isa<scf::ForOp, scf::WhileOp, scf::ParallelOp>(op)) {
        // The host loops the lowering writes fill a plan's host copies
        // (kv lengths); a loop around launches repeats them.
        bool launches = false;
        op->walk([&](gpu::LaunchFuncOp) { launches = true; });
        if (launches)
          ok = fail("it launches kernels in a loop");
        return;
      }
      if (isa<func::CallOp>(op)) {
        auto call = cast<func::CallOp>(op);
        if (!call.getCallee().starts_with("kvir_schedule_") &&
            call.getCallee() != "cuTensorMapEncodeTiled" &&
            !call.getCallee().starts_with("kvir_check_"))
          ok = fail("it calls '" + call.getCallee() + "'");
        return;
      }
      if (isa<memref::CopyOp>(op)) {
        ok = fail("it copies buffers on the host");
        return;
      }
      auto launch = dyn_cast<gpu::LaunchFuncOp>(op);
      if (!launch)
        return;
      auto name = launch->getAttrOfType<StringAttr>(
          KVGPUDialect::getPlanOfLaunchAttrName());
      auto call = launch->getAttrOfType<IntegerAttr>(
          KVGPUDialect::getPlanCallAttrName());
      if (!name || !call) {
        ok = fail("it launches a kernel of no plan (" +
                  launch.getKernelName().getValue() + ")");
        return;
      }
      LaunchPlanAttr plan = plansByName.lookup(name.getValue());
      if (!plan) {
        ok = fail("a launch names plan '" + name.getValue() +
                  "', which the module does not have");
        return;
      }
      Run &run = runs[call.getInt()];
      run.plan = plan;
      ok = bindLaunch(plan, launch, run.bindings);
    });
    if (!ok)
      return false;
    for (auto &[call, run] : runs) {
      // Every caller argument of the plan is bound by one of its launches.
      for (PlanArgAttr arg : run.plan.getArgs()) {
        ArgRole role = arg.getRole();
        if ((role == ArgRole::input || role == ArgRole::output ||
             role == ArgRole::scalar) &&
            !run.bindings.get(arg.getName()))
          return fail("plan '" + run.plan.getName() + "' takes '" +
                      arg.getName() + "', which none of its launches passes");
      }
      steps.push_back(llvm::json::Object{{"plan", run.plan.getName()},
                                         {"op", run.plan.getOp()},
                                         {"args", std::move(run.bindings)}});
    }
    return true;
  }

  func::FuncOp func;
  llvm::StringMap<LaunchPlanAttr> plansByName;
  llvm::DenseMap<Operation *, int64_t> tempIds;
  llvm::json::Array temps, steps;
  std::string reason;
};
} // namespace

SmallVector<llvm::json::Object>
manifest::describePrograms(ModuleOp module) {
  SmallVector<LaunchPlanAttr> plans = getLaunchPlans(module);
  SmallVector<llvm::json::Object> programs;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    ProgramBuilder builder(func, plans);
    if (builder.launchesPlans())
      programs.push_back(builder.build());
  }
  return programs;
}
