//===- ValidateTables.cpp - Run-time checks of page tables ----------------===//
//
// Emits calls to the table checks of kvir's runtime library
// (include/kvir/Runtime/TableCheck.h) into host code: after each
// kv.paged_view, the check of its table form; before each kv.prefill, the
// check of its query rows; before each top-k kv.decode / kv.mla_decode, the
// check of its key lists (in range, -1 padding, no key twice). The runtime prints what is wrong; the host code
// stops on a failed check.
//
//===----------------------------------------------------------------------===//
#include "kvir/Dialect/KV/IR/PoolLayout.h"
#include "kvir/Dialect/KV/Transforms/Passes.h"
#include "kvir/Dialect/KV/Utils/HostCalls.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cstdint>

namespace kvir::kv {
#define GEN_PASS_DEF_KVVALIDATETABLES
#include "kvir/Dialect/KV/Transforms/Passes.h.inc"
} // namespace kvir::kv

using namespace mlir;
using namespace kvir;
using namespace kvir::kv;

namespace {

/// Builds the calls of one check: arguments as the runtime takes them.
class CheckEmitter {
public:
  explicit CheckEmitter(ImplicitLocOpBuilder &b)
      : b(b), i64(b.getI64Type()),
        ptr(LLVM::LLVMPointerType::get(b.getContext())) {}

  Value i64Of(Value index) {
    return arith::IndexCastOp::create(b, i64, index);
  }
  Value constant(int64_t v) {
    return arith::ConstantOp::create(b, b.getI64IntegerAttr(v));
  }
  Value dim(Value memref, int64_t axis) {
    return memref::DimOp::create(b, memref, axis);
  }
  Value null() { return LLVM::ZeroOp::create(b, ptr); }

  /// A pointer to `memref`'s elements as the runtime's int32 arrays,
  /// densely packed: a copy when its layout is not the identity, or an i32
  /// copy of an i64 table (OpenPPL's int64 offsets) whose entries saturate
  /// at the int32 range, so that one out of it is still reported out of
  /// bounds (no pool holds 2^31 tokens). Copies are freed by freeCopies().
  Value pointer(Value memref) {
    auto type = cast<MemRefType>(memref.getType());
    if (type.getElementType().isSignlessInteger(64))
      memref = narrowToI32(memref);
    else if (!type.getLayout().isIdentity()) {
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (type.isDynamicDim(d))
          sizes.push_back(dim(memref, d));
      Value dense = memref::AllocOp::create(
          b, MemRefType::get(type.getShape(), type.getElementType()), sizes);
      memref::CopyOp::create(b, memref, dense);
      copies.push_back(dense);
      memref = dense;
    }
    return emitDataPointer(b, memref);
  }

  /// Calls runtime check `name` on `args` (its trailing message arguments
  /// are added: none, so the runtime prints what is wrong) and exits with
  /// status 1 when it fails: bad input, not a crash.
  void call(StringRef name, SmallVector<Value> args) {
    args.append({null(), constant(0)});
    Value result = emitHostCall(b, name, args);
    // Built after the scf.if is in place: emitHostCall finds the module
    // through the insertion block's parents.
    auto failed = scf::IfOp::create(
        b,
        arith::CmpIOp::create(b, arith::CmpIPredicate::ne, result, constant(0)),
        /*withElseRegion=*/false);
    ImplicitLocOpBuilder ib = ImplicitLocOpBuilder::atBlockTerminator(
        b.getLoc(), failed.thenBlock());
    Value one = arith::ConstantOp::create(ib, ib.getI32IntegerAttr(1));
    emitHostCall(ib, "exit", {one}, /*returnsI64=*/false);
  }

