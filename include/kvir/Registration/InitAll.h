//===- InitAll.h - Register kvir's dialects and passes ----------*- C++ -*-===//
#ifndef KVIR_REGISTRATION_INITALL_H
#define KVIR_REGISTRATION_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace kvir {

/// Adds the kv and kvgpu dialects, every dialect kvir's pipelines produce,
/// and registerAllExtensions: a context built from this registry runs every
/// pipeline of kvir/Pipelines/Pipelines.h.
void registerAllDialects(mlir::DialectRegistry &registry);

/// The dialect interfaces kvir's pipelines rely on: conversion to LLVM for
/// each dialect in kernels and host code, the NVVM target (PTX) and the
/// translations to LLVM IR it runs.
void registerAllExtensions(mlir::DialectRegistry &registry);

/// Every upstream dialect, extension and LLVM IR translation, then kvir's
/// dialects: what a tool needs that parses any input and runs it (kvir-opt,
/// kvir-runner, the C API, the test harnesses).
void registerEverything(mlir::DialectRegistry &registry);

/// Registers kvir's passes and pipelines with the global pass registry.
void registerAllPasses();

} // namespace kvir

#endif // KVIR_REGISTRATION_INITALL_H
