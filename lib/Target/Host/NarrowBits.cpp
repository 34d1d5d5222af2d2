//===- NarrowBits.cpp - Moved f16 / bf16 values as i16 bits ---------------===//
#include "kvir/Target/Host/FloatBits.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace kvir::target::host;

/// `type` with every f16 / bf16 (in vectors, arrays, literal structs)
/// replaced by i16; null for an identified struct holding one.
static Type toBits(Type type) {
  MLIRContext *ctx = type.getContext();
  if (isa<Float16Type, BFloat16Type>(type))
    return IntegerType::get(ctx, 16);
  if (auto vector = dyn_cast<VectorType>(type))
    return isNarrowFloat(vector) ? vector.clone(IntegerType::get(ctx, 16))
                                 : type;
  if (auto array = dyn_cast<LLVM::LLVMArrayType>(type)) {
    Type element = toBits(array.getElementType());
    return element ? LLVM::LLVMArrayType::get(element, array.getNumElements())
                   : Type();
  }
  if (auto structType = dyn_cast<LLVM::LLVMStructType>(type)) {
    SmallVector<Type> body;
    for (Type t : structType.getBody())
      body.push_back(toBits(t));
    if (llvm::is_contained(body, Type()))
      return Type();
    if (ArrayRef<Type>(body) == structType.getBody())
      return type;
    if (structType.isIdentified())
      return Type();
    return LLVM::LLVMStructType::getLiteral(ctx, body, structType.isPacked());
  }
  return type;
}

static bool holdsNarrow(Type type) { return toBits(type) != type; }

/// A bitcast of `v` to `type` (a scalar or vector of the same size), or
/// `v` itself.
static Value castTo(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  return LLVM::BitcastOp::create(b, loc, type, v);
}

/// The integer constant of the same bits as a narrow float constant.
static LogicalResult replaceConstant(LLVM::ConstantOp op) {
  Type bits = toBits(op.getType());
  Attribute value = op.getValue();
  Attribute replaced;
  if (auto f = dyn_cast<FloatAttr>(value))
    replaced = IntegerAttr::get(bits, f.getValue().bitcastToAPInt());
  else if (auto dense = dyn_cast<DenseElementsAttr>(value))
    // Vectors, and arrays of vectors given as one dense attribute.
    replaced = dense.bitcast(IntegerType::get(op.getContext(), 16));
  if (!replaced)
    return op.emitError("llvm-host-independent-float: cannot carry this "
                        "f16/bf16 constant as bits");
  OpBuilder b(op);
  op.replaceAllUsesWith(
      LLVM::ConstantOp::create(b, op.getLoc(), bits, replaced).getResult());
  op.erase();
  return success();
}

/// Fails on a boundary value whose type holds a narrow float inside an
/// aggregate (a bitcast cannot take it).
static LogicalResult checkCastable(Operation *at, Type type) {
  if (!holdsNarrow(type) || isNarrowFloat(type))
    return success();
  return at->emitError("llvm-host-independent-float: ")
         << type << " crosses a function boundary; f16/bf16 inside an "
                    "aggregate argument or result is not supported";
}

/// Fails at the first value whose type holds a narrow float where no bits
/// type can replace it (inside an identified struct).
static LogicalResult checkRetypable(LLVM::LLVMFuncOp fn) {
  WalkResult result = fn.walk([](Operation *op) {
    auto bad = [](Type t) { return !toBits(t); };
    if (llvm::any_of(op->getResultTypes(), bad) ||
        llvm::any_of(op->getOperandTypes(), bad)) {
      op->emitError("llvm-host-independent-float: f16/bf16 inside an "
                    "identified struct is not supported");
      return WalkResult::interrupt();
    }
    for (Region &region : op->getRegions())
      for (Block &block : region)
        if (llvm::any_of(block.getArgumentTypes(), bad)) {
          op->emitError("llvm-host-independent-float: f16/bf16 inside an "
                        "identified struct is not supported");
          return WalkResult::interrupt();
        }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult kvir::target::host::carryNarrowFloatsAsBits(LLVM::LLVMFuncOp fn) {
  if (fn.isExternal() || failed(checkRetypable(fn)))
    return failure(!fn.isExternal());
  OpBuilder b(fn.getContext());
  // Boundaries keep their types: arguments and call results are cast to
  // bits where they appear, call operands and returned values back.
  Block &entry = fn.getBody().front();
  b.setInsertionPointToStart(&entry);
  for (BlockArgument arg : entry.getArguments()) {
    if (!holdsNarrow(arg.getType()))
      continue;
    if (failed(checkCastable(fn, arg.getType())))
      return failure();
    Value bits = castTo(b, arg.getLoc(), arg, toBits(arg.getType()));
    arg.replaceAllUsesExcept(bits, bits.getDefiningOp());
  }
  llvm::SmallPtrSet<Operation *, 16> boundaryCasts;
  SmallVector<Operation *> ops;
  fn.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : ops) {
    if (auto constant = dyn_cast<LLVM::ConstantOp>(op)) {
      if (holdsNarrow(constant.getType()) && failed(replaceConstant(constant)))
        return failure();
      continue;
    }
    if (!isa<LLVM::CallOp, LLVM::ReturnOp>(op))
      continue;
    for (OpOperand &operand : op->getOpOperands()) {
      Type type = operand.get().getType();
      if (!holdsNarrow(type))
        continue;
      if (failed(checkCastable(op, type)))
        return failure();
      b.setInsertionPoint(op);
      // bits -> narrow; the inner cast folds away once the value is bits.
      Value bits = castTo(b, op->getLoc(), operand.get(), toBits(type));
      Value narrow = castTo(b, op->getLoc(), bits, type);
      boundaryCasts.insert(narrow.getDefiningOp());
      operand.set(narrow);
    }
    b.setInsertionPointAfter(op);
    for (Value result : op->getResults()) {
      if (!holdsNarrow(result.getType()))
        continue;
      if (failed(checkCastable(op, result.getType())))
        return failure();
      Value bits = castTo(b, op->getLoc(), result, toBits(result.getType()));
      result.replaceAllUsesExcept(bits, bits.getDefiningOp());
    }
  }
  // Everything else only moves the values: same operation, bits types.
  for (Block &block : llvm::drop_begin(fn.getBody()))
    for (BlockArgument arg : block.getArguments())
      arg.setType(toBits(arg.getType()));
  SmallVector<LLVM::BitcastOp> identities;
  fn.walk([&](Operation *op) {
    if (boundaryCasts.contains(op) || isa<LLVM::CallOp>(op))
      return;
    for (Value result : op->getResults())
      result.setType(toBits(result.getType()));
    if (auto cast = dyn_cast<LLVM::BitcastOp>(op);
        cast && cast.getArg().getType() == cast.getType())
      identities.push_back(cast);
  });
  for (LLVM::BitcastOp cast : identities) {
    cast.replaceAllUsesWith(cast.getArg());
    cast.erase();
  }
  return success();
}
