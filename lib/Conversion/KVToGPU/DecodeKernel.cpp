//===- DecodeKernel.cpp - The batch-decode kernel -------------------------===//
//
// One block per (request, KV head, KV partition); threads (x, y, z) =
// (vector along the head dim, query head of the GQA group, token in
// flight), as the op's #kvgpu.decode says. Per block, thread 0 reads the
// request's table entries (kv_len and the table base) and the z == 0
// threads stage the group's queries, both through shared memory. Per tile,
// PagedTileLoader stages the page ids (once per page) and copies the K/V
// rows into shared memory with vector loads, once for the whole GQA group
// (vLLM's V pool transposed, then written as rows; fp8 / int8 codes as
// stored, converted in registers or once per tile for a group); every
// (y, z) then scores its tokens: a vector dot product reduced across x
// (WarpOps) and AttentionState's online update in base 2 (log2(e) folded
// into the query scale, ex2.approx, no libdevice). The z-lanes' partial
// states merge through shared memory. Split-KV: the split kernel takes one
// work item per block (blockIdx.x), a chunk of a request's visible keys,
// whose base-2 f32 partial state goes to the item's workspace row.
//
//===----------------------------------------------------------------------===//
#include "DecodeKernelParts.h"
#include "Patterns.h"

#include "kvir/Codegen/AttentionState.h"
#include "kvir/Codegen/IRBuilder.h"
#include "kvir/Codegen/LiveTileMarks.h"
#include "kvir/Codegen/PagedTileLoader.h"
#include "kvir/Codegen/Pipeline.h"
#include "kvir/Codegen/Rope.h"
#include "kvir/Codegen/SharedTile.h"
#include "kvir/Codegen/Variants.h"
#include "kvir/Codegen/WarpOps.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"
#include "kvir/Dialect/KV/Utils/Quantization.h"
#include "kvir/Dialect/KV/Utils/Search.h"
#include "kvir/Dialect/KV/Utils/Visibility.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace kvir;
using namespace kvir::codegen;
using namespace kvir::gpu_lowering;
using namespace kvir::gpu_lowering::decode;

