//===- KVGPUDialect.h - GPU configurations of kv ops ------------*- C++ -*-===//
#ifndef KVIR_DIALECT_KVGPU_IR_KVGPUDIALECT_H
#define KVIR_DIALECT_KVGPU_IR_KVGPUDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringMap.h"

#include <optional>

#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h.inc"
#include "kvir/Dialect/KVGPU/IR/KVGPUEnums.h.inc"

namespace kvir::kvgpu {
class SizeExprAttr;
} // namespace kvir::kvgpu

#define GET_ATTRDEF_CLASSES
#include "kvir/Dialect/KVGPU/IR/KVGPUAttrs.h.inc"

#endif // KVIR_DIALECT_KVGPU_IR_KVGPUDIALECT_H
