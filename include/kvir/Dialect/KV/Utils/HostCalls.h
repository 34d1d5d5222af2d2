//===- HostCalls.h - Host code calling kvir's runtime library ---*- C++ -*-===//
//
// Host code the lowerings emit calls C functions of libKVIRRuntime (the
// work schedule, the table checks) with pointers to buffers and int64
// sizes: one way to declare those functions and to pass a buffer.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_DIALECT_KV_UTILS_HOSTCALLS_H
#define KVIR_DIALECT_KV_UTILS_HOSTCALLS_H

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace kvir::kv {

/// The aligned data pointer of `memref` (identity layout: its first
/// element) as an !llvm.ptr.
mlir::Value emitDataPointer(mlir::ImplicitLocOpBuilder &b, mlir::Value memref);

/// Calls the C function `name` of the enclosing module with `args`,
/// declaring it (private, from the arguments' types) if the module does not
/// have it yet; returns its i64 result, or null when `returnsI64` is false.
mlir::Value emitHostCall(mlir::ImplicitLocOpBuilder &b, llvm::StringRef name,
                         mlir::ValueRange args, bool returnsI64 = true);
/// The same for a function returning `result` (a C int: i32).
mlir::Value emitHostCall(mlir::ImplicitLocOpBuilder &b, llvm::StringRef name,
                         mlir::ValueRange args, mlir::Type result);

} // namespace kvir::kv

#endif // KVIR_DIALECT_KV_UTILS_HOSTCALLS_H
