//===- PagedTileLoader.cpp - K/V tiles of a paged cache -------------------===//
#include "kvir/Codegen/PagedTileLoader.h"
#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;

PagedTileLoader::PagedTileLoader(kv::PagedOperands kv, Value req,
                                 Value tableBase, Value kvHead,
                                 int64_t tileTokens, Value pageIds)
    : kv(std::move(kv)), req(req), tableBase(tableBase), kvHead(kvHead),
      pageIds(pageIds), tileTokens(tileTokens) {}

PagedTileLoader::PagedTileLoader(RaggedOperands ragged, Value tableBase,
                                 Value kvHead, int64_t tileTokens)
    : ragged(ragged), tableBase(tableBase), kvHead(kvHead),
      tileTokens(tileTokens) {}

std::optional<std::pair<Value, Value>>
PagedTileLoader::locateInTile(ImplicitLocOpBuilder &b, Value tile0, Value r,
                              Value count, Value idSlot) const {
  if (!inTile || gathers() || !stagesPageIds() ||
      kv.type.getTable() == kv::TableForm::token_table)
    return std::nullopt;
  // In 32 bits: tokens of a request (i32 lengths), rows and pages of a
  // tile.
  IRBuilder ir{b};
  Value pageSize = ir.i32(kv.type.getPageSize());
  // Row r's slot and page of the tile, counted from the tile's first page.
  Value firstSlot = ir.remU(ir.toI32(tile0), pageSize);
  Value x = ir.add(firstSlot, ir.toI32(r));
  Value slot = ir.remU(x, pageSize);
  Value page = ir.divU(x, pageSize);
  // Rows past the tile's tokens read its last page (count >= 1): their
  // copies read nothing, but their address lies in the pool.
  Value last =
      ir.divU(ir.add(firstSlot, ir.sub(ir.toI32(count), ir.i32(1))), pageSize);
  // (Unsigned: the index's high bits are known zero.)
  auto toIndex = [&](Value v) {
    return arith::IndexCastUIOp::create(b, b.getIndexType(), v).getResult();
  };
  page = toIndex(arith::MinUIOp::create(b, page, last));
  Value entry = ir.toIndex(
      memref::LoadOp::create(b, pageIds, pageIdIndices(idSlot, page)));
  return std::make_pair(entry, toIndex(slot));
}

void PagedTileLoader::setGather(TokenGather g) {
  assert(kv.type && "gathering reads paged views");
  gather = g;
}

Value PagedTileLoader::keyOf(ImplicitLocOpBuilder &b, Value idSlot,
                             Value tile0, Value t) const {
  IRBuilder ir{b};
  if (!gathers())
    return ir.add(tile0, t);
  return ir.toIndex(memref::LoadOp::create(
      b, gather.keyIds,
      ValueRange{idSlot, ir.minS(t, ir.idx(tileTokens - 1))}));
}

Value PagedTileLoader::holdsKey(ImplicitLocOpBuilder &b, Value idSlot, Value r,
                                Value count) const {
  IRBuilder ir{b};
  Value key = keyOf(b, idSlot, Value(), r);
  return arith::AndIOp::create(
      b, ir.lt(r, count), ir.cmp(arith::CmpIPredicate::sge, key, ir.idx(0)));
}

int64_t PagedTileLoader::pagesPerTile(int64_t pageSize, int64_t tileTokens) {
  return std::min(tileTokens, (tileTokens - 1 + pageSize - 1) / pageSize + 1);
}

std::pair<Value, Value> PagedTileLoader::pageSpan(ImplicitLocOpBuilder &b,
                                                  Value tile0,
                                                  Value count) const {
  IRBuilder ir{b};
  Value p = ir.idx(kv.type.getPageSize());
  Value page0 = ir.divU(tile0, p);
  Value lastPage = ir.divU(ir.sub(ir.add(tile0, count), ir.idx(1)), p);
  return {page0, ir.add(ir.sub(lastPage, page0), ir.idx(1))};
}

Value PagedTileLoader::toEntryType(ImplicitLocOpBuilder &b,
                                   Value entry) const {
  return arith::IndexCastOp::create(
      b, cast<MemRefType>(pageIds.getType()).getElementType(), entry);
}

bool PagedTileLoader::stagesPageIds() const {
  return kv.type && kv.type.getTable() != kv::TableForm::token_offset;
}

