//===- Harness.cpp - Random kv test cases, MLIR text and comparisons ------===//
#include "Harness.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <sstream>

using namespace kvir::test;

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

std::vector<int64_t> kvir::test::randomLengths(Rng &rng, int64_t count,
                                               int64_t maxLen, bool special) {
  std::vector<int64_t> lengths(count);
  for (int64_t &l : lengths)
    l = rng.integer(2, std::max<int64_t>(maxLen, 2));
  if (special && count >= 2) {
    std::vector<int64_t> where = rng.permutation(count);
    lengths[where[0]] = 0;
    lengths[where[1]] = 1;
  }
  return lengths;
}

Tensor kvir::test::randomTensor(Rng &rng, DType dtype, Index shape,
                                double range) {
  Tensor t(dtype, std::move(shape));
  t.forEachIndex([&](const Index &index) {
    t.set(index, rng.uniform(-range, range));
  });
  return t;
}

std::vector<int32_t> kvir::test::indptrOf(const std::vector<int64_t> &lengths) {
  std::vector<int32_t> indptr{0};
  for (int64_t l : lengths)
    indptr.push_back(indptr.back() + static_cast<int32_t>(l));
  return indptr;
}

static bool isPpl(Layout layout) {
  return layout == Layout::PPL0 || layout == Layout::PPL1 ||
         layout == Layout::PPL2 || layout == Layout::PPL3;
}

PagedCache kvir::test::makeCache(const CacheSpec &spec,
                                 const std::vector<int64_t> &kvLens, Rng &rng,
                                 const CacheOptions &options) {
  PagedCache cache;
  cache.spec = spec;
  cache.kScale = options.kScale;
  cache.vScale = options.vScale;
  const int64_t p = spec.pageSize;
  const int64_t numRequests = kvLens.size();
  const int64_t extra = std::max<int64_t>(options.extraPages, 1);
  auto pagesOf = [&](int64_t len) { return (len + p - 1) / p; };
  int64_t maxPages = 0;
  for (int64_t len : kvLens)
    maxPages = std::max(maxPages, pagesOf(len));
  // One spare column of padding so that the tables have unused entries.
  const int64_t cols = maxPages + 1;
  int64_t numPages = 0;

  switch (spec.table) {
  case Table::CSR:
  case Table::BlockTable: {
    int64_t needed = 0;
    for (int64_t len : kvLens)
      needed += pagesOf(len);
    numPages = needed + extra;
    std::vector<int64_t> perm = rng.permutation(numPages);
    int64_t poisonPage = perm.back(); // never handed out
    std::vector<std::vector<int32_t>> pages(numRequests);
    int64_t next = 0;
    for (int64_t b = 0; b < numRequests; ++b)
      for (int64_t i = 0; i < pagesOf(kvLens[b]); ++i)
        pages[b].push_back(perm[next++]);
    if (spec.table == Table::CSR) {
      std::vector<int32_t> indptr{0}, indices, last;
      for (int64_t b = 0; b < numRequests; ++b) {
        indices.insert(indices.end(), pages[b].begin(), pages[b].end());
        indptr.push_back(indices.size());
        int64_t n = pages[b].size();
        last.push_back(n ? kvLens[b] - p * (n - 1) : 0);
      }
      if (indices.empty())
        indices.push_back(poisonPage);
      cache.tables = {makeI32(indptr), makeI32(indices), makeI32(last)};
    } else {
      std::vector<int32_t> table(numRequests * cols, poisonPage), lens;
      for (int64_t b = 0; b < numRequests; ++b) {
        std::copy(pages[b].begin(), pages[b].end(), table.begin() + b * cols);
        lens.push_back(kvLens[b]);
      }
      cache.tables = {makeI32(table, numRequests, cols), makeI32(lens)};
    }
    break;
  }
  case Table::TokenTable: {
    // Each logical page is a run of tokens at an arbitrary (unaligned)
    // offset of the token axis, runs in random order with random gaps.
    std::vector<std::pair<int64_t, int64_t>> runs;
    for (int64_t b = 0; b < numRequests; ++b)
      for (int64_t i = 0; i < pagesOf(kvLens[b]); ++i)
        runs.push_back({b, i});
    rng.shuffle(runs);
    std::vector<int32_t> starts(numRequests * cols, 0), lens;
    int64_t cursor = 0;
    for (auto [b, i] : runs) {
      cursor += rng.integer(0, 3);
      starts[b * cols + i] = cursor;
      cursor += std::min(p, kvLens[b] - i * p);
    }
    numPages = pagesOf(cursor) + extra;
    int32_t poisonStart = (numPages - 1) * p;
    for (int64_t b = 0; b < numRequests; ++b) {
      for (int64_t i = pagesOf(kvLens[b]); i < cols; ++i)
        starts[b * cols + i] = poisonStart;
      lens.push_back(kvLens[b]);
    }
    cache.tables = {makeI32(starts, numRequests, cols), makeI32(lens)};
    break;
  }
  case Table::TokenOffset: {
    std::vector<int32_t> starts(numRequests, 0), lens;
    if (spec.layout == Layout::Llama) {
      // Llama's cache: request b owns a row of max_seq = page_size tokens and
      // starts at some offset of it.
      numPages = numRequests + extra;
      std::vector<int64_t> rows = rng.permutation(numPages);
      for (int64_t b = 0; b < numRequests; ++b) {
        if (kvLens[b] > p) {
          std::fprintf(stderr, "llama: kv_len %lld exceeds max_seq %lld\n",
                       (long long)kvLens[b], (long long)p);
          std::abort();
        }
        starts[b] = rows[b] * p + rng.integer(0, p - kvLens[b]);
      }
    } else {
      std::vector<int64_t> order = rng.permutation(numRequests);
      int64_t cursor = 0;
      for (int64_t b : order) {
        cursor += rng.integer(0, 3);
        starts[b] = cursor;
        cursor += kvLens[b];
      }
      numPages = pagesOf(cursor) + extra;
    }
    for (int64_t len : kvLens)
      lens.push_back(len);
    cache.tables = {makeI32(starts), makeI32(lens)};
    break;
  }
  }

  if (spec.tableType == DType::I64)
    for (Tensor &table : cache.tables)
      table = widenToI64(table);

  // Pools, all NaN until filled.
  auto shapeOf = [&](Role role) {
    if (spec.layout == Layout::Affine)
      return options.affineShape(role, numPages);
    return ref::poolShape(spec, role, numPages, options.numLayers);
  };
  DType stored = spec.storageType();
  if (spec.isMla() && options.mlaSharedPool) {
    int64_t width = spec.headDim + spec.peDim;
    Tensor whole(stored, {numPages, p, width});
    whole.poison();
    Index strides{p * width, width, 1};
    cache.pools = {whole.view(0, {numPages, p, spec.headDim}, strides),
                   whole.view(spec.headDim, {numPages, p, spec.peDim}, strides)};
  } else {
    int64_t numPools = spec.storage == Storage::Combined ? 1 : 2;
    for (int64_t i = 0; i < numPools; ++i) {
      Tensor pool(stored, shapeOf(i ? Role::V : Role::K));
      pool.poison();
      cache.pools.push_back(pool);
    }
  }
  if (spec.quant == Quant::Int8Group)
    for (size_t i = 0; i < cache.pools.size(); ++i) {
      Tensor scales(spec.dtype, shapeOf(i ? Role::VScale : Role::KScale));
      scales.poison();
      cache.scales.push_back(scales);
    }

  // Fill every token the batch owns.
  std::vector<int64_t> filled =
      options.filledLens.empty() ? kvLens : options.filledLens;
  std::set<std::pair<int64_t, int64_t>> used;
  double range = options.valueRange;
  int64_t heads = spec.isMla() ? 1 : spec.kvHeads;
  for (int64_t b = 0; b < numRequests; ++b)
    for (int64_t t = 0; t < kvLens[b]; ++t) {
      auto loc = cache.locate(b, t);
      if (!used.insert(loc).second) {
        std::fprintf(stderr, "test generator: two tokens share page %lld "
                             "slot %lld\n",
                     (long long)loc.first, (long long)loc.second);
        std::abort();
      }
      if (t >= filled[b])
        continue;
      for (int64_t h = 0; h < heads; ++h)
        for (Role role : {Role::K, Role::V}) {
          Tensor &pool = cache.pool(role);
          int64_t width = spec.dimExtent(role);
          auto index = [&](Role r, int64_t d) {
            return ref::poolIndex(spec, r, loc.first, loc.second, h, d);
          };
          switch (spec.quant) {
          case Quant::None:
            for (int64_t d = 0; d < width; ++d)
              pool.set(index(role, d), rng.uniform(-range, range));
            break;
          case Quant::FP8E4M3:
          case Quant::FP8E5M2: {
            bool e4m3 = spec.quant == Quant::FP8E4M3;
            double scale = role == Role::K || spec.isMla() ? cache.kScale
                                                           : cache.vScale;
            for (int64_t d = 0; d < width; ++d)
              pool.setBits(index(role, d),
                           encodeFp8Saturating(rng.uniform(-range, range) / scale,
                                               e4m3));
            break;
          }
          case Quant::Int8Group: {
            Role scaleRole = role == Role::K ? Role::KScale : Role::VScale;
            for (int64_t g = 0; g < width / spec.quantGroup; ++g) {
              cache.pool(scaleRole).set(index(scaleRole, g),
                                        rng.uniform(0.5, 1.5) * range / 127.0);
              for (int64_t d = g * spec.quantGroup;
                   d < (g + 1) * spec.quantGroup; ++d)
                pool.set(index(role, d), rng.integer(-127, 127));
            }
            break;
          }
          }
        }
    }
  return cache;
}

