//===- LaunchEmitter.cpp - Host launches from a launch plan ---------------===//
#include "kvir/Codegen/LaunchEmitter.h"
#include "kvir/Dialect/KV/Utils/HostCalls.h"
#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using kvgpu::SizeExprKind;

Value codegen::emitSizeExpr(ImplicitLocOpBuilder &b, kvgpu::SizeExprAttr expr,
                            function_ref<Value(StringRef)> lookup) {
  IRBuilder ir{b};
  switch (expr.getKind()) {
  case SizeExprKind::constant:
    return ir.idx(expr.getValue());
  case SizeExprKind::symbol:
    return lookup(expr.getSymbol());
  default:
    break;
  }
  SmallVector<Value> v;
  for (kvgpu::SizeExprAttr operand : expr.getOperands())
    v.push_back(emitSizeExpr(b, operand, lookup));
  Value r = v.front();
  for (Value x : ArrayRef<Value>(v).drop_front()) {
    switch (expr.getKind()) {
    case SizeExprKind::add:
      r = ir.add(r, x);
      break;
    case SizeExprKind::mul:
      r = ir.mul(r, x);
      break;
    case SizeExprKind::floordiv:
      r = arith::FloorDivSIOp::create(b, r, x);
      break;
    case SizeExprKind::ceildiv:
      r = arith::CeilDivSIOp::create(b, r, x);
      break;
    case SizeExprKind::min:
      r = ir.minS(r, x);
      break;
    case SizeExprKind::max:
      r = ir.maxS(r, x);
      break;
    default:
      llvm_unreachable("leaf kinds handled above");
    }
  }
  return r;
}

namespace {
/// The host code of one plan, emitted region by region.
struct PlanEmitter {
  kvgpu::LaunchPlanAttr plan;
  gpu::GPUModuleOp kernels;
  llvm::StringMap<Value> values;
  /// This run of the plan in its function (kvgpu.call of its launches).
  int64_t call = 0;

  Value lookup(StringRef name) { return values.lookup(name); }

  LogicalResult emitKernel(ImplicitLocOpBuilder &b,
                           kvgpu::KernelLaunchAttr kernel) {
    IRBuilder ir{b};
    auto func = kernels.lookupSymbol<gpu::GPUFuncOp>(
        kernel.getKernel().getLeafReference());
    if (!func)
      return emitError(b.getLoc()) << "launch plan '" << plan.getName()
                                   << "' names missing kernel "
                                   << kernel.getKernel();
    SmallVector<Value> grid, block, operands;
    auto look = [&](StringRef s) { return lookup(s); };
    for (kvgpu::SizeExprAttr dim : kernel.getGrid())
      grid.push_back(emitSizeExpr(b, dim, look));
    for (int64_t dim : kernel.getBlock())
      block.push_back(ir.idx(dim));
    for (Attribute a : kernel.getArgs()) {
      Value v = lookup(cast<StringAttr>(a).getValue());
      if (!v)
        return emitError(b.getLoc()) << "launch plan '" << plan.getName()
                                     << "' has no value for '" << a << "'";
      operands.push_back(v);
    }
    Value dynamicShared;
    if (kernel.getDynamicSharedBytes())
      dynamicShared = ir.i32(kernel.getDynamicSharedBytes());
    // A grid with no blocks is no launch (CUDA rejects it).
    Value blocks = ir.mul(ir.mul(grid[0], grid[1]), grid[2]);
    scf::IfOp::create(
        b, ir.cmp(arith::CmpIPredicate::sgt, blocks, ir.idx(0)),
        [&](OpBuilder &nb, Location loc) {
          ImplicitLocOpBuilder ib(loc, nb);
          auto launch = gpu::LaunchFuncOp::create(
              ib, func, gpu::KernelDim3{grid[0], grid[1], grid[2]},
              gpu::KernelDim3{block[0], block[1], block[2]}, dynamicShared,
              operands);
          launch->setAttr(kvgpu::KVGPUDialect::getPlanOfLaunchAttrName(),
                          ib.getStringAttr(plan.getName()));
          launch->setAttr(kvgpu::KVGPUDialect::getPlanCallAttrName(),
                          ib.getI64IntegerAttr(call));
          scf::YieldOp::create(ib);
        });
    return success();
  }

