//===- KernelFunc.h - gpu.func kernels with typed shared memory -*- C++ -*-===//
//
// Every kvir kernel starts here: a gpu.func in the kernel module with its
// arguments, the exact block it is launched with (`.reqntid`, so ptxas
// never caps registers for an occupancy the launch cannot have), and its
// shared buffers. Buffers are declared with a shape, an element type and an
// alignment; the layout accounts for their bytes as ptxas places them.
// Up to 48 KB they are static workgroup attributions; beyond, one dynamic
// shared allocation the buffers are views of (the launch plan records its
// size, the launch requests it).
//
// A kernel's symbol is a readable stem plus a hash of everything that
// changes its code (KernelIdentity): two kernels that differ in anything
// never share a symbol.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_KERNELFUNC_H
#define KVIR_CODEGEN_KERNELFUNC_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/SmallVector.h"

#include <array>
#include <optional>
#include <string>

namespace kvir::codegen {

struct SharedBuffer {
  std::string name;
  llvm::SmallVector<int64_t> shape;
  mlir::Type elementType;
  int64_t alignment = 16;
  /// Byte offset in the block's shared memory, and size.
  int64_t offset = 0, bytes = 0;
};

class SharedMemoryLayout {
public:
  /// Adds a buffer at the next offset aligned to `alignment`; returns its
  /// index (the order of KernelFunc::getShared).
  unsigned add(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
               mlir::Type elementType, int64_t alignment = 16);
  llvm::ArrayRef<SharedBuffer> getBuffers() const { return buffers; }
  /// Bytes from the first buffer's start to the last buffer's end.
  int64_t getBytes() const;
  /// Whether the buffers exceed the 48 KB a kernel may declare statically.
  bool isDynamic() const;

private:
  llvm::SmallVector<SharedBuffer> buffers;
};

class KernelFunc {
public:
  /// Creates kernel `name` in `module` taking `argTypes`, launched with
  /// exactly `block`, owning `shared`. The body holds a gpu.return; build
  /// before it with getBuilder(). Its ops are located at `name` within
  /// `origin` (the op the kernel is built for), or the module.
  static KernelFunc create(mlir::gpu::GPUModuleOp module, llvm::StringRef name,
                           mlir::TypeRange argTypes,
                           std::array<int64_t, 3> block,
                           const SharedMemoryLayout &shared,
                           std::optional<mlir::Location> origin = std::nullopt);

  mlir::gpu::GPUFuncOp getOp() const { return func; }
  mlir::Value getArgument(unsigned i) const;
  mlir::ValueRange getArguments() const;
  /// Shared buffer `i` of the layout (a workgroup memref of its shape).
  mlir::Value getShared(unsigned i) const { return shared[i]; }
  std::array<int64_t, 3> getBlock() const { return block; }
  int64_t getNumThreads() const { return block[0] * block[1] * block[2]; }
  int64_t getStaticSharedBytes() const { return staticBytes; }
  int64_t getDynamicSharedBytes() const { return dynamicBytes; }
  /// A builder inserting before the body's gpu.return.
  mlir::ImplicitLocOpBuilder getBuilder() const;

private:
  mlir::gpu::GPUFuncOp func;
  llvm::SmallVector<mlir::Value> shared;
  std::array<int64_t, 3> block{1, 1, 1};
  int64_t staticBytes = 0, dynamicBytes = 0;
};

/// Static shared memory of a built kernel's workgroup attributions, each
/// placed at its alignment (as ptxas reports it).
int64_t getStaticSharedBytes(mlir::gpu::GPUFuncOp func);
/// The dynamic shared memory a kernel built by KernelFunc needs (recorded
/// on it as `kvgpu.dynamic_shared_bytes`), 0 if none.
int64_t getDynamicSharedBytes(mlir::gpu::GPUFuncOp func);
/// The exact block a kernel built by KernelFunc is launched with.
std::array<int64_t, 3> getBlock(mlir::gpu::GPUFuncOp func);

/// Makes a built kernel safe to launch as a programmatic dependent of the
/// grid before it in its stream (CUDA's programmatic stream serialization),
/// on chips with griddepcontrol: before anything else, its threads wait
/// until that grid completed and its memory operations are visible
/// (griddepcontrol.wait), then let the grid after it launch early
/// (griddepcontrol.launch_dependents: once every block of this one issued
/// it, the dependent's blocks take the SMs' free slots and wait in turn).
/// Launched without the attribute, both are no-ops.
void orderAfterPrimaryGrid(mlir::gpu::GPUFuncOp func);

/// A kernel symbol: `<stem>_<16 hex digits>`, the digits a stable hash of
/// everything added.
class KernelIdentity {
public:
  explicit KernelIdentity(llvm::StringRef stem) : stem(stem) {}
  KernelIdentity &add(llvm::StringRef text);
  KernelIdentity &add(int64_t value);
  KernelIdentity &add(mlir::Type type);
  KernelIdentity &add(mlir::Attribute attr);
  /// The op's name, every attribute (discardable ones included) and the
  /// types of its operands and results.
  KernelIdentity &add(mlir::Operation *op);
  std::string getSymbol() const;

private:
  std::string stem, key;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_KERNELFUNC_H
