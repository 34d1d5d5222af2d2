//===- LoweringContext.cpp - What convert-kv-to-gpu's patterns share ------===//
#include "LoweringContext.h"

#include "kvir/Codegen/LaunchEmitter.h"
#include "kvir/Codegen/Variants.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"
#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"

#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::gpu_lowering;

std::string gpu_lowering::typeName(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

gpu::GPUModuleOp LoweringContext::getKernelModule() {
  if (kernels)
    return kernels;
  kernels = module.lookupSymbol<gpu::GPUModuleOp>("kv_kernels");
  if (kernels)
    return kernels;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  kernels = gpu::GPUModuleOp::create(b, module.getLoc(), "kv_kernels");
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  b.getUnitAttr());
  return kernels;
}

gpu::GPUFuncOp LoweringContext::getOrBuildKernel(
    StringRef symbol, function_ref<codegen::KernelFunc(gpu::GPUModuleOp)> build) {
  auto it = built.find(symbol);
  if (it != built.end())
    return it->second;
  gpu::GPUFuncOp func = build(getKernelModule()).getOp();
  assert(func.getName() == symbol && "kernel built under another symbol");
  // Every kernel may be launched as a programmatic dependent (a plan's
  // merge after its split kernel; any kernel after the caller's, which the
  // caller chooses).
  if (target.hasGridDependencyControl)
    codegen::orderAfterPrimaryGrid(func);
  return built[symbol] = func;
}

void LoweringContext::recordPlan(kvgpu::LaunchPlanAttr plan) {
  StringRef attrName = kvgpu::KVGPUDialect::getLaunchPlansAttrName();
  SmallVector<Attribute> plans;
  if (auto existing = module->getAttrOfType<ArrayAttr>(attrName))
    llvm::append_range(plans, existing);
  for (Attribute a : plans)
    if (cast<kvgpu::LaunchPlanAttr>(a).getName() == plan.getName())
      return;
  plans.push_back(plan);
  module->setAttr(attrName, ArrayAttr::get(module.getContext(), plans));
}

LogicalResult LoweringContext::launch(ImplicitLocOpBuilder &b,
                                      const PlanBuilder &plan,
                                      const llvm::StringMap<Value> &bindings,
                                      Location loc) {
  kvgpu::LaunchPlanAttr attr = plan.build(loc);
  if (!attr)
    return failure();
  recordPlan(attr);
  return codegen::emitLaunches(b, attr, bindings, getKernelModule());
}

StateDestination gpu_lowering::findStateDestination(Operation *op) {
  StateDestination dest{nullptr, op};
  if (!op->hasOneUse())
    return dest;
  auto store = dyn_cast<kv::StoreStateOp>(*op->getUsers().begin());
  if (!store)
    return dest;
  DominanceInfo dom(op->getParentOp());
  bool available =
      dom.properlyDominates(store.getOutput(), op) &&
      (!store.getLse() || dom.properlyDominates(store.getLse(), op));
  if (available)
    return {store, op};
  bool quiet = store->getBlock() == op->getBlock();
  for (Operation *it = op->getNextNode(); quiet && it != store;
       it = it->getNextNode()) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(it);
    quiet = (effects && !effects.hasEffect<MemoryEffects::Write>()) ||
            isa<kv::PagedViewOp, kv::RaggedViewOp>(it);
  }
  if (quiet)
    return {store, store};
  return dest;
}

