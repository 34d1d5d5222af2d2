//===- TestUtil.h - Shorthands shared by the test files ---------*- C++ -*-===//
#ifndef KVIR_TEST_UNIT_TESTUTIL_H
#define KVIR_TEST_UNIT_TESTUTIL_H

#include "Harness/Cases.h"

namespace kvir::test {

/// A cache spec with the common parameters up front.
inline CacheSpec makeSpec(int64_t pageSize, int64_t kvHeads, int64_t headDim,
                          DType dtype, Layout layout = Layout::NHD,
                          Storage storage = Storage::Combined,
                          Table table = Table::CSR, int64_t headDimV = -1) {
  CacheSpec s;
  s.pageSize = pageSize;
  s.kvHeads = kvHeads;
  s.headDim = headDim;
  s.headDimV = headDimV < 0 ? headDim : headDimV;
  s.dtype = dtype;
  s.layout = layout;
  s.storage = storage;
  s.table = table;
  return s;
}

/// `spec` with quantized storage (`group`: int8 groups' size).
inline CacheSpec quantized(CacheSpec spec, Quant quant, int64_t group = 0) {
  spec.quant = quant;
  spec.quantGroup = group;
  return spec;
}

} // namespace kvir::test

namespace ref = kvir::ref;

#endif // KVIR_TEST_UNIT_TESTUTIL_H
