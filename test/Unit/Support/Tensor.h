//===- Tensor.h - Typed strided host buffers and memref descriptors -*- C++ -*-===//
//
// A Tensor is what a memref describes: an element type, a shared allocation,
// an element offset, sizes and strides. Tensors hand out the descriptor words
// MLIR's C interface expects ({allocated, aligned, offset, sizes[rank],
// strides[rank]}, all 64-bit) for any rank.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TEST_UNIT_SUPPORT_TENSOR_H
#define KVIR_TEST_UNIT_SUPPORT_TENSOR_H

#include "Float.h"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace kvir::test {

using Index = std::vector<int64_t>;

class Tensor {
public:
  Tensor() = default;
  /// A fresh zero-filled row-major tensor.
  Tensor(DType dtype, Index shape);

  /// A strided view of the same allocation.
  Tensor view(int64_t offset, Index shape, Index strides) const;
  /// A deep copy with the same shape, strides and offset (and a fresh
  /// allocation of the same size, so the copy's bytes can be compared).
  Tensor clone() const;

  DType dtype() const { return type; }
  const Index &shape() const { return sizes; }
  const Index &strides() const { return elementStrides; }
  int64_t offset() const { return elementOffset; }
  int64_t rank() const { return static_cast<int64_t>(sizes.size()); }
  int64_t dim(int64_t i) const { return sizes[i]; }
  int64_t numElements() const;
  bool empty() const { return !storage; }

  /// Element offset of `index` from the allocation start; bounds-checked
  /// (aborts with a message: a reference bug must not read garbage).
  int64_t linearize(const Index &index) const;

  double get(const Index &index) const { return decode(type, getBits(index)); }
  void set(const Index &index, double value) {
    setBits(index, encode(type, value));
  }
  uint64_t getBits(const Index &index) const;
  void setBits(const Index &index, uint64_t bits);
  /// Raw element access by allocation element offset.
  uint64_t rawBits(int64_t elementOffset) const;
  void setRawBits(int64_t elementOffset, uint64_t bits);

  /// Calls `fn(index)` for every index of the shape, row-major.
  template <typename Fn> void forEachIndex(Fn &&fn) const {
    Index index(sizes.size(), 0);
    if (numElements() == 0)
      return;
    while (true) {
      fn(static_cast<const Index &>(index));
      int64_t d = rank() - 1;
      for (; d >= 0; --d) {
        if (++index[d] < sizes[d])
          break;
        index[d] = 0;
      }
      if (d < 0)
        return;
    }
  }
  /// Sets every element of the view to `bits`.
  void fillBits(uint64_t bits);
  /// Sets every element of the view to NaN (activation and fp8 types).
  void poison() { fillBits(nanBits(type)); }

  /// Elements in the allocation (for whole-allocation comparisons).
  int64_t allocationElements() const { return capacity; }
  void *data() const { return storage.get(); }

  /// The memref descriptor words {allocated, aligned, offset, sizes,
  /// strides}; the pointer words point into this tensor's allocation.
  std::vector<int64_t> descriptor() const;
  /// The MLIR memref type, `dynamic[i]` marking `?` dims (all static when
  /// empty) and a strided layout when `stridedLayout`: dynamic strides and
  /// offset, or this view's own when `staticStrides`.
  std::string memrefType(const std::vector<bool> &dynamic = {},
                         bool stridedLayout = false,
                         bool staticStrides = false) const;

private:
  DType type = DType::F32;
  std::shared_ptr<uint8_t[]> storage;
  int64_t capacity = 0;
  int64_t elementOffset = 0;
  Index sizes, elementStrides;
};

/// Row-major strides of `shape`.
Index rowMajorStrides(const Index &shape);

/// Convenience: a rank-1 i32 tensor holding `values`.
Tensor makeI32(const std::vector<int32_t> &values);
/// A rank-2 i32 tensor [rows, cols] from row-major `values`.
Tensor makeI32(const std::vector<int32_t> &values, int64_t rows, int64_t cols);
/// The elements of a rank-1 or rank-2 i32 tensor, row-major.
std::vector<int32_t> toI32Vector(const Tensor &t);
/// The same integers as an I64 tensor (OpenPPL's int64 tables).
Tensor widenToI64(const Tensor &t);
/// `values` as an index array of `type` (I32, or I64 as OpenPPL's
/// seqstarts / kvstarts).
Tensor makeIndexArray(const std::vector<int32_t> &values, DType type);

} // namespace kvir::test

#endif // KVIR_TEST_UNIT_SUPPORT_TENSOR_H
