//===- Tensor.cpp - Typed strided host buffers and memref descriptors -----===//
#include "Tensor.h"
#include "Memref.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

using namespace kvir::test;

Index kvir::test::rowMajorStrides(const Index &shape) {
  Index strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

Tensor::Tensor(DType dtype, Index shape)
    : type(dtype), sizes(std::move(shape)) {
  elementStrides = rowMajorStrides(sizes);
  capacity = numElements();
  // Keep at least one element so that even an empty tensor has a valid,
  // 64-byte aligned base pointer.
  size_t bytes = std::max<int64_t>(capacity, 1) * byteSize(type);
  size_t rounded = (bytes + 63) / 64 * 64;
  auto *raw = static_cast<uint8_t *>(std::aligned_alloc(64, rounded));
  std::memset(raw, 0, rounded);
  storage = std::shared_ptr<uint8_t[]>(raw, [](uint8_t *p) { std::free(p); });
}

Tensor Tensor::view(int64_t offset, Index shape, Index strides) const {
  Tensor t = *this;
  t.elementOffset = offset;
  t.sizes = std::move(shape);
  t.elementStrides = std::move(strides);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = *this;
  size_t bytes = std::max<int64_t>(capacity, 1) * byteSize(type);
  size_t rounded = (bytes + 63) / 64 * 64;
  auto *raw = static_cast<uint8_t *>(std::aligned_alloc(64, rounded));
  std::memcpy(raw, storage.get(), rounded);
  t.storage = std::shared_ptr<uint8_t[]>(raw, [](uint8_t *p) { std::free(p); });
  return t;
}

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

int64_t Tensor::linearize(const Index &index) const {
  if (index.size() != sizes.size()) {
    std::fprintf(stderr, "tensor index of rank %zu into a rank-%zu tensor\n",
                 index.size(), sizes.size());
    std::abort();
  }
  int64_t off = elementOffset;
  for (size_t i = 0; i < index.size(); ++i) {
    if (index[i] < 0 || index[i] >= sizes[i]) {
      std::ostringstream os;
      os << "tensor index out of bounds: [";
      for (size_t j = 0; j < index.size(); ++j)
        os << (j ? ", " : "") << index[j];
      os << "] in shape [";
      for (size_t j = 0; j < sizes.size(); ++j)
        os << (j ? ", " : "") << sizes[j];
      os << "]\n";
      std::fputs(os.str().c_str(), stderr);
      std::abort();
    }
    off += index[i] * elementStrides[i];
  }
  if (off < 0 || off >= capacity) {
    std::fprintf(stderr, "tensor element %lld outside its allocation of %lld\n",
                 static_cast<long long>(off), static_cast<long long>(capacity));
    std::abort();
  }
  return off;
}

uint64_t Tensor::rawBits(int64_t off) const {
  const uint8_t *p = storage.get() + off * byteSize(type);
  switch (byteSize(type)) {
  case 1:
    return *p;
  case 2: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  case 8: {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  default: {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  }
}

void Tensor::setRawBits(int64_t off, uint64_t bits) {
  uint8_t *p = storage.get() + off * byteSize(type);
  switch (byteSize(type)) {
  case 1:
    *p = static_cast<uint8_t>(bits);
    return;
  case 2: {
    uint16_t v = static_cast<uint16_t>(bits);
    std::memcpy(p, &v, 2);
    return;
  }
  case 8:
    std::memcpy(p, &bits, 8);
    return;
  default: {
    uint32_t v = static_cast<uint32_t>(bits);
    std::memcpy(p, &v, 4);
    return;
  }
  }
}

uint64_t Tensor::getBits(const Index &index) const {
  return rawBits(linearize(index));
}

void Tensor::setBits(const Index &index, uint64_t bits) {
  setRawBits(linearize(index), bits);
}

void Tensor::fillBits(uint64_t bits) {
  forEachIndex([&](const Index &index) { setBits(index, bits); });
}

std::vector<int64_t> Tensor::descriptor() const {
  return makeMemrefDescriptor(storage.get(), storage.get(), elementOffset,
                              sizes, elementStrides);
}

std::string Tensor::memrefType(const std::vector<bool> &dynamic,
                               bool stridedLayout, bool staticStrides) const {
  std::ostringstream os;
  os << "memref<";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!dynamic.empty() && dynamic[i])
      os << "?x";
    else
      os << sizes[i] << "x";
  }
  os << mlirName(type);
  if (stridedLayout) {
    os << ", strided<[";
    for (size_t i = 0; i < sizes.size(); ++i) {
      os << (i ? ", " : "");
      if (staticStrides)
        os << elementStrides[i];
      else
        os << "?";
    }
    os << "], offset: ";
    if (staticStrides)
      os << elementOffset;
    else
      os << "?";
    os << ">";
  }
  os << ">";
  return os.str();
}

Tensor kvir::test::makeI32(const std::vector<int32_t> &values) {
  Tensor t(DType::I32, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    t.set({static_cast<int64_t>(i)}, values[i]);
  return t;
}

Tensor kvir::test::makeI32(const std::vector<int32_t> &values, int64_t rows,
                           int64_t cols) {
  Tensor t(DType::I32, {rows, cols});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      t.set({r, c}, values[r * cols + c]);
  return t;
}

Tensor kvir::test::widenToI64(const Tensor &t) {
  Tensor wide(DType::I64, t.shape());
  t.forEachIndex([&](const Index &index) { wide.set(index, t.get(index)); });
  return wide;
}

Tensor kvir::test::makeIndexArray(const std::vector<int32_t> &values,
                                  DType type) {
  Tensor t = makeI32(values);
  return type == DType::I64 ? widenToI64(t) : t;
}

std::vector<int32_t> kvir::test::toI32Vector(const Tensor &t) {
  std::vector<int32_t> out;
  t.forEachIndex(
      [&](const Index &index) { out.push_back(static_cast<int32_t>(t.get(index))); });
  return out;
}
