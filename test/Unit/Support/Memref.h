//===- Memref.h - MLIR memref descriptors for any rank ----------*- C++ -*-===//
//
// A ranked memref crosses MLIR's C interface as a pointer to
//   struct { T *allocated; T *aligned; int64_t offset;
//            int64_t sizes[rank]; int64_t strides[rank]; }
// which, on 64-bit hosts, is 3 + 2 * rank int64 words.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_TEST_UNIT_SUPPORT_MEMREF_H
#define KVIR_TEST_UNIT_SUPPORT_MEMREF_H

#include <cstdint>
#include <vector>

namespace kvir::test {

static_assert(sizeof(void *) == sizeof(int64_t),
              "memref descriptors are built as 64-bit words");

/// The descriptor words of a memref of rank sizes.size().
inline std::vector<int64_t>
makeMemrefDescriptor(const void *allocated, const void *aligned,
                     int64_t offset, const std::vector<int64_t> &sizes,
                     const std::vector<int64_t> &strides) {
  std::vector<int64_t> words;
  words.reserve(3 + 2 * sizes.size());
  words.push_back(reinterpret_cast<int64_t>(allocated));
  words.push_back(reinterpret_cast<int64_t>(aligned));
  words.push_back(offset);
  words.insert(words.end(), sizes.begin(), sizes.end());
  words.insert(words.end(), strides.begin(), strides.end());
  return words;
}

} // namespace kvir::test

#endif // KVIR_TEST_UNIT_SUPPORT_MEMREF_H
