//===- PagedTileLoader.h - K/V tiles of a paged cache -----------*- C++ -*-===//
//
// How a kernel brings the keys and values of one request into shared
// memory, one tile of consecutive tokens at a time:
//   - the table entries of the pages a tile touches are staged in shared
//     memory once per page (not once per token), and every token is
//     located through them (PagedAddressing's table forms and layouts);
//   - K/V rows arrive either by synchronous vector loads (`copyTile`, any
//     head-dim vector width the layout proves, with a dequantization hook
//     from the stored type) or by 16-byte cp.async copies into a (swizzled)
//     SharedTile of a multi-stage buffer (`copyTileAsync`): rows past the
//     tile's token count are zero-filled without reading memory, so a tile
//     never holds what a serving engine left in the pool.
// Works for paged views (any table form, any layout whose head dim is
// contiguous) and for ragged K/V.
//
// Gathering (top-k sparse selection): the tokens of a tile are entries of
// a row's key list rather than consecutive keys. Each staged entry holds
// its key (-1: none, for padding and keys outside the request) and, for
// page-table forms, the entry of that key's page; every copy locates its
// row through them and zero-fills the rows of no key without reading.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_PAGEDTILELOADER_H
#define KVIR_CODEGEN_PAGEDTILELOADER_H

#include "kvir/Codegen/SharedTile.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <functional>

namespace kvir::codegen {

/// Ragged K/V: K[nnz, H, D], V[nnz, H, Dv]; request b owns rows
/// indptr[b] .. indptr[b + 1].
struct RaggedOperands {
  mlir::Value k, v, indptr;
};

/// One destination of a tile copy: the K or V rows of the tile.
struct TileCopy {
  kv::PoolRole role;
  SharedTile tile;
  /// Dims of the row to copy.
  int64_t width = 0;
};

/// A gathering loader's key lists: token t of a tile is entry t of row
/// `row` of `selected` (i32 [rows, K]); entries outside [0, kvLen) select
/// nothing. `keyIds` (i32 [slots][tileTokens], shared) holds the staged
/// keys, slot by slot like the page entries.
struct TokenGather {
  mlir::Value selected, row, kvLen, keyIds;
};

class PagedTileLoader {
public:
  /// Maps a vector loaded from a pool (storage type) to the tile's element
  /// type; null: the types agree.
  using Dequantize = std::function<mlir::Value(
      mlir::ImplicitLocOpBuilder &, mlir::Value raw, kv::PoolRole role,
      mlir::Value page, mlir::Value slot, mlir::Value dim)>;

  /// A paged request. `pageIds` is an i32 shared buffer of at least
  /// pagesPerTile(page_size, tileTokens) entries (unused for token_offset),
  /// or [slots][entries] for a pipeline that stages the entries of a tile
  /// while earlier tiles are copied: the slot of a tile is its stage.
  PagedTileLoader(kv::PagedOperands kv, mlir::Value req, mlir::Value tableBase,
                  mlir::Value kvHead, int64_t tileTokens, mlir::Value pageIds);
  /// A ragged request starting at row `tableBase` of K and V.
  PagedTileLoader(RaggedOperands ragged, mlir::Value tableBase,
                  mlir::Value kvHead, int64_t tileTokens);

  /// Gathers the tile's tokens through `gather`'s key lists (paged views
  /// only; not with copyTileTransposedAsync). The page-id buffer then holds
  /// one entry per tile token: idEntriesPerTile(..., true).
  void setGather(TokenGather gather);
  bool gathers() const { return bool(gather.selected); }

  /// Whether copyTileAsync locates a tile's rows by locateInTile (fewer
  /// instructions a copy, 32-bit, but values kept over a K/V loop that a
  /// kernel at its register budget spills) rather than by locate.
  void setLocateInTile(bool on) { inTile = on; }
  /// The most chunks of a row one thread copies in copyTileAsync
  /// (chunksPerThreadRow; 4 unless set).
  void setMaxChunksPerThreadRow(int64_t max) { maxChunksPerThreadRow = max; }