void PagedTileLoader::stagePageIds(ImplicitLocOpBuilder &b, Value tile0,
                                   Value count, Value thread,
                                   int64_t numThreads) const {
  assert(!gathers() && "gathering stages keys into slots");
  if (!stagesPageIds())
    return;
  IRBuilder ir{b};
  Value page0, pages;
  std::tie(page0, pages) = pageSpan(b, tile0, count);
  scf::ForOp::create(
      b, thread, pages, ir.idx(numThreads), ValueRange{},
      [&](OpBuilder &nb, Location loc, Value i, ValueRange) {
        ImplicitLocOpBuilder ib(loc, nb);
        IRBuilder j{ib};
        Value entry =
            kv::emitPageEntry(ib, kv, req, tableBase, j.add(page0, i));
        memref::StoreOp::create(ib, toEntryType(ib, entry), pageIds,
                                pageIdIndices(j.idx(0), i));
        scf::YieldOp::create(ib);
      });
}

bool PagedTileLoader::hasPageIdSlots() const {
  return pageIds && cast<MemRefType>(pageIds.getType()).getRank() == 2;
}

SmallVector<Value> PagedTileLoader::pageIdIndices(Value idSlot, Value i) const {
  if (hasPageIdSlots())
    return {idSlot, i};
  return {i};
}

void PagedTileLoader::stagePageIdsAsync(ImplicitLocOpBuilder &b, Value slot,
                                        Value tile0, Value count, Value thread,
                                        int64_t numThreads) const {
  if (gathers()) {
    // A key's page entry depends on the key: two dependent loads, not one
    // copy.
    storePageIds(b, slot,
                 loadPageIds(b, arith::ConstantIntOp::create(b, 1, 1), tile0,
                             count, thread, numThreads),
                 thread, numThreads);
    return;
  }
  if (!stagesPageIds())
    return;
  assert(hasPageIdSlots() && "asynchronous staging needs page-id slots");
  IRBuilder ir{b};
  Value page0, pages;
  std::tie(page0, pages) = pageSpan(b, tile0, count);
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  int64_t maxPages = pagesPerTile(kv.type.getPageSize(), tileTokens);
  // At most maxPages entries: whole rounds of the block, the last guarded.
  for (int64_t k = 0; k * numThreads < maxPages; ++k) {
    Value i = ir.add(thread, ir.idx(k * numThreads));
    scf::IfOp::create(b, ir.lt(i, pages), [&](OpBuilder &nb, Location loc) {
      ImplicitLocOpBuilder jb(loc, nb);
      IRBuilder j{jb};
      auto [table, indices] =
          kv::emitPageEntryAddress(jb, kv, req, tableBase, j.add(page0, i));
      nvgpu::DeviceAsyncCopyOp::create(jb, tokenType, pageIds,
                                       pageIdIndices(slot, i), table, indices,
                                       jb.getIndexAttr(1), Value(),
                                       /*bypassL1=*/UnitAttr());
      scf::YieldOp::create(jb);
    });
  }
}

std::pair<Value, Value> PagedTileLoader::locate(ImplicitLocOpBuilder &b,
                                                Value token, Value tile0,
                                                Value idSlot) const {
  IRBuilder ir{b};
  Value entry;
  if (gathers()) {
    // Entry e of the tile: its key (none: key 0, read by nobody) and the
    // entry of the key's page.
    Value e = ir.sub(token, tile0);
    Value key = ir.maxS(keyOf(b, idSlot, tile0, e), ir.idx(0));
    if (stagesPageIds())
      entry = ir.toIndex(
          memref::LoadOp::create(b, pageIds, pageIdIndices(idSlot, e)));
    return kv::emitLocateFromEntry(b, kv.type, entry, tableBase, key);
  }
  if (stagesPageIds()) {
    Value page0 = ir.divU(tile0, ir.idx(kv.type.getPageSize()));
    Value lp = ir.sub(ir.divU(token, ir.idx(kv.type.getPageSize())), page0);
    entry = ir.toIndex(
        memref::LoadOp::create(b, pageIds, pageIdIndices(idSlot, lp)));
  }
  return kv::emitLocateFromEntry(b, kv.type, entry, tableBase, token);
}

std::pair<Value, SmallVector<Value>>
PagedTileLoader::source(ImplicitLocOpBuilder &b, kv::PoolRole role,
                        Value token, Value page, Value slot, Value dim) const {
  IRBuilder ir{b};
  if (!kv.type) {
    Value buffer = role == kv::PoolRole::K ? ragged.k : ragged.v;
    return {buffer, {ir.add(tableBase, token), kvHead, dim}};
  }
  return {kv.pool(role),
          kv::emitPoolIndices(b, kv.type, role, page, slot, kvHead, dim)};
}

