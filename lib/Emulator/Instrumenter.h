//===- Instrumenter.h - The instrumentation pass's state ------*- C++ -*-===//
//
// Private to lib/Emulator: Instrument.cpp rewrites the ops every kernel uses,
// InstrumentSm90.cpp those of sm_90 (warpgroup MMA, mbarriers, proxy fences).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_EMULATOR_INSTRUMENTER_H
#define KVIR_LIB_EMULATOR_INSTRUMENTER_H

#include "InlinePtx.h"
#include "kvir/Emulator/Instrument.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"

#include <optional>

namespace kvir::emu {

using namespace mlir;

struct TemplateScope;

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
  /// llvm.inline_asm (InstrumentInlinePtx.cpp): the wgmma statements of
  /// inline PTX — mma_async in both forms, fence, commit and wait — and
  /// empty templates that only pin registers; any other text is refused.
  LogicalResult rewriteInlineAsm(LLVM::InlineAsmOp op);
  /// wgmma.mma_async in an inline-PTX template, SS or RS form.
  LogicalResult rewriteInlineMma(TemplateScope &scope, const PtxStatement &s);
  struct WgmmaSite;
  /// The call of one wgmma, shared by both forms: `acc` are the
  /// accumulator values in register order, `aRegs` the RS form's four A
  /// registers (empty: `descA` is A's descriptor). Fills `record`'s call,
  /// ticket and spills; returns D's registers as i32 bits.
  SmallVector<Value> emitWgmmaCall(Operation *op, ValueRange acc,
                                   ValueRange aRegs, Value descA, Value descB,
                                   uint32_t shape, uint32_t types, Value flags,
                                   WgmmaSite &record);
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
  /// max(x, y) of two unsigned values, either of which may be null.
  Value unsignedMax(Location loc, Value x, Value y);
  /// The register clock at the last write of `v`'s registers by a thread
  /// (i64): after its definition, at the start of its block for a block
  /// argument, 0 for poison or a wgmma's result; extractvalue and
  /// insertvalue move no register and pass their operands' clocks on.
  Value definitionClock(Value v);
  /// Gives a wgmma's call the ticket and clocks of its accumulators and A
  /// registers.
  void patchWgmmaCall(WgmmaSite &s, llvm::function_ref<Value(Value)> ticketFor);
  /// The RS form: every read of an A register other than a wgmma's checks
  /// that no wgmma reading that register is in flight.
  void checkARegisterReads(const llvm::SmallPtrSetImpl<Operation *> &spills);
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
  /// Per rewritten wgmma: its runtime call; the accumulators it reads (the
  /// struct of an nvvm op, or one value per register of inline PTX) and,
  /// in the RS form, its A registers; the ops that spill them into the
  /// call's arrays (not reads to check); its result struct and ticket.
  struct WgmmaSite {
    LLVM::CallOp call;
    SmallVector<Value> accumulators, aRegisters;
    SmallVector<Operation *> spills;
    Value results, ticket;
  };
  SmallVector<WgmmaSite> wgmmaSites;
  DenseMap<Value, Value> clockOf;
};

} // namespace kvir::emu

#endif // KVIR_LIB_EMULATOR_INSTRUMENTER_H