PagedCache kvir::test::cloneCache(const PagedCache &cache) {
  PagedCache copy = cache;
  for (Tensor &t : copy.pools)
    t = t.clone();
  for (Tensor &t : copy.scales)
    t = t.clone();
  return copy;
}

PagedCache kvir::test::subCache(const PagedCache &cache, int64_t first,
                                int64_t count) {
  PagedCache sub = cache;
  const std::vector<Tensor> &t = cache.tables;
  switch (cache.spec.table) {
  case Table::CSR: {
    std::vector<int32_t> indptr = toI32Vector(t[0]),
                         indices = toI32Vector(t[1]), last = toI32Vector(t[2]);
    std::vector<int32_t> subIndptr, subIndices, subLast;
    for (int64_t b = first; b <= first + count; ++b)
      subIndptr.push_back(indptr[b] - indptr[first]);
    subIndices.assign(indices.begin() + indptr[first],
                      indices.begin() + indptr[first + count]);
    if (subIndices.empty())
      subIndices.push_back(0);
    subLast.assign(last.begin() + first, last.begin() + first + count);
    sub.tables = {makeI32(subIndptr), makeI32(subIndices), makeI32(subLast)};
    return sub;
  }
  case Table::BlockTable:
  case Table::TokenTable:
  case Table::TokenOffset: {
    std::vector<int32_t> lens = toI32Vector(t[1]);
    std::vector<int32_t> subLens(lens.begin() + first,
                                 lens.begin() + first + count);
    std::vector<int32_t> rows = toI32Vector(t[0]);
    int64_t cols = t[0].rank() == 2 ? t[0].dim(1) : 1;
    std::vector<int32_t> subRows(rows.begin() + first * cols,
                                 rows.begin() + (first + count) * cols);
    sub.tables = {t[0].rank() == 2 ? makeI32(subRows, count, cols)
                                   : makeI32(subRows),
                  makeI32(subLens)};
    return sub;
  }
  }
  return sub;
}