  Value narrowToI32(Value wide) {
    auto type = cast<MemRefType>(wide.getType());
    SmallVector<Value> sizes, extents;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      extents.push_back(dim(wide, d));
      if (type.isDynamicDim(d))
        sizes.push_back(extents.back());
    }
    Value narrow = memref::AllocOp::create(
        b, MemRefType::get(type.getShape(), b.getI32Type()), sizes);
    copies.push_back(narrow);
    Value lo = constant(INT32_MIN), hi = constant(INT32_MAX);
    Value zero = arith::ConstantIndexOp::create(b, 0);
    Value one = arith::ConstantIndexOp::create(b, 1);
    SmallVector<Value> lbs(extents.size(), zero), steps(extents.size(), one);
    scf::buildLoopNest(
        b, b.getLoc(), lbs, extents, steps,
        [&](OpBuilder &nb, Location loc, ValueRange ivs) {
          ImplicitLocOpBuilder ib(loc, nb);
          Value v = memref::LoadOp::create(ib, wide, ivs);
          v = arith::MinSIOp::create(ib, arith::MaxSIOp::create(ib, v, lo), hi);
          memref::StoreOp::create(
              ib, arith::TruncIOp::create(ib, ib.getI32Type(), v), narrow,
              ivs);
        });
    return narrow;
  }

  void freeCopies() {
    for (Value c : copies)
      memref::DeallocOp::create(b, c);
    copies.clear();
  }

private:
  ImplicitLocOpBuilder &b;
  Type i64, ptr;
  SmallVector<Value> copies;
};

/// The pool's capacity in tokens, if its index map has a page axis (`page`)
/// or a token axis (`page * page_size + slot`); else -1.
Value poolTokens(CheckEmitter &e, ImplicitLocOpBuilder &b,
                 const PagedOperands &kv) {
  PagedType type = kv.type;
  MLIRContext *ctx = type.getContext();
  AffineExpr page = getAffineDimExpr(0, ctx), slot = getAffineDimExpr(2, ctx);
  AffineExpr token = page * type.getPageSize() + slot;
  Value tokens;
  for (PoolRole role : {PoolRole::K, PoolRole::V}) {
    AffineMap map = getPoolIndexMap(type, role);
    Value pool = kv.pool(role);
    if (!map || !pool || (role == PoolRole::V && pool == kv.pool(PoolRole::K)))
      continue;
    Value capacity;
    for (auto [axis, expr] : llvm::enumerate(map.getResults())) {
      if (expr == page)
        capacity = arith::MulIOp::create(
            b, e.dim(pool, axis),
            arith::ConstantIndexOp::create(b, type.getPageSize()));
      else if (expr == token)
        capacity = e.dim(pool, axis);
    }
    if (!capacity)
      return e.constant(-1); // a map whose pages are not one axis
    tokens = tokens ? arith::MinUIOp::create(b, tokens, capacity).getResult()
                    : capacity;
  }
  return tokens ? e.i64Of(tokens) : e.constant(-1);
}

void checkView(PagedViewOp view) {
  ImplicitLocOpBuilder b(view.getLoc(), view->getBlock(),
                         std::next(Block::iterator(view)));
  CheckEmitter e(b);
  PagedOperands kv = PagedOperands::fromView(view);
  PagedType type = kv.type;
  Value pageSize = e.constant(type.getPageSize());
  Value tokens = poolTokens(e, b, kv);
  ArrayRef<Value> t = kv.tables;
  switch (type.getTable()) {
  case TableForm::csr: {
    Value batch = arith::SubIOp::create(b, e.dim(t[0], 0),
                                        arith::ConstantIndexOp::create(b, 1));
    e.call("kvir_check_csr",
           {e.pointer(t[0]), e.pointer(t[1]), e.i64Of(e.dim(t[1], 0)),
            e.pointer(t[2]), e.i64Of(batch), pageSize, tokens});
    break;
  }
  case TableForm::block_table:
  case TableForm::token_table:
    e.call(type.getTable() == TableForm::block_table ? "kvir_check_block_table"
                                                     : "kvir_check_token_table",
           {e.pointer(t[0]), e.i64Of(e.dim(t[0], 1)), e.pointer(t[1]),
            e.i64Of(e.dim(t[0], 0)), pageSize, tokens});
    break;
  case TableForm::token_offset:
    e.call("kvir_check_token_offset",
           {e.pointer(t[0]), e.pointer(t[1]), e.i64Of(e.dim(t[0], 0)), tokens});
    break;
  }
  e.freeCopies();
}