  /// The most pages `tileTokens` consecutive tokens can touch, wherever
  /// they start.
  static int64_t pagesPerTile(int64_t pageSize, int64_t tileTokens);
  /// Page-id entries staged per tile: pagesPerTile, or one per token when
  /// gathering.
  static int64_t idEntriesPerTile(int64_t pageSize, int64_t tileTokens,
                                  bool gathers) {
    return gathers ? tileTokens : pagesPerTile(pageSize, tileTokens);
  }

  /// The key of row `t` of the tile starting at token `tile0` (index): tile0
  /// + t, or, gathering, the key staged in slot `idSlot` (-1: none).
  mlir::Value keyOf(mlir::ImplicitLocOpBuilder &b, mlir::Value idSlot,
                    mlir::Value tile0, mlir::Value t) const;
  /// Whether the tile's tokens are found through staged page entries.
  bool stagesPageIds() const;

  /// Stores the entries of the pages tokens [tile0, tile0 + count) touch,
  /// one table load per page, spread over `numThreads` threads (`thread`
  /// is this one). The caller places a barrier before the entries are used.
  void stagePageIds(mlir::ImplicitLocOpBuilder &b, mlir::Value tile0,
                    mlir::Value count, mlir::Value thread,
                    int64_t numThreads) const;

  /// Asynchronous: stages the table entries of the pages tokens
  /// [tile0, tile0 + count) touch into slot `slot` of a [slots][entries]
  /// page-id buffer with 4-byte cp.async copies, one per page, spread over
  /// `numThreads` threads; part of the caller's next commit group. A
  /// barrier after the group's wait makes them visible to every thread.
  void stagePageIdsAsync(mlir::ImplicitLocOpBuilder &b, mlir::Value slot,
                         mlir::Value tile0, mlir::Value count,
                         mlir::Value thread, int64_t numThreads) const;

  /// Page entries fetched into registers ahead of use: `loadPageIds`
  /// issues the global loads of the entries of the pages tokens
  /// [tile0, tile0 + count) touch (one per page, spread over `numThreads`
  /// threads; nothing when `valid` is false) and returns this thread's;
  /// `storePageIds` writes them into slot `slot` of a [slots][entries]
  /// page-id buffer. Work placed between the two hides the loads' latency;
  /// the caller places a barrier before the entries are used.
  llvm::SmallVector<mlir::Value>
  loadPageIds(mlir::ImplicitLocOpBuilder &b, mlir::Value valid,
              mlir::Value tile0, mlir::Value count, mlir::Value thread,
              int64_t numThreads) const;
  void storePageIds(mlir::ImplicitLocOpBuilder &b, mlir::Value slot,
                    llvm::ArrayRef<mlir::Value> entries, mlir::Value thread,
                    int64_t numThreads) const;

  /// Synchronous: copies dims [0, width) of the rows of tokens
  /// [tile0, tile0 + count) into stage `stage` of each destination tile,
  /// `vec` elements per load (the width the layout allows), and zeros into
  /// its rows [count, tile rows), spread over `numThreads` threads. Needs
  /// staged page ids (from slot `stage` with a [slots][entries] buffer).
  /// `idSlot`: the page-id slot of the tile's entries when it is not
  /// `stage` (a gathering pipeline keeps one more slot of keys than stages).
  void copyTile(mlir::ImplicitLocOpBuilder &b, llvm::ArrayRef<TileCopy> copies,
                mlir::Value stage, mlir::Value tile0, mlir::Value count,
                mlir::Value thread, int64_t numThreads, int64_t vec,
                const Dequantize &dequantize = nullptr,
                mlir::Value idSlot = {}) const;