std::pair<Value, SmallVector<Value>>
PagedTileLoader::address(ImplicitLocOpBuilder &b, kv::PoolRole role,
                         Value token, Value tile0, Value dim,
                         Value idSlot) const {
  Value page, slot;
  if (kv.type)
    std::tie(page, slot) = locate(b, token, tile0, idSlot);
  return source(b, role, token, page, slot, dim);
}

SmallVector<Value> PagedTileLoader::loadPageIds(ImplicitLocOpBuilder &b,
                                              Value valid, Value tile0,
                                              Value count, Value thread,
                                              int64_t numThreads) const {
  SmallVector<Value> entries;
  if (gathers())
    return loadGatheredIds(b, valid, tile0, count, thread, numThreads);
  if (!stagesPageIds())
    return entries;
  IRBuilder ir{b};
  Value page0, pages;
  std::tie(page0, pages) = pageSpan(b, tile0, count);
  int64_t maxPages = pagesPerTile(kv.type.getPageSize(), tileTokens);
  for (int64_t k = 0; k * numThreads < maxPages; ++k) {
    Value i = ir.add(thread, ir.idx(k * numThreads));
    Value needed = arith::AndIOp::create(b, valid, ir.lt(i, pages));
    entries.push_back(
        scf::IfOp::create(
            b, needed,
            [&](OpBuilder &nb, Location loc) {
              ImplicitLocOpBuilder jb(loc, nb);
              IRBuilder j{jb};
              Value entry =
                  kv::emitPageEntry(jb, kv, req, tableBase, j.add(page0, i));
              scf::YieldOp::create(jb, ValueRange{toEntryType(jb, entry)});
            },
            [&](OpBuilder &nb, Location loc) {
              ImplicitLocOpBuilder jb(loc, nb);
              scf::YieldOp::create(
                  jb, ValueRange{toEntryType(jb, IRBuilder{jb}.idx(0))});
            })
            .getResult(0));
  }
  return entries;
}

SmallVector<Value> PagedTileLoader::loadGatheredIds(ImplicitLocOpBuilder &b,
                                                  Value valid, Value tile0,
                                                  Value count, Value thread,
                                                  int64_t numThreads) const {
  IRBuilder ir{b};
  SmallVector<Value> entries;
  Type i32 = b.getI32Type();
  Type entryType =
      pageIds ? cast<MemRefType>(pageIds.getType()).getElementType() : i32;
  for (int64_t k = 0; k * numThreads < tileTokens; ++k) {
    Value i = ir.add(thread, ir.idx(k * numThreads));
    Value needed = arith::AndIOp::create(b, valid, ir.lt(i, count));
    auto none = [&](OpBuilder &nb, Location loc) {
      ImplicitLocOpBuilder jb(loc, nb);
      IRBuilder j{jb};
      SmallVector<Value> values{j.i32(-1)};
      if (stagesPageIds())
        values.push_back(arith::ConstantOp::create(
            jb, entryType, jb.getIntegerAttr(entryType, 0)));
      scf::YieldOp::create(jb, values);
    };
    // Entry i's key, and its page's entry; -1 (and no table read) for
    // padding and keys outside the request.
    auto loaded = scf::IfOp::create(
        b, needed,
        [&](OpBuilder &nb, Location loc) {
          ImplicitLocOpBuilder jb(loc, nb);
          IRBuilder j{jb};
          Value key = j.toIndex(memref::LoadOp::create(
              jb, gather.selected, ValueRange{gather.row, j.add(tile0, i)}));
          Value inRange = arith::AndIOp::create(
              jb, j.cmp(arith::CmpIPredicate::sge, key, j.idx(0)),
              j.lt(key, gather.kvLen));
          auto found = scf::IfOp::create(
              jb, inRange,
              [&](OpBuilder &nb2, Location l2) {
                ImplicitLocOpBuilder kb(l2, nb2);
                IRBuilder x{kb};
                SmallVector<Value> values{x.toI32(key)};
                if (stagesPageIds())
                  values.push_back(toEntryType(
                      kb, kv::emitPageEntry(
                              kb, kv, req, tableBase,
                              x.divU(key, x.idx(kv.type.getPageSize())))));
                scf::YieldOp::create(kb, values);
              },
              none);
          scf::YieldOp::create(jb, found.getResults());
        },
        none);
    llvm::append_range(entries, loaded.getResults());
  }
  return entries;
}