  /// A buffer of plan argument `arg` with the plan's shape.
  Value allocate(ImplicitLocOpBuilder &b, kvgpu::PlanArgAttr arg) {
    auto look = [&](StringRef s) { return lookup(s); };
    auto type = cast<MemRefType>(arg.getType());
    SmallVector<Value> dynSizes;
    for (auto [i, dim] : llvm::enumerate(arg.getShape()))
      if (type.isDynamicDim(i))
        dynSizes.push_back(emitSizeExpr(b, dim, look));
    return memref::AllocOp::create(b, type, dynSizes);
  }

  /// Runs the plan's work schedule on the host (kvir_schedule_work of the
  /// runtime library): allocates and fills the work list and merge row
  /// offsets and defines the item count. Returns the buffers to free.
  FailureOr<SmallVector<Value>> emitSchedule(ImplicitLocOpBuilder &b,
                                             kvgpu::WorkScheduleAttr s) {
    Value lengths = lookup(s.getLengths());
    if (!lengths)
      return emitError(b.getLoc()) << "launch plan '" << plan.getName()
                                   << "' has no value for '" << s.getLengths()
                                   << "'";
    Value items = allocate(b, plan.lookupArg(s.getItems()));
    Value indptr = allocate(b, plan.lookupArg(s.getMergeIndptr()));
    values[s.getItems()] = items;
    values[s.getMergeIndptr()] = indptr;

    Type i64 = b.getI64Type();
    auto i64Of = [&](Value index) -> Value {
      return arith::IndexCastOp::create(b, i64, index);
    };
    auto i64Const = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(b, b.getI64IntegerAttr(v));
    };
    Value maxItems = memref::DimOp::create(b, items, 0);
    if (s.isPrefill())
      return emitPrefillSchedule(b, s, lengths, items, indptr, maxItems);
    if (!s.getMaxBatch().empty())
      cf::AssertOp::create(
          b,
          arith::CmpIOp::create(b, arith::CmpIPredicate::sle,
                                lookup(s.getBatch()), lookup(s.getMaxBatch())),
          "the batch exceeds the fixed grid's max_batch");
    Value count = kv::emitHostCall(
        b, "kvir_schedule_work",
        {kv::emitDataPointer(b, lengths), i64Of(lookup(s.getBatch())),
         i64Const(s.getWindowLeft()), i64Const(s.getTargetItems()),
         i64Const(s.getGranule()), i64Const(s.getMinChunk()),
         i64Of(lookup(s.getUniformChunks())), i64Of(maxItems),
         kv::emitDataPointer(b, items), kv::emitDataPointer(b, indptr)});
    cf::AssertOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::sge, count, i64Const(0)),
        "kvir_schedule_work failed (a negative kv_len or a work list too small)");
    values[s.getCount()] = arith::IndexCastOp::create(b, b.getIndexType(), count);
    if (!s.getMaxBatch().empty()) {
      // A fixed grid: the merge rows of requests past the batch are empty.
      Value padded = kv::emitHostCall(
          b, "kvir_schedule_pad_batch",
          {i64Of(lookup(s.getBatch())), i64Of(lookup(s.getMaxBatch())),
           kv::emitDataPointer(b, indptr)});
      cf::AssertOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, padded, i64Const(0)),
          "kvir_schedule_pad_batch failed");
    }
    return SmallVector<Value>{items, indptr};
  }

  /// The prefill form of emitSchedule: kvir_schedule_prefill_work, which
  /// also defines the query tile count.
  FailureOr<SmallVector<Value>>
  emitPrefillSchedule(ImplicitLocOpBuilder &b, kvgpu::WorkScheduleAttr s,
                      Value lengths, Value items, Value indptr,
                      Value maxItems) {
    Value qoIndptr = lookup(s.getQoIndptr());
    if (!qoIndptr)
      return emitError(b.getLoc()) << "launch plan '" << plan.getName()
                                   << "' has no value for '"
                                   << s.getQoIndptr() << "'";
    Type i64 = b.getI64Type();
    auto i64Of = [&](Value index) -> Value {
      return arith::IndexCastOp::create(b, i64, index);
    };
    auto i64Const = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(b, b.getI64IntegerAttr(v));
    };
    Value tiles = memref::AllocaOp::create(b, MemRefType::get({1}, i64));
    // The query rows of the buffers: merge_indptr's entries less one.
    IRBuilder ir{b};
    Value numRows = ir.sub(memref::DimOp::create(b, indptr, 0), ir.idx(1));
    Value limit = s.getWorkspaceLimit().empty()
                      ? i64Const(-1)
                      : i64Of(lookup(s.getWorkspaceLimit()));
    Value count = kv::emitHostCall(
        b, "kvir_schedule_prefill_work",
        {kv::emitDataPointer(b, qoIndptr), kv::emitDataPointer(b, lengths),
         i64Of(lookup(s.getBatch())), i64Of(numRows),
         i64Const(s.getTileRows()),
         i64Const(s.getCausal()), i64Const(s.getWindowLeft()),
         i64Const(s.getTargetItems()), i64Const(s.getGranule()),
         i64Const(s.getMinChunk()), i64Of(maxItems), limit,
         kv::emitDataPointer(b, items), kv::emitDataPointer(b, indptr),
         kv::emitDataPointer(b, tiles)});
    cf::AssertOp::create(
        b,
        arith::CmpIOp::create(b, arith::CmpIPredicate::sge, count,
                              i64Const(0)),
        "kvir_schedule_prefill_work failed (a negative kv_len, a qo_indptr "
        "not rising from 0, or a work list too small)");
    auto toIndex = [&](Value v) -> Value {
      return arith::IndexCastOp::create(b, b.getIndexType(), v);
    };
    values[s.getCount()] = toIndex(count);
    values[s.getTiles()] = toIndex(
        memref::LoadOp::create(b, tiles, ValueRange{IRBuilder{b}.idx(0)}));
    // The partial-state rows: merge_indptr's last entry.
    values[s.getWorkspaceRows()] =
        ir.toIndex(memref::LoadOp::create(b, indptr, ValueRange{numRows}));
    return SmallVector<Value>{items, indptr};
  }

  /// Encodes every tensor-map argument (cuTensorMapEncodeTiled) into a
  /// new 64-byte aligned buffer over its source's whole row-major extent;
  /// returns the buffers to free.
  FailureOr<SmallVector<Value>> emitTensorMaps(ImplicitLocOpBuilder &b) {
    SmallVector<Value> maps;
    IRBuilder ir{b};
    Type i32 = b.getI32Type(), i64 = b.getI64Type();
    auto i32Const = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(b, v, 32);
    };
    for (kvgpu::PlanArgAttr arg : plan.getArgs()) {
      kvgpu::TensorMapAttr map = arg.getMap();
      if (!map)
        continue;
      Value source = lookup(map.getSource());
      if (!source)
        return emitError(b.getLoc())
               << "launch plan '" << plan.getName() << "' has no value for '"
               << map.getSource() << "'";
      auto type = cast<MemRefType>(source.getType());
      int64_t rank = type.getRank();
      int64_t elementBytes = type.getElementTypeBitWidth() / 8;
      // The driver's arrays are innermost first.
      auto dims = memref::AllocaOp::create(b, MemRefType::get({5}, i64));
      auto strides = memref::AllocaOp::create(b, MemRefType::get({5}, i64));
      auto box = memref::AllocaOp::create(b, MemRefType::get({5}, i32));
      auto unit = memref::AllocaOp::create(b, MemRefType::get({5}, i32));
      Value stride = ir.idx(elementBytes);
      for (int64_t d = 0; d < rank; ++d) {
        int64_t axis = rank - 1 - d;
        Value at = ir.idx(d);
        // A zero extent (a pool without pages, a batch without rows) is
        // encoded as 1: the driver takes no empty tensor, and no copy reads
        // such a map.
        Value size = arith::MaxUIOp::create(
            b, memref::DimOp::create(b, source, axis), ir.idx(1));
        memref::StoreOp::create(b, arith::IndexCastOp::create(b, i64, size),
                                dims, at);
        memref::StoreOp::create(b, i32Const(map.getBox()[axis]), box, at);
        memref::StoreOp::create(b, i32Const(1), unit, at);
        stride = ir.mul(stride, size);
        if (d + 1 < rank)
          memref::StoreOp::create(b, arith::IndexCastOp::create(b, i64, stride),
                                  strides, at);
      }
      auto buffer = memref::AllocOp::create(
          b, cast<MemRefType>(arg.getType()), ValueRange(),
          b.getI64IntegerAttr(kvgpu::TensorMapAttr::kAlignment));
      using Map = kvgpu::TensorMapAttr;
      Value rc = kv::emitHostCall(
          b, "cuTensorMapEncodeTiled",
          {kv::emitDataPointer(b, buffer),
           i32Const(*kvgpu::TensorMapAttr::getDataType(type.getElementType())),
           i32Const(rank), kv::emitDataPointer(b, source),
           kv::emitDataPointer(b, dims), kv::emitDataPointer(b, strides),
           kv::emitDataPointer(b, box), kv::emitDataPointer(b, unit),
           i32Const(Map::kInterleave), i32Const(map.getSwizzleMode()),
           i32Const(Map::kL2Promotion), i32Const(Map::kOobFill)},
          i32);
      cf::AssertOp::create(
          b,
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, rc, i32Const(0)),
          ("cuTensorMapEncodeTiled failed for '" + arg.getName() + "'").str());
      values[arg.getName()] = buffer;
      maps.push_back(buffer);
    }
    return maps;
  }

  /// Launches `group` (kernels of one condition), allocating the workspace
  /// they take first and freeing it after.
  LogicalResult emitGroup(ImplicitLocOpBuilder &b,
                          ArrayRef<kvgpu::KernelLaunchAttr> group) {
    SmallVector<Value> workspace;
    for (kvgpu::PlanArgAttr arg : plan.getArgs()) {
      if (arg.getRole() != kvgpu::ArgRole::workspace)
        continue;
      bool used = llvm::any_of(group, [&](kvgpu::KernelLaunchAttr k) {
        return llvm::any_of(k.getArgs(), [&](Attribute a) {
          return cast<StringAttr>(a).getValue() == arg.getName();
        });
      });
      if (!used)
        continue;
      Value buffer = allocate(b, arg);
      values[arg.getName()] = buffer;
      workspace.push_back(buffer);
    }
    for (kvgpu::KernelLaunchAttr kernel : group)
      if (failed(emitKernel(b, kernel)))
        return failure();
    for (Value buffer : workspace)
      memref::DeallocOp::create(b, buffer);
    return success();
  }
};
} // namespace