  /// Asynchronous: issues cp.async copies, one of the tile's chunks each, of
  /// the rows of tokens [tile0, tile0 + count) into stage `stage` of each
  /// destination tile,
  /// zero-filling its rows [count, tile rows). The caller commits them as a
  /// group (commitAsyncCopies). Needs staged page ids (paged) and a head dim
  /// contiguous in the tiles' chunks; `count` >= 1. With a [slots][entries]
  /// page-id buffer, the tile's entries are read from slot `stage` (or
  /// `idSlot`, as copyTile).
  void copyTileAsync(mlir::ImplicitLocOpBuilder &b, llvm::ArrayRef<TileCopy> copies,
                mlir::Value stage, mlir::Value tile0, mlir::Value count,
                mlir::Value thread, int64_t numThreads,
                mlir::Value idSlot = {}) const;

  /// Asynchronous, for a pool whose consecutive slots of a page (not dims)
  /// are contiguous (vLLM's V pool [blocks, H, D, block]): copies dims
  /// [0, width) of the tile's tokens [tile0, tile0 + tileTokens) of `role`
  /// into stage `stage` of `tile`, transposed ([stages][dim][token]: row d
  /// holds dim d of the tile's tokens; rows may be padded past tileTokens),
  /// one chunk of tile.chunkElements() tokens of one dim per cp.async; tokens
  /// from `count` on are zero-filled (a chunk's source size stops at `count`).
  /// tile0 and the page size are multiples of the chunk's tokens, so that no
  /// chunk crosses a page; `count` >= 1. With a [slots][entries] page-id
  /// buffer, the tile's entries are read from slot `stage` (or `idSlot`).
  void copyTileTransposedAsync(mlir::ImplicitLocOpBuilder &b, kv::PoolRole role,
                               const SharedTile &tile, mlir::Value stage,
                               mlir::Value tile0, mlir::Value count,
                               int64_t width, mlir::Value thread,
                               int64_t numThreads,
                               mlir::Value idSlot = {}) const;

  /// The memref and indices of element `dim` of `role` at token `token`
  /// of the tile starting at `tile0` (staged page ids must be current for
  /// paged requests: in slot `idSlot` of a [slots][entries] buffer).
  std::pair<mlir::Value, llvm::SmallVector<mlir::Value>>
  address(mlir::ImplicitLocOpBuilder &b, kv::PoolRole role, mlir::Value token,
          mlir::Value tile0, mlir::Value dim, mlir::Value idSlot = {}) const;

private:
  /// loadPageIds when gathering: (key, page entry) per token of the tile.
  llvm::SmallVector<mlir::Value>
  loadGatheredIds(mlir::ImplicitLocOpBuilder &b, mlir::Value valid,
                  mlir::Value tile0, mlir::Value count, mlir::Value thread,
                  int64_t numThreads) const;
  /// `entry` (an index) as the staged page entries' type (the table's).
  mlir::Value toEntryType(mlir::ImplicitLocOpBuilder &b,
                          mlir::Value entry) const;
  /// The memref and indices of element `dim` of `role` for token `token`
  /// at (page, slot) (unused for ragged requests).
  std::pair<mlir::Value, llvm::SmallVector<mlir::Value>>
  source(mlir::ImplicitLocOpBuilder &b, kv::PoolRole role, mlir::Value token,
         mlir::Value page, mlir::Value slot, mlir::Value dim) const;
  /// (page, slot) of `token` of the tile starting at `tile0`, its entries
  /// in page-id slot `idSlot` (null: a 1-D buffer).
  std::pair<mlir::Value, mlir::Value>
  locate(mlir::ImplicitLocOpBuilder &b, mlir::Value token, mlir::Value tile0,
         mlir::Value idSlot = {}) const;
  /// (page, slot) of row `r` of the tile of `count` tokens from `tile0`
  /// whose page entries are in `idSlot`, for page tables of page ids (csr,
  /// block_table): the row's page of the tile from (tile0 % page_size + r)
  /// in 32 bits, rows past the tile's tokens on its last page (their copies
  /// read nothing, but their address lies in the pool). Null for other
  /// forms (locate).
  std::optional<std::pair<mlir::Value, mlir::Value>>
  locateInTile(mlir::ImplicitLocOpBuilder &b, mlir::Value tile0, mlir::Value r,
               mlir::Value count, mlir::Value idSlot) const;
  /// Gathering: whether row `r` of the tile holds a key (r < count and a
  /// key staged in `idSlot`).
  mlir::Value holdsKey(mlir::ImplicitLocOpBuilder &b, mlir::Value idSlot,
                       mlir::Value r, mlir::Value count) const;
  /// The first logical page tokens [tile0, tile0 + count) touch, and how
  /// many pages they touch (count >= 1).
  std::pair<mlir::Value, mlir::Value>
  pageSpan(mlir::ImplicitLocOpBuilder &b, mlir::Value tile0,
           mlir::Value count) const;
  /// The indices of entry `i` of page-id slot `idSlot`.
  llvm::SmallVector<mlir::Value> pageIdIndices(mlir::Value idSlot,
                                               mlir::Value i) const;
  bool hasPageIdSlots() const;