void PagedTileLoader::storePageIds(ImplicitLocOpBuilder &b, Value slot,
                                   ArrayRef<Value> entries, Value thread,
                                   int64_t numThreads) const {
  IRBuilder ir{b};
  if (gathers()) {
    // (key[, page entry]) per token of the tile.
    size_t width = stagesPageIds() ? 2 : 1;
    for (size_t k = 0; k * width < entries.size(); ++k) {
      Value i = ir.add(thread, ir.idx(k * numThreads));
      auto store = [&](ImplicitLocOpBuilder &jb) {
        memref::StoreOp::create(jb, entries[k * width], gather.keyIds,
                                ValueRange{slot, i});
        if (width == 2)
          memref::StoreOp::create(jb, entries[k * width + 1], pageIds,
                                  pageIdIndices(slot, i));
      };
      if (int64_t(k + 1) * numThreads <= tileTokens)
        store(b);
      else
        emitIf(b, ir.lt(i, ir.idx(tileTokens)), store);
    }
    return;
  }
  int64_t maxPages = pagesPerTile(kv.type.getPageSize(), tileTokens);
  for (size_t k = 0; k < entries.size(); ++k) {
    Value entry = entries[k], i = ir.add(thread, ir.idx(k * numThreads));
    auto store = [&](ImplicitLocOpBuilder &jb) {
      memref::StoreOp::create(jb, entry, pageIds, pageIdIndices(slot, i));
    };
    if (int64_t(k + 1) * numThreads <= maxPages) {
      store(b);
      continue;
    }
    scf::IfOp::create(b, ir.lt(i, ir.idx(maxPages)),
                      [&](OpBuilder &nb, Location loc) {
                        ImplicitLocOpBuilder jb(loc, nb);
                        store(jb);
                        scf::YieldOp::create(jb);
                      });
  }
}

void PagedTileLoader::copyTile(ImplicitLocOpBuilder &b,
                               ArrayRef<TileCopy> copies, Value stage,
                               Value tile0, Value count, Value thread,
                               int64_t numThreads, int64_t vec,
                               const Dequantize &dequantize,
                               Value idSlot) const {
  IRBuilder ir{b};
  int64_t width = copies.front().width, rows = copies.front().tile.rows;
  assert(llvm::all_of(copies,
                      [&](const TileCopy &c) {
                        return c.width == width && c.tile.rows == rows;
                      }) &&
         "copies of one call share their shape");
  int64_t vecsPerRow = width / vec;
  if (!idSlot && (hasPageIdSlots() || gathers()))
    idSlot = stage;
  scf::ForOp::create(
      b, thread, ir.idx(rows * vecsPerRow), ir.idx(numThreads), ValueRange{},
      [&](OpBuilder &nb, Location loc, Value i, ValueRange) {
        ImplicitLocOpBuilder jb(loc, nb);
        IRBuilder j{jb};
        Value t = j.divU(i, j.idx(vecsPerRow));
        Value c = j.mul(j.remU(i, j.idx(vecsPerRow)), j.idx(vec));
        SmallVector<Type> types;
        for (const TileCopy &copy : copies)
          types.push_back(VectorType::get(
              {vec}, cast<MemRefType>(copy.tile.memref.getType())
                         .getElementType()));
        // Rows past the tile's tokens (or of no key) are zeros, read from
        // nowhere.
        auto rowsOrZeros = scf::IfOp::create(
            jb, gathers() ? holdsKey(jb, idSlot, t, count) : j.lt(t, count),
            [&](OpBuilder &nb2, Location l2) {
              ImplicitLocOpBuilder kb(l2, nb2);
              Value token = IRBuilder{kb}.add(tile0, t);
              Value page, slot;
              if (kv.type)
                std::tie(page, slot) = locate(kb, token, tile0, idSlot);
              SmallVector<Value> values;
              for (const TileCopy &copy : copies) {
                auto [from, indices] =
                    source(kb, copy.role, token, page, slot, c);
                Type stored = cast<MemRefType>(from.getType()).getElementType();
                auto load = vector::LoadOp::create(
                    kb, VectorType::get({vec}, stored), from, indices);
                load.setAlignment(vec * stored.getIntOrFloatBitWidth() / 8);
                Value v = load;
                if (dequantize)
                  v = dequantize(kb, v, copy.role, page, slot, c);
                values.push_back(v);
              }
              scf::YieldOp::create(kb, values);
            },
            [&](OpBuilder &nb2, Location l2) {
              SmallVector<Value> zeros;
              for (Type type : types)
                zeros.push_back(arith::ConstantOp::create(
                    nb2, l2, type, nb2.getZeroAttr(type)));
              scf::YieldOp::create(nb2, l2, zeros);
            });
        for (auto [copy, v] : llvm::zip(copies, rowsOrZeros.getResults())) {
          Type tileElt =
              cast<MemRefType>(copy.tile.memref.getType()).getElementType();
          auto store = vector::StoreOp::create(
              jb, v, copy.tile.memref,
              copy.tile.elementIndices(jb, stage, t, c));
          store.setAlignment(vec * tileElt.getIntOrFloatBitWidth() / 8);
        }
        scf::YieldOp::create(jb);
      });
}