std::pair<PagedCache, PagedCache> kvir::test::splitPages(const PagedCache &cache,
                                                          Rng &rng) {
  if (cache.spec.table != Table::CSR) {
    std::fprintf(stderr, "splitPages needs a CSR cache\n");
    std::abort();
  }
  std::vector<int32_t> indptr = toI32Vector(cache.tables[0]),
                       indices = toI32Vector(cache.tables[1]),
                       last = toI32Vector(cache.tables[2]);
  int32_t p = cache.spec.pageSize;
  std::vector<int32_t> ptrA{0}, idxA, lastA, ptrB{0}, idxB, lastB;
  for (size_t b = 0; b + 1 < indptr.size(); ++b) {
    int32_t n = indptr[b + 1] - indptr[b];
    int32_t cut = rng.integer(0, n);
    for (int32_t i = 0; i < n; ++i)
      (i < cut ? idxA : idxB).push_back(indices[indptr[b] + i]);
    ptrA.push_back(idxA.size());
    ptrB.push_back(idxB.size());
    // Leading pages are full unless they are all of the request's pages.
    lastA.push_back(cut == 0 ? 0 : cut == n ? last[b] : p);
    lastB.push_back(cut == n ? 0 : last[b]);
  }
  if (idxA.empty())
    idxA.push_back(0);
  if (idxB.empty())
    idxB.push_back(0);
  PagedCache a = cache, b = cache;
  a.tables = {makeI32(ptrA), makeI32(idxA), makeI32(lastA)};
  b.tables = {makeI32(ptrB), makeI32(idxB), makeI32(lastB)};
  return {a, b};
}

std::vector<int32_t>
kvir::test::randomRowPositions(Rng &rng, const std::vector<int64_t> &qoLens,
                               const std::vector<int64_t> &kvLens) {
  std::vector<int32_t> positions;
  for (size_t b = 0; b < qoLens.size(); ++b)
    for (int64_t i = 0; i < qoLens[b]; ++i)
      positions.push_back(int32_t(rng.integer(-1, kvLens[b] + 2)));
  return positions;
}

Tensor kvir::test::randomMask(Rng &rng, const std::vector<int64_t> &qoLens,
                              const std::vector<int64_t> &kvLens, bool packed,
                              double density) {
  int64_t total = 0;
  for (size_t b = 0; b < qoLens.size(); ++b) {
    int64_t bits = qoLens[b] * kvLens[b];
    total += packed ? (bits + 7) / 8 : bits;
  }
  Tensor mask(packed ? DType::I8 : DType::I1, {std::max<int64_t>(total, 1)});
  int64_t offset = 0;
  for (size_t b = 0; b < qoLens.size(); ++b) {
    int64_t bits = qoLens[b] * kvLens[b];
    if (!packed) {
      for (int64_t k = 0; k < bits; ++k)
        mask.setBits({offset + k}, rng.coin(density));
      offset += bits;
      continue;
    }
    int64_t bytes = (bits + 7) / 8;
    for (int64_t i = 0; i < bytes; ++i) {
      uint64_t byte = 0;
      for (int64_t k = 0; k < 8; ++k) {
        // Bits past the block are padding: random, and must be ignored.
        bool bit = i * 8 + k < bits ? rng.coin(density) : rng.coin();
        byte |= uint64_t(bit) << k;
      }
      mask.setBits({offset + i}, byte);
    }
    offset += bytes;
  }
  return mask;
}

//===----------------------------------------------------------------------===//
// MLIR text
//===----------------------------------------------------------------------===//

std::string KernelSource::addMemref(const std::string &hint, const Tensor &t,
                                    std::vector<bool> dynamic,
                                    bool stridedLayout, bool staticStrides) {
  if (dynamic.empty()) {
    dynamic.assign(t.rank(), false);
    if (t.rank())
      dynamic[0] = true;
  }
  std::string ssa = "%" + hint;
  std::string type = t.memrefType(dynamic, stridedLayout, staticStrides);
  params.push_back(ssa + ": " + type);
  types.push_back({ssa, type});
  arguments.push_back(KernelArg::memref(t));
  return ssa;
}

std::string KernelSource::addF32(const std::string &hint, float value) {
  std::string ssa = "%" + hint;
  params.push_back(ssa + ": f32");
  types.push_back({ssa, "f32"});
  arguments.push_back(KernelArg::f32(value));
  return ssa;
}

const std::string &KernelSource::typeOf(const std::string &ssa) const {
  for (const auto &[name, type] : types)
    if (name == ssa)
      return type;
  std::fprintf(stderr, "no argument %s\n", ssa.c_str());
  std::abort();
}

std::string KernelSource::addAlias(const std::string &alias,
                                   const std::string &text) {
  aliases += "!" + alias + " = " + text + "\n";
  return "!" + alias;
}

std::string KernelSource::text() const {
  std::ostringstream os;
  os << aliases << "func.func @" << name << "(";
  for (size_t i = 0; i < params.size(); ++i)
    os << (i ? ",\n    " : "") << params[i];
  os << ") attributes {llvm.emit_c_interface} {\n" << body << "    return\n}\n";
  return os.str();
}

static const char *layoutName(Layout layout) {
  switch (layout) {
  case Layout::NHD:
    return "nhd";
  case Layout::HND:
    return "hnd";
  case Layout::VLLM:
    return "vllm";
  case Layout::PPL0:
    return "ppl0";
  case Layout::PPL1:
    return "ppl1";
  case Layout::PPL2:
    return "ppl2";
  case Layout::PPL3:
    return "ppl3";
  case Layout::Llama:
    return "llama";
  case Layout::Affine:
    return "affine";
  }
  return "?";
}

static const char *storageName(Storage storage) {
  switch (storage) {
  case Storage::Combined:
    return "combined";
  case Storage::Split:
    return "split";
  case Storage::MLA:
    return "mla";
  }
  return "?";
}

static const char *tableName(Table table) {
  switch (table) {
  case Table::CSR:
    return "csr";
  case Table::BlockTable:
    return "block_table";
  case Table::TokenTable:
    return "token_table";
  case Table::TokenOffset:
    return "token_offset";
  }
  return "?";
}

