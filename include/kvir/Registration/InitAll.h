//===- InitAll.h - Register kvir's dialects and passes ----------*- C++ -*-===//
#ifndef KVIR_REGISTRATION_INITALL_H
#define KVIR_REGISTRATION_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace kvir {

/// Adds the kv dialect and every dialect kvir's pipelines produce.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers kvir's passes and pipelines with the global pass registry.
void registerAllPasses();

} // namespace kvir

#endif // KVIR_REGISTRATION_INITALL_H
