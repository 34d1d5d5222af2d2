//===- KVTypes.h - kv dialect types and attributes --------------*- C++ -*-===//
#ifndef KVIR_DIALECT_KV_IR_KVTYPES_H
#define KVIR_DIALECT_KV_IR_KVTYPES_H

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Types.h"

#include "kvir/Dialect/KV/IR/KVEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "kvir/Dialect/KV/IR/KVAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "kvir/Dialect/KV/IR/KVTypes.h.inc"

#endif // KVIR_DIALECT_KV_IR_KVTYPES_H
