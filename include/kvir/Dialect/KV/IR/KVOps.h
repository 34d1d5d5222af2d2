//===- KVOps.h - kv dialect operations --------------------------*- C++ -*-===//
#ifndef KVIR_DIALECT_KV_IR_KVOPS_H
#define KVIR_DIALECT_KV_IR_KVOPS_H

#include "kvir/Dialect/KV/IR/KVDialect.h"
#include "kvir/Dialect/KV/IR/KVTypes.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "kvir/Dialect/KV/IR/KVOps.h.inc"

#endif // KVIR_DIALECT_KV_IR_KVOPS_H