/// Each request's kv_len of `kvValue` (a paged or ragged view) into a new
/// [batch] i32 buffer, or null when the KV is not a view here.
Value emitKvLengths(ImplicitLocOpBuilder &b, Value kvValue, Value batch) {
  if (auto view = kvValue.getDefiningOp<PagedViewOp>()) {
    PagedOperands kv = PagedOperands::fromView(view);
    return emitLengthsBuffer(b, batch, [&](ImplicitLocOpBuilder &ib, Value r) {
      return emitKvLen(ib, kv, r);
    });
  }
  if (auto ragged = kvValue.getDefiningOp<RaggedViewOp>()) {
    Value indptr = ragged.getKvIndptr();
    return emitLengthsBuffer(b, batch, [&](ImplicitLocOpBuilder &ib, Value r) {
      Value next = arith::AddIOp::create(ib, r,
                                         arith::ConstantIndexOp::create(ib, 1));
      return arith::SubIOp::create(ib, loadIndexValue(ib, indptr, next),
                                   loadIndexValue(ib, indptr, r))
          .getResult();
    });
  }
  return Value();
}

void checkQueryRows(PrefillOp op) {
  ImplicitLocOpBuilder b(op.getLoc(), op);
  CheckEmitter e(b);
  Value indptr = op.getQoIndptr();
  Value batch = arith::SubIOp::create(b, e.dim(indptr, 0),
                                      arith::ConstantIndexOp::create(b, 1));
  // Any qo_len goes with any kv_len: causal rows before the first key see
  // none (docs/Semantics.md).
  e.call("kvir_check_query_rows",
         {e.pointer(indptr), e.i64Of(e.dim(op.getQ(), 0)), e.i64Of(batch)});
  e.freeCopies();
}

/// A sparse selection's lists against the keys of their requests.
void checkTopk(Operation *op, Value topk, Value q, Value kvValue,
               Value qoIndptr) {
  ImplicitLocOpBuilder b(op->getLoc(), op);
  CheckEmitter e(b);
  Value batch =
      qoIndptr ? arith::SubIOp::create(b, e.dim(qoIndptr, 0),
                                       arith::ConstantIndexOp::create(b, 1))
                     .getResult()
               : e.dim(q, 0);
  Value lengths = emitKvLengths(b, kvValue, batch);
  if (!lengths) {
    op->emitWarning("kv-validate-tables: its KV is not a view of this "
                    "function; the top-k lists are not checked");
    return;
  }
  e.call("kvir_check_topk",
         {e.pointer(topk), e.i64Of(e.dim(topk, 0)), e.i64Of(e.dim(topk, 1)),
          qoIndptr ? e.pointer(qoIndptr) : e.null(), e.pointer(lengths),
          e.i64Of(batch)});
  memref::DeallocOp::create(b, lengths);
  e.freeCopies();
}

struct KVValidateTablesPass
    : kvir::kv::impl::KVValidateTablesBase<KVValidateTablesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<PagedViewOp> views;
    SmallVector<PrefillOp> prefills;
    SmallVector<Operation *> selections;
    module.walk([&](Operation *op) {
      if (auto view = dyn_cast<PagedViewOp>(op))
        views.push_back(view);
      else if (auto prefill = dyn_cast<PrefillOp>(op))
        prefills.push_back(prefill);
      else if (auto decode = dyn_cast<DecodeOp>(op); decode && decode.getTopk())
        selections.push_back(op);
      else if (auto mla = dyn_cast<MlaDecodeOp>(op); mla && mla.getTopk())
        selections.push_back(op);
    });
    for (PagedViewOp view : views)
      checkView(view);
    for (PrefillOp prefill : prefills)
      checkQueryRows(prefill);
    for (Operation *op : selections) {
      if (auto decode = dyn_cast<DecodeOp>(op))
        checkTopk(op, decode.getTopk(), decode.getQ(), decode.getKv(), {});
      else if (auto mla = dyn_cast<MlaDecodeOp>(op))
        checkTopk(op, mla.getTopk(), mla.getQNope(), mla.getKv(),
                  mla.getQoIndptr());
    }
  }
};

} // namespace
