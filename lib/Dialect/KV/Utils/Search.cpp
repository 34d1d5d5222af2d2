//===- Search.cpp - Binary search over a non-decreasing sequence ----------===//
#include "kvir/Dialect/KV/Utils/Search.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

Value kvir::kv::emitLastAtOrBelow(
    ImplicitLocOpBuilder &b, Value count,
    function_ref<Value(ImplicitLocOpBuilder &, Value)> keyAt, Value target) {
  auto idx = [](ImplicitLocOpBuilder &ib, int64_t v) {
    return arith::ConstantIndexOp::create(ib, v).getResult();
  };
  // lo holds an answer (keyAt(0) <= target), hi does not.
  auto search = scf::WhileOp::create(
      b, TypeRange{b.getIndexType(), b.getIndexType()},
      ValueRange{idx(b, 0), count},
      [&](OpBuilder &nb, Location loc, ValueRange range) {
        ImplicitLocOpBuilder ib(loc, nb);
        Value more = arith::CmpIOp::create(
            ib, arith::CmpIPredicate::slt,
            arith::AddIOp::create(ib, range[0], idx(ib, 1)), range[1]);
        scf::ConditionOp::create(ib, more, range);
      },
      [&](OpBuilder &nb, Location loc, ValueRange range) {
        ImplicitLocOpBuilder ib(loc, nb);
        Value lo = range[0], hi = range[1];
        Value mid = arith::DivUIOp::create(
            ib, arith::AddIOp::create(ib, lo, hi), idx(ib, 2));
        Value below = arith::CmpIOp::create(ib, arith::CmpIPredicate::sle,
                                            keyAt(ib, mid), target);
        scf::YieldOp::create(
            ib, ValueRange{arith::SelectOp::create(ib, below, mid, lo),
                           arith::SelectOp::create(ib, below, hi, mid)});
      });
  return search.getResult(0);
}