/// A kvgpu.call for launches emitted at `b`: one past the largest the
/// enclosing function's launches carry.
static int64_t nextPlanCall(ImplicitLocOpBuilder &b) {
  Operation *func = b.getInsertionBlock()->getParentOp();
  while (func && !isa<FunctionOpInterface>(func))
    func = func->getParentOp();
  int64_t next = 0;
  if (func)
    func->walk([&](gpu::LaunchFuncOp launch) {
      if (auto call = launch->getAttrOfType<IntegerAttr>(
              kvgpu::KVGPUDialect::getPlanCallAttrName()))
        next = std::max(next, call.getInt() + 1);
    });
  return next;
}

LogicalResult codegen::emitLaunches(ImplicitLocOpBuilder &b,
                                    kvgpu::LaunchPlanAttr plan,
                                    const llvm::StringMap<Value> &args,
                                    gpu::GPUModuleOp kernels) {
  PlanEmitter emitter{plan, kernels, {}};
  emitter.call = nextPlanCall(b);
  for (const auto &entry : args)
    emitter.values[entry.getKey()] = entry.getValue();
  auto look = [&](StringRef s) { return emitter.lookup(s); };
  // The sizes the launches read, directly or through other sizes.
  llvm::StringSet<> needed;
  auto need = [&](kvgpu::SizeExprAttr e) {
    e.walkSymbols([&](StringRef s) { needed.insert(s); });
  };
  if (!plan.getPartitions().empty())
    needed.insert(plan.getPartitions());
  for (kvgpu::KernelLaunchAttr kernel : plan.getKernels()) {
    for (kvgpu::SizeExprAttr dim : kernel.getGrid())
      need(dim);
    for (Attribute a : kernel.getArgs())
      needed.insert(cast<StringAttr>(a).getValue());
  }
  kvgpu::WorkScheduleAttr schedule = plan.getSchedule();
  for (kvgpu::PlanArgAttr arg : plan.getArgs())
    if (arg.getRole() == kvgpu::ArgRole::workspace ||
        arg.getRole() == kvgpu::ArgRole::schedule)
      for (kvgpu::SizeExprAttr dim : arg.getShape())
        need(dim);
  if (schedule) {
    needed.insert(schedule.getBatch());
    if (!schedule.isPrefill())
      needed.insert(schedule.getUniformChunks());
    if (!schedule.getWorkspaceLimit().empty())
      needed.insert(schedule.getWorkspaceLimit());
    needed.erase(schedule.getCount());
    needed.erase(schedule.getTiles());
    needed.erase(schedule.getWorkspaceRows());
  }
  for (kvgpu::SizeDefAttr size : llvm::reverse(plan.getSizes()))
    if (needed.contains(size.getName()) && size.getValue())
      need(size.getValue());
  for (kvgpu::SizeDefAttr size : plan.getSizes()) {
    if (!needed.contains(size.getName()))
      continue;
    Value v;
    if (!size.getArg().empty()) {
      Value arg = emitter.lookup(size.getArg());
      if (!arg)
        return emitError(b.getLoc()) << "launch plan '" << plan.getName()
                                     << "' has no value for argument '"
                                     << size.getArg() << "'";
      v = memref::DimOp::create(b, arg, size.getAxis());
    } else {
      v = emitSizeExpr(b, size.getValue(), look);
    }
    emitter.values[size.getName()] = v;
  }
  FailureOr<SmallVector<Value>> tensorMaps = emitter.emitTensorMaps(b);
  if (failed(tensorMaps))
    return failure();
  SmallVector<Value> scheduleBuffers;
  if (schedule) {
    FailureOr<SmallVector<Value>> buffers = emitter.emitSchedule(b, schedule);
    if (failed(buffers))
      return failure();
    scheduleBuffers = std::move(*buffers);
  }
  // Consecutive kernels of the same condition form a group; conditional
  // groups go under one scf.if on the partition count (or, under a
  // schedule, on whether it cut a request).
  ArrayRef<kvgpu::KernelLaunchAttr> kernelList = plan.getKernels();
  while (!kernelList.empty()) {
    kvgpu::LaunchCondition when = kernelList.front().getWhen();
    size_t n = 0;
    while (n < kernelList.size() && kernelList[n].getWhen() == when)
      ++n;
    ArrayRef<kvgpu::KernelLaunchAttr> group = kernelList.take_front(n);
    kernelList = kernelList.drop_front(n);
    if (when == kvgpu::LaunchCondition::always) {
      if (failed(emitter.emitGroup(b, group)))
        return failure();
      continue;
    }
    IRBuilder ir{b};
    Value split =
        schedule
            ? ir.cmp(arith::CmpIPredicate::sgt,
                     emitter.lookup(schedule.getCount()),
                     emitter.lookup(schedule.getUnsplitCount()))
            : ir.cmp(arith::CmpIPredicate::sgt,
                     emitter.lookup(plan.getPartitions()), ir.idx(1));
    Value cond = when == kvgpu::LaunchCondition::split
                     ? split
                     : arith::XOrIOp::create(
                           b, split,
                           arith::ConstantOp::create(b, b.getBoolAttr(true)));
    LogicalResult result = success();
    scf::IfOp::create(b, cond, [&](OpBuilder &nb, Location loc) {
      ImplicitLocOpBuilder ib(loc, nb);
      result = emitter.emitGroup(ib, group);
      scf::YieldOp::create(ib);
    });
    if (failed(result))
      return failure();
  }
  for (Value buffer : llvm::concat<Value>(scheduleBuffers, *tensorMaps))
    memref::DeallocOp::create(b, buffer);
  return success();
}