void PlanBuilder::addBuffer(StringRef argName, kvgpu::ArgRole role,
                            MemRefType type,
                            ArrayRef<kvgpu::SizeExprAttr> shape,
                            ArrayRef<StringRef> dimNames) {
  SmallVector<kvgpu::SizeExprAttr> dims;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (!type.isDynamicDim(i)) {
      dims.push_back(cst(type.getDimSize(i)));
      // A named dim that happens to be static is still a size others use.
      if (i < int64_t(dimNames.size()) && !dimNames[i].empty() &&
          !hasSize(dimNames[i]))
        defineSize(dimNames[i], cst(type.getDimSize(i)));
      continue;
    }
    if (i < int64_t(shape.size()) && shape[i]) {
      dims.push_back(shape[i]);
      continue;
    }
    std::string sizeName = i < int64_t(dimNames.size()) && !dimNames[i].empty()
                               ? dimNames[i].str()
                               : (argName + "_dim" + Twine(i)).str();
    if (!hasSize(sizeName))
      sizes.push_back(kvgpu::SizeDefAttr::get(ctx, StringRef(sizeName),
                                              argName, i, {}));
    dims.push_back(sym(sizeName));
  }
  args.push_back(kvgpu::PlanArgAttr::get(ctx, argName, role, type, dims));
}

void PlanBuilder::addScalar(StringRef argName, Type type) {
  args.push_back(
      kvgpu::PlanArgAttr::get(ctx, argName, kvgpu::ArgRole::scalar, type, {}));
}

void PlanBuilder::addTensorMap(StringRef argName, kvgpu::TensorMapAttr map) {
  args.push_back(kvgpu::PlanArgAttr::get(
      ctx, argName, kvgpu::ArgRole::tensor_map, tensorMapType(ctx),
      {cst(kvgpu::TensorMapAttr::kBytes / 8)}, map));
}

void PlanBuilder::defineSize(StringRef sizeName, kvgpu::SizeExprAttr value) {
  sizes.push_back(kvgpu::SizeDefAttr::get(ctx, sizeName, "", -1, value));
}

bool PlanBuilder::hasSize(StringRef sizeName) const {
  return llvm::any_of(sizes, [&](kvgpu::SizeDefAttr s) {
    return s.getName() == sizeName;
  });
}

void PlanBuilder::addKernel(StringRef role, gpu::GPUFuncOp kernel,
                            kvgpu::LaunchCondition when,
                            ArrayRef<kvgpu::SizeExprAttr> grid,
                            ArrayRef<StringRef> kernelArgs) {
  SmallVector<Attribute> names;
  for (StringRef a : kernelArgs)
    names.push_back(StringAttr::get(ctx, a));
  auto symbol = SymbolRefAttr::get(
      StringAttr::get(ctx, kernel->getParentOfType<gpu::GPUModuleOp>().getName()),
      {FlatSymbolRefAttr::get(kernel)});
  std::array<int64_t, 3> block = codegen::getBlock(kernel);
  kernels.push_back(kvgpu::KernelLaunchAttr::get(
      ctx, role, symbol, when, grid, block,
      codegen::getStaticSharedBytes(kernel),
      codegen::getDynamicSharedBytes(kernel), ArrayAttr::get(ctx, names)));
}

kvgpu::LaunchPlanAttr PlanBuilder::build(Location loc) const {
  return kvgpu::LaunchPlanAttr::getChecked(
      [&] { return emitError(loc) << "convert-kv-to-gpu built a bad plan: "; },
      ctx, StringRef(op), StringRef(name), ArrayRef(args), ArrayRef(sizes),
      StringRef(partitions), schedule, tables, config, ArrayRef(kernels));
}

StateOutputs::StateOutputs(PatternRewriter &rewriter, Operation *op,
                           kv::StateType type, Value rows)
    : op(op), type(type), dest(findStateDestination(op)) {
  rewriter.setInsertionPoint(dest.at);
  ImplicitLocOpBuilder b(op->getLoc(), rewriter);
  auto allocLike = [&](MemRefType memref) -> Value {
    SmallVector<Value> dynRows;
    if (ShapedType::isDynamic(type.getRows()))
      dynRows.push_back(memref::DimOp::create(b, rows, 0));
    return memref::AllocOp::create(b, memref, dynRows);
  };
  if (dest.store) {
    out = dest.store.getOutput();
    lse = dest.store.getLse();
  } else {
    out = allocLike(
        MemRefType::get(type.getOutputShape(), type.getElementType()));
  }
  if (!lse) {
    lse = allocLike(MemRefType::get(type.getLseShape(), b.getF32Type()));
    ownsLse = static_cast<bool>(dest.store);
  }
}

