//===- BareKernelABI.cpp - Kernels with pointer and extent parameters -----===//
//
// Rewrites kernels and their launches to kvir's kernel ABI (KernelABI.h).
// The kernel body keeps its memref view of each argument: it is rebuilt at
// the entry from the bare pointer and the trailing extents, so that no code
// generator deals with the ABI.
//
//===----------------------------------------------------------------------===//
#include "kvir/Dialect/KVGPU/IR/KernelABI.h"
#include "kvir/Dialect/KVGPU/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

namespace kvir::kvgpu {
#define GEN_PASS_DEF_KVGPUBAREKERNELABI
#include "kvir/Dialect/KVGPU/Transforms/Passes.h.inc"
} // namespace kvir::kvgpu

using namespace mlir;
using namespace kvir::kvgpu;

/// Whether `type` is already passed as kvir's ABI passes it: not a memref,
/// or a rank-0 memref with the identity layout (a bare pointer).
static bool isBare(Type type) {
  if (isa<UnrankedMemRefType>(type))
    return false;
  auto memref = dyn_cast<MemRefType>(type);
  return !memref || (memref.getRank() == 0 && memref.getLayout().isIdentity());
}

/// Rewrites `func`'s signature (one with an argument not yet bare);
/// returns its original argument types.
static FailureOr<SmallVector<Type>> rewriteKernel(gpu::GPUFuncOp func) {
  SmallVector<Type> original(func.getArgumentTypes());
  for (auto [i, type] : llvm::enumerate(original)) {
    if (isa<UnrankedMemRefType>(type))
      return func.emitError() << "kernel argument #" << i << " (" << type
                              << ") is an unranked memref: a kernel takes "
                                 "ranked memrefs (a pointer and its extents)";
    auto memref = dyn_cast<MemRefType>(type);
    if (memref && !isBareKernelArgType(memref))
      return func.emitError() << "kernel argument #" << i << " (" << type
                              << ") has no strided layout: a kernel takes "
                                 "memrefs a pointer and strides describe";
  }
  SmallVector<KernelExtent> extents = getKernelExtents(original);
  unsigned numArgs = original.size();
  MLIRContext *ctx = func.getContext();
  SmallVector<unsigned> positions(extents.size(), numArgs);
  SmallVector<Type> indexTypes(extents.size(), IndexType::get(ctx));
  SmallVector<DictionaryAttr> attrs(extents.size(), DictionaryAttr::get(ctx));
  SmallVector<Location> locs(extents.size(), func.getLoc());
  if (failed(func.insertArguments(positions, indexTypes, attrs, locs)))
    return func.emitError("cannot add the kernel's extent arguments");

  Block &entry = func.getBody().front();
  OpBuilder b(ctx);
  b.setInsertionPointToStart(&entry);
  SmallVector<Type> newTypes(func.getArgumentTypes());
  for (unsigned i = 0; i < numArgs; ++i) {
    auto memref = dyn_cast<MemRefType>(original[i]);
    if (!memref || isBare(memref))
      continue;
    BlockArgument arg = entry.getArgument(i);
    MemRefType bare = getBarePointerType(memref);
    arg.setType(bare);
    newTypes[i] = bare;
    SmallVector<int64_t> staticStrides;
    int64_t staticOffset;
    (void)memref.getStridesAndOffset(staticStrides, staticOffset);
    SmallVector<OpFoldResult> sizes, strides;
    for (int64_t s : memref.getShape())
      sizes.push_back(b.getIndexAttr(s));
    for (int64_t s : staticStrides)
      strides.push_back(b.getIndexAttr(s));
    OpFoldResult offset = b.getIndexAttr(staticOffset);
    for (auto [k, extent] : llvm::enumerate(extents)) {
      if (extent.arg != i)
        continue;
      Value v = entry.getArgument(numArgs + k);
      if (extent.kind == KernelExtent::Kind::size)
        sizes[extent.axis] = v;
      else if (extent.kind == KernelExtent::Kind::stride)
        strides[extent.axis] = v;
      else
        offset = v;
    }
    auto view = memref::ReinterpretCastOp::create(b, func.getLoc(), memref,
                                                  arg, offset, sizes, strides);
    arg.replaceAllUsesExcept(view, view);
  }
  func.setType(FunctionType::get(ctx, newTypes, {}));
  return original;
}

/// Rewrites a launch of a kernel whose arguments were `original`.
static void rewriteLaunch(gpu::LaunchFuncOp launch, ArrayRef<Type> original) {
  SmallVector<KernelExtent> extents = getKernelExtents(original);
  OpBuilder b(launch);
  Location loc = launch.getLoc();
  SmallVector<Value> operands(launch.getKernelOperands());
  SmallVector<Value> trailing;
  SmallVector<memref::ExtractStridedMetadataOp> metadata(operands.size());
  for (auto [i, v] : llvm::enumerate(operands)) {
    auto memref = dyn_cast<MemRefType>(v.getType());
    if (!memref || isBare(memref))
      continue;
    metadata[i] = memref::ExtractStridedMetadataOp::create(b, loc, v);
    operands[i] = memref::ReinterpretCastOp::create(
        b, loc, getBarePointerType(memref), v, b.getIndexAttr(0),
        ArrayRef<OpFoldResult>{}, ArrayRef<OpFoldResult>{});
  }
  for (const KernelExtent &extent : extents) {
    memref::ExtractStridedMetadataOp m = metadata[extent.arg];
    switch (extent.kind) {
    case KernelExtent::Kind::size:
      trailing.push_back(m.getSizes()[extent.axis]);
      break;
    case KernelExtent::Kind::stride:
      trailing.push_back(m.getStrides()[extent.axis]);
      break;
    case KernelExtent::Kind::offset:
      trailing.push_back(m.getOffset());
      break;
    }
  }
  operands.append(trailing);
  launch.getKernelOperandsMutable().assign(operands);
}

namespace {
struct KVGPUBareKernelABIPass
    : kvir::kvgpu::impl::KVGPUBareKernelABIBase<KVGPUBareKernelABIPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::DenseMap<Operation *, SmallVector<Type>> rewritten;
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>())
      for (auto func : gpuModule.getOps<gpu::GPUFuncOp>()) {
        if (!func.isKernel() || llvm::all_of(func.getArgumentTypes(), isBare))
          continue;
        FailureOr<SmallVector<Type>> original = rewriteKernel(func);
        if (failed(original))
          return signalPassFailure();
        rewritten[func] = std::move(*original);
      }
    if (rewritten.empty())
      return;
    SymbolTableCollection symbols;
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto it = rewritten.find(
          symbols.lookupNearestSymbolFrom(launch, launch.getKernel()));
      if (it != rewritten.end())
        rewriteLaunch(launch, it->second);
    });
  }
};
} // namespace
