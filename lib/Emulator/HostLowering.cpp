//===- HostLowering.cpp - Host code that launches emulated kernels --------===//
#include "kvir/Emulator/HostLowering.h"
#include "kvir/Emulator/Emulator.h"
#include "kvir/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;
using namespace kvir;

/// Host globals (memref.global constants such as page tables) are memory
/// kernels may read: a global constructor registers each with the emulator.
static void registerHostGlobals(ModuleOp module) {
  SmallVector<LLVM::GlobalOp> globals;
  for (auto global : module.getOps<LLVM::GlobalOp>())
    if (global.getAddrSpace() == 0 &&
        (global.getValueOrNull() || !global.getInitializerRegion().empty()))
      globals.push_back(global);
  if (globals.empty())
    return;
  MLIRContext *context = module.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = module.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(context);
  auto voidType = LLVM::LLVMVoidType::get(context);
  auto hook = LLVM::LLVMFuncOp::create(
      b, loc, "kvemu_register_global",
      LLVM::LLVMFunctionType::get(voidType, {ptr, b.getI64Type()}));
  auto ctor =
      LLVM::LLVMFuncOp::create(b, loc, "__kvemu_register_host_globals",
                               LLVM::LLVMFunctionType::get(voidType, {}));
  Block *body = ctor.addEntryBlock(b);
  b.setInsertionPointToStart(body);
  DataLayout layout = DataLayout::closest(module);
  for (LLVM::GlobalOp global : globals) {
    Value addr = LLVM::AddressOfOp::create(b, loc, global);
    Value size = LLVM::ConstantOp::create(
        b, loc, b.getI64Type(),
        b.getI64IntegerAttr(layout.getTypeSize(global.getGlobalType())));
    LLVM::CallOp::create(b, loc, hook, ValueRange{addr, size});
  }
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  b.setInsertionPointToEnd(module.getBody());
  LLVM::GlobalCtorsOp::create(b, loc,
                              b.getArrayAttr({FlatSymbolRefAttr::get(ctor)}),
                              b.getArrayAttr({b.getI32IntegerAttr(0)}),
                              b.getArrayAttr({LLVM::ZeroAttr::get(context)}));
}

LogicalResult kvir::emu::lowerHostForEmulator(ModuleOp module) {
  MLIRContext *context = module.getContext();
  {
    PassManager pm(context);
    pm.addPass(createGpuKernelOutliningPass());
    if (failed(pm.run(module)))
      return failure();
  }
  if (!module.getOps<gpu::GPUModuleOp>().empty()) {
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(context));
    if (failed(Emulator::get().prepareModule(module)))
      return failure();
  }
  PassManager pm(context);
  buildHostToLLVMPipeline(pm, HostLoweringOptions{/*gpuRuntime=*/true});
  if (failed(pm.run(module)))
    return failure();
  // Host allocations go through the emulator so kernels may access them.
  static const std::pair<StringRef, StringRef> renames[] = {
      {"malloc", "kvemu_malloc"},
      {"aligned_alloc", "kvemu_aligned_alloc"},
      {"calloc", "kvemu_calloc"},
      {"free", "kvemu_free"}};
  for (auto [from, to] : renames)
    if (auto fn = module.lookupSymbol<LLVM::LLVMFuncOp>(from)) {
      if (failed(SymbolTable::replaceAllSymbolUses(
              fn, StringAttr::get(context, to), module)))
        return failure();
      fn.setSymName(to);
    }
  registerHostGlobals(module);
  return success();
}