LogicalResult StateOutputs::finish(PatternRewriter &rewriter) {
  if (dest.store) {
    if (ownsLse) {
      rewriter.setInsertionPointAfter(dest.store);
      memref::DeallocOp::create(rewriter, op->getLoc(), lse);
    }
    rewriter.eraseOp(dest.store);
    rewriter.eraseOp(op);
    return success();
  }
  // Other kv ops use the state: hand them the buffers as a state value.
  rewriter.setInsertionPoint(op);
  rewriter.replaceOpWithNewOp<kv::LoadStateOp>(op, type, out, lse);
  return success();
}

std::optional<std::string>
gpu_lowering::whyNoTransposedV(kv::PagedViewOp view, StringRef kernel) {
  kv::PagedType kv = view.getType();
  int64_t chunk = kvgpu::transposedVChunk(kv);
  if (!chunk)
    return std::nullopt;
  // Chunks of `chunk` slots of one dim, 4 to 16 bytes, aligned to their
  // size.
  int64_t bytes =
      chunk * kv.getStorageElementType().getIntOrFloatBitWidth() / 8;
  if (bytes < 4)
    return "a V pool whose slots are its innermost axis (vLLM's layout) at "
           "page size " +
           std::to_string(kv.getPageSize()) + ": the " + kernel.str() +
           " kernel stages V transposed in chunks of at least 4 bytes of "
           "consecutive slots within a page";
  if (kv.getQuant() == kv::Quant::int8_group)
    return "int8 groups with a V pool whose slots are its innermost axis "
           "(vLLM's layout) have no " +
           kernel.str() + " kernel";
  auto vPool = cast<MemRefType>(
      view.getPools()[kv::getPoolOperandIndex(kv, kv::PoolRole::V)].getType());
  if (!vPool.getLayout().isIdentity()) {
    auto [strides, offset] = vPool.getStridesAndOffset();
    bool aligned = !ShapedType::isDynamic(offset) && offset % chunk == 0;
    for (int64_t stride : ArrayRef<int64_t>(strides).drop_back())
      aligned &= !ShapedType::isDynamic(stride) && stride % chunk == 0;
    if (!aligned)
      return "V pool " + typeName(vPool) + ": the " + kernel.str() +
             " kernel stages V transposed in chunks of " +
             std::to_string(chunk) +
             " slots, which needs static strides and offset that are "
             "multiples of the chunk";
  }
  return std::nullopt;
}

std::optional<int64_t>
gpu_lowering::int8ScaleChunkElements(kv::PagedViewOp view) {
  kv::PagedType kv = view.getType();
  int64_t bits = kv.getDtype().getIntOrFloatBitWidth();
  int64_t width = 128 / bits;
  for (kv::PoolRole role : {kv::PoolRole::KScale, kv::PoolRole::VScale}) {
    Value pool = view.getScales()[kv::getPoolOperandIndex(kv, role)];
    width = std::min(width, kv::getDimVectorWidth(
                                kv, role, cast<MemRefType>(pool.getType()),
                                width));
    int64_t dims = role == kv::PoolRole::KScale ? kv.getHeadDim()
                                                : kv.getHeadDimV();
    while ((dims / kv.getQuantGroup()) % width)
      width /= 2;
  }
  if (width * bits < 32)
    return std::nullopt;
  return width;
}

