//===- PrefillGpuTest.cpp - GPU prefill kernels in the emulator -----------===//
//
// Each configuration is a kv.prefill over a random paged cache (pages
// scattered over a pool whose unowned slots are NaN) or ragged K/V, lowered
// by kv-to-nvvm's kv-level pipeline (the test fails if the prefill is not a
// kernel launch), run in kvir's emulator with NaN-poisoned outputs and
// compared with the float64 reference: outputs within the harness's bound
// for the output type, LSE within 1e-3, rows that see no key exactly
// (0, -inf), nothing NaN. Batches are explicit (qo_len, kv_len) pairs
// covering qo_len 0, 1, 7, 64, 65, 300 (and 8192) and kv_len 0, 1, 17, 1000;
// which kernels ran (direct, or split + merge) and with how many partitions
// is checked against the launch plan's own rule. Any emulator report
// (out-of-bounds access, shared-memory race, barrier divergence) fails the
// test.
//
//===----------------------------------------------------------------------===//
#include "PrefillCases.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace kvir::test;
using namespace kvir::test::gpu;

namespace {

/// The lengths: qo_len {1, 7, 64, 65, 300} against kv_len
/// {1, 17, 1000}, and an empty request. Causal batches also hold requests
/// with more rows than keys (rows placed before the first key see none):
/// 65 rows over 17 keys, 7 over none, 130 over 70 (a tile's rows on both
/// sides of key 0).
PrefillBatch standardBatch(bool causal) {
  if (causal)
    return {{1, 7, 0, 64, 65, 300, 17, 65, 7, 130},
            {1, 17, 0, 1000, 1000, 1000, 17, 17, 0, 70}};
  return {{1, 7, 0, 64, 65, 300, 7}, {17, 1, 17, 1000, 17, 1000, 0}};
}

std::vector<GpuPrefillCase> prefillCases() {
  std::vector<GpuPrefillCase> cases;
  auto add = [&](GpuPrefillCase c, std::vector<PrefillBatch> batches) {
    c.batches = std::move(batches);
    cases.push_back(std::move(c));
  };
  // The lengths through the 128 x 64 tiles of head dim 128.
  {
    GpuPrefillCase c = makePrefillCase("CausalNhdCsrP16D128G4F16",
                                       makeSpec(16, 2, 128, DType::F16), 8,
                                       DType::F16, "sm_80", 2001);
    c.params.causal = true;
    add(c, {standardBatch(true)});
  }
  // One K and one V buffer (stages = 1): 4 warps of 32 rows, 32- and
  // 64-key tiles, paged causal and ragged.
  for (int64_t kvTile : {32, 64}) {
    GpuPrefillCase c = makePrefillCase(
        "SingleBufferedCausalNhdCsrP16D128G4F16Kv" + std::to_string(kvTile),
        makeSpec(16, 2, 128, DType::F16), 8, DType::F16, "sm_80",
        2101 + kvTile);
    c.params.causal = true;
    c.config = "#kvgpu.prefill<q_tile = 128, kv_tile = " +
               std::to_string(kvTile) +
               ", warps = 4, stages = 1, q_in_registers = false, "
               "max_partitions = 16>";
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c = makePrefillCase("SingleBufferedRaggedD128G2BF16",
                                       makeSpec(16, 2, 128, DType::BF16), 4,
                                       DType::BF16, "sm_80", 2199);
    c.ragged = true;
    c.config = "#kvgpu.prefill<q_tile = 128, kv_tile = 32, warps = 4, "
               "stages = 1, q_in_registers = false, max_partitions = 16>";
    add(c, {standardBatch(false)});
  }
  {
    GpuPrefillCase c =
        makePrefillCase("RaggedD128G1BF16", makeSpec(16, 2, 128, DType::BF16),
                        2, DType::BF16, "sm_90a", 2002);
    c.ragged = true;
    c.params.base = Base::Two;
    add(c, {standardBatch(false)});
  }
  // Custom masks (fully masked rows included: density 0.6 over 1-key
  // requests), bool and bit-packed with blocks ending mid-byte.
  {
    GpuPrefillCase c =
        makePrefillCase("BoolMaskHndBlockTableP16D64G4F16",
                        makeSpec(16, 2, 64, DType::F16, Layout::HND,
                                 Storage::Combined, Table::BlockTable),
                        8, DType::F16, "sm_80", 2003);
    c.mask = MaskKind::Bool;
    add(c, {{{1, 7, 0, 64, 3, 9}, {1, 17, 5, 100, 2, 1}}});
  }
  {
    GpuPrefillCase c = makePrefillCase("CausalPackedMaskNhdCsrP1D64G8BF16",
                                       makeSpec(1, 1, 64, DType::BF16), 8,
                                       DType::BF16, "sm_86", 2004);
    c.params.causal = true;
    c.mask = MaskKind::Packed;
    add(c, {{{3, 7, 1, 13, 5, 2, 11}, {3, 9, 1, 19, 5, 7, 40}}});
  }
  // Sliding windows, with and without causal.
  {
    GpuPrefillCase c =
        makePrefillCase("CausalWindowNhdSplitCsrP64D128G8F16",
                        makeSpec(64, 1, 128, DType::F16, Layout::NHD,
                                 Storage::Split, Table::CSR),
                        8, DType::F16, "sm_80", 2005);
    c.params.causal = true;
    c.params.windowLeft = 33;
    add(c, {{{65, 7, 1, 30}, {300, 64, 17, 30}}});
  }
  {
    GpuPrefillCase c = makePrefillCase("WindowZeroRaggedD64G1F16",
                                       makeSpec(16, 2, 64, DType::F16), 2,
                                       DType::F16, "sm_80", 2006);
    c.ragged = true;
    c.params.windowLeft = 0;
    add(c, {{{7, 20, 1}, {17, 20, 0}}});
  }
  // Rows at given positions (kv.prefill positions(...)), in no order within
  // a tile: causal and the window masked per row on every K/V tile.
  {
    GpuPrefillCase c = makePrefillCase(
        "PositionsCausalWindowNhdCsrP16D128G4F16",
        makeSpec(16, 2, 128, DType::F16), 8, DType::F16, "sm_80", 2012);
    c.params.causal = true;
    c.params.windowLeft = 40;
    c.positions = true;
    add(c, {{{37, 5, 1, 60}, {300, 9, 0, 130}}});
  }
  {
    GpuPrefillCase c = makePrefillCase("PositionsRaggedD64G2BF16Sm90a",
                                       makeSpec(16, 1, 64, DType::BF16), 2,
                                       DType::BF16, "sm_90a", 2013);
    c.ragged = true;
    c.positions = true;
    c.params.causal = true;
    add(c, {{{20, 3, 70}, {25, 200, 90}}});
  }
  // Soft cap, sm_scale, f32 output (stored from the fragments).
  {
    GpuPrefillCase c =
        makePrefillCase("SoftCapScaleHndBlockTableP16D128G4BF16ToF32",
                        makeSpec(16, 2, 128, DType::BF16, Layout::HND,
                                 Storage::Combined, Table::BlockTable),
                        8, DType::F32, "sm_80", 2007);
    c.params.softCap = 5.0;
    c.params.smScale = 0.2;
    c.params.causal = true;
    add(c, {{{33, 7, 1}, {140, 7, 9}}});
  }
  // Head dim 256: 64 x 32 tiles, queries reloaded from shared memory.
  {
    GpuPrefillCase c =
        makePrefillCase("CausalNhdSplitCsrP64D256G2F16",
                        makeSpec(64, 2, 256, DType::F16, Layout::NHD,
                                 Storage::Split, Table::CSR),
                        4, DType::F16, "sm_90a", 2008);
    c.params.causal = true;
    add(c, {{{65, 7, 1}, {200, 17, 1}}});
  }
  {
    GpuPrefillCase c = makePrefillCase("BoolMaskRaggedD256G1BF16Base2",
                                       makeSpec(16, 1, 256, DType::BF16), 1,
                                       DType::BF16, "sm_80", 2009);
    c.ragged = true;
    c.mask = MaskKind::Bool;
    c.params.base = Base::Two;
    add(c, {{{20, 3, 1}, {45, 1, 30}}});
  }
  // head_dim != head_dim_v (DeepSeek's prefill without absorption: q / k
  // 192, v 128): a 192-wide K tile for the scores, a 128-wide V tile.
  {
    CacheSpec spec = makeSpec(16, 2, 192, DType::BF16);
    spec.headDimV = 128;
    GpuPrefillCase c = makePrefillCase("CausalRaggedD192Dv128G2BF16", spec, 4,
                                       DType::BF16, "sm_90a", 2031);
    c.ragged = true;
    c.params.causal = true;
    add(c, {{{65, 7, 1}, {200, 17, 1}}});
  }
  {
    CacheSpec spec = makeSpec(16, 2, 192, DType::F16, Layout::NHD,
                              Storage::Split, Table::BlockTable);
    spec.headDimV = 128;
    GpuPrefillCase c = makePrefillCase("NhdSplitBlockTableD192Dv128G1F16", spec,
                                       2, DType::F16, "sm_80", 2032);
    add(c, {{{33, 1, 7}, {90, 300, 20}}});
  }
  // Head dim 512 (and 384 / 512 unequal): 32-row tiles of 16 keys whose
  // warps split the value columns in slices of 128.
  {
    GpuPrefillCase c = makePrefillCase("CausalNhdCsrP16D512G2F16",
                                       makeSpec(16, 1, 512, DType::F16), 2,
                                       DType::F16, "sm_90a", 2033);
    c.params.causal = true;
    add(c, {{{17, 40, 1}, {50, 70, 1}}});
  }
  {
    CacheSpec spec = makeSpec(16, 2, 384, DType::BF16);
    spec.headDimV = 512;
    GpuPrefillCase c = makePrefillCase("RaggedD384Dv512G1BF16Sm86", spec, 2,
                                       DType::BF16, "sm_86", 2034);
    c.ragged = true;
    add(c, {{{9, 33}, {40, 1}}});
  }
  // Value warps on wgmma given by hand: two warpgroups of the same 64
  // rows, each accumulating 256 of the 512 value columns; the first scores
  // and shares the softmax.
  {
    CacheSpec spec = makeSpec(16, 2, 64, DType::BF16);
    spec.headDimV = 512;
    GpuPrefillCase c = makePrefillCase("WgmmaValueWarpsCausalRaggedDv512G2BF16",
                                       spec, 4, DType::BF16, "sm_90a", 2035);
    c.ragged = true;
    c.params.causal = true;
    c.config = "#kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 8, "
               "stages = 2, q_in_registers = false, max_partitions = 4, "
               "value_warps = 2, mma = wgmma>";
    add(c, {{{70, 100}, {5, 300}}});
  }
  // 8192 query rows of one request: every tile of it, causal with a
  // window (so each tile sees a few key tiles), and without causal over a
  // short KV.
  {
    GpuPrefillCase c = makePrefillCase("Qo8192CausalWindowRaggedD64G1F16",
                                       makeSpec(16, 1, 64, DType::F16), 1,
                                       DType::F16, "sm_80", 2010);
    c.ragged = true;
    c.params.causal = true;
    c.params.windowLeft = 40;
    add(c, {{{8192, 3}, {8197, 3}}});
  }
  {
    GpuPrefillCase c = makePrefillCase("Qo8192NhdCsrP16D64G1F16",
                                       makeSpec(16, 1, 64, DType::F16), 1,
                                       DType::F16, "sm_90a", 2011);
    add(c, {{{8192}, {17}}});
  }
  // CUDA-graph grids: a mixed batch (one-row requests beside long ones,
  // an empty one) and a lighter batch of the same shapes, whose grids are
  // the same and whose items are fewer than its split kernel's blocks.
  {
    GpuPrefillCase c = makePrefillCase("FixedGridsMixedCausalNhdCsrP16D128G4F16",
                                       makeSpec(16, 2, 128, DType::F16), 8,
                                       DType::F16, "sm_80", 2013);
    c.params.causal = true;
    c.graphMaxBatch = 8;
    c.paddingRows = 13;
    add(c, {{{1, 1, 300, 1, 65, 0, 1, 1}, {1000, 17, 1000, 1, 1000, 5, 0, 700}},
            {{1, 1, 300, 1, 65, 0, 1, 1}, {1, 17, 300, 1, 65, 5, 0, 7}}});
  }
  {
    GpuPrefillCase c = makePrefillCase("FixedGridsWindowRaggedD64G2BF16Sm90a",
                                       makeSpec(16, 2, 64, DType::BF16), 4,
                                       DType::BF16, "sm_90a", 2014);
    c.ragged = true;
    c.params.causal = true;
    c.params.windowLeft = 100;
    c.graphMaxBatch = 4;
    add(c, {{{1, 700, 1, 3}, {2000, 700, 1, 40}}});
  }
  // Rows past the requests' (buffers of a larger batch) without fixed
  // grids: a cut batch's merge finds no partial states for them, and
  // nothing writes them.
  {
    GpuPrefillCase c = makePrefillCase("PaddingRowsCausalRaggedD64G2F16",
                                       makeSpec(16, 2, 64, DType::F16), 4,
                                       DType::F16, "sm_80", 2015);
    c.ragged = true;
    c.params.causal = true;
    c.paddingRows = 70;
    add(c, {{{3, 500, 1}, {3000, 500, 9}}});
  }
  // Many short requests over 8 KV heads: the tiles fill sm_80 (P == 1, the
  // direct kernel).
  {
    GpuPrefillCase c =
        makePrefillCase("DirectHndCsrP16D64G1F16",
                        makeSpec(16, 8, 64, DType::F16, Layout::HND,
                                 Storage::Combined, Table::CSR),
                        8, DType::F16, "sm_80", 2012);
    c.params.causal = true;
    std::vector<int64_t> qo(20, 16), kv(20, 40);
    qo[3] = 0;
    kv[5] = 16;
    add(c, {{qo, kv}});
  }
  // Other table forms and layouts.
  {
    GpuPrefillCase c =
        makePrefillCase("CausalNhdTokenTableP8D64G2F16",
                        makeSpec(8, 2, 64, DType::F16, Layout::NHD,
                                 Storage::Combined, Table::TokenTable),
                        4, DType::F16, "sm_80", 2013);
    c.params.causal = true;
    add(c, {{{9, 1, 30}, {21, 3, 30}}});
  }
  {
    GpuPrefillCase c =
        makePrefillCase("LlamaTokenOffsetP64D128G4BF16",
                        makeSpec(64, 2, 128, DType::BF16, Layout::Llama,
                                 Storage::Split, Table::TokenOffset),
                        8, DType::BF16, "sm_86", 2014);
    add(c, {{{12, 5}, {50, 3}}});
  }
  {
    CacheSpec spec = makeSpec(5, 2, 64, DType::F16, Layout::PPL0,
                              Storage::Combined, Table::BlockTable);
    spec.layer = 1;
    GpuPrefillCase c = makePrefillCase("CausalPpl0Layer1BlockTableP5D64G2F16",
                                       spec, 4, DType::F16, "sm_80", 2015);
    c.params.causal = true;
    add(c, {{{6, 11}, {13, 11}}});
  }
  // OpenPPL's int64 seqstarts, cachestarts and kv lengths; int64 kvstarts
  // of a ragged KV.
  {
    CacheSpec spec = makeSpec(16, 2, 128, DType::F16, Layout::PPL2,
                              Storage::Combined, Table::TokenTable);
    spec.layer = 1;
    spec.tableType = DType::I64;
    GpuPrefillCase c =
        makePrefillCase("CausalPpl2Layer1TokenTableI64P16D128G4F16", spec, 8,
                        DType::F16, "sm_90a", 2017);
    c.params.causal = true;
    add(c, {{{40, 1, 0}, {70, 33, 5}}});
  }
  {
    GpuPrefillCase c =
        makePrefillCase("RaggedI64D64G2BF16", makeSpec(16, 2, 64, DType::BF16),
                        4, DType::BF16, "sm_80", 2018);
    c.ragged = true;
    c.spec.tableType = DType::I64;
    add(c, {{{17, 3}, {40, 3}}});
  }
  // Configurations given by hand: two 16-row tiles per warp.
  {
    GpuPrefillCase c = makePrefillCase(
        "TwoRowTilesPerWarpCausalNhdCsrP16D64G4F16",
        makeSpec(16, 2, 64, DType::F16), 8, DType::F16, "sm_90a", 2016);
    c.params.causal = true;
    c.config = "#kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 4, "
               "stages = 2, q_in_registers = false, max_partitions = 4>";
    add(c, {{{40, 7, 1}, {90, 7, 3}}});
  }
  // wgmma (sm_90a): warpgroups of 64 rows, Q / K / V in 128-byte-swizzled
  // tiles, P V from registers.
  {
    GpuPrefillCase c = makePrefillCase("WgmmaCausalNhdCsrP16D128G4BF16",
                                       makeSpec(16, 2, 128, DType::BF16), 8,
                                       DType::BF16, "sm_90a", 2019);
    c.params.causal = true;
    c.config = "#kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, "
               "stages = 2, q_in_registers = false, max_partitions = 4, "
               "mma = wgmma>";
    add(c, {standardBatch(true)});
  }
  // Warp-specialized (roles = producer): a producer warpgroup streams the
  // K/V tiles through an mbarrier ring; two consumer warpgroups take turns
  // at issuing their products. Two stages hand each tile over as soon as
  // it landed, three keep one tile's copies in flight behind the one
  // handed over; one consumer warpgroup takes no turns.
  {
    GpuPrefillCase c = makePrefillCase("ProducerCausalNhdCsrP16D128G4BF16",
                                       makeSpec(16, 2, 128, DType::BF16), 8,
                                       DType::BF16, "sm_90a", 2080);
    c.params.causal = true;
    c.config = "#kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, "
               "stages = 2, q_in_registers = false, max_partitions = 4, "
               "mma = wgmma, schedule = overlap, roles = producer>";
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c = makePrefillCase("ProducerStages3RaggedD128G2F16",
                                       makeSpec(16, 2, 128, DType::F16), 4,
                                       DType::F16, "sm_90a", 2081);
    c.ragged = true;
    c.config = "#kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, "
               "stages = 3, q_in_registers = false, max_partitions = 4, "
               "mma = wgmma, schedule = overlap, roles = producer>";
    add(c, {standardBatch(false)});
  }
  // copy = tma: the producer's thread 0 copies each whole ragged K/V tile
  // as 128-byte-swizzled boxes of the K and V tensor maps; the tile the
  // keys end in goes by cp.async. Causal with two stages, and the
  // chooser's own config (tma on a ragged KV of head dim 128).
  {
    GpuPrefillCase c = makePrefillCase("ProducerTmaStages3RaggedD128G2F16",
                                       makeSpec(16, 2, 128, DType::F16), 4,
                                       DType::F16, "sm_90a", 2083);
    c.ragged = true;
    c.config = "#kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, "
               "stages = 3, q_in_registers = false, max_partitions = 4, "
               "mma = wgmma, schedule = overlap, roles = producer, "
               "copy = tma>";
    c.expectTmaCopies = true;
    add(c, {standardBatch(false)});
  }
  {
    GpuPrefillCase c = makePrefillCase(
        "ProducerTmaStages2CausalRaggedD128G4BF16",
        makeSpec(16, 2, 128, DType::BF16), 8, DType::BF16, "sm_90a", 2084);
    c.ragged = true;
    c.params.causal = true;
    c.config = "#kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, "
               "stages = 2, q_in_registers = false, max_partitions = 4, "
               "mma = wgmma, schedule = overlap, roles = producer, "
               "copy = tma>";
    c.expectTmaCopies = true;
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c = makePrefillCase("ChosenTmaCausalRaggedD128G2BF16",
                                       makeSpec(16, 2, 128, DType::BF16), 4,
                                       DType::BF16, "sm_90a", 2085);
    c.ragged = true;
    c.params.causal = true;
    c.expectConfig = "copy = tma";
    c.expectTmaCopies = true;
    add(c, {standardBatch(true)});
  }
  // ... and over pages that are whole boxes: one box per page (NHD
  // combined and HND split pools, CSR and block tables, pages of 8-64
  // tokens); a sliding window's range starts on a page, so its whole
  // tiles are boxes too.
  {
    GpuPrefillCase c = makePrefillCase("ProducerTmaCausalNhdCsrP16D128G4BF16",
                                       makeSpec(16, 2, 128, DType::BF16), 8,
                                       DType::BF16, "sm_90a", 2086);
    c.params.causal = true;
    c.config = "#kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, "
               "stages = 3, q_in_registers = false, max_partitions = 4, "
               "mma = wgmma, schedule = overlap, roles = producer, "
               "copy = tma>";
    c.expectTmaCopies = true;
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c =
        makePrefillCase("ProducerTmaHndSplitBlockTableP8D128G2F16",
                        makeSpec(8, 2, 128, DType::F16, Layout::HND,
                                 Storage::Split, Table::BlockTable),
                        4, DType::F16, "sm_90a", 2087);
    c.config = "#kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, "
               "stages = 2, q_in_registers = false, max_partitions = 4, "
               "mma = wgmma, schedule = overlap, roles = producer, "
               "copy = tma>";
    c.expectTmaCopies = true;
    add(c, {standardBatch(false)});
  }
  // A group of 3 heads: 128 packed rows are not whole query rows, so the
  // query tile comes by cp.async beside the K/V boxes.
  {
    GpuPrefillCase c = makePrefillCase("ChosenTmaRaggedG3D128F16",
                                       makeSpec(16, 2, 128, DType::F16), 6,
                                       DType::F16, "sm_90a", 2089);
    c.ragged = true;
    c.params.causal = true;
    c.expectConfig = "copy = tma";
    c.expectTmaCopies = true;
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c = makePrefillCase("ChosenTmaWindowNhdCsrP64D128G2F16",
                                       makeSpec(64, 2, 128, DType::F16), 4,
                                       DType::F16, "sm_90a", 2088);
    c.params.causal = true;
    c.params.windowLeft = 100;
    c.expectConfig = "copy = tma";
    // The window's range starts on a page: its whole tiles are boxes.
    c.expectTmaCopies = true;
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c =
        makePrefillCase("ProducerOneConsumerHndP4D64G1F16",
                        makeSpec(4, 2, 64, DType::F16, Layout::HND), 2,
                        DType::F16, "sm_90a", 2082);
    c.params.causal = true;
    c.config = "#kvgpu.prefill<q_tile = 64, kv_tile = 64, warps = 4, "
               "stages = 3, q_in_registers = false, max_partitions = 4, "
               "mma = wgmma, schedule = overlap, roles = producer>";
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c = makePrefillCase("SmallTilesMaskRaggedD128G2BF16",
                                       makeSpec(16, 2, 128, DType::BF16), 4,
                                       DType::BF16, "sm_86", 2017);
    c.ragged = true;
    c.mask = MaskKind::Packed;
    c.config = "#kvgpu.prefill<q_tile = 32, kv_tile = 16, warps = 1, "
               "stages = 2, q_in_registers = true, max_partitions = 2>";
    add(c, {{{9, 21, 2}, {33, 21, 5}}});
  }
  // Quantized KV: codes (and int8 scales) stream through the stage ring
  // and each tile is converted into the activation type before the mma
  // reads it (fp8 exactly, k_scale on the logits and v_scale on the
  // output; int8 codes times their group's scale, rounded once). Slots
  // past kv_len hold NaN codes (fp8) / NaN scales (int8).
  {
    GpuPrefillCase c = makePrefillCase(
        "Fp8E4M3CausalNhdCsrP16D128G4F16",
        quantized(makeSpec(16, 2, 128, DType::F16), Quant::FP8E4M3), 8,
        DType::F16, "sm_80", 2030);
    c.params.causal = true;
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c =
        makePrefillCase("Fp8E5M2WindowHndBlockTableP16D64G2BF16Sm90a",
                        quantized(makeSpec(16, 2, 64, DType::BF16, Layout::HND,
                                           Storage::Split, Table::BlockTable),
                                  Quant::FP8E5M2),
                        4, DType::BF16, "sm_90a", 2031);
    c.params.windowLeft = 40;
    c.params.softCap = 30.0;
    add(c, {standardBatch(false)});
  }
  {
    GpuPrefillCase c = makePrefillCase(
        "Int8G8CausalNhdCsrP16D128G4F16Sm86",
        quantized(makeSpec(16, 2, 128, DType::F16), Quant::Int8Group, 8), 8,
        DType::F16, "sm_86", 2032);
    c.params.causal = true;
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c =
        makePrefillCase("Int8G16HndSplitTokenTableP8D256G1BF16ToF32",
                        quantized(makeSpec(8, 2, 256, DType::BF16, Layout::HND,
                                           Storage::Split, Table::TokenTable),
                                  Quant::Int8Group, 16),
                        2, DType::F32, "sm_90a", 2033);
    c.params.base = Base::Two;
    add(c, {{{1, 7, 0, 64, 33}, {17, 1, 17, 300, 500}}});
  }
  // sm_90a up to head dim 128: the producer warpgroup converts the codes
  // (and vLLM's transposed V) into the ring's stages, and the consumers'
  // overlapped mainloop reads them there (kv-tile's choice; two stages by
  // hand: each tile converted and handed over before the next is copied).
  {
    GpuPrefillCase c = makePrefillCase(
        "ProducerFp8E4M3CausalNhdCsrP16D128G4BF16Sm90a",
        quantized(makeSpec(16, 2, 128, DType::BF16), Quant::FP8E4M3), 8,
        DType::BF16, "sm_90a", 2083);
    c.params.causal = true;
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c =
        makePrefillCase("ProducerInt8G16HndBlockTableP8D128G2F16Sm90a",
                        quantized(makeSpec(8, 2, 128, DType::F16, Layout::HND,
                                           Storage::Split, Table::BlockTable),
                                  Quant::Int8Group, 16),
                        4, DType::F16, "sm_90a", 2084);
    c.params.windowLeft = 70;
    add(c, {standardBatch(false)});
  }
  {
    GpuPrefillCase c = makePrefillCase(
        "ProducerStages2Fp8E5M2CausalNhdCsrP16D128G4F16",
        quantized(makeSpec(16, 2, 128, DType::F16), Quant::FP8E5M2), 8,
        DType::F16, "sm_90a", 2085);
    c.params.causal = true;
    c.config = "#kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, "
               "stages = 2, q_in_registers = false, max_partitions = 4, "
               "mma = wgmma, schedule = overlap, roles = producer>";
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c = makePrefillCase(
        "ProducerVllmFp8E4M3CausalBlockTableP16D128G2BF16",
        quantized(makeSpec(16, 2, 128, DType::BF16, Layout::VLLM,
                           Storage::Split, Table::BlockTable),
                  Quant::FP8E4M3),
        4, DType::BF16, "sm_90a", 2086);
    c.params.causal = true;
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c =
        makePrefillCase("ProducerVllmCausalBlockTableP16D128G4F16",
                        makeSpec(16, 2, 128, DType::F16, Layout::VLLM,
                                 Storage::Split, Table::BlockTable),
                        8, DType::F16, "sm_90a", 2087);
    c.params.causal = true;
    add(c, {standardBatch(true)});
  }
  // vLLM's cache: K rows of x-element chunks; V [blocks, H, D, block]
  // staged transposed (chunks of consecutive slots of one dim) and
  // transposed per tile into the V tile the mma reads; ranges start on a
  // chunk (a window's keys before it are masked).
  {
    GpuPrefillCase c =
        makePrefillCase("VllmCausalBlockTableP16D128G4F16",
                        makeSpec(16, 2, 128, DType::F16, Layout::VLLM,
                                 Storage::Split, Table::BlockTable),
                        8, DType::F16, "sm_80", 2040);
    c.params.causal = true;
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c =
        makePrefillCase("VllmWindowBlockTableP8D64G2BF16Sm90a",
                        makeSpec(8, 2, 64, DType::BF16, Layout::VLLM,
                                 Storage::Split, Table::BlockTable),
                        4, DType::BF16, "sm_90a", 2041);
    c.params.causal = true;
    c.params.windowLeft = 37;
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c =
        makePrefillCase("VllmFp8E4M3BlockTableP16D128G1F16ToF32",
                        quantized(makeSpec(16, 2, 128, DType::F16, Layout::VLLM,
                                           Storage::Split, Table::BlockTable),
                                  Quant::FP8E4M3),
                        2, DType::F32, "sm_86", 2042);
    c.params.softCap = 30.0;
    add(c, {standardBatch(false)});
  }
  // Deeper rings (3 and 4 stages) given by hand, over 16-key tiles so that
  // requests span many more tiles than stages: each tile's page entries
  // ride with a K group S - 1 tiles earlier (token tables: one per key),
  // code rings and vLLM's transposed V ring stream S tiles, split-KV
  // partitions start the schedule at their first key, and requests
  // shorter than the prologue issue empty groups.
  auto deepConfig = [](int64_t qTile, int64_t warps, int64_t stages,
                       int64_t partitions) {
    return "#kvgpu.prefill<q_tile = " + std::to_string(qTile) +
           ", kv_tile = 16, warps = " + std::to_string(warps) +
           ", stages = " + std::to_string(stages) +
           ", q_in_registers = true, max_partitions = " +
           std::to_string(partitions) + ">";
  };
  const PrefillBatch deepBatch{{1, 7, 0, 40, 3, 20}, {1, 17, 5, 300, 40, 129}};
  {
    GpuPrefillCase c = makePrefillCase("ThreeStagesCausalNhdCsrP16D64G4F16",
                                       makeSpec(16, 2, 64, DType::F16), 8,
                                       DType::F16, "sm_80", 2050);
    c.params.causal = true;
    c.config = deepConfig(64, 4, 3, 1);
    add(c, {deepBatch});
  }
  {
    GpuPrefillCase c =
        makePrefillCase("FourStagesSplitTokenTableP4D128G2BF16",
                        makeSpec(4, 2, 128, DType::BF16, Layout::HND,
                                 Storage::Split, Table::TokenTable),
                        4, DType::BF16, "sm_90a", 2051);
    c.params.windowLeft = 70;
    c.config = deepConfig(32, 2, 4, 4);
    add(c, {deepBatch});
  }
  {
    GpuPrefillCase c = makePrefillCase(
        "FourStagesFp8E4M3PackedMaskBlockTableP8D64G2BF16",
        quantized(makeSpec(8, 2, 64, DType::BF16, Layout::NHD,
                           Storage::Combined, Table::BlockTable),
                  Quant::FP8E4M3),
        4, DType::BF16, "sm_86", 2052);
    c.mask = MaskKind::Packed;
    c.config = deepConfig(32, 2, 4, 2);
    add(c, {deepBatch});
  }
  {
    GpuPrefillCase c = makePrefillCase(
        "ThreeStagesInt8G8RopeCausalNhdCsrP16D64G4F16",
        quantized(makeSpec(16, 2, 64, DType::F16), Quant::Int8Group, 8), 8,
        DType::F16, "sm_90a", 2053);
    c.params.causal = true;
    c.params.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
    c.config = deepConfig(64, 4, 3, 1);
    add(c, {deepBatch});
  }
  {
    GpuPrefillCase c =
        makePrefillCase("FourStagesVllmCausalBlockTableP16D64G2F16",
                        makeSpec(16, 2, 64, DType::F16, Layout::VLLM,
                                 Storage::Split, Table::BlockTable),
                        4, DType::F16, "sm_80", 2054);
    c.params.causal = true;
    c.config = deepConfig(32, 2, 4, 2);
    add(c, {deepBatch});
  }
  {
    GpuPrefillCase c = makePrefillCase(
        "ThreeStagesRaggedPositionsD64G2BF16ToF32",
        makeSpec(16, 2, 64, DType::BF16), 4, DType::F32, "sm_86", 2055);
    c.ragged = true;
    c.positions = true;
    c.params.causal = true;
    c.config = deepConfig(32, 2, 3, 4);
    add(c, {deepBatch});
  }
  // On-the-fly RoPE: the block rotates its query tile once and each K tile
  // after it arrives (after the conversion, for quantized KV), in place in
  // shared memory, rounded to the activation type as the mma reads it.
  {
    GpuPrefillCase c = makePrefillCase("RopeRotateHalfCausalNhdCsrP16D128G4F16",
                                       makeSpec(16, 2, 128, DType::F16), 8,
                                       DType::F16, "sm_80", 2050);
    c.params.causal = true;
    c.params.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c = makePrefillCase(
        "RopeInterleaveWindowRaggedD64G2BF16Sm90a",
        makeSpec(16, 2, 64, DType::BF16), 4, DType::BF16, "sm_90a", 2051);
    c.ragged = true;
    c.params.windowLeft = 50;
    c.params.rope = ref::Rope{ref::RopeStyle::Interleave, 5e5, 0.5};
    add(c, {standardBatch(false)});
  }
  // Under a producer warpgroup (sm_90a's choice at head dim 128): the
  // producer rotates each K tile once its copies landed, before handing it
  // over; ragged K/V, so that the tiles would otherwise go by TMA; the
  // same with three stages' lag over pages and Llama 3.1's scaling.
  {
    GpuPrefillCase c = makePrefillCase("ProducerRopeCausalRaggedD128G4BF16",
                                       makeSpec(16, 2, 128, DType::BF16), 8,
                                       DType::BF16, "sm_90a", 2053);
    c.ragged = true;
    c.params.causal = true;
    c.params.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
    c.expectConfig = "roles = producer>";
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c = makePrefillCase(
        "ProducerRopeLlama31Rotary64NhdCsrP16D128G2F16",
        makeSpec(16, 2, 128, DType::F16), 4, DType::F16, "sm_90a", 2054);
    c.params.rope = llama31Rope(ref::RopeStyle::Interleave, 64);
    c.expectConfig = "roles = producer>";
    add(c, {standardBatch(false)});
  }
  {
    // Llama 3.1's scaling on the first 64 of 128 dims; a request of 3000
    // keys.
    GpuPrefillCase c =
        makePrefillCase("RopeLlama31Rotary64CausalHndBlockTableP16D128G1F16",
                        makeSpec(16, 2, 128, DType::F16, Layout::HND,
                                 Storage::Split, Table::BlockTable),
                        2, DType::F16, "sm_86", 2052);
    c.params.causal = true;
    c.params.rope = llama31Rope(ref::RopeStyle::RotateHalf, 64);
    add(c, {{{1, 70, 0, 9}, {3000, 2000, 5, 9}}});
  }
  {
    // Rows at given positions (a cascade level's): each query row turns to
    // its own.
    GpuPrefillCase c = makePrefillCase(
        "RopeInterleaveRotary32PositionsCausalNhdCsrP16D64G4F16",
        makeSpec(16, 2, 64, DType::F16), 8, DType::F16, "sm_80", 2053);
    c.params.causal = true;
    c.positions = true;
    c.params.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
    c.params.rope->rotaryDim = 32;
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c = makePrefillCase(
        "RopeRotateHalfRotary96Int8G8CausalNhdCsrP16D128G4F16",
        quantized(makeSpec(16, 2, 128, DType::F16), Quant::Int8Group, 8), 8,
        DType::F16, "sm_80", 2054);
    c.params.causal = true;
    c.params.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
    c.params.rope->rotaryDim = 96;
    add(c, {standardBatch(true)});
  }
  {
    GpuPrefillCase c = makePrefillCase(
        "RopeInterleaveVllmFp8E4M3BlockTableP16D128G1BF16",
        quantized(makeSpec(16, 2, 128, DType::BF16, Layout::VLLM,
                           Storage::Split, Table::BlockTable),
                  Quant::FP8E4M3),
        2, DType::BF16, "sm_90a", 2055);
    c.params.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
    add(c, {standardBatch(false)});
  }
  // f32 KV: the decode kernel over query rows (mma.sync takes no f32), each
  // row's keys bounded by causal / the window at its position, the GQA
  // group's heads in one block; f32 within 1e-5.
  {
    // (The emulator runs a block per row: shorter than the lengths.)
    GpuPrefillCase c = makePrefillCase("F32CausalNhdCsrP16D128G4",
                                       makeSpec(16, 2, 128, DType::F32), 8,
                                       DType::F32, "sm_80", 2060);
    c.params.causal = true;
    add(c, {{{1, 7, 0, 64, 65, 17}, {1, 17, 0, 150, 200, 17}}});
  }
  {
    // Rows past the requests' (a CUDA graph's padding) on the decode
    // kernel's blocks of one query row: they find no request and write
    // nothing.
    GpuPrefillCase c = makePrefillCase("F32PaddingRowsCausalNhdCsrP16D64G2",
                                       makeSpec(16, 2, 64, DType::F32), 4,
                                       DType::F32, "sm_80", 2062);
    c.params.causal = true;
    c.paddingRows = 5;
    add(c, {{{3, 1, 2}, {20, 7, 40}}});
  }
  {
    GpuPrefillCase c =
        makePrefillCase("F32WindowSoftCapHndBlockTableP8D64G2ToF16Base2",
                        makeSpec(8, 2, 64, DType::F32, Layout::HND,
                                 Storage::Split, Table::BlockTable),
                        4, DType::F16, "sm_90a", 2061);
    c.params.windowLeft = 40;
    c.params.softCap = 20.0;
    c.params.base = Base::Two;
    add(c, {standardBatch(false)});
  }
  {
    GpuPrefillCase c =
        makePrefillCase("F32PositionsCausalRopeTokenTableP4D256G1",
                        makeSpec(4, 2, 256, DType::F32, Layout::NHD,
                                 Storage::Combined, Table::TokenTable),
                        2, DType::F32, "sm_86", 2062);
    c.params.causal = true;
    c.positions = true;
    c.params.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
    add(c, {{{1, 7, 0, 30, 3}, {17, 9, 5, 200, 40}}});
  }
  // sm_90a chooses wgmma where the kernel takes it: each sm_90a case with a
  // chosen configuration runs on mma.sync too.
  addMmaSyncTwins(cases, [](const GpuPrefillCase &c) {
    return c.config.empty() && c.spec.dtype != DType::F32;
  });
  return cases;
}

/// A random request of a sweep batch: lengths 0 and 1 as often as longer
/// ones; causal requests have at least as many keys as rows, except a
/// quarter of them (drawn from `overhang`, so that the other draws stay
/// what they were), whose first rows see no key.
void addRandomRequest(Rng &rng, Rng &overhang, bool causal,
                      PrefillBatch &batch) {
  auto length = [&](int64_t longest) {
    switch (rng.integer(0, 3)) {
    case 0:
      return int64_t(0);
    case 1:
      return int64_t(1);
    default:
      return rng.integer(2, longest);
    }
  };
  int64_t qo = length(80), kv = length(300);
  if (causal && !overhang.coin(0.25))
    kv = std::max(kv, qo);
  batch.qo.push_back(qo);
  batch.kv.push_back(kv);
}

/// Differential testing: seeded random configurations (KV form, layout,
/// table form, page size, head dim, GQA group, KV and output types, causal,
/// window, soft cap, sm_scale, LSE base, custom masks, row positions, chip;
/// vLLM's layout, fp8 and int8-group caches) over random batches with
/// lengths 0 and 1. CI runs the seeds 5000...5023;
/// KVIR_PREFILL_SWEEP_SEED=<first> KVIR_PREFILL_SWEEP_COUNT=<n> runs
/// others, and a failing case's name ends in the seed that reproduces it
/// alone (KVIR_PREFILL_SWEEP_COUNT=1).
std::vector<GpuPrefillCase> prefillSweepCases() {
  std::vector<GpuPrefillCase> cases;
  int64_t firstSeed = envInteger("KVIR_PREFILL_SWEEP_SEED", 5000);
  int64_t count = envInteger("KVIR_PREFILL_SWEEP_COUNT", 24);
  const int64_t pages[] = {1, 3, 8, 16, 64};
  const int64_t dims[] = {64, 80, 96, 128, 256};
  const int64_t groups[] = {1, 2, 4, 8};
  const DType outs[] = {DType::F16, DType::BF16, DType::F32};
  const char *chips[] = {"sm_80", "sm_86", "sm_89", "sm_90a"};
  for (int64_t i = 0; i < count; ++i) {
    int64_t sweepSeed = firstSeed + i;
    Rng rng(sweepSeed);
    DType dtype = rng.coin() ? DType::BF16 : DType::F16;
    int64_t page = pages[rng.integer(0, 4)];
    int64_t dim = dims[rng.integer(0, 4)];
    int64_t kvHeads = rng.integer(1, 2);
    int64_t group = groups[rng.integer(0, 3)];
    std::string form;
    CacheSpec spec;
    bool ragged = false;
    switch (rng.integer(0, 9)) {
    case 0:
      ragged = true;
      spec = makeSpec(16, kvHeads, dim, dtype);
      form = "Ragged";
      break;
    case 1:
      // Llama's "page" is a request's whole row (max_seq).
      page = 512;
      spec = makeSpec(page, kvHeads, dim, dtype, Layout::Llama, Storage::Split,
                      Table::TokenOffset);
      form = "LlamaSplitTokenOffset";
      break;
    case 2:
      spec = makeSpec(page, kvHeads, dim, dtype, Layout::PPL0,
                      Storage::Combined, Table::BlockTable);
      spec.layer = rng.integer(0, 1);
      form = "Ppl0BlockTable";
      break;
    default: {
      Layout layout = rng.coin() ? Layout::HND : Layout::NHD;
      Storage storage = rng.coin() ? Storage::Split : Storage::Combined;
      const Table tables[] = {Table::CSR, Table::BlockTable, Table::TokenTable};
      const char *tableNames[] = {"Csr", "BlockTable", "TokenTable"};
      int64_t t = rng.integer(0, 2);
      spec = makeSpec(page, kvHeads, dim, dtype, layout, storage, tables[t]);
      form = std::string(layout == Layout::HND ? "Hnd" : "Nhd") +
             (storage == Storage::Split ? "Split" : "Combined") +
             tableNames[t];
      break;
    }
    }
    // An eighth of the cases take vLLM's layout (pages of at least 8
    // slots), and a fifth of the paged ones store fp8 or int8 groups (not
    // with vLLM's layout), each from a generator of their own, so that the
    // other draws stay what they were.
    Rng layoutRng(sweepSeed * 104729 + 5);
    bool vllm = !ragged && layoutRng.coin(0.125);
    if (vllm) {
      const int64_t vllmPages[] = {8, 16, 64};
      page = vllmPages[layoutRng.integer(0, 2)];
      spec = makeSpec(page, kvHeads, dim, dtype, Layout::VLLM, Storage::Split,
                      Table::BlockTable);
      form = "VllmBlockTable";
    }
    Rng quantRng(sweepSeed * 6007 + 31);
    std::string quantName;
    if (!ragged && quantRng.coin(0.2)) {
      switch (quantRng.integer(0, 2)) {
      case 0:
        spec = quantized(spec, Quant::FP8E4M3);
        quantName = "Fp8E4M3";
        break;
      case 1:
        spec = quantized(spec, Quant::FP8E5M2);
        quantName = "Fp8E5M2";
        break;
      default: {
        if (vllm) { // int8 groups have no kernel in vLLM's layout
          spec = quantized(spec, Quant::FP8E5M2);
          quantName = "Fp8E5M2";
          break;
        }
        // Group 16 only where it leaves an even number of scales per row.
        int64_t g = quantRng.coin() && (dim / 16) % 2 == 0 ? 16 : 8;
        spec = quantized(spec, Quant::Int8Group, g);
        quantName = "Int8G" + std::to_string(g);
        break;
      }
      }
    }
    GpuPrefillCase c =
        makePrefillCase("", spec, group * kvHeads, outs[rng.integer(0, 2)],
                        chips[rng.integer(0, 3)], sweepSeed + 1000);
    // sm_90a cases run on either tensor-core instruction (a generator of
    // their own, so that the other draws stay what they were).
    bool mmaSync = c.chip == "sm_90a" && Rng(sweepSeed * 7727 + 17).coin();
    if (mmaSync)
      c.chip = onMmaSync(c.chip);
    c.ragged = ragged;
    c.params.causal = rng.coin();
    randomizeAttention(rng, c.params, 100);
    const MaskKind masks[] = {MaskKind::None, MaskKind::None, MaskKind::Bool,
                              MaskKind::Packed};
    c.mask = masks[rng.integer(0, 3)];
    // A fifth of the cases give each row a position (a generator of their
    // own, so that the other draws stay what they were).
    c.positions = Rng(sweepSeed * 7919 + 29).coin(0.2);
    // A fifth rotate by RoPE (a generator of their own too).
    Rng ropeRng(sweepSeed * 3571 + 41);
    if (ropeRng.coin(0.2))
      c.params.rope = randomRope(ropeRng, dim);
    PrefillBatch batch;
    int64_t requests = rng.integer(1, 5);
    Rng overhang(sweepSeed * 2311 + 43);
    for (int64_t r = 0; r < requests; ++r)
      addRandomRequest(rng, overhang, c.params.causal, batch);
    c.batches = {batch};
    std::ostringstream name;
    name << "Sweep" << i << "_" << form << (ragged ? "" : "P")
         << (ragged ? "" : std::to_string(page)) << "D" << dim << "G" << group
         << "H" << kvHeads << mlirName(dtype) << quantName << "To"
         << mlirName(c.outType) << (c.params.causal ? "Causal" : "")
         << (c.mask == MaskKind::Bool     ? "BoolMask"
             : c.mask == MaskKind::Packed ? "PackedMask"
                                          : "")
         << (c.positions ? "Positions" : "") << (c.params.rope ? "Rope" : "")
         << (mmaSync ? "MmaSync" : "") << "_Seed" << sweepSeed;
    c.name = name.str();
    cases.push_back(c);
  }
  return cases;
}

class GpuPrefill : public ::testing::TestWithParam<GpuPrefillCase> {};

TEST_P(GpuPrefill, MatchesReference) { runGpuPrefillCase(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Matrix, GpuPrefill, ::testing::ValuesIn(prefillCases()),
    [](const ::testing::TestParamInfo<GpuPrefillCase> &info) {
      return info.param.name;
    });

INSTANTIATE_TEST_SUITE_P(
    Sweep, GpuPrefill, ::testing::ValuesIn(prefillSweepCases()),
    [](const ::testing::TestParamInfo<GpuPrefillCase> &info) {
      return info.param.name;
    });

} // namespace