void codegen::commitAsyncCopies(ImplicitLocOpBuilder &b) {
  NVVM::CpAsyncCommitGroupOp::create(b);
}

void codegen::waitAsyncCopies(ImplicitLocOpBuilder &b, int64_t pending) {
  NVVM::CpAsyncWaitGroupOp::create(b, pending);
}

int64_t codegen::chunksPerThreadRow(int64_t rows, int64_t chunks,
                                    int64_t numThreads,
                                    int64_t maxChunksPerThreadRow) {
  int64_t perRow = 1;
  for (int64_t g = 2; g <= std::min<int64_t>(4, maxChunksPerThreadRow); ++g)
    if (chunks % g == 0 && (chunks / g) % 8 == 0 &&
        rows * chunks / g >= numThreads)
      perRow = g;
  return perRow;
}

void codegen::copyRowsAsync(
    ImplicitLocOpBuilder &b, const SharedTile &tile, Value stage, int64_t width,
    Value thread, int64_t numThreads, const RowSource &source,
    function_ref<Value(ImplicitLocOpBuilder &, Value)> valid, bool dimInnermost,
    int64_t maxChunksPerThreadRow) {
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  int64_t ce = tile.chunkElements();
  int64_t chunks = width / ce;
  // A thread takes `perRow` chunks of one row, `span` chunks apart: it
  // locates a row once for all of them, and a warp's phase of 8 threads
  // still writes an aligned group of 8 chunks of one row. Where the dim is the
  // source's last index, the other chunks' sources are the first's moved;
  // otherwise all are formed before any copy (so that CSE shares the row's
  // lookups).
  int64_t perRow =
      chunksPerThreadRow(tile.rows, chunks, numThreads, maxChunksPerThreadRow);
  int64_t span = chunks / perRow;
  // A round's rows located: its chunks, their sources and source size.
  struct Located {
    Value row, srcElements;
    SmallVector<Value> chunks;
    SmallVector<std::pair<Value, SmallVector<Value>>> sources;
  };
  auto locate = [&](ImplicitLocOpBuilder &jb, Value i) {
    IRBuilder j{jb};
    Located l;
    l.row = j.divU(i, j.idx(span));
    Value c0 = j.remU(i, j.idx(span));
    for (int64_t m = 0; m < perRow; ++m) {
      l.chunks.push_back(j.add(c0, j.idx(m * span)));
      if (m == 0 || !dimInnermost) {
        l.sources.push_back(
            source(jb, l.row, j.mul(l.chunks.back(), j.idx(ce))));
        continue;
      }
      l.sources.push_back(l.sources.front());
      l.sources.back().second.back() =
          j.add(l.sources.back().second.back(), j.idx(m * span * ce));
    }
    l.srcElements = j.select(valid(jb, l.row), j.idx(ce), j.idx(0));
    return l;
  };
  auto copy = [&](ImplicitLocOpBuilder &jb, const Located &l) {
    for (auto [c, from] : llvm::zip(l.chunks, l.sources))
      nvgpu::DeviceAsyncCopyOp::create(
          jb, tokenType, tile.memref, tile.chunkIndices(jb, stage, l.row, c),
          from.first, from.second, jb.getIndexAttr(ce), l.srcElements,
          /*bypassL1=*/tile.chunkBytes == 16 ? jb.getUnitAttr() : UnitAttr());
  };
  // Every whole round's rows are located (their page entries read from
  // shared memory) before any of its copies is issued: a copy writes
  // shared memory, so ptxas keeps each later entry read behind it and pads
  // every read that follows a copy (three `@!PT LDS` on sm_80) where one
  // group of reads pays it once.
  int64_t items = tile.rows * span, whole = items / numThreads;
  IRBuilder ir{b};
  SmallVector<Located> rounds;
  for (int64_t k = 0; k < whole; ++k)
    rounds.push_back(locate(b, ir.add(thread, ir.idx(k * numThreads))));
  for (const Located &l : rounds)
    copy(b, l);
  if (whole * numThreads < items) {
    Value item = ir.add(thread, ir.idx(whole * numThreads));
    emitIf(b, ir.lt(item, ir.idx(items)),
           [&](ImplicitLocOpBuilder &jb) { copy(jb, locate(jb, item)); });
  }
}