SmallVector<StringRef>
gpu_lowering::addPagedKVArguments(PlanBuilder &plan,
                                  const kv::PagedOperands &kv) {
  SmallVector<StringRef> names;
  auto add = [&](StringRef name, Value v, ArrayRef<kvgpu::SizeExprAttr> shape,
                 ArrayRef<StringRef> dimNames) {
    plan.addBuffer(name, kvgpu::ArgRole::input, cast<MemRefType>(v.getType()),
                   shape, dimNames);
    names.push_back(name);
  };
  SmallVector<StringRef> poolNames{"k_pool", "v_pool"};
  if (kv.type.getStorage() == kv::Storage::combined)
    poolNames = {"pool"};
  else if (kv.type.isMla())
    poolNames = {"ckv_pool", "kpe_pool"};
  for (auto [name, pool] : llvm::zip(poolNames, kv.pools))
    add(name, pool, {}, {"num_pages"});
  bool batchFromTables = !plan.hasSize("batch");
  for (auto [name, table] :
       llvm::zip(kv::getTableNames(kv.type.getTable()), kv.tables)) {
    if (name == "kv_indptr" && batchFromTables) {
      add(name, table, {}, {"kv_indptr_len"});
      plan.defineSize("batch", kvgpu::SizeExprAttr::add(
                                   plan.sym("kv_indptr_len"), plan.cst(-1)));
    } else if (name == "kv_indptr")
      add(name, table,
          {kvgpu::SizeExprAttr::add(plan.sym("batch"), plan.cst(1))}, {});
    else if (batchFromTables && !plan.hasSize("batch"))
      add(name, table, {}, {"batch", "max_pages"});
    else if (name == "kv_indices")
      add(name, table, {}, {"num_page_ids"});
    else
      add(name, table, {plan.sym("batch")}, {"", "max_pages"});
  }
  // int8 groups' scale pools, laid out as their pools.
  SmallVector<StringRef> scaleNames{"k_scale_pool", "v_scale_pool"};
  if (kv.type.getStorage() == kv::Storage::combined)
    scaleNames = {"scale_pool"};
  for (auto [name, scales] : llvm::zip(scaleNames, kv.scales))
    add(name, scales, {}, {"num_pages"});
  // fp8's per-tensor scales, by value.
  for (auto [name, scale] : {std::pair<StringRef, Value>{"k_scale", kv.kScale},
                             {"v_scale", kv.vScale}}) {
    if (!scale)
      continue;
    plan.addScalar(name, scale.getType());
    names.push_back(name);
  }
  // The pool's capacity in tokens, when its axis 0 is the page axis or the
  // token axis (size num_pages): what a table check bounds entries by.
  kv::PagedType type = kv.type;
  MLIRContext *ctx = type.getContext();
  AffineExpr page = getAffineDimExpr(0, ctx), slot = getAffineDimExpr(2, ctx);
  AffineMap map = kv::getPoolIndexMap(type, kv::PoolRole::K);
  kvgpu::SizeExprAttr tokens;
  if (map && map.getNumResults() && map.getResult(0) == page)
    tokens = kvgpu::SizeExprAttr::mul(plan.sym("num_pages"),
                                      plan.cst(type.getPageSize()));
  else if (map && map.getNumResults() &&
           map.getResult(0) == page * type.getPageSize() + slot)
    tokens = plan.sym("num_pages");
  plan.setTables(kvgpu::PagedTablesAttr::get(
      ctx, kv::stringifyTableForm(type.getTable()), type.getPageSize(),
      tokens));
  return names;
}

MemRefType gpu_lowering::workItemsType(MLIRContext *ctx, int64_t fields) {
  return MemRefType::get({ShapedType::kDynamic, fields},
                         IntegerType::get(ctx, 32));
}

MemRefType gpu_lowering::tensorMapType(MLIRContext *ctx) {
  return MemRefType::get({kvgpu::TensorMapAttr::kBytes / 8},
                         IntegerType::get(ctx, 64));
}