static const char *quantName(Quant quant) {
  switch (quant) {
  case Quant::None:
    return "none";
  case Quant::Int8Group:
    return "int8_group";
  case Quant::FP8E4M3:
    return "fp8_e4m3";
  case Quant::FP8E5M2:
    return "fp8_e5m2";
  }
  return "?";
}

static std::string mapText(mlir::AffineMap map) {
  std::string s;
  llvm::raw_string_ostream os(s);
  map.print(os);
  return s;
}

std::string kvir::test::pagedTypeText(const CacheSpec &spec) {
  std::ostringstream os;
  os << "!kv.paged<page_size = " << spec.pageSize
     << ", kv_heads = " << spec.kvHeads << ", head_dim = " << spec.headDim
     << ", head_dim_v = " << spec.headDimV
     << ", dtype = " << mlirName(spec.dtype)
     << ", layout = " << layoutName(spec.layout)
     << ", storage = " << storageName(spec.storage)
     << ", table = " << tableName(spec.table);
  if (spec.quant != Quant::None)
    os << ", quant = " << quantName(spec.quant);
  if (spec.quant == Quant::Int8Group)
    os << ", quant_group = " << spec.quantGroup;
  if (isPpl(spec.layout))
    os << ", layer = " << spec.layer;
  if (spec.isMla())
    os << ", pe_dim = " << spec.peDim;
  if (spec.kMap)
    os << ", k_map = " << mapText(spec.kMap);
  if (spec.vMap)
    os << ", v_map = " << mapText(spec.vMap);
  os << ">";
  return os.str();
}

std::string kvir::test::stateTypeText(int64_t heads, int64_t headDimV,
                                      DType dtype, Base base,
                                      bool partitioned) {
  std::ostringstream os;
  os << "!kv.state<?x" << heads << "x" << headDimV << "x" << mlirName(dtype)
     << ", base = " << (base == Base::Two ? "2" : "e");
  if (partitioned)
    os << ", partitions = ?";
  os << ">";
  return os.str();
}

