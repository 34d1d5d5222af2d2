//===- CascadePositions.cpp - kv.cascade_positions to a kernel ------------===//
//
// One thread per query row: for each given level, a binary search of the
// level's qo_indptr finds the row's request, whose kv_len its table gives
// (kv::emitCascadeRowPosition, shared with the CPU loops). The kernel
// reads only the levels' tables, never their pools.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"

#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/LaunchEmitter.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"
#include "kvir/Dialect/KV/Utils/Visibility.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;

namespace {

constexpr int64_t kPositionThreads = 128;

/// A level's tables only: what kv_len needs.
kv::PagedOperands tablesOnly(const kv::PagedOperands &level) {
  kv::PagedOperands tables;
  tables.type = level.type;
  tables.tables = level.tables;
  return tables;
}

struct CascadePositionsLowering : OpRewritePattern<kv::CascadePositionsOp> {
  CascadePositionsLowering(MLIRContext *ctx, LoweringContext &context)
      : OpRewritePattern(ctx), context(context) {}

  LogicalResult matchAndRewrite(kv::CascadePositionsOp op,
                                PatternRewriter &rewriter) const override {
    if (std::optional<std::string> why = whyNoCascadePositionsKernel(op))
      return rewriter.notifyMatchFailure(op, *why);
    SmallVector<kv::PagedOperands> levels;
    for (Value kv : op.getKvs())
      levels.push_back(tablesOnly(
          kv::PagedOperands::fromView(kv.getDefiningOp<kv::PagedViewOp>())));
    auto positionsType = cast<MemRefType>(op.getPositions().getType());

    // Arguments: each level's qo_indptr and tables, then the positions.
    SmallVector<Type> argTypes;
    SmallVector<Value> values;
    SmallVector<std::string> names;
    for (auto [l, indptr, level] : llvm::enumerate(op.getQoIndptrs(), levels)) {
      std::string suffix = "_l" + std::to_string(l);
      argTypes.push_back(indptr.getType());
      values.push_back(indptr);
      names.push_back("qo_indptr" + suffix);
      for (auto [name, table] :
           llvm::zip(kv::getTableNames(level.type.getTable()), level.tables)) {
        argTypes.push_back(table.getType());
        values.push_back(table);
        names.push_back(name.str() + suffix);
      }
    }
    argTypes.push_back(positionsType);
    values.push_back(op.getPositions());
    names.push_back("positions");

    std::string stem = "cascade_positions_" + std::to_string(levels.size());
    for (const kv::PagedOperands &level : levels)
      stem += "_" + kv::stringifyTableForm(level.type.getTable()).str();
    KernelIdentity id(stem);
    id.add(op.getOperation()).add(context.getTarget().chip);
    std::string name = id.getSymbol();
    gpu::GPUFuncOp kernel =
        context.getOrBuildKernel(name, [&](gpu::GPUModuleOp module) {
          KernelFunc kf = KernelFunc::create(module, name, argTypes,
                                             {kPositionThreads, 1, 1},
                                             SharedMemoryLayout(), op.getLoc());
          buildBody(kf, levels);
          return kf;
        });

    PlanBuilder plan(op.getContext(), "kv.cascade_positions", name);
    using kvgpu::ArgRole;
    using kvgpu::SizeExprAttr;
    SmallVector<StringRef> args;
    for (auto [argName, value] : llvm::zip(names, values)) {
      bool isPositions = argName == "positions";
      plan.addBuffer(argName, isPositions ? ArgRole::output : ArgRole::input,
                     cast<MemRefType>(value.getType()), {},
                     isPositions ? SmallVector<StringRef>{"nnz"}
                                 : SmallVector<StringRef>{});
      args.push_back(argName);
    }
    plan.addKernel(
        "positions", kernel, kvgpu::LaunchCondition::always,
        {SizeExprAttr::ceilDiv(plan.sym("nnz"), plan.cst(kPositionThreads)),
         plan.cst(1), plan.cst(1)},
        args);
    llvm::StringMap<Value> bindings;
    for (auto [argName, value] : llvm::zip(names, values))
      bindings[argName] = value;
    rewriter.setInsertionPoint(op);
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    if (failed(context.launch(b, plan, bindings, op.getLoc())))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }

  /// Thread `row` writes the row's position.
  static void buildBody(const KernelFunc &kf,
                        ArrayRef<kv::PagedOperands> shapes) {
    ImplicitLocOpBuilder b = kf.getBuilder();
    IRBuilder ir{b};
    SmallVector<Value> indptrs;
    SmallVector<kv::PagedOperands> levels;
    unsigned next = 0;
    for (const kv::PagedOperands &shape : shapes) {
      indptrs.push_back(kf.getArgument(next++));
      kv::PagedOperands level = shape;
      for (Value &table : level.tables)
        table = kf.getArgument(next++);
      levels.push_back(level);
    }
    Value positions = kf.getArgument(next);
    Value row = ir.add(ir.mul(gpu::BlockIdOp::create(b, gpu::Dimension::x),
                              ir.idx(kPositionThreads)),
                       gpu::ThreadIdOp::create(b, gpu::Dimension::x));
    Value rows = memref::DimOp::create(b, positions, 0);
    scf::IfOp::create(b, ir.lt(row, rows), [&](OpBuilder &nb, Location l) {
      ImplicitLocOpBuilder ib(l, nb);
      Value position = kv::emitCascadeRowPosition(ib, row, indptrs, levels);
      memref::StoreOp::create(
          ib, arith::IndexCastOp::create(ib, ib.getI32Type(), position),
          positions, ValueRange{row});
      scf::YieldOp::create(ib);
    });
  }

  LoweringContext &context;
};

} // namespace

std::optional<std::string>
gpu_lowering::whyNoCascadePositionsKernel(kv::CascadePositionsOp op) {
  for (Value kv : op.getKvs())
    if (!kv.getDefiningOp<kv::PagedViewOp>())
      return std::string(
          "a level's KV is not a kv.paged_view of the same function");
  return std::nullopt;
}

void gpu_lowering::populateCascadePositionsPatterns(RewritePatternSet &patterns,
                                                    LoweringContext &context) {
  patterns.add<CascadePositionsLowering>(patterns.getContext(), context);
}
