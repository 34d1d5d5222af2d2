//===- KernelABI.cpp - The parameters kvir kernels take -------------------===//
#include "kvir/Dialect/KVGPU/IR/KernelABI.h"

using namespace mlir;

bool kvir::kvgpu::isBareKernelArgType(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset));
}

MemRefType kvir::kvgpu::getBarePointerType(MemRefType type) {
  return MemRefType::get({}, type.getElementType(), MemRefLayoutAttrInterface(),
                         type.getMemorySpace());
}

SmallVector<kvir::kvgpu::KernelExtent>
kvir::kvgpu::getKernelExtents(TypeRange argTypes) {
  SmallVector<KernelExtent> extents;
  for (auto [i, t] : llvm::enumerate(argTypes)) {
    auto memref = dyn_cast<MemRefType>(t);
    if (!memref)
      continue;
    unsigned arg = i;
    for (auto [axis, size] : llvm::enumerate(memref.getShape()))
      if (ShapedType::isDynamic(size))
        extents.push_back({KernelExtent::Kind::size, arg, unsigned(axis)});
    SmallVector<int64_t> strides;
    int64_t offset = 0;
    if (failed(memref.getStridesAndOffset(strides, offset)))
      continue;
    for (auto [axis, stride] : llvm::enumerate(strides))
      if (ShapedType::isDynamic(stride))
        extents.push_back({KernelExtent::Kind::stride, arg, unsigned(axis)});
    if (ShapedType::isDynamic(offset))
      extents.push_back({KernelExtent::Kind::offset, arg});
  }
  return extents;
}
