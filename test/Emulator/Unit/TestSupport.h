//===- TestSupport.h - Helpers for the emulator's gtests --------*- C++ -*-===//
//
// Kernels are written in the gpu dialect (as MLIR source), compiled once per
// test suite with Emulator::prepareModule and launched through
// Emulator::launch with the packed arguments the lowered kernel expects,
// kvir's kernel ABI (prepareModule applies kvgpu-bare-kernel-abi): a memref
// argument is its pointer, a scalar is itself, and after all arguments come
// the memrefs' dynamic sizes.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TEST_EMULATOR_UNIT_TESTSUPPORT_H
#define KVIR_TEST_EMULATOR_UNIT_TESTSUPPORT_H

#include "kvir/Emulator/Emulator.h"

#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace kvir::emu::test {

/// A context with every dialect, extension and LLVM IR translation kvir's
/// tools register.
mlir::MLIRContext &context();

/// Parses `source` and compiles its gpu.modules for the emulator. Returns
/// false (with a gtest failure) if either step fails.
bool prepare(const std::string &source);

/// A host buffer the emulator knows as a live allocation.
template <typename T> class Buffer {
public:
  explicit Buffer(size_t n, T fill = T()) : data(n, fill) {
    Emulator::get().registerAllocation(data.data(), n * sizeof(T),
                                       "test buffer");
  }
  ~Buffer() { Emulator::get().unregisterAllocation(data.data()); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  T &operator[](size_t i) { return data[i]; }
  const T &operator[](size_t i) const { return data[i]; }
  size_t size() const { return data.size(); }
  T *ptr() { return data.data(); }

private:
  std::vector<T> data;
};

/// A 128-byte, 64-byte aligned tensor map (CUtensorMap) the emulator knows
/// as memory, for kvir::emu::encodeTensorMap.
class TensorMapBuffer {
public:
  TensorMapBuffer()
      : bytes(static_cast<uint8_t *>(std::aligned_alloc(64, 128))) {
    Emulator::get().registerAllocation(bytes, 128, "tensor map");
  }
  ~TensorMapBuffer() {
    Emulator::get().unregisterAllocation(bytes);
    std::free(bytes);
  }
  TensorMapBuffer(const TensorMapBuffer &) = delete;
  TensorMapBuffer &operator=(const TensorMapBuffer &) = delete;
  uint8_t *bytes;
};

/// The packed argument array of one launch.
class Args {
public:
  /// A memref<?xT> over `b`: its pointer, and its size after all arguments.
  template <typename T> Args &memref(Buffer<T> &b) {
    pointer(b.ptr());
    extents.push_back(int64_t(b.size()));
    return *this;
  }
  /// A memref<?xT> of `size` elements at a raw address (memory the
  /// emulator may not know, or misaligned).
  Args &memrefAt(void *p, int64_t size) {
    pointer(p);
    extents.push_back(size);
    return *this;
  }
  /// A memref of static shape over `b`: its pointer only.
  template <typename T> Args &staticMemref(Buffer<T> &b) {
    return pointer(b.ptr());
  }
  template <typename T> Args &scalar(T v) {
    storage.emplace_back();
    static_assert(sizeof(T) <= sizeof(storage.back()));
    std::memcpy(&storage.back(), &v, sizeof(T));
    params.push_back(&storage.back());
    return *this;
  }
  Args &pointer(void *p) {
    storage.emplace_back();
    std::memcpy(&storage.back(), &p, sizeof(p));
    params.push_back(&storage.back());
    return *this;
  }
  /// The parameters, the dynamic sizes last.
  void **get() {
    all = params;
    for (int64_t e : extents) {
      storage.emplace_back();
      std::memcpy(&storage.back(), &e, sizeof(e));
      all.push_back(&storage.back());
    }
    return all.data();
  }

private:
  std::deque<uint64_t> storage; // stable addresses
  std::vector<void *> params, all;
  std::vector<int64_t> extents;
};

/// Launches `kernel` with reports collected instead of exiting.
llvm::LogicalResult launch(const std::string &kernel, Dim3 grid, Dim3 block,
                           Args &args, uint32_t dynamicShared = 0);

/// All reports of the emulator so far, one string.
std::string reports();

/// IEEE half and bfloat16 <-> float, written independently of the emulator.
float halfBitsToFloat(uint16_t h);
float bf16BitsToFloat(uint16_t h);
/// Round to nearest even.
uint16_t floatToHalfBits(float f);

} // namespace kvir::emu::test

#endif // KVIR_TEST_EMULATOR_UNIT_TESTSUPPORT_H
