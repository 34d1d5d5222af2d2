//===- HostLowering.cpp - Host code that launches emulated kernels --------===//
#include "kvir/Emulator/HostLowering.h"
#include "kvir/Emulator/Emulator.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

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
  // gpu-to-llvm lowers only the async forms of gpu.alloc, gpu.memcpy,
  // gpu.memset and gpu.dealloc; this makes synchronous ones async (with a
  // gpu.wait), as a CUDA program's implicit default stream would.
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
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
