//===- KVOps.h - kv dialect operations --------------------------*- C++ -*-===//
#ifndef KVIR_DIALECT_KV_IR_KVOPS_H
#define KVIR_DIALECT_KV_IR_KVOPS_H

#include "kvir/Dialect/KV/IR/KVDialect.h"
#include "kvir/Dialect/KV/IR/KVTypes.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kvir::kv {
/// Checks an attention op's variants: sinks and ALiBi slopes are f32, one
/// per query head; not both ALiBi forms; the regions' arguments and
/// results; no writes in them; captured values the kernels can take.
mlir::LogicalResult verifyAttentionVariants(mlir::Operation *op);
} // namespace kvir::kv

#include "kvir/Dialect/KV/IR/KVInterfaces.h.inc"

#define GET_OP_CLASSES
#include "kvir/Dialect/KV/IR/KVOps.h.inc"

#endif // KVIR_DIALECT_KV_IR_KVOPS_H
