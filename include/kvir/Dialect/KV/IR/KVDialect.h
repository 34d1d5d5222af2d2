//===- KVDialect.h - The kv dialect -----------------------------*- C++ -*-===//
#ifndef KVIR_DIALECT_KV_IR_KVDIALECT_H
#define KVIR_DIALECT_KV_IR_KVDIALECT_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Dialect.h"

#include "kvir/Dialect/KV/IR/KVDialect.h.inc"

#endif // KVIR_DIALECT_KV_IR_KVDIALECT_H