kvgpu::SizeExprAttr
gpu_lowering::addWorkSchedule(PlanBuilder &plan, const WorkSchedulePlan &ws,
                              const target::TargetInfo &target) {
  using kvgpu::ArgRole;
  using kvgpu::SizeExprAttr;
  auto uniformChunks = [&](SizeExprAttr requests) {
    return SizeExprAttr::min(
        {plan.cst(ws.maxPartitions),
         SizeExprAttr::max(
             {plan.cst(1),
              SizeExprAttr::ceilDiv(
                  plan.cst(2 * target.smCount),
                  SizeExprAttr::max(
                      {plan.cst(1), SizeExprAttr::mul(
                                        requests,
                                        plan.cst(ws.blocksPerItem))}))})});
  };
  // kvir_schedule_max_items, as a size.
  auto maxItems = [&](SizeExprAttr requests, SizeExprAttr chunks) {
    return SizeExprAttr::max(
        {SizeExprAttr::mul(requests, chunks),
         SizeExprAttr::max({requests, plan.cst(ws.targetItems)})});
  };
  if (ws.fixedBatch) {
    // Every size of the grids is a constant of the plan.
    SizeExprAttr requests = plan.cst(ws.fixedBatch);
    SizeExprAttr chunks = uniformChunks(requests);
    plan.defineSize("max_batch", requests);
    plan.defineSize("num_partitions", chunks);
    plan.defineSize("max_work", maxItems(requests, chunks));
  } else {
    plan.defineSize("num_partitions", uniformChunks(plan.sym("batch")));
    plan.defineSize("max_work",
                    maxItems(plan.sym("batch"), plan.sym("num_partitions")));
  }
  SizeExprAttr gridBatch = plan.sym(ws.fixedBatch ? "max_batch" : "batch");
  MLIRContext *ctx = gridBatch.getContext();
  Type i32 = IntegerType::get(ctx, 32);
  plan.addBuffer("kv_lengths", ArgRole::host,
                 MemRefType::get({ShapedType::kDynamic}, i32),
                 {plan.sym("batch")});
  plan.addBuffer("work_items", ArgRole::schedule, workItemsType(ctx),
                 {plan.sym("max_work"), plan.cst(4)});
  plan.addBuffer("merge_indptr", ArgRole::schedule,
                 MemRefType::get({ShapedType::kDynamic}, i32),
                 {SizeExprAttr::add(gridBatch, plan.cst(1))});
  plan.setSchedule(kvgpu::WorkScheduleAttr::get(
      ctx, "kv_lengths", "work_items", "merge_indptr", "num_work", "batch",
      "num_partitions", ws.targetItems, ws.granule, ws.minChunk,
      ws.windowLeft, ws.fixedBatch ? "max_batch" : "", /*qo_indptr=*/"",
      /*tiles=*/"", /*workspace_rows=*/"", /*tile_rows=*/0, /*causal=*/false,
      /*workspace_limit=*/""));
  return gridBatch;
}

SmallVector<std::string>
gpu_lowering::addVariantArguments(PlanBuilder &plan, Operation *op,
                                  llvm::StringMap<Value> &bindings) {
  auto variants = cast<kv::AttentionVariantOpInterface>(op);
  SmallVector<std::string> names;
  if (!variants.hasVariants())
    return names;
  int64_t captures = 0;
  for (Value v : codegen::getVariantOperands(op)) {
    std::string name;
    if (v == variants.getSinks())
      name = "sinks";
    else if (v == variants.getAlibiSlopes())
      name = "alibi_slopes";
    else
      name = "capture" + std::to_string(captures++);
    if (auto type = dyn_cast<MemRefType>(v.getType()))
      plan.addBuffer(name, kvgpu::ArgRole::input, type);
    else
      plan.addScalar(name, v.getType());
    bindings[name] = v;
    names.push_back(name);
  }
  return names;
}

void gpu_lowering::addTopkArgument(PlanBuilder &plan, Value topk,
                                   StringRef rows,
                                   llvm::StringMap<Value> &bindings) {
  plan.addBuffer("topk", kvgpu::ArgRole::input,
                 cast<MemRefType>(topk.getType()), {plan.sym(rows)},
                 {"", "topk_len"});
  bindings["topk"] = topk;
}

Value gpu_lowering::emitScheduleLengths(ImplicitLocOpBuilder &b, Value queries,
                                        const kv::PagedOperands &kv,
                                        Value topk) {
  return kv::emitLengthsBuffer(b, memref::DimOp::create(b, queries, 0),
                               [&](ImplicitLocOpBuilder &ib, Value r) -> Value {
                                 if (topk)
                                   return memref::DimOp::create(ib, topk, 1);
                                 return kv::emitKvLen(ib, kv, r);
                               });
}