/// Which pool dims vary with the number of pages (or tokens, or layers):
/// those are `?` in the kernel's signature.
static std::vector<bool> dynamicPoolDims(const CacheSpec &spec, Role role,
                                         int64_t rank) {
  if (spec.layout == Layout::Affine)
    return std::vector<bool>(rank, true);
  Index a = kvir::ref::poolShape(spec, role, 1, 1), b = kvir::ref::poolShape(spec, role, 2, 3);
  std::vector<bool> dynamic(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    dynamic[i] = a[i] != b[i];
  return dynamic;
}

std::string kvir::test::emitPagedView(KernelSource &src, const PagedCache &cache,
                                      const std::string &name,
                                      std::string &typeAlias,
                                      bool staticSliceStrides) {
  const CacheSpec &spec = cache.spec;
  typeAlias = src.addAlias(name + "_t", pagedTypeText(spec));
  auto join = [](const std::vector<std::string> &xs) {
    std::string s;
    for (size_t i = 0; i < xs.size(); ++i)
      s += (i ? ", " : "") + xs[i];
    return s;
  };
  std::vector<std::string> pools, poolTypes, tables, tableTypes, scales,
      scaleTypes;
  bool strided = spec.isMla() && cache.pools[0].strides()[2] == 1 &&
                 cache.pools[0].strides()[1] != spec.headDim;
  for (size_t i = 0; i < cache.pools.size(); ++i) {
    Role role = i ? Role::V : Role::K;
    std::string ssa = src.addMemref(
        name + "_pool" + std::to_string(i), cache.pools[i],
        dynamicPoolDims(spec, role, cache.pools[i].rank()), strided,
        strided && staticSliceStrides);
    pools.push_back(ssa);
    poolTypes.push_back(src.typeOf(ssa));
  }
  for (size_t i = 0; i < cache.tables.size(); ++i) {
    std::string ssa =
        src.addMemref(name + "_table" + std::to_string(i), cache.tables[i],
                      std::vector<bool>(cache.tables[i].rank(), true));
    tables.push_back(ssa);
    tableTypes.push_back(src.typeOf(ssa));
  }
  for (size_t i = 0; i < cache.scales.size(); ++i) {
    Role role = i ? Role::VScale : Role::KScale;
    std::string ssa = src.addMemref(
        name + "_scale" + std::to_string(i), cache.scales[i],
        dynamicPoolDims(spec, role, cache.scales[i].rank()));
    scales.push_back(ssa);
    scaleTypes.push_back(src.typeOf(ssa));
  }
  std::string line = "%" + name + " = kv.paged_view pools(" + join(pools) +
                     " : " + join(poolTypes) + ") tables(" + join(tables) +
                     " : " + join(tableTypes) + ")";
  if (!scales.empty())
    line += " scales(" + join(scales) + " : " + join(scaleTypes) + ")";
  if (spec.isFp8()) {
    std::string ks = src.addF32(name + "_kscale", cache.kScale);
    std::string vs = src.addF32(name + "_vscale", cache.vScale);
    line += " fp8_scales(" + ks + ", " + vs + ")";
  }
  line += " : " + typeAlias;
  src.addLine(line);
  return "%" + name;
}

kvir::ref::Rope kvir::test::llama31Rope(kvir::ref::RopeStyle style,
                                        int64_t rotaryDim) {
  kvir::ref::Rope rope{style, 5e5, 1.0};
  rope.rotaryDim = rotaryDim;
  rope.factor = 8.0;
  rope.lowFreqFactor = 1.0;
  rope.highFreqFactor = 4.0;
  rope.originalMaxPosition = 8192.0;
  return rope;
}

kvir::ref::Rope kvir::test::randomRope(Rng &rng, int64_t headDim) {
  ref::RopeStyle style =
      rng.coin() ? ref::RopeStyle::RotateHalf : ref::RopeStyle::Interleave;
  int64_t rotary = 32 * rng.integer(1, headDim / 32);
  if (rotary == headDim)
    rotary = 0;
  if (rng.coin(1.0 / 3))
    return llama31Rope(style, rotary);
  ref::Rope rope{style, rng.coin() ? 1e4 : 5e5, rng.coin() ? 1.0 : 0.5};
  rope.rotaryDim = rotary;
  return rope;
}

std::string kvir::test::ropeAttrText(const ref::Rope &rope) {
  char buf[400];
  int n = std::snprintf(
      buf, sizeof(buf), "#kv.rope<%s, theta = %.17e, scale = %.17e",
      rope.style == ref::RopeStyle::Interleave ? "interleave" : "rotate_half",
      rope.theta, rope.scale);
  if (rope.rotaryDim)
    n += std::snprintf(buf + n, sizeof(buf) - n, ", rotary_dim = %lld",
                       (long long)rope.rotaryDim);
  if (rope.factor > 0.0)
    n +=
        std::snprintf(buf + n, sizeof(buf) - n,
                      ", factor = %.17e, low_freq_factor = %.17e, "
                      "high_freq_factor = %.17e, original_max_position = %.17e",
                      rope.factor, rope.lowFreqFactor, rope.highFreqFactor,
                      rope.originalMaxPosition);
  std::snprintf(buf + n, sizeof(buf) - n, ">");
  return buf;
}

std::string kvir::test::withConfig(std::string attrs,
                                  const std::string &config) {
  if (config.empty())
    return attrs;
  std::string entry = "kvgpu.config = " + config;
  if (attrs.empty())
    return "{" + entry + "}";
  return attrs.substr(0, attrs.size() - 1) + ", " + entry + "}";
}

CascadeShape kvir::test::randomCascadeShape(Rng &rng, int64_t levels,
                                            int64_t requests, bool causal,
                                            int64_t prefixLen,
                                            int64_t middleLen,
                                            int64_t maxLastLen) {
  CascadeShape shape;
  std::vector<int64_t> lastQo(requests), lastKv(requests);
  for (int64_t r = 0; r < requests; ++r) {
    lastQo[r] = rng.integer(1, 4);
    lastKv[r] = rng.integer(causal ? lastQo[r] : 0, maxLastLen);
  }
  lastQo[1] = 0;
  lastKv[1] = 0;
  int64_t rows = 0;
  for (int64_t q : lastQo)
    rows += q;
  shape.qoLens.push_back({rows});
  shape.kvLens.push_back({prefixLen});
  if (levels == 3) {
    int64_t split = requests / 2, a = 0, b = 0;
    for (int64_t r = 0; r < requests; ++r)
      (r < split ? a : b) += lastQo[r];
    shape.qoLens.push_back({a, b});
    shape.kvLens.push_back({middleLen, 0});
  }
  shape.qoLens.push_back(lastQo);
  shape.kvLens.push_back(lastKv);
  return shape;
}

std::vector<PagedCache>
kvir::test::makeCascadeCaches(const CacheSpec &spec,
                              const std::vector<std::vector<int64_t>> &kvLens,
                              Rng &rng) {
  std::vector<int64_t> all;
  for (const std::vector<int64_t> &lens : kvLens)
    all.insert(all.end(), lens.begin(), lens.end());
  PagedCache pool = makeCache(spec, all, rng);
  std::vector<PagedCache> levels;
  int64_t first = 0;
  for (const std::vector<int64_t> &lens : kvLens) {
    levels.push_back(subCache(pool, first, lens.size()));
    first += lens.size();
  }
  return levels;
}

std::vector<std::vector<int32_t>>
kvir::test::emitCascade(KernelSource &src, const std::string &qName,
                        const std::vector<PagedCache> &levels,
                        const std::vector<std::vector<int64_t>> &qoLens,
                        const ref::AttentionParams &params,
                        const std::string &stateType,
                        const VariantSource &variants) {
  std::vector<std::vector<int32_t>> indptrs;
  std::string indptrNames, indptrTypes, kvNames, kvTypes;
  for (size_t l = 0; l < levels.size(); ++l) {
    std::string kvType;
    std::string kv =
        emitPagedView(src, levels[l], "kv" + std::to_string(l), kvType);
    indptrs.push_back(indptrOf(qoLens[l]));
    std::string qo =
        src.addMemref("qo" + std::to_string(l), makeI32(indptrs.back()));
    std::string sep = l ? ", " : "";
    indptrNames += sep + qo;
    indptrTypes += sep + src.typeOf(qo);
    kvNames += sep + kv;
    kvTypes += sep + kvType;
  }
  std::string clauses = emitVariants(src, params, variants);
  src.addLine("%s = kv.cascade " + qName + " levels(" + indptrNames + " : " +
              indptrTypes + ") kvs(" + kvNames + " : " + kvTypes + ")" +
              clauses + " " +
              attentionAttrs(params, true, variants.standardAlibi) + " : " +
              src.typeOf(qName) + " -> " + stateType);
  return indptrs;
}

void kvir::test::emitAppend(KernelSource &src, const ref::AppendInput &input,
                            const std::string &kv, const std::string &kvType) {
  std::string ks = src.addMemref("k", input.k);
  std::string vs = src.addMemref("v", input.v);
  std::string bi = src.addMemref("batch_indices", makeI32(input.batchIndices));
  std::string ps = src.addMemref("positions", makeI32(input.positions));
  std::string ropeAttr = input.rope
                             ? " {rope = " + ropeAttrText(*input.rope) + "}"
                             : std::string();
  src.addLine("kv.append " + ks + ", " + vs + ", " + bi + ", " + ps +
              " into " + kv + ropeAttr + " : " + src.typeOf(ks) + ", " +
              src.typeOf(vs) + ", " + src.typeOf(bi) + ", " + src.typeOf(ps) +
              ", " + kvType);
}

void kvir::test::randomizeAttention(Rng &rng, ref::AttentionParams &params,
                                    int64_t maxWindow) {
  params.base = rng.coin() ? Base::Two : Base::E;
  if (rng.coin(0.3))
    params.smScale = rng.uniform(0.02, 0.3);
  if (rng.coin(0.3))
    params.softCap = rng.uniform(1.0, 50.0);
  if (rng.coin(0.3))
    params.windowLeft = rng.integer(0, maxWindow);
}

std::string kvir::test::emitVariants(KernelSource &src,
                                     const ref::AttentionParams &params,
                                     const VariantSource &variants) {
  std::string clauses;
  if (!params.topk.empty()) {
    std::string ssa = src.addMemref("topk", topkTensor(params.topk));
    clauses += " topk(" + ssa + " : " + src.typeOf(ssa) + ")";
  }
  auto perHead = [&](const char *name, const std::vector<double> &values) {
    std::string ssa = src.addMemref(name, f32Vector(values));
    clauses +=
        std::string(" ") + name + "(" + ssa + " : " + src.typeOf(ssa) + ")";
  };
  if (!params.sinks.empty())
    perHead("sinks", params.sinks);
  if (!params.alibiSlopes.empty() && !variants.standardAlibi)
    perHead("alibi_slopes", params.alibiSlopes);
  std::map<std::string, std::string> names;
  // Static shapes: the region text spells the captures' types.
  for (const auto &[name, tensor] : variants.captures)
    names[name] = src.addMemref(
        name, tensor, std::vector<bool>(tensor.shape().size(), false));
  auto substitute = [&](std::string text) {
    for (const auto &[name, ssa] : names)
      for (size_t at; (at = text.find("$" + name)) != std::string::npos;)
        text.replace(at, name.size() + 1, ssa);
    return text;
  };
  if (!variants.scoreMod.empty())
    clauses += " score_mod {\n" + substitute(variants.scoreMod) + "\n}";
  if (!variants.maskMod.empty())
    clauses += " mask_mod {\n" + substitute(variants.maskMod) + "\n}";
  return clauses;
}

std::vector<std::vector<int32_t>>
kvir::test::randomTopk(Rng &rng, const std::vector<int64_t> &rowKvLens,
                       int64_t k) {
  std::vector<std::vector<int32_t>> rows;
  for (int64_t kvLen : rowKvLens) {
    // Some of the row's keys, distinct, at random places among -1s.
    int64_t most = std::min(k, kvLen);
    int64_t count = most ? rng.integer((most + 1) / 2, most) : 0;
    std::vector<int32_t> keys(kvLen);
    for (int64_t j = 0; j < kvLen; ++j)
      keys[j] = int32_t(j);
    for (int64_t i = 0; i < count; ++i)
      std::swap(keys[i], keys[rng.integer(i, kvLen - 1)]);
    std::vector<int32_t> row(keys.begin(), keys.begin() + count);
    row.resize(k, -1);
    for (int64_t i = k - 1; i > 0; --i)
      std::swap(row[i], row[rng.integer(0, i)]);
    rows.push_back(std::move(row));
  }
  return rows;
}

Tensor kvir::test::topkTensor(const std::vector<std::vector<int32_t>> &rows) {
  int64_t k = rows.empty() ? 0 : int64_t(rows.front().size());
  Tensor t(DType::I32, {int64_t(rows.size()), k});
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t i = 0; i < k; ++i)
      t.set({int64_t(r), i}, rows[r].at(i));
  return t;
}

