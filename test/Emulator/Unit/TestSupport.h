//===- TestSupport.h - Helpers for the emulator's gtests --------*- C++ -*-===//
//
// Kernels are written in the gpu dialect (as MLIR source), compiled once per
// test suite with Emulator::prepareModule and launched through
// Emulator::launch with the packed arguments the lowered kernel expects:
// a memref argument expands to (allocated ptr, aligned ptr, offset, sizes...,
// strides...), a scalar is itself.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TEST_EMULATOR_UNIT_TESTSUPPORT_H
#define KVIR_TEST_EMULATOR_UNIT_TESTSUPPORT_H

#include "kvir/Emulator/Emulator.h"

#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

#include <cstdint>
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

/// The packed argument array of one launch.
class Args {
public:
  /// A memref<sizes x T> with an identity layout over `b`.
  template <typename T>
  Args &memref(Buffer<T> &b, std::vector<int64_t> sizes = {}) {
    if (sizes.empty())
      sizes = {int64_t(b.size())};
    pointer(b.ptr());
    pointer(b.ptr());
    scalar<int64_t>(0);
    for (int64_t s : sizes)
      scalar<int64_t>(s);
    std::vector<int64_t> strides(sizes.size(), 1);
    for (int i = int(sizes.size()) - 2; i >= 0; --i)
      strides[i] = strides[i + 1] * sizes[i + 1];
    for (int64_t s : strides)
      scalar<int64_t>(s);
    return *this;
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
  void **get() { return params.data(); }

private:
  std::deque<uint64_t> storage; // stable addresses
  std::vector<void *> params;
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
