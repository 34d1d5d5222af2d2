//===- Instrumenter.h - The instrumentation pass's state ------*- C++ -*-===//
//
// Private to lib/Emulator: Instrument.cpp rewrites the ops every kernel uses,
// InstrumentSm90.cpp those of sm_90 (warpgroup MMA, mbarriers, proxy fences).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_EMULATOR_INSTRUMENTER_H
#define KVIR_LIB_EMULATOR_INSTRUMENTER_H

#include "kvir/Emulator/Instrument.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"

#include <optional>

namespace kvir::emu {

using namespace mlir;

class Instrumenter {
public:
  explicit Instrumenter(ModuleOp module)
      : module(module), builder(module.getContext()),
        layout(DataLayout::closest(module)) {}

  FailureOr<InstrumentedModule> run();

private:
  LLVM::LLVMFuncOp hook(StringRef name, ArrayRef<Type> params, Type result);
  Value call(Location loc, StringRef name, Type result, ValueRange args);
  Value i32(Location loc, int64_t v);
  Value i64(Location loc, int64_t v);
  Value toGeneric(Location loc, Value ptr);
  Value toI32Bits(Location loc, Value v);
  Value fromI32Bits(Location loc, Value bits, Type type);
  /// An i32 array of `slots` at the entry of the enclosing function.
  Value entryAlloca(Operation *at, unsigned slots);
  /// The kernel pointer argument `ptr` is derived from and its index, as
  /// call operands (a generic pointer and an i32), or (null, -1).
  std::pair<Value, Value> provenance(Location loc, Value ptr);
  uint32_t site(Operation *op);

  LogicalResult layoutSharedMemory();
  LogicalResult instrumentDivision(Operation *op, bool isSigned);
  LogicalResult rewriteNvvm(Operation *op);
  /// sm_90 ops (InstrumentSm90.cpp): wgmma and its fences and groups,
  /// mbarriers, proxy fences, setmaxnreg, elect.sync, bar.arrive. Returns
  /// std::nullopt for an op that is not one of them.
  std::optional<LogicalResult> rewriteSm90(Operation *op);
  LogicalResult rewriteWgmma(NVVM::WgmmaMmaAsyncOp op);
  LogicalResult rewriteMBarrier(Operation *op);
  /// cp.async.bulk[.tensor] and their groups and prefetches, or nullopt.
  std::optional<LogicalResult> rewriteBulkCopy(Operation *op);
  /// Replaces `op` by a call of `hookName` with `args` and its site.
  LogicalResult replaceWithHook(Operation *op, StringRef hookName,
                                SmallVector<Value> args);
  /// `values` (i32) in a thread-local array of 5, for a tensor copy.
  Value coordinateArray(Operation *at, ValueRange values);
  /// A PTX predicate operand as the i32 `enabled` of a hook (1 if none).
  Value predicateFlag(Location loc, Value predicate);
  /// After every wgmma of the module is rewritten: the tickets of their
  /// results follow them through block arguments, the chained wgmmas get
  /// theirs, and every other read of a result is checked (wgmma.wait_group
  /// must have retired it).
  LogicalResult trackWgmmaTickets();
  LogicalResult rewriteIntrinsic(LLVM::CallIntrinsicOp op);
  LogicalResult rewriteNvvmIntrinsics();
  /// Inserts an access check of `bytes` (i64) at `ptr` before `op`;
  /// `align` is the alignment the access assumes.
  void instrumentAccess(Operation *op, Value ptr, Value bytes, uint32_t flags,
                        uint64_t align);
  void instrumentAccess(Operation *op, Value ptr, Type valueType,
                        uint32_t flags, std::optional<uint64_t> align);
  void instrumentMasked(Operation *op, Value ptr, Value mask,
                        VectorType vectorType, uint32_t flags);

  ModuleOp module;
  OpBuilder builder;
  DataLayout layout;
  InstrumentedModule result;
  /// Per rewritten wgmma: its runtime call, the accumulator struct it was
  /// given and the ops that spill it (not reads to check), and its result.
  struct WgmmaSite {
    LLVM::CallOp call;
    SmallVector<Operation *> spills;
    Value results, ticket;
  };
  SmallVector<WgmmaSite> wgmmaSites;
};

} // namespace kvir::emu

#endif // KVIR_LIB_EMULATOR_INSTRUMENTER_H