  kv::PagedOperands kv;
  RaggedOperands ragged;
  TokenGather gather;
  mlir::Value req, tableBase, kvHead, pageIds;
  int64_t tileTokens;
  bool inTile = false;
  int64_t maxChunksPerThreadRow = 4;
};

/// Where element `dim` of row `row` of a copy comes from: a memref and its
/// indices.
using RowSource = std::function<std::pair<mlir::Value, llvm::SmallVector<mlir::Value>>(
    mlir::ImplicitLocOpBuilder &, mlir::Value row, mlir::Value dim)>;

/// The chunks of one row each thread copies in copyRowsAsync of `rows`
/// rows of `chunks` chunks over `numThreads` threads: the most of 1 to 4
/// (at most `maxChunksPerThreadRow`) that divides the row into spans of a
/// multiple of 8 chunks (a warp's phase of 8 threads then writes 8
/// consecutive chunks of one row, an aligned group the swizzle permutes:
/// no bank conflicts) and keeps every thread busy.
int64_t chunksPerThreadRow(int64_t rows, int64_t chunks, int64_t numThreads,
                           int64_t maxChunksPerThreadRow = 4);

/// Issues cp.async copies of `tile`'s chunks (16 bytes bypass L1; 4 and 8
/// go through it, as PTX allows) of dims [0, width) of rows [0, tile.rows)
/// into stage `stage` of `tile` (null: no stage axis), spread over
/// `numThreads` threads: row r comes from `source(r, dim)` when `valid(r)`
/// (i1), else it is zero-filled and nothing is read (`source` must still
/// give an address, e.g. of a clamped row). Consecutive threads take
/// consecutive chunks of a row, so a warp's writes to a swizzled tile are
/// free of bank conflicts; each thread takes chunksPerThreadRow chunks of
/// a row, one span apart, locating it once. `dimInnermost`: `source`'s
/// last index is the dim (plus a constant), so a row's other chunks are
/// that index moved. Part of the caller's next commit group.
void copyRowsAsync(mlir::ImplicitLocOpBuilder &b, const SharedTile &tile,
                   mlir::Value stage, int64_t width, mlir::Value thread,
                   int64_t numThreads, const RowSource &source,
                   llvm::function_ref<mlir::Value(mlir::ImplicitLocOpBuilder &,
                                                  mlir::Value row)>
                       valid,
                   bool dimInnermost = false,
                   int64_t maxChunksPerThreadRow = 4);

/// Tile `index` of keys [start, end) cut into tiles of `tileTokens`: its
/// first key and its key count (the last tile's may be short).
std::pair<mlir::Value, mlir::Value> tileKeys(mlir::ImplicitLocOpBuilder &b,
                                             mlir::Value start, mlir::Value end,
                                             mlir::Value index,
                                             int64_t tileTokens);

/// cp.async.commit_group: the copies this thread issued since the last
/// commit form one group (possibly empty, so that a pipeline's wait depths
/// stay fixed at its ends).
void commitAsyncCopies(mlir::ImplicitLocOpBuilder &b);
/// cp.async.wait_group: blocks until at most `pending` of this thread's
/// groups are in flight. Copies of other threads need a barrier after.
void waitAsyncCopies(mlir::ImplicitLocOpBuilder &b, int64_t pending);

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_PAGEDTILELOADER_H
