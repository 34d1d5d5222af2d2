//===- KernelABI.h - The parameters kvir kernels take -----------*- C++ -*-===//
//
// kvir kernels take bare device pointers and scalars, not MLIR memref
// descriptors, so that any framework can launch them:
//
//   1. each kernel argument in order: a memref is one pointer, the address
//      of its element at offset 0 (its static offset, if any, is applied
//      by the kernel); a scalar is itself;
//   2. then, for each memref argument in order, one int64 per dynamic
//      extent of its type: its dynamic sizes (axis order), its dynamic
//      strides (axis order), its dynamic offset.
//
// kvgpu-bare-kernel-abi rewrites kernels and launches to this form; the
// manifests list the same parameters from the launch plans; both read
// getKernelExtents.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_DIALECT_KVGPU_IR_KERNELABI_H
#define KVIR_DIALECT_KVGPU_IR_KERNELABI_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeRange.h"
#include "llvm/ADT/SmallVector.h"

namespace kvir::kvgpu {

/// One trailing int64 parameter: a dynamic extent of a memref argument.
struct KernelExtent {
  enum class Kind { size, stride, offset };
  Kind kind;
  /// The kernel argument (index among all arguments) and, for sizes and
  /// strides, the axis.
  unsigned arg;
  unsigned axis = 0;
};

/// The trailing extents of a kernel taking `argTypes` in their order.
/// Memref types must be ranked with a strided layout (checked by
/// isBareKernelArgType).
llvm::SmallVector<KernelExtent> getKernelExtents(mlir::TypeRange argTypes);

/// Whether a memref of `type` can be passed as a bare pointer plus its
/// extents: ranked, with a strided layout.
bool isBareKernelArgType(mlir::MemRefType type);

/// The type a memref argument of `type` has once bare: a rank-0 memref of
/// its element type in its memory space (a pointer to element 0).
mlir::MemRefType getBarePointerType(mlir::MemRefType type);

} // namespace kvir::kvgpu

#endif // KVIR_DIALECT_KVGPU_IR_KERNELABI_H