void gpu_lowering::buildDecodeBody(const KernelFunc &kf,
                                   const DecodeKernelSpec &spec) {
  ImplicitLocOpBuilder b = kf.getBuilder();
  IRBuilder ir{b};
  SharedMemoryLayout layout;
  DecodeBuffers buf = buildLayout(spec, layout);
  kv::PagedType kvType = spec.kv;
  kvgpu::DecodeConfigAttr cfg = spec.config;
  int64_t headDim = kvType.getHeadDim(), group = spec.group();
  int64_t vec = cfg.getVector(), tx = cfg.getThreadsX(), tz = cfg.getThreadsZ();
  int64_t tile = cfg.getTileTokens(), numThreads = kf.getNumThreads();
  // K/V as stored (fp8 / int8 codes for quantized caches), and f32.
  Type elt = kvType.getStorageElementType(), f32 = b.getF32Type();
  bool fp8 = kvType.isFp8(), int8 = spec.int8Groups();

  Value q = kf.getArgument(0);
  unsigned next = 1;
  Value qoIndptr = spec.queryRows() ? kf.getArgument(next++) : Value();
  kv::PagedOperands kv = kv::PagedOperands::fromFlattened(
      kvType, kf.getArguments().slice(next, spec.kvTypes.size()));
  next += spec.kvTypes.size();
  Value positions = spec.positionsType ? kf.getArgument(next++) : Value();
  Value frameIndptr, framePositions;
  if (spec.framePositionsType) {
    frameIndptr = kf.getArgument(next++);
    framePositions = kf.getArgument(next++);
  }
  Value topk = spec.gathers() ? kf.getArgument(next++) : Value();
  Value workItems = spec.partitioned ? kf.getArgument(next++) : Value();
  Value out = kf.getArgument(next), lseOut = kf.getArgument(next + 1);
  Value finalOut = spec.partitioned ? kf.getArgument(next + 2) : out;
  Value finalLse = spec.partitioned ? kf.getArgument(next + 3) : lseOut;

  Value x = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value y = gpu::ThreadIdOp::create(b, gpu::Dimension::y);
  Value z = gpu::ThreadIdOp::create(b, gpu::Dimension::z);
  // The block's request (a decode) or query row (query rows: its request
  // comes from the search below).
  Value req = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value kvHead = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  // The thread's linear index in the block.
  Value lane =
      ir.add(x, ir.mul(ir.idx(tx), ir.add(y, ir.mul(ir.idx(group), z))));
  Value chunk, numChunks, partialRow;
  if (workItems) {
    // The block's work item, the same for every thread: lane 0 of each
    // warp loads it (16 bytes) and shuffles it to the warp. Blocks of a
    // fixed grid past the schedule's items (request -1) have nothing to do.
    auto itemType = VectorType::get({4}, b.getI32Type());
    Value laneZero = ir.eq(arith::RemUIOp::create(b, lane, ir.idx(32)),
                           ir.idx(0));
    Value item =
        scf::IfOp::create(
            b, laneZero,
            [&](OpBuilder &nb, Location l) {
              auto load = vector::LoadOp::create(nb, l, itemType, workItems,
                                                 ValueRange{req, ir.idx(0)});
              load.setAlignment(16);
              scf::YieldOp::create(nb, l, ValueRange{load.getResult()});
            },
            [&](OpBuilder &nb, Location l) {
              Value zeros = arith::ConstantOp::create(
                  nb, l, itemType, nb.getZeroAttr(itemType));
              scf::YieldOp::create(nb, l, ValueRange{zeros});
            })
            .getResult(0);
    auto field = [&](int64_t i) {
      Value v = vector::ExtractOp::create(b, item, ArrayRef<int64_t>{i});
      return gpu::ShuffleOp::create(b, v, ir.i32(0), ir.i32(32),
                                    gpu::ShuffleMode::IDX)
          .getShuffleResult();
    };
    Value request = field(0);
    req = ir.toIndex(request);
    chunk = ir.toIndex(field(1));
    numChunks = ir.toIndex(field(2));
    partialRow = ir.toIndex(field(3));
    auto hasWork = scf::IfOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::sge, request,
                                 ir.i32(0)),
        /*withElseRegion=*/false);
    b.setInsertionPoint(hasWork.thenBlock()->getTerminator());
  }
  // q and the outputs are indexed by the request (decode) or the row.
  Value qRow = req;
  Value zero = ir.idx(0);
  Value head = ir.add(ir.mul(kvHead, ir.idx(group)), y);
  Value dim0 = ir.mul(x, ir.idx(vec));
  Value activeX = ir.lt(dim0, ir.idx(headDim));
  Value meta = kf.getShared(buf.meta), qShared = kf.getShared(buf.query);
  AttentionState state(b, AttentionState::Flavor::ptxBase2);
  std::optional<VariantEmitter> variants;
  if (spec.variants)
    variants.emplace(spec.variants.bind(kf.getArguments()));
  // ALiBi and score_mod see the score in natural units.
  bool natural = variants && variants->modifiesScores();

  // Tile skipping's marks: slots for the tiles from the one scored to the
  // one marked, `stages` tiles ahead.
  std::optional<LiveTileMarks> marks;
  if (buf.liveTiles)
    marks.emplace(kf.getShared(*buf.liveTiles), cfg.getStages() + 1);

  // Once per block: thread 0 reads the request's table entries and derives
  // the block's token range (its partition's share of the visible keys);
  // the z == 0 threads stage the group's queries.
  scf::IfOp::create(b, ir.eq(lane, zero), [&](OpBuilder &nb, Location l) {
    ImplicitLocOpBuilder ib(l, nb);
    IRBuilder k{ib};
    Value request = req;
    Value queryRow, qoLen;
    if (qoIndptr) {
      // The row's request: the last of the B request starts at or below
      // it (empty requests share their start with the next one; searching
      // the starts only keeps the request and its table reads in bounds).
      auto indptrAt = [&](ImplicitLocOpBuilder &jb, Value i) {
        return IRBuilder{jb}.toIndex(
            memref::LoadOp::create(jb, qoIndptr, ValueRange{i}));
      };
      Value requests =
          k.sub(memref::DimOp::create(ib, qoIndptr, 0), k.idx(1));
      request = kv::emitLastAtOrBelow(ib, requests, indptrAt, qRow);
      Value qoStart = indptrAt(ib, request);
      qoLen = k.sub(indptrAt(ib, k.add(request, k.idx(1))), qoStart);
      queryRow = k.sub(qRow, qoStart);
    }
    kv::RequestTable table = kv::emitRequestTable(ib, kv, request);
    // The query's position: kv_len - 1 (a decode); a query row's is given,
    // or bottom-right.
    Value position = k.sub(table.kvLen, k.idx(1));
    if (positions)
      position = k.toIndex(
          memref::LoadOp::create(ib, positions, ValueRange{qRow}));
    else if (qoIndptr)
      position = kv::emitQueryPosition(ib, table.kvLen, qoLen, queryRow);
    // The visible keys: [position - window_left, position] (causal), or
    // all of [0, kv_len). Gathering: the entries of the request's list
    // (each key is masked on its own).
    Value first = k.idx(0), end = table.kvLen;
    if (topk) {
      end = memref::DimOp::create(ib, topk, 1);
    } else {
      if (spec.windowLeft)
        first = k.maxS(first, k.sub(position, k.idx(*spec.windowLeft)));
      if (spec.causal)
        end = k.maxS(k.minS(end, k.add(position, k.idx(1))), k.idx(0));
      first = k.minS(first, end);
    }
    Value start = first;
    if (numChunks) {
      // Chunks split the visible keys, not [0, kv_len): with a sliding
      // window, all of them still get work.
      Value limit = end;
      Value chunkTokens =
          arith::CeilDivUIOp::create(ib, k.sub(limit, first), numChunks);
      start = k.minS(k.add(first, k.mul(chunk, chunkTokens)), limit);
      end = k.minS(k.add(start, chunkTokens), limit);
    }
    // Transposed V chunks start on multiples of their tokens (of sectors
    // where tiles are whole sectors): the range starts there, and the
    // tokens before `start` are masked.
    Value visible = start;
    if (int64_t align = spec.transposedVAlignment())
      start = k.sub(start, k.remU(start, k.idx(align)));
    SmallVector<Value> metaValues{start, end, table.base, visible};
    if (spec.needsQueryPosition())
      metaValues.push_back(position);
    if (qoIndptr || topk || framePositions)
      metaValues.push_back(request);
    if (topk || framePositions)
      metaValues.push_back(table.kvLen);
    if (framePositions) {
      kv::FrameRow frame =
          kv::emitFrameRow(ib, frameIndptr, framePositions, qRow, position);
      metaValues.append({frame.request, frame.position, frame.keyShift});
    }
    for (auto [i, v] : llvm::enumerate(metaValues))
      memref::StoreOp::create(ib, k.toI32(v), meta, ValueRange{k.idx(i)});
    // The live-tile slots start below every tile's mark (shared memory
    // starts undefined).
    if (marks)
      marks->clear(ib);
    scf::YieldOp::create(ib);
  });
  auto qVecType = VectorType::get({vec}, spec.qType.getElementType());
  scf::IfOp::create(b, ir.eq(z, zero), [&](OpBuilder &nb, Location l) {
    ImplicitLocOpBuilder ib(l, nb);
    Value qv =
        scf::IfOp::create(
            ib, activeX,
            [&](OpBuilder &nb2, Location l2) {
              ImplicitLocOpBuilder jb(l2, nb2);
              auto v = vector::LoadOp::create(jb, qVecType, q,
                                              ValueRange{qRow, head, dim0});
              // At most 16 bytes: buffers are only promised 16-byte
              // alignment (f32 lanes past head dim 128 read more).
              v.setAlignment(std::min<int64_t>(
                  16, vec * spec.qType.getElementTypeBitWidth() / 8));
              scf::YieldOp::create(jb, ValueRange{v.getResult()});
            },
            [&](OpBuilder &nb2, Location l2) {
              ImplicitLocOpBuilder jb(l2, nb2);
              Value zeros = arith::ConstantOp::create(jb, qVecType,
                                                      jb.getZeroAttr(qVecType));
              scf::YieldOp::create(jb, ValueRange{zeros});
            })
            .getResult(0);
    vector::StoreOp::create(ib, qv, qShared, ValueRange{y, dim0});
    scf::YieldOp::create(ib);
  });
  gpu::BarrierOp::create(b);
  auto metaAt = [&](int64_t i) {
    return ir.toIndex(memref::LoadOp::create(b, meta, ValueRange{ir.idx(i)}));
  };
  Value start = metaAt(0), end = metaAt(1), tableBase = metaAt(2);
  Value visibleStart = metaAt(3);
  if (spec.queryRows())
    req = metaAt(kMetaRequest);
  Value queryPosition =
      spec.needsQueryPosition() ? metaAt(kMetaPosition) : Value();
  // The variants' request and query position (in the frame, if any) and the
  // shift of key positions into it.
  Value variantRequest = req, variantPosition = queryPosition, keyShift;
  if (framePositions) {
    variantRequest = metaAt(kMetaFrameRequest);
    variantPosition = metaAt(kMetaFramePosition);
    keyShift = metaAt(kMetaKeyShift);
  }
  auto vecF32 = VectorType::get({vec}, f32);
  Value zeroVec = ir.splat(ir.f32(0.0), vec);
  // The query, scaled so that scores come out in the working base's units
  // (and by fp8's k_scale: scores are dot products with the codes, read
  // 1 / fp8HalfScale of their value).
  double qScale =
      spec.smScale * state.logitPrescale(spec.softCap.has_value(), natural);
  double codeScale = fp8 ? kv::fp8HalfScale(elt) : 1.0;
  Value qScaleVec = ir.splat(ir.f32(qScale * codeScale), vec);
  if (fp8)
    qScaleVec = ir.mul(qScaleVec, ir.splat(kv.kScale, vec));
  // f16 / bf16 extended; f32 KV (and q) as they are.
  auto toVecF32 = [&](ImplicitLocOpBuilder &jb, Value v) -> Value {
    if (getElementTypeOrSelf(v.getType()).isF32())
      return v;
    return arith::ExtFOp::create(jb, vecF32, v);
  };
  Value qVec = ir.mul(
      toVecF32(b, vector::LoadOp::create(b, qVecType, qShared,
                                         ValueRange{y, dim0})
                      .getResult()),
      qScaleVec);

  // The K/V tiles stream through a ring of `stages` buffers: at the top of
  // iteration i, tiles i ... i + stages - 2 are in flight; once everyone is
  // done with tile i - 1, its buffer takes tile i + stages - 1. The page
  // entries of a tile are loaded into registers a whole iteration before
  // they are stored to its page-id slot (slot = stage), so their latency
  // hides behind the scoring of a tile.
  int64_t stages = cfg.getStages(), padded = tx * vec;
  CpAsyncPipeline pipeline(stages);
  SharedTile kTiles{kf.getShared(buf.kTiles), tile, padded,
                    /*swizzled=*/false};
  int64_t vChunk = spec.transposedVChunk();
  int64_t eltBits = elt.getIntOrFloatBitWidth();
  // Transposed V: [stages, padded dims, tile (+ pad) tokens], copied in
  // chunks of `vChunk` tokens; its rows for this tile go to vRows.
  SharedTile vTiles =
      vChunk ? SharedTile{kf.getShared(buf.vTiles), padded,
                          tile + kvgpu::transposedVPad(kvType, tile),
                          false, vChunk * eltBits / 8}
             : SharedTile{kf.getShared(buf.vTiles), tile, padded, false};
  std::optional<SharedTile> vRows;
  if (vChunk)
    vRows = SharedTile{kf.getShared(*buf.vRows), tile, padded, false};
  // int8 groups: the tiles' scales, staged with their codes.
  std::optional<SharedTile> kScales, vScales;
  int64_t quantGroup = int8 ? kvType.getQuantGroup() : 0;
  if (int8) {
    int64_t bytes =
        spec.scaleChunk * kvType.getDtype().getIntOrFloatBitWidth() / 8;
    kScales = SharedTile{kf.getShared(*buf.kScales), tile, spec.scaleColumns(),
                         false, bytes};
    vScales = SharedTile{kf.getShared(*buf.vScales), tile, spec.scaleColumns(),
                         false, bytes};
  }
  PagedTileLoader loader(kv, req, tableBase, kvHead, tile,
                         kf.getShared(buf.pageIds));
  if (topk)
    loader.setGather(
        {topk, qRow, metaAt(kMetaKvLen), kf.getShared(*buf.keyIds)});
  int64_t idSlots = spec.idSlots();
  Value numTiles =
      arith::CeilDivUIOp::create(b, ir.sub(end, start), ir.idx(tile));
  auto tileRange = [&](ImplicitLocOpBuilder &ib, Value index) {
    IRBuilder k{ib};
    Value t0 = k.add(start, k.mul(index, k.idx(tile)));
    return std::make_pair(t0, k.minS(k.idx(tile), k.sub(end, t0)));
  };
  // Whole 16-byte chunks of vectors go by cp.async; narrower vectors (a
  // layout that proves less) by loads and stores.
  bool asyncRows = vec * elt.getIntOrFloatBitWidth() % 128 == 0;
  auto issueTile = [&](ImplicitLocOpBuilder &ib, Value index) {
    IRBuilder k{ib};
    emitIf(ib, k.lt(index, numTiles), [&](ImplicitLocOpBuilder &jb) {
      auto [t0, count] = tileRange(jb, index);
      Value stage = pipeline.stageOf(jb, index);
      Value idSlot = IRBuilder{jb}.remU(index, IRBuilder{jb}.idx(idSlots));
      SmallVector<TileCopy> copies{TileCopy{kv::PoolRole::K, kTiles, headDim}};
      if (vChunk)
        loader.copyTileTransposedAsync(jb, kv::PoolRole::V, vTiles, stage, t0,
                                       count, headDim, lane, numThreads);
      else
        copies.push_back(TileCopy{kv::PoolRole::V, vTiles, headDim});
      if (int8)
        copies.append(
            {TileCopy{kv::PoolRole::KScale, *kScales, headDim / quantGroup},
             TileCopy{kv::PoolRole::VScale, *vScales, headDim / quantGroup}});
      if (asyncRows)
        loader.copyTileAsync(jb, copies, stage, t0, count, lane, numThreads,
                             idSlot);
      else
        loader.copyTile(jb, copies, stage, t0, count, lane, numThreads, vec,
                        nullptr, idSlot);
    });
  };
  auto loadIds = [&](ImplicitLocOpBuilder &ib, Value index) {
    auto [t0, count] = tileRange(ib, index);
    return loader.loadPageIds(ib, IRBuilder{ib}.lt(index, numTiles), t0,
                              count, lane, numThreads);
  };
  auto storeIds = [&](ImplicitLocOpBuilder &ib, Value index,
                      ArrayRef<Value> entries) {
    IRBuilder k{ib};
    loader.storePageIds(ib, k.remU(index, k.idx(idSlots)), entries, lane,
                        numThreads);
  };

  // mask_mod: K/V tiles it hides from every head of the block are neither
  // loaded nor scored. A tile is marked `stages` tiles ahead (before the
  // barrier that precedes its copies): every thread evaluates the region on
  // its share of the tile's (head, key) pairs (one head when the region
  // ignores it) and those that find a visible pair put n + 1 in slot
  // n % (stages + 1) (an atomic max: the slot's older mark is smaller).
  auto markTile = [&](ImplicitLocOpBuilder &ib, Value index) {
    if (!marks)
      return;
    emitIf(
        ib, IRBuilder{ib}.lt(index, numTiles), [&](ImplicitLocOpBuilder &jb) {
          IRBuilder k{jb};
          std::pair<Value, Value> range = tileRange(jb, index);
          Value t0 = range.first, count = range.second;
          int64_t heads = variants->maskReadsHead() ? group : 1;
          auto any = scf::ForOp::create(
              jb, lane, k.idx(heads * tile), k.idx(numThreads),
              ValueRange{arith::ConstantIntOp::create(jb, 0, 1)},
              [&](OpBuilder &nb, Location l, Value pair, ValueRange found) {
                ImplicitLocOpBuilder pb(l, nb);
                IRBuilder x{pb};
                Value t = x.remU(pair, x.idx(tile));
                Value pairHead = x.add(x.mul(kvHead, x.idx(group)),
                                       x.divU(pair, x.idx(tile)));
                // Past the tile the region sees its last key (in bounds).
                Value key = x.add(t0, x.minS(t, x.sub(count, x.idx(1))));
                if (keyShift)
                  key = x.add(key, keyShift);
                Value seen = variants->visible(pb, variantRequest, pairHead,
                                               variantPosition, key);
                scf::YieldOp::create(
                    pb, ValueRange{arith::OrIOp::create(
                            pb, found[0],
                            arith::AndIOp::create(pb, x.lt(t, count), seen))});
              });
          marks->mark(jb, index, any.getResult(0));
        });
  };
  // Whether tile `index` is live (after its mark and a barrier).
  auto isLive = [&](ImplicitLocOpBuilder &ib, Value index) -> Value {
    return marks->isLive(ib, index, numTiles);
  };
  auto issueIfLive = [&](ImplicitLocOpBuilder &ib, Value index) {
    if (!marks)
      return issueTile(ib, index);
    emitIf(ib, isLive(ib, index),
           [&](ImplicitLocOpBuilder &jb) { issueTile(jb, index); });
  };

  // The prologue: the entries of tiles 0 ... stages - 1 (one round trip)
  // and their marks, then tiles 0 ... stages - 2, one commit group each.
  {
    SmallVector<SmallVector<Value>> entries;
    for (int64_t i = 0; i < stages; ++i)
      entries.push_back(loadIds(b, ir.idx(i)));
    for (int64_t i = 0; i < stages; ++i)
      storeIds(b, ir.idx(i), entries[i]);
    for (int64_t i = 0; i < stages; ++i)
      markTile(b, ir.idx(i));
    gpu::BarrierOp::create(b);
    for (int64_t i = 0; i < pipeline.tilesAhead(); ++i) {
      issueIfLive(b, ir.idx(i));
      pipeline.commit(b);
    }
  }

  // Each z-lane scores tokens z, z + tz, ... of a tile (a fixed count, so
  // that every lane of a warp takes part in the shuffles), all of them
  // before one online update: one rescale per tile.
  int64_t tokensPerLane = tile / tz;
  bool paddedLanes = padded != headDim;
  Value negInf = ir.f32(-INFINITY);
  // Where the V rows of the current tile are read: the stage ring, or the
  // rows transposed from it.
  const SharedTile &vSource = vRows ? *vRows : vTiles;
  // Transposes stage `stage` of the V tiles into vRows: a thread takes a
  // chunk of one dim (consecutive threads: consecutive dims) and stores its
  // tokens' elements down the dim's column.
  auto transposeV = [&](ImplicitLocOpBuilder &ib, Value stage) {
    int64_t chunks = headDim * (tile / vChunk);
    auto chunkType = VectorType::get({vChunk}, elt);
    scf::ForOp::create(
        ib, lane, ir.idx(chunks), ir.idx(numThreads), ValueRange{},
        [&](OpBuilder &nb, Location l, Value chunk, ValueRange) {
          ImplicitLocOpBuilder jb(l, nb);
          IRBuilder k{jb};
          Value dim = k.remU(chunk, k.idx(headDim));
          Value first = k.mul(k.divU(chunk, k.idx(headDim)), k.idx(vChunk));
          auto load = vector::LoadOp::create(
              jb, chunkType, vTiles.memref,
              vTiles.elementIndices(jb, stage, dim, first));
          load.setAlignment(vChunk * eltBits / 8);
          for (int64_t j = 0; j < vChunk; ++j)
            memref::StoreOp::create(
                jb, vector::ExtractOp::create(jb, load, j), vRows->memref,
                vRows->elementIndices(jb, Value(), k.add(first, k.idx(j)),
                                      dim));
          scf::YieldOp::create(jb);
        });
  };
  // Codes as f16: fp8 values 1 / fp8HalfScale of theirs, int8 codes as
  // they are (their scales apply after).
  auto codesToF16 = [&](ImplicitLocOpBuilder &jb, Value codes) {
    return fp8 ? kv::fp8ToScaledF16(jb, codes) : kv::int8ToF16(jb, codes);
  };
  // Quantized tiles decoded once per tile for the whole group: [tile,
  // padded] f16 rows (no stages), or none.
  std::optional<SharedTile> kDecoded, vDecoded;
  if (spec.decodesTilesInShared()) {
    kDecoded = SharedTile{kf.getShared(*buf.kDecoded), tile, padded, false};
    vDecoded = SharedTile{kf.getShared(*buf.vDecoded), tile, padded, false};
  }
  // Decodes stage `stage`'s codes into the decoded tiles, 16 codes per
  // step, the steps spread over the block.
  auto decodeTile = [&](ImplicitLocOpBuilder &ib, Value stage) {
    int64_t chunks = tile * padded / 16;
    auto codeType = VectorType::get({16}, elt);
    for (auto pair : {std::pair<const SharedTile *, SharedTile *>{
                          &kTiles, &*kDecoded},
                      std::pair<const SharedTile *, SharedTile *>{
                          &vSource, &*vDecoded}}) {
      const SharedTile *codes = pair.first, *decoded = pair.second;
      Value codeStage = vRows && codes == &*vRows ? Value() : stage;
      scf::ForOp::create(
          ib, lane, ir.idx(chunks), ir.idx(numThreads), ValueRange{},
          [&](OpBuilder &nb, Location l, Value chunk, ValueRange) {
            ImplicitLocOpBuilder jb(l, nb);
            IRBuilder k{jb};
            Value row = k.divU(chunk, k.idx(padded / 16));
            Value col = k.mul(k.remU(chunk, k.idx(padded / 16)), k.idx(16));
            Value v = vector::LoadOp::create(
                jb, codeType, codes->memref,
                codes->elementIndices(jb, codeStage, row, col));
            vector::StoreOp::create(jb, codesToF16(jb, v),
                                    decoded->memref,
                                    decoded->elementIndices(jb, Value(), row,
                                                            col));
            scf::YieldOp::create(jb);
          });
    }
  };
  // The row of token `t` in f32 (int8: times its groups' scales unless
  // `scaled` is false; then the scales come back in `*groupScales`).
  auto rowOf = [&](ImplicitLocOpBuilder &jb, const SharedTile &tiles,
                   Value stage, Value t, bool scaled = true,
                   Value *groupScales = nullptr, Value column = Value()) {
    if (!column)
      column = dim0;
    const SharedTile *from = &tiles;
    Type rowType = elt;
    if (kDecoded) {
      from = &tiles == &kTiles ? &*kDecoded : &*vDecoded;
      rowType = jb.getF16Type();
    }
    bool staged = !kDecoded && !(vRows && from == &*vRows);
    auto v = vector::LoadOp::create(
        jb, VectorType::get({vec}, rowType), from->memref,
        from->elementIndices(jb, staged ? stage : Value(), t, column));
    Value raw = v.getResult();
    if ((fp8 || int8) && !kDecoded)
      raw = codesToF16(jb, raw);
    Value f = toVecF32(jb, raw);
    if (int8) {
      // The row's scales for dims [dim0, dim0 + vec): one per quant_group,
      // spread over the dims they scale.
      const SharedTile &scales = &tiles == &kTiles ? *kScales : *vScales;
      int64_t count = std::max<int64_t>(1, vec / quantGroup);
      IRBuilder k{jb};
      Value s = vector::LoadOp::create(
          jb, VectorType::get({count}, kvType.getDtype()), scales.memref,
          scales.elementIndices(jb, stage, t,
                                k.divU(column, k.idx(quantGroup))));
      if (scaled)
        f = k.mul(f, kv::spreadGroupScales(jb, s, vec, quantGroup));
      else
        *groupScales = s;
    }
    // Lanes past the head dim read columns nobody wrote.
    return paddedLanes ? IRBuilder{jb}.select(activeX, f, zeroVec) : f;
  };
  // RoPE: the query stays as it is and each key turns by its position
  // relative to the query's (kv_len - 1 for a decode, a query row's own),
  // R(p) q . R(j) k = q . R(j - p) k,
  // in f32 (an angle that is small for the recent keys). A lane's vector
  // lies wholly in the rotated dims or past them (whyNotDecodeRope);
  // rotate-half lanes read their partner dims R / 2 away from the same row.
  // The pairs' frequencies are the lane's, computed once.
  std::optional<Rope> rope;
  Value rotates, partnerDim, partnerSign;
  SmallVector<Value> freqs;
  if (spec.rope) {
    rope.emplace(b, spec.rope, headDim, Rope::Flavor::ptx);
    int64_t rotated = rope->rotatedDims(), half = rotated / 2;
    rotates = ir.lt(dim0, ir.idx(rotated));
    if (spec.rope.getStyle() == kv::RopeStyle::interleave) {
      freqs = rope->frequencies(ir.divU(dim0, ir.idx(2)), vec / 2);
    } else {
      Value low = ir.lt(dim0, ir.idx(half));
      freqs = rope->frequencies(ir.remU(dim0, ir.idx(half)), vec);
      partnerDim = ir.select(low, ir.add(dim0, ir.idx(half)),
                             ir.sub(dim0, ir.idx(half)));
      // Low dims take k c - k' s, high dims k c + k' s.
      partnerSign = ir.splat(ir.select(low, ir.f32(1.0), ir.f32(-1.0)), vec);
    }
  }
  // Key row `t` of the staged tile, rotated by its key's position `key`.
  auto rotatedKeyRow = [&](ImplicitLocOpBuilder &jb, Value stage, Value key,
                           Value t) -> Value {
    Value row = rowOf(jb, kTiles, stage, t);
    IRBuilder k{jb};
    Value relative = k.sub(key, queryPosition);
    return scf::IfOp::create(
               jb, rotates,
               [&](OpBuilder &nb, Location l) {
                 ImplicitLocOpBuilder rb(l, nb);
                 Rope r(rb, spec.rope, headDim, Rope::Flavor::ptx);
                 Value rotated;
                 if (!partnerDim) {
                   rotated = r.rotateInterleaved(row, freqs, relative, f32);
                 } else {
                   Value partner = rowOf(rb, kTiles, stage, t, true, nullptr,
                                         partnerDim);
                   rotated = r.rotateVectors(row,
                                             IRBuilder{rb}.mul(partner,
                                                               partnerSign),
                                             freqs, relative, f32)
                                 .first;
                 }
                 scf::YieldOp::create(rb, rotated);
               },
               [&](OpBuilder &nb, Location l) {
                 scf::YieldOp::create(nb, l, row);
               })
        .getResult(0);
  };
  // With a group, the block rotates each tile once (rotateTile) and the
  // heads read the rotated f32 rows: a thread keeps its lane's columns and
  // frequencies and takes rows y + G z, y + G z + G tz, ...
  std::optional<SharedTile> kRotated;
  if (buf.kRotated)
    kRotated = SharedTile{kf.getShared(*buf.kRotated), tile, padded, false};
  // The key of tile row t (its position, for RoPE, masks and variants).
  using KeyOf = function_ref<Value(ImplicitLocOpBuilder &, Value)>;
  auto rotateTile = [&](ImplicitLocOpBuilder &ib, Value stage, KeyOf keyOf) {
    IRBuilder k{ib};
    scf::ForOp::create(
        ib, k.add(y, k.mul(k.idx(group), z)), k.idx(tile),
        k.idx(group * tz), ValueRange{},
        [&](OpBuilder &nb, Location l, Value t, ValueRange) {
          ImplicitLocOpBuilder jb(l, nb);
          vector::StoreOp::create(
              jb, rotatedKeyRow(jb, stage, keyOf(jb, t), t), kRotated->memref,
              kRotated->elementIndices(jb, Value(), t, dim0));
          scf::YieldOp::create(jb);
        });
  };
  // Key row `t` as the scores read it.
  auto keyRow = [&](ImplicitLocOpBuilder &jb, Value stage, Value key,
                    Value t) -> Value {
    if (!rope)
      return rowOf(jb, kTiles, stage, t);
    if (!kRotated)
      return rotatedKeyRow(jb, stage, key, t);
    return vector::LoadOp::create(jb, vecF32, kRotated->memref,
                                  kRotated->elementIndices(jb, Value(), t,
                                                           dim0))
        .getResult();
  };
  auto tileLoop = scf::ForOp::create(
      b, ir.idx(0), numTiles, ir.idx(1),
      ValueRange{negInf, ir.f32(0.0), zeroVec},
      [&](OpBuilder &nb, Location l, Value i, ValueRange carried) {
        ImplicitLocOpBuilder ib(l, nb);
        IRBuilder k{ib};
        pipeline.wait(ib);
        issueIfLive(ib, k.add(i, k.idx(pipeline.tilesAhead())));
        pipeline.commit(ib);
        Value ahead = k.add(i, k.idx(stages));
        SmallVector<Value> entries = loadIds(ib, ahead);
        // (Tile i - 1's slot: everyone read its mark before the barrier.)
        markTile(ib, ahead);
        PartialState kept{carried[0], carried[1], carried[2]};
        // Scores tile i and updates the state (block-uniform: a dead tile
        // skips it whole, barriers included).
        auto scoreTile = [&](ImplicitLocOpBuilder &ib) -> PartialState {
          IRBuilder k{ib};
          AttentionState tileState(ib, AttentionState::Flavor::ptxBase2);
          Value stage = pipeline.stageOf(ib, i);
          // Everyone is done with the previous tile's V rows and decoded
          // tiles (the barrier above): transpose and decode this one for all.
          if (vRows) {
            transposeV(ib, stage);
            gpu::BarrierOp::create(ib);
          }
          if (kDecoded) {
            decodeTile(ib, stage);
            gpu::BarrierOp::create(ib);
          }
          auto [t0, count] = tileRange(ib, i);
          Value idSlot = k.remU(i, k.idx(idSlots)), tileStart = t0;
          auto keyOf = [&](ImplicitLocOpBuilder &jb, Value t) {
            return loader.keyOf(jb, idSlot, tileStart, t);
          };
          // Everyone is done with the previous tile's rotated rows (the
          // barrier above).
          if (kRotated) {
            rotateTile(ib, stage, keyOf);
            gpu::BarrierOp::create(ib);
          }
          SmallVector<Value> tokens, logits;
          for (int64_t j = 0; j < tokensPerLane; ++j) {
            Value t = k.add(k.idx(j * tz), z);
            // Gathering: -1 for an entry of no key.
            Value key = keyOf(ib, t);
            Value score;
            if (int8 && vec % quantGroup == 0 && !rope) {
              // A dot product per group of the codes, times its scale: one
              // multiply per group instead of one per dim.
              Value scales;
              Value codes =
                  rowOf(ib, kTiles, stage, t, /*scaled=*/false, &scales);
              for (int64_t g = 0; g < vec / quantGroup; ++g) {
                auto slice = [&](Value v) {
                  return vector::ExtractStridedSliceOp::create(
                             ib, v, ArrayRef<int64_t>{g * quantGroup},
                             ArrayRef<int64_t>{quantGroup},
                             ArrayRef<int64_t>{1})
                      .getResult();
                };
                Value scale = kv::toF32(
                    ib, vector::ExtractOp::create(ib, scales, g).getResult());
                // Lanes past the head dim read scales nobody wrote.
                if (paddedLanes)
                  scale = k.select(activeX, scale, k.f32(0.0));
                Value part = k.dot(slice(qVec), slice(codes));
                score = score ? k.fma(scale, part, score) : k.mul(scale, part);
              }
            } else {
              score = k.dot(qVec, keyRow(ib, stage, key, t));
            }
            score = warpReduce(ib, score, tx, WarpReduction::sum);
            // The regions read the key's position: past the tile's end they
            // see its last key instead, for no key key 0 (their logits are
            // masked below).
            Value keyPosition;
            if (variants) {
              keyPosition =
                  topk ? k.maxS(key, k.idx(0))
                       : k.minS(key, k.sub(k.add(t0, count), k.idx(1)));
              if (keyShift)
                keyPosition = k.add(keyPosition, keyShift);
            }
            if (natural)
              score = variants->modifyScore(ib, score, variantRequest, head,
                                            variantPosition, keyPosition);
            score = tileState.finishLogit(score, spec.softCap, natural);
            tokens.push_back(t);
            Value visible = k.lt(t, count);
            if (topk) {
              // The entry's key exists; the window applies key by key.
              visible = arith::AndIOp::create(
                  ib, visible, k.cmp(arith::CmpIPredicate::sge, key, k.idx(0)));
              if (spec.windowLeft)
                visible = arith::AndIOp::create(
                    ib, visible,
                    k.cmp(arith::CmpIPredicate::sge, key,
                          k.sub(queryPosition, k.idx(*spec.windowLeft))));
            }
            if (variants)
              if (Value kept = variants->visible(ib, variantRequest, head,
                                                 variantPosition, keyPosition))
                visible = arith::AndIOp::create(ib, visible, kept);
            // Transposed V: the range starts up to a chunk early.
            if (vChunk)
              visible = arith::AndIOp::create(
                  ib, visible,
                  k.cmp(arith::CmpIPredicate::sge, k.add(t0, t), visibleStart));
            logits.push_back(k.select(visible, score, negInf));
          }
          return tileState.updateTile(kept, logits, [&](int64_t j) {
            return rowOf(ib, vSource, stage, tokens[j]);
          });
        };
        PartialState updated = kept;
        if (!marks) {
          updated = scoreTile(ib);
        } else {
          auto scored = scf::IfOp::create(
              ib, isLive(ib, i),
              [&](OpBuilder &nb2, Location l2) {
                ImplicitLocOpBuilder jb(l2, nb2);
                PartialState s = scoreTile(jb);
                scf::YieldOp::create(jb, ValueRange{s.m, s.l, s.acc});
              },
              [&](OpBuilder &nb2, Location l2) {
                scf::YieldOp::create(nb2, l2,
                                     ValueRange{kept.m, kept.l, kept.acc});
              });
          updated = {scored.getResult(0), scored.getResult(1),
                     scored.getResult(2)};
        }

        storeIds(ib, ahead, entries);
        scf::YieldOp::create(ib,
                             ValueRange{updated.m, updated.l, updated.acc});
      });
  pipeline.drain(b);
  // fp8: V was accumulated as scaled codes; v_scale applies once.
  Value acc = tileLoop.getResult(2);
  if (fp8)
    acc = ir.mul(acc, ir.splat(ir.mul(kv.vScale, ir.f32(codeScale)), vec));
  PartialState result{tileLoop.getResult(0), tileLoop.getResult(1), acc};

  // Merge the z-lanes' partial states through shared memory.
  if (tz > 1) {
    Value mShared = kf.getShared(*buf.zMax), lShared = kf.getShared(*buf.zSum);
    Value accShared = kf.getShared(*buf.zAcc);
    Value slot = ir.add(ir.mul(z, ir.idx(group)), y);
    scf::IfOp::create(b, ir.eq(x, zero), [&](OpBuilder &nb, Location l) {
      memref::StoreOp::create(nb, l, result.m, mShared, ValueRange{slot});
      memref::StoreOp::create(nb, l, result.l, lShared, ValueRange{slot});
      scf::YieldOp::create(nb, l);
    });
    vector::StoreOp::create(b, result.acc, accShared, ValueRange{slot, dim0});
    gpu::BarrierOp::create(b);
    SmallVector<PartialState> lanes;
    for (int64_t zz = 0; zz < tz; ++zz) {
      Value slotZ = ir.add(ir.idx(zz * group), y);
      lanes.push_back(
          {memref::LoadOp::create(b, mShared, ValueRange{slotZ}),
           memref::LoadOp::create(b, lShared, ValueRange{slotZ}),
           vector::LoadOp::create(b, vecF32, accShared,
                                  ValueRange{slotZ, dim0})});
    }
    result = state.merge(lanes);
  }

  // Write the state of (request, head): z-lane 0, lanes holding real dims.
  // Partial states stay f32 in base 2 for the merge kernel; an item that
  // is a whole request is final.
  auto write = [&](ImplicitLocOpBuilder &ib, Value outBuf, Value lseBuf,
                   kv::LseBase base, SmallVector<Value> rowIdx, bool final) {
    IRBuilder k{ib};
    AttentionState finalState(ib, AttentionState::Flavor::ptxBase2);
    // A sink joins a row's whole state once: final states only.
    PartialState whole = result;
    if (final && variants)
      if (Value sink = variants->sinkLogit(ib, head))
        whole = finalState.withSink(result, sink);
    FinalState fin = finalState.finalize(whole, base);
    Type outElt = cast<MemRefType>(outBuf.getType()).getElementType();
    emitIf(ib, activeX, [&](ImplicitLocOpBuilder &jb) {
      Value v = fin.o;
      if (!outElt.isF32())
        v = arith::TruncFOp::create(jb, VectorType::get({vec}, outElt), v);
      SmallVector<Value> idx(rowIdx);
      idx.push_back(dim0);
      // At most 16 bytes: buffers are only promised 16-byte alignment.
      vector::StoreOp::create(jb, v, outBuf, idx)
          .setAlignment(
              std::min<int64_t>(16, vec * outElt.getIntOrFloatBitWidth() / 8));
    });
    emitIf(ib, k.eq(x, k.idx(0)), [&](ImplicitLocOpBuilder &jb) {
      memref::StoreOp::create(jb, fin.lse, lseBuf, rowIdx);
    });
  };
  emitIf(b, ir.eq(z, zero), [&](ImplicitLocOpBuilder &ib) {
    if (!spec.partitioned) {
      write(ib, out, lseOut, spec.base, {qRow, head}, /*final=*/true);
      return;
    }
    auto wholeRequest = scf::IfOp::create(
        ib, IRBuilder{ib}.eq(numChunks, IRBuilder{ib}.idx(1)),
        /*withElseRegion=*/true);
    {
      ImplicitLocOpBuilder tb =
          ImplicitLocOpBuilder::atBlockTerminator(ib.getLoc(),
                                                  wholeRequest.thenBlock());
      write(tb, finalOut, finalLse, spec.base, {qRow, head}, /*final=*/true);
    }
    ImplicitLocOpBuilder eb = ImplicitLocOpBuilder::atBlockTerminator(
        ib.getLoc(), wholeRequest.elseBlock());
    write(eb, out, lseOut, kv::LseBase::two, {partialRow, head},
          /*final=*/false);
  });
}