void PagedTileLoader::copyTileTransposedAsync(
    ImplicitLocOpBuilder &b, kv::PoolRole role, const SharedTile &tile,
    Value stage, Value tile0, Value count, int64_t width, Value thread,
    int64_t numThreads, Value idSlot) const {
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  int64_t ce = tile.chunkElements();
  assert(kv.type && kv.type.getPageSize() % ce == 0 &&
         "transposed chunks stay within a page");
  assert(!gathers() && "transposed chunks are consecutive tokens");
  int64_t chunksPerDim = tileTokens / ce, total = width * chunksPerDim;
  if (!hasPageIdSlots())
    idSlot = Value();
  else if (!idSlot)
    idSlot = stage;
  auto emit = [&](ImplicitLocOpBuilder &jb, Value i) {
    IRBuilder j{jb};
    // Consecutive threads take consecutive chunks of one dim: a warp's
    // request covers whole 32-byte sectors of a page's slots.
    Value dim = j.divU(i, j.idx(chunksPerDim));
    Value first = j.mul(j.remU(i, j.idx(chunksPerDim)), j.idx(ce));
    Value valid = j.minS(j.maxS(j.sub(count, first), j.idx(0)), j.idx(ce));
    // A chunk of no valid token reads nothing, from the tile's first token.
    Value token =
        j.add(tile0, j.select(j.lt(first, count), first, j.idx(0)));
    auto [page, slot] = locate(jb, token, tile0, idSlot);
    auto [from, indices] = source(jb, role, token, page, slot, dim);
    nvgpu::DeviceAsyncCopyOp::create(
        jb, tokenType, tile.memref, tile.elementIndices(jb, stage, dim, first),
        from, indices, jb.getIndexAttr(ce), valid,
        /*bypassL1=*/tile.chunkBytes == 16 ? jb.getUnitAttr() : UnitAttr());
  };
  emitStrided(b, thread, numThreads, total, emit);
}

void PagedTileLoader::copyTileAsync(ImplicitLocOpBuilder &b,
                                    ArrayRef<TileCopy> copies, Value stage,
                                    Value tile0, Value count, Value thread,
                                    int64_t numThreads, Value idSlot) const {
  if (!idSlot && (hasPageIdSlots() || gathers()))
    idSlot = stage;
  for (const TileCopy &copy : copies) {
    // Rows past the tile's tokens read nothing (source size 0: the chunk
    // is zero-filled), from a clamped address inside the request.
    auto source = [&](ImplicitLocOpBuilder &jb, Value r, Value dim) {
      IRBuilder j{jb};
      if (auto located = locateInTile(jb, tile0, r, count, idSlot))
        return this->source(jb, copy.role, Value(), located->first,
                            located->second, dim);
      Value token =
          j.add(tile0, j.minS(r, j.maxS(j.sub(count, j.idx(1)), j.idx(0))));
      Value page, slot;
      if (kv.type)
        std::tie(page, slot) = locate(jb, token, tile0, idSlot);
      return this->source(jb, copy.role, token, page, slot, dim);
    };
    copyRowsAsync(
        b, copy.tile, stage, copy.width, thread, numThreads, source,
        [&](ImplicitLocOpBuilder &jb, Value r) -> Value {
          if (gathers())
            return holdsKey(jb, idSlot, r, count);
          // Rows of a tile: 32 bits.
          IRBuilder j{jb};
          return j.lt(j.toI32(r), j.toI32(count));
        },
        /*dimInnermost=*/!kv.type || kv::isDimInnermost(kv.type, copy.role),
        maxChunksPerThreadRow);
  }
}

std::pair<Value, Value> kvir::codegen::tileKeys(ImplicitLocOpBuilder &b,
                                                Value start, Value end,
                                                Value index,
                                                int64_t tileTokens) {
  IRBuilder ir{b};
  Value t0 = ir.add(start, ir.mul(index, ir.idx(tileTokens)));
  return {t0, ir.minS(ir.idx(tileTokens), ir.sub(end, t0))};
}
