//===- MmaAtom.cpp - What every MMA atom shares ---------------------------===//
#include "kvir/Codegen/MmaAtom.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace kvir::codegen;

Value MmaAtom::zeroAcc(ImplicitLocOpBuilder &b) const {
  return arith::ConstantOp::create(
      b, getAccType(), DenseElementsAttr::get(getAccType(), 0.0f));
}