Tensor kvir::test::f32Vector(const std::vector<double> &values) {
  Tensor t(DType::F32, {int64_t(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    t.set({int64_t(i)}, values[i]);
  return t;
}

std::string kvir::test::emitRaggedView(KernelSource &src, const CacheSpec &s,
                                       const Tensor &k, const Tensor &v,
                                       const std::vector<int32_t> &kvIndptr,
                                       std::string &typeAlias) {
  std::string ks = src.addMemref("k", k), vs = src.addMemref("v", v);
  std::string is =
      src.addMemref("kv_indptr", makeIndexArray(kvIndptr, s.tableType));
  std::ostringstream t;
  t << "!kv.ragged<kv_heads = " << s.kvHeads << ", head_dim = " << s.headDim
    << ", head_dim_v = " << s.headDimV << ", dtype = " << mlirName(s.dtype)
    << ">";
  typeAlias = src.addAlias("kv_t", t.str());
  src.addLine("%kv = kv.ragged_view " + ks + ", " + vs + ", " + is + " : " +
              src.typeOf(ks) + ", " + src.typeOf(vs) + ", " + src.typeOf(is) +
              " -> " + typeAlias);
  return "%kv";
}

std::vector<double> kvir::test::randomPerHead(Rng &rng, int64_t heads,
                                              double lo, double hi) {
  std::vector<double> values;
  for (int64_t h = 0; h < heads; ++h)
    values.push_back(rng.uniform(lo, hi));
  return values;
}

std::vector<double> kvir::test::alibiPaperSlopes(int64_t heads) {
  auto powerOfTwoSlopes = [](int64_t n) {
    double start = std::pow(2.0, -std::pow(2.0, -(std::log2(n) - 3)));
    std::vector<double> s;
    for (int64_t i = 0; i < n; ++i)
      s.push_back(start * std::pow(start, double(i)));
    return s;
  };
  int64_t n = 1;
  while (n * 2 <= heads)
    n *= 2;
  std::vector<double> slopes = powerOfTwoSlopes(n);
  std::vector<double> extra = powerOfTwoSlopes(2 * n);
  for (int64_t i = 0; int64_t(slopes.size()) < heads; i += 2)
    slopes.push_back(extra[i]);
  return slopes;
}

void kvir::test::addKeyBiasScoreMod(ref::AttentionParams &params,
                                    VariantSource &source) {
  source.scoreMod =
      R"(^bb0(%s: f32, %b: index, %h: index, %p: index, %j: index):
      %c = arith.constant 2.0e-2 : f32
      %ji = arith.index_cast %j : index to i32
      %jf = arith.sitofp %ji : i32 to f32
      %bias = arith.mulf %jf, %c : f32
      %r = arith.addf %s, %bias : f32
      kv.yield %r : f32)";
  params.scoreMod = [](double s, int64_t, int64_t, int64_t, int64_t j) {
    return s + double(j) * double(2.0e-2f);
  };
}

void kvir::test::addEveryThirdKeyHidden(ref::AttentionParams &params,
                                        VariantSource &source) {
  source.maskMod =
      R"(^bb0(%b: index, %h: index, %p: index, %j: index):
      %c3 = arith.constant 3 : index
      %r = arith.remui %j, %c3 : index
      %c0 = arith.constant 0 : index
      %keep = arith.cmpi ne, %r, %c0 : index
      kv.yield %keep : i1)";
  params.maskMod = [](int64_t, int64_t, int64_t, int64_t j) {
    return j % 3 != 0;
  };
}

void kvir::test::addRequestRegions(Rng &rng, ref::AttentionParams &params,
                                   VariantSource &v, int64_t requests) {
  std::vector<double> bias = randomPerHead(rng, requests, -1.0, 1.0);
  v.captures = {{"bias", f32Vector(bias)}};
  std::string type = "memref<" + std::to_string(requests) + "xf32>";
  v.scoreMod = "^bb0(%s: f32, %b: index, %h: index, %p: index, %j: index):\n"
               "      %x = memref.load $bias[%b] : " +
               type +
               "\n"
               "      %r = arith.addf %s, %x : f32\n"
               "      kv.yield %r : f32";
  v.maskMod = R"(^bb0(%b: index, %h: index, %p: index, %j: index):
      %bp = arith.addi %b, %p : index
      %bpj = arith.addi %bp, %j : index
      %c4 = arith.constant 4 : index
      %r = arith.remui %bpj, %c4 : index
      %c0 = arith.constant 0 : index
      %keep = arith.cmpi ne, %r, %c0 : index
      kv.yield %keep : i1)";
  params.scoreMod = [bias](double s, int64_t b, int64_t, int64_t, int64_t) {
    return s + double(float(bias[b]));
  };
  params.maskMod = [](int64_t b, int64_t, int64_t p, int64_t j) {
    return (b + p + j) % 4 != 0;
  };
}

