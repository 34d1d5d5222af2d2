//===- HostCalls.cpp - Host code calling kvir's runtime library -----------===//
#include "kvir/Dialect/KV/Utils/HostCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

Value kvir::kv::emitDataPointer(ImplicitLocOpBuilder &b, Value memref) {
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, memref);
  Value asInt = arith::IndexCastOp::create(b, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(b, LLVM::LLVMPointerType::get(b.getContext()),
                                  asInt);
}

Value kvir::kv::emitHostCall(ImplicitLocOpBuilder &b, StringRef name,
                             ValueRange args, bool returnsI64) {
  return emitHostCall(b, name, args, returnsI64 ? b.getI64Type() : Type());
}

Value kvir::kv::emitHostCall(ImplicitLocOpBuilder &b, StringRef name,
                             ValueRange args, Type result) {
  auto module =
      b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  SmallVector<Type> results;
  if (result)
    results.push_back(result);
  if (!module.lookupSymbol(name)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    func::FuncOp::create(
        b, name, FunctionType::get(b.getContext(), args.getTypes(), results))
        .setPrivate();
  }
  auto call = func::CallOp::create(b, name, results, args);
  return result ? call.getResult(0) : Value();
}