void kvir::test::addSoftCapWindowRegions(ref::AttentionParams &params,
                                         VariantSource &source, double cap,
                                         int64_t windowLeft) {
  char capText[32];
  std::snprintf(capText, sizeof(capText), "%.9e", cap);
  source.scoreMod =
      "^bb0(%s: f32, %b: index, %h: index, %p: index, %j: index):\n"
      "      %cap = arith.constant " +
      std::string(capText) +
      " : f32\n"
      "      %x = arith.divf %s, %cap : f32\n"
      "      %t = math.tanh %x : f32\n"
      "      %r = arith.mulf %cap, %t : f32\n"
      "      kv.yield %r : f32";
  source.maskMod = "^bb0(%b: index, %h: index, %p: index, %j: index):\n"
                   "      %w = arith.constant " +
                   std::to_string(windowLeft) +
                   " : index\n"
                   "      %d = arith.subi %p, %j : index\n"
                   "      %in = arith.cmpi sle, %d, %w : index\n"
                   "      kv.yield %in : i1";
  // The reference states the built-ins: c tanh(s / c), and j >= p - w.
  double c = float(cap);
  params.scoreMod = [c](double s, int64_t, int64_t, int64_t, int64_t) {
    return c * std::tanh(s / c);
  };
  params.maskMod = [windowLeft](int64_t, int64_t, int64_t p, int64_t j) {
    return j >= p - windowLeft;
  };
}

std::string kvir::test::attentionAttrs(const ref::AttentionParams &params,
                                       bool withCausal, bool standardAlibi) {
  std::vector<std::string> attrs;
  if (standardAlibi)
    attrs.push_back("alibi");
  char buf[96];
  if (params.smScale) {
    std::snprintf(buf, sizeof(buf), "sm_scale = %.9e : f32",
                  static_cast<float>(*params.smScale));
    attrs.push_back(buf);
  }
  if (params.softCap) {
    std::snprintf(buf, sizeof(buf), "logits_soft_cap = %.9e : f32",
                  static_cast<float>(*params.softCap));
    attrs.push_back(buf);
  }
  if (params.windowLeft)
    attrs.push_back("window_left = " + std::to_string(*params.windowLeft) +
                    " : i64");
  if (params.rope)
    attrs.push_back("rope = " + ropeAttrText(*params.rope));
  if (withCausal && params.causal)
    attrs.push_back("causal");
  if (attrs.empty())
    return "";
  std::string s = "{";
  for (size_t i = 0; i < attrs.size(); ++i)
    s += (i ? ", " : "") + attrs[i];
  return s + "}";
}

kvir::ref::AttentionParams kvir::test::asKernelSees(kvir::ref::AttentionParams params) {
  if (params.smScale)
    params.smScale = static_cast<float>(*params.smScale);
  if (params.softCap)
    params.softCap = static_cast<float>(*params.softCap);
  for (double &sink : params.sinks)
    sink = static_cast<float>(sink);
  for (double &slope : params.alibiSlopes)
    slope = static_cast<float>(slope);
  return params;
}

//===----------------------------------------------------------------------===//
// Running and comparing
//===----------------------------------------------------------------------===//

StateBuffers kvir::test::makeStateBuffers(int64_t rows, int64_t heads,
                                          int64_t headDimV, DType dtype,
                                          int64_t partitions) {
  Index o{rows, heads, headDimV}, lse{rows, heads};
  if (partitions) {
    o.insert(o.begin(), partitions);
    lse.insert(lse.begin(), partitions);
  }
  return {Tensor(dtype, o), Tensor(DType::F32, lse)};
}

void kvir::test::emitStore(KernelSource &src, const std::string &state,
                           const std::string &stateType,
                           const StateBuffers &buffers) {
  bool partitioned = buffers.o.rank() == 4;
  std::vector<bool> oDyn(buffers.o.rank(), false), lDyn(buffers.lse.rank(), false);
  oDyn[0] = lDyn[0] = true;
  if (partitioned)
    oDyn[1] = lDyn[1] = true;
  std::string o = src.addMemref("out", buffers.o, oDyn);
  std::string lse = src.addMemref("lse", buffers.lse, lDyn);
  src.addLine("kv.store_state " + state + ", " + o + ", " + lse + " : " +
              stateType + ", " + src.typeOf(o) + ", " + src.typeOf(lse));
}

::testing::AssertionResult
kvir::test::runKernel(const KernelSource &src,
                      const std::vector<Tensor> &outputs) {
  for (Tensor t : outputs)
    t.poison();
  std::string text = src.text();
  auto kernel = getKernel(text, src.getName());
  if (!kernel)
    return ::testing::AssertionFailure() << llvm::toString(kernel.takeError());
  if (llvm::Error err = (*kernel)->call(src.args()))
    return ::testing::AssertionFailure()
           << "call failed: " << llvm::toString(std::move(err)) << "\n"
           << text;
  return ::testing::AssertionSuccess();
}

double kvir::test::outputTolerance(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return 1e-5;
  case DType::F16:
    return 2e-3;
  case DType::BF16:
    return 1.6e-2;
  default:
    return 0.0;
  }
}

bool kvir::test::lseMatches(double got, double ref, DType outputType) {
  if (ref == -std::numeric_limits<double>::infinity())
    return got == ref;
  if (!std::isfinite(got))
    return false;
  if (outputType == DType::F32)
    return std::fabs(got - ref) <= 1e-5 * std::max(1.0, std::fabs(ref));
  return std::fabs(got - ref) <= 1e-3;
}

::testing::AssertionResult
kvir::test::compareState(const StateBuffers &got, const kvir::ref::State &expected,
                         DType outputType, int64_t partition) {
  double tol = outputTolerance(outputType);
  auto prefix = [&](Index index) {
    if (partition >= 0)
      index.insert(index.begin(), partition);
    return index;
  };
  int64_t rows = expected.rows, heads = expected.heads, dv = expected.headDimV;
  int64_t dim0 = partition >= 0 ? got.o.dim(1) : got.o.dim(0);
  if (dim0 != rows || got.o.dim(got.o.rank() - 2) != heads ||
      got.o.dim(got.o.rank() - 1) != dv)
    return ::testing::AssertionFailure() << "state buffer shape mismatch";
  int failures = 0;
  double worst = 0.0;
  std::ostringstream os;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      double refLse = expected.lseAt(r, h);
      double gotLse = got.lse.get(prefix({r, h}));
      bool empty = refLse == -std::numeric_limits<double>::infinity();
      double refMax = 0.0, err = 0.0;
      int64_t worstD = 0;
      bool exact = true;
      for (int64_t d = 0; d < dv; ++d) {
        double g = got.o.get(prefix({r, h, d}));
        double e = expected.out(r, h, d);
        refMax = std::max(refMax, std::fabs(e));
        double diff = std::fabs(g - e);
        if (std::isnan(g))
          diff = std::numeric_limits<double>::infinity();
        if (g != 0.0)
          exact = false;
        if (diff > err || (d == 0 && diff == err)) {
          err = diff;
          worstD = d;
        }
      }
      double rel = err / std::max(refMax, 1e-4);
      bool ok = empty ? exact && gotLse == refLse
                      : rel <= tol && lseMatches(gotLse, refLse, outputType);
      if (!empty)
        worst = std::max(worst, rel);
      if (!ok && failures++ < 8) {
        os << "  row " << r << " head " << h << ": lse got " << gotLse
           << " ref " << refLse;
        if (empty)
          os << " (empty key set: needs o == 0 and lse == -inf)";
        os << "; o rel err " << rel << " (tol " << tol << ") worst at d = "
           << worstD << ": got " << got.o.get(prefix({r, h, worstD}))
           << " ref " << expected.out(r, h, worstD) << "\n";
      }
    }
  if (failures)
    return ::testing::AssertionFailure()
           << failures << " of " << rows * heads
           << " (row, head) pairs differ from the reference"
           << (partition >= 0 ? " in partition " + std::to_string(partition)
                              : std::string())
           << ":\n"
           << os.str();
  return ::testing::AssertionSuccess() << "max rel err " << worst;
}

::testing::AssertionResult kvir::test::check(::testing::AssertionResult result) {
  static bool verbose = std::getenv("KVIR_UNIT_VERBOSE") != nullptr;
  if (verbose && result)
    std::printf("    [%s] %s\n",
                ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                result.message());
  return result;
}

void kvir::test::storeState(const ref::State &state, StateBuffers &buffers,
                            int64_t partition) {
  auto prefix = [&](Index index) {
    if (partition >= 0)
      index.insert(index.begin(), partition);
    return index;
  };
  for (int64_t r = 0; r < state.rows; ++r)
    for (int64_t h = 0; h < state.heads; ++h) {
      buffers.lse.set(prefix({r, h}), state.lseAt(r, h));
      for (int64_t d = 0; d < state.headDimV; ++d)
        buffers.o.set(prefix({r, h, d}), state.out(r, h, d));
    }
}

std::optional<CacheQuant> kvir::test::parseCacheQuant(const std::string &name) {
  if (name == "f16")
    return CacheQuant{};
  if (name == "fp8_e4m3")
    return CacheQuant{Quant::FP8E4M3, 0};
  if (name == "fp8_e5m2")
    return CacheQuant{Quant::FP8E5M2, 0};
  if (name == "int8_g8")
    return CacheQuant{Quant::Int8Group, 8};
  if (name == "int8_g16")
    return CacheQuant{Quant::Int8Group, 16};
  return std::nullopt;
}

std::string kvir::test::describe(const CacheSpec &spec) {
  std::ostringstream os;
  os << pagedTypeText(spec);
  return os.str();
}
