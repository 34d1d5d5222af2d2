//===- DecodeGpuTest.cpp - GPU decode kernels in the emulator -------------===//
//
// Each configuration is a kv.decode over a random paged cache (pages
// scattered over a pool whose unowned slots are NaN, outputs NaN-poisoned),
// lowered with convert-kv-to-gpu alone (as kvir-runner does) and after
// kv-specialize-layout + kv-tile (as kv-to-nvvm / kv-to-ptx do) -- the test
// fails if the decode falls back to host loops -- run in kvir's emulator and
// compared with the float64 reference (outputs within the harness's relative
// error bound of the output type, LSE within 1e-3, empty requests exactly
// (0, -inf), nothing NaN). Every configuration runs batches on both sides
// of the split-KV heuristic: a small batch (P > 1 partitions: split kernel +
// merge kernel) and one with batch * Hkv >= 2 * SMs (P == 1: the direct
// kernel); which kernels ran, and with how many partitions, is read from
// the emulator's launch records. Batches always hold an empty and a
// one-token request.
// Any emulator report (out-of-bounds access, shared-memory race, barrier
// divergence) fails the test.
//
//===----------------------------------------------------------------------===//
#include "DecodeCases.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>

using namespace kvir::test;
using namespace kvir::test::gpu;

namespace {

std::vector<GpuDecodeCase> decodeCases() {
  std::vector<GpuDecodeCase> cases;
  auto add = [&](GpuDecodeCase c, int64_t smallBatch, int64_t smallMaxLen,
                 int64_t largeMaxLen) {
    int64_t group = c.qHeads / c.spec.kvHeads;
    c.runs = bothPaths(c.chip, c.spec.kvHeads, group, smallBatch, smallMaxLen,
                       largeMaxLen, c.params.windowLeft,
                       c.spec.quant != Quant::None);
    cases.push_back(std::move(c));
  };
  {
    GpuDecodeCase c = makeCase("NhdCombinedCsrP16D128G4F16Base2",
                               makeSpec(16, 2, 128, DType::F16, Layout::NHD,
                                        Storage::Combined, Table::CSR),
                               8, DType::F16, "sm_86", 1001);
    c.params.base = Base::Two;
    add(c, 5, 70, 20);
  }
  {
    GpuDecodeCase c = makeCase("HndCombinedCsrP16D128G4F16BaseE",
                               makeSpec(16, 2, 128, DType::F16, Layout::HND,
                                        Storage::Combined, Table::CSR),
                               8, DType::F16, "sm_80", 1002);
    add(c, 4, 90, 20);
  }
  {
    GpuDecodeCase c = makeCase("NhdSplitCsrP5D64G2BF16",
                               makeSpec(5, 4, 64, DType::BF16, Layout::NHD,
                                        Storage::Split, Table::CSR),
                               8, DType::BF16, "sm_86", 1003);
    add(c, 6, 40, 13);
  }
  {
    GpuDecodeCase c = makeCase("HndSplitBlockTableP7D96G1F16ToF32",
                               makeSpec(7, 4, 96, DType::F16, Layout::HND,
                                        Storage::Split, Table::BlockTable),
                               4, DType::F32, "sm_86", 1004);
    add(c, 5, 45, 16);
  }
  {
    GpuDecodeCase c = makeCase("NhdCombinedBlockTableP1D64G8BF16ToF32Base2",
                               makeSpec(1, 2, 64, DType::BF16, Layout::NHD,
                                        Storage::Combined, Table::BlockTable),
                               16, DType::F32, "sm_86", 1005);
    c.params.base = Base::Two;
    add(c, 5, 30, 6);
  }
  {
    GpuDecodeCase c = makeCase("HndCombinedBlockTableP32D256G2F16ToBF16SoftCap",
                               makeSpec(32, 4, 256, DType::F16, Layout::HND,
                                        Storage::Combined, Table::BlockTable),
                               8, DType::BF16, "sm_86", 1006);
    c.params.softCap = 5.0;
    add(c, 3, 100, 40);
  }
  {
    GpuDecodeCase c = makeCase("NhdSplitBlockTableP64D80G4BF16Window",
                               makeSpec(64, 2, 80, DType::BF16, Layout::NHD,
                                        Storage::Split, Table::BlockTable),
                               8, DType::BF16, "sm_89", 1007);
    c.params.windowLeft = 20;
    add(c, 4, 150, 70);
  }
  {
    GpuDecodeCase c = makeCase("HndSplitCsrP128D128G8F16SmScaleBase2",
                               makeSpec(128, 1, 128, DType::F16, Layout::HND,
                                        Storage::Split, Table::CSR),
                               8, DType::F16, "sm_86", 1008);
    c.params.smScale = 0.05;
    c.params.base = Base::Two;
    add(c, 3, 300, 8);
  }
  {
    GpuDecodeCase c = makeCase("NhdCombinedCsrP16D256G1BF16ToF32CapWindowScale",
                               makeSpec(16, 4, 256, DType::BF16, Layout::NHD,
                                        Storage::Combined, Table::CSR),
                               4, DType::F32, "sm_90a", 1009);
    c.params.smScale = 0.1;
    c.params.softCap = 3.0;
    c.params.windowLeft = 33;
    add(c, 4, 80, 10);
  }
  {
    GpuDecodeCase c = makeCase("HndCombinedCsrP5D80G8BF16ToF16",
                               makeSpec(5, 2, 80, DType::BF16, Layout::HND,
                                        Storage::Combined, Table::CSR),
                               16, DType::F16, "sm_86", 1010);
    add(c, 4, 33, 9);
  }
  {
    GpuDecodeCase c = makeCase("NhdCombinedCsrP32D96G2F16WindowZero",
                               makeSpec(32, 4, 96, DType::F16, Layout::NHD,
                                        Storage::Combined, Table::CSR),
                               8, DType::F16, "sm_86", 1011);
    c.params.windowLeft = 0;
    add(c, 5, 70, 35);
  }
  {
    GpuDecodeCase c = makeCase("HndCombinedBlockTableP64D64G4F16BaseE",
                               makeSpec(64, 2, 64, DType::F16, Layout::HND,
                                        Storage::Combined, Table::BlockTable),
                               8, DType::F16, "sm_86", 1012);
    add(c, 4, 200, 66);
  }
  {
    GpuDecodeCase c = makeCase("NhdSplitCsrP16D128G8BF16ToF32Base2Cap",
                               makeSpec(16, 8, 128, DType::BF16, Layout::NHD,
                                        Storage::Split, Table::CSR),
                               64, DType::F32, "sm_86", 1013);
    c.params.base = Base::Two;
    c.params.softCap = 30.0;
    add(c, 3, 40, 17);
  }
  {
    GpuDecodeCase c = makeCase("HndSplitBlockTableP16D64G1BF16Base2",
                               makeSpec(16, 8, 64, DType::BF16, Layout::HND,
                                        Storage::Split, Table::BlockTable),
                               8, DType::BF16, "sm_80", 1014);
    c.params.base = Base::Two;
    add(c, 5, 60, 18);
  }
  {
    // Long context: 32k keys of one request over one KV head, cut into
    // one chunk per block the chip holds.
    GpuDecodeCase c = makeCase("LongHndCombinedCsrP16D128G4F16Kv32k",
                               makeSpec(16, 1, 128, DType::F16, Layout::HND,
                                        Storage::Combined, Table::CSR),
                               4, DType::F16, "sm_90a", 1015);
    c.params.base = Base::Two;
    c.runs = {BatchRun{0, 0, {32768}}};
    cases.push_back(c);
  }
  {
    // A 9000-key request with a block table, chosen off page boundaries,
    // next to an empty and a 1-key one, behind a 5000-key window.
    GpuDecodeCase c = makeCase("LongNhdSplitBlockTableP64D128G8BF16Kv9k",
                               makeSpec(64, 1, 128, DType::BF16, Layout::NHD,
                                        Storage::Split, Table::BlockTable),
                               8, DType::BF16, "sm_80", 1016);
    c.params.windowLeft = 5000;
    c.runs = {BatchRun{0, 0, {9001, 0, 1}}};
    cases.push_back(c);
  }
  {
    // Groups beyond 8: one block holds 16 query heads of head_dim 128.
    GpuDecodeCase c = makeCase("NhdCombinedCsrP16D128G16F16",
                               makeSpec(16, 2, 128, DType::F16, Layout::NHD,
                                        Storage::Combined, Table::CSR),
                               32, DType::F16, "sm_86", 1018);
    add(c, 3, 50, 12);
  }
  {
    GpuDecodeCase c = makeCase("HndSplitBlockTableP32D64G32BF16Base2",
                               makeSpec(32, 1, 64, DType::BF16, Layout::HND,
                                        Storage::Split, Table::BlockTable),
                               32, DType::BF16, "sm_89", 1019);
    c.params.base = Base::Two;
    add(c, 3, 70, 10);
  }
  // Other layouts and table forms convert-kv-to-gpu lowers through their
  // affine maps: token tables with unaligned runs, token offsets, OpenPPL
  // layouts with a layer index, Llama's contiguous cache.
  {
    GpuDecodeCase c = makeCase("NhdCombinedTokenTableP8D64G4F16",
                               makeSpec(8, 2, 64, DType::F16, Layout::NHD,
                                        Storage::Combined, Table::TokenTable),
                               8, DType::F16, "sm_86", 1020);
    add(c, 4, 40, 12);
  }
  {
    GpuDecodeCase c = makeCase("HndSplitTokenOffsetP16D128G2BF16Base2",
                               makeSpec(16, 2, 128, DType::BF16, Layout::HND,
                                        Storage::Split, Table::TokenOffset),
                               4, DType::BF16, "sm_86", 1021);
    c.params.base = Base::Two;
    add(c, 4, 50, 12);
  }
  {
    GpuDecodeCase c = makeCase("LlamaTokenOffsetP1024D64G4F16",
                               makeSpec(1024, 2, 64, DType::F16, Layout::Llama,
                                        Storage::Split, Table::TokenOffset),
                               8, DType::F16, "sm_86", 1022);
    // Pages are rows of max_seq tokens: room for the long first request.
    add(c, 4, 64, 20);
  }
  {
    CacheSpec spec = makeSpec(5, 2, 64, DType::F16, Layout::PPL0,
                              Storage::Combined, Table::BlockTable);
    spec.layer = 1;
    GpuDecodeCase c = makeCase("Ppl0Layer1BlockTableP5D64G2F16", spec, 4,
                               DType::F16, "sm_86", 1023);
    add(c, 4, 30, 8);
  }
  {
    CacheSpec spec = makeSpec(16, 2, 128, DType::BF16, Layout::PPL3,
                              Storage::Combined, Table::TokenTable);
    spec.layer = 1;
    GpuDecodeCase c = makeCase("Ppl3Layer1TokenTableP16D128G4BF16", spec, 8,
                               DType::F32, "sm_86", 1024);
    c.params.windowLeft = 17;
    add(c, 4, 60, 12);
  }
  // OpenPPL's int64 cachestarts and kv lengths (token table and token
  // offsets), read as i64 by the kernel and the host's work schedule; one
  // at group 8 on the tensor-core kernel.
  {
    CacheSpec spec = makeSpec(16, 2, 128, DType::F16, Layout::PPL2,
                              Storage::Combined, Table::TokenTable);
    spec.layer = 1;
    spec.tableType = DType::I64;
    GpuDecodeCase c = makeCase("Ppl2Layer1TokenTableI64P16D128G4F16", spec, 8,
                               DType::F16, "sm_90a", 1025);
    add(c, 5, 700, 14);
  }
  {
    CacheSpec spec = makeSpec(8, 2, 64, DType::BF16, Layout::PPL1,
                              Storage::Combined, Table::TokenOffset);
    spec.tableType = DType::I64;
    GpuDecodeCase c = makeCase("Ppl1TokenOffsetI64P8D64G8BF16", spec, 16,
                               DType::BF16, "sm_80", 1026);
    add(c, 4, 300, 12);
  }
  // The stage ring at its extremes: two stages, and eight; and rows of
  // 8-byte vectors, which the ring fills with loads and stores instead of
  // cp.async (zeros past a tile's last token). Long requests wrap the ring
  // many times; windows start tiles off a page boundary.
  {
    GpuDecodeCase c = makeCase("NhdCombinedCsrP16D128G4F16TwoStages",
                               makeSpec(16, 2, 128, DType::F16, Layout::NHD,
                                        Storage::Combined, Table::CSR),
                               8, DType::F16, "sm_90a", 1025);
    c.config = "#kvgpu.decode<vector = 8, threads_x = 16, threads_z = 2, "
               "tile_tokens = 16, stages = 2, max_partitions = 32>";
    c.runs = {BatchRun{0, 0, {700, 0, 1, 333}}};
    cases.push_back(c);
  }
  {
    GpuDecodeCase c = makeCase("HndSplitBlockTableP7D64G2BF16EightStages",
                               makeSpec(7, 2, 64, DType::BF16, Layout::HND,
                                        Storage::Split, Table::BlockTable),
                               4, DType::BF16, "sm_80", 1026);
    c.config = "#kvgpu.decode<vector = 8, threads_x = 8, threads_z = 4, "
               "tile_tokens = 8, stages = 8, max_partitions = 32>";
    c.params.windowLeft = 150;
    c.runs = {BatchRun{0, 0, {517, 1, 0, 64, 9}}};
    cases.push_back(c);
  }
  {
    GpuDecodeCase c = makeCase("NhdCombinedCsrP16D96G4F16NarrowVectors",
                               makeSpec(16, 2, 96, DType::F16, Layout::NHD,
                                        Storage::Combined, Table::CSR),
                               8, DType::F32, "sm_86", 1027);
    c.config = "#kvgpu.decode<vector = 4, threads_x = 32, threads_z = 1, "
               "tile_tokens = 16, stages = 3, max_partitions = 32>";
    c.runs = {BatchRun{0, 0, {400, 0, 1, 37}}};
    cases.push_back(c);
  }
  // CUDA-graph mode: grids fixed for 16 requests, run with smaller
  // batches (one long request cut into chunks, or none cut) and a full one.
  {
    GpuDecodeCase c = makeCase("GraphFixedGridNhdCombinedCsrP16D128G4F16",
                               makeSpec(16, 2, 128, DType::F16, Layout::NHD,
                                        Storage::Combined, Table::CSR),
                               8, DType::F16, "sm_90a", 1028);
    c.graphMaxBatch = 16;
    c.runs = {BatchRun{0, 0, {700, 0, 1, 40, 3}, true},
              BatchRun{0, 0, {20, 1, 0}, false},
              BatchRun{16, 90, {}}};
    cases.push_back(c);
  }
  {
    // Large batch: 512 short requests, none cut.
    GpuDecodeCase c = makeCase("Batch512NhdCombinedCsrP16D64G2F16",
                               makeSpec(16, 1, 64, DType::F16, Layout::NHD,
                                        Storage::Combined, Table::CSR),
                               2, DType::F16, "sm_90a", 1017);
    c.runs = {BatchRun{512, 24, {}}};
    cases.push_back(c);
  }
  // fp8 KV (per-tensor k_scale / v_scale): codes copied 16 bytes at a
  // time into the stage ring and dequantized in registers; k_scale folds
  // into the query, v_scale into the output. Slots past kv_len hold NaN
  // codes.
  {
    GpuDecodeCase c = makeCase(
        "Fp8E4M3NhdCombinedCsrP16D128G4F16",
        quantized(makeSpec(16, 2, 128, DType::F16), Quant::FP8E4M3), 8,
        DType::F16, "sm_80", 1040);
    add(c, 5, 70, 20);
  }
  {
    // Scales of 1/512: most codes saturate at +-448.
    GpuDecodeCase c = makeCase(
        "Fp8E4M3SaturatedHndSplitBlockTableP16D128G8BF16",
        quantized(makeSpec(16, 1, 128, DType::BF16, Layout::HND,
                           Storage::Split, Table::BlockTable),
                  Quant::FP8E4M3),
        8, DType::BF16, "sm_90a", 1041);
    c.cacheOptions.kScale = c.cacheOptions.vScale = 1.0f / 512;
    c.params.base = Base::Two;
    add(c, 4, 60, 15);
  }
  {
    // Scales of 64 and 32: most codes are e4m3 subnormals.
    GpuDecodeCase c = makeCase(
        "Fp8E4M3SubnormalNhdSplitCsrP8D64G2F16ToF32",
        quantized(makeSpec(8, 2, 64, DType::F16, Layout::NHD, Storage::Split,
                           Table::CSR),
                  Quant::FP8E4M3),
        4, DType::F32, "sm_86", 1042);
    c.cacheOptions.kScale = 64.0f;
    c.cacheOptions.vScale = 32.0f;
    add(c, 5, 50, 12);
  }
  {
    GpuDecodeCase c = makeCase(
        "Fp8E5M2HndCombinedCsrP16D128G4F16WindowCap",
        quantized(makeSpec(16, 2, 128, DType::F16, Layout::HND),
                  Quant::FP8E5M2),
        8, DType::F16, "sm_80", 1043);
    c.params.windowLeft = 200;
    c.params.softCap = 30.0;
    add(c, 4, 90, 20);
  }
  {
    GpuDecodeCase c = makeCase(
        "Fp8E5M2NhdSplitTokenTableP32D256G1BF16Base2",
        quantized(makeSpec(32, 2, 256, DType::BF16, Layout::NHD,
                           Storage::Split, Table::TokenTable),
                  Quant::FP8E5M2),
        2, DType::BF16, "sm_90a", 1044);
    c.params.base = Base::Two;
    add(c, 4, 70, 16);
  }
  // OpenPPL's int8 groups: codes and their scales (a pool of the same
  // layout, one scale per quant_group dims) reach the stage ring by
  // cp.async; lanes dequantize in registers (a GQA group: the block decodes
  // each tile's codes once into f16 tiles). Unowned scales are NaN.
  {
    GpuDecodeCase c = makeCase(
        "Int8G8NhdCombinedCsrP16D128G4F16",
        quantized(makeSpec(16, 2, 128, DType::F16), Quant::Int8Group, 8), 8,
        DType::F16, "sm_80", 1050);
    add(c, 5, 70, 20);
  }
  {
    GpuDecodeCase c = makeCase(
        "Int8G16HndSplitBlockTableP8D64G1BF16ToF32Base2",
        quantized(makeSpec(8, 4, 64, DType::BF16, Layout::HND, Storage::Split,
                           Table::BlockTable),
                  Quant::Int8Group, 16),
        4, DType::F32, "sm_90a", 1051);
    c.params.base = Base::Two;
    add(c, 5, 60, 14);
  }
  {
    // 32 scales of a 256-dim row: 64-byte scale rows, 16-byte copies.
    GpuDecodeCase c = makeCase(
        "Int8G8NhdSplitTokenTableP32D256G2BF16WindowCap",
        quantized(makeSpec(32, 2, 256, DType::BF16, Layout::NHD,
                           Storage::Split, Table::TokenTable),
                  Quant::Int8Group, 8),
        4, DType::BF16, "sm_86", 1052);
    c.params.windowLeft = 300;
    c.params.softCap = 20.0;
    add(c, 4, 80, 16);
  }
  {
    // 6 scales of a 96-dim row at group 16: 12-byte rows, 4-byte copies;
    // group 8 over a page of one token.
    GpuDecodeCase c = makeCase(
        "Int8G16HndCombinedCsrP1D96G8F16",
        quantized(makeSpec(1, 1, 96, DType::F16, Layout::HND,
                           Storage::Combined, Table::CSR),
                  Quant::Int8Group, 16),
        8, DType::F16, "sm_89", 1053);
    add(c, 4, 50, 10);
  }
  // f32 KV: 4-element vectors (16 bytes), an f32 stage ring.
  {
    GpuDecodeCase c = makeCase("F32NhdCombinedCsrP16D128G4ToF32",
                               makeSpec(16, 2, 128, DType::F32), 8,
                               DType::F32, "sm_80", 1070);
    add(c, 5, 70, 20);
  }
  {
    GpuDecodeCase c = makeCase("F32HndSplitBlockTableP8D64G1WindowCapToF16",
                               makeSpec(8, 4, 64, DType::F32, Layout::HND,
                                        Storage::Split, Table::BlockTable),
                               4, DType::F16, "sm_90a", 1071);
    c.params.windowLeft = 150;
    c.params.softCap = 20.0;
    c.params.base = Base::Two;
    add(c, 4, 60, 14);
  }
  // f32 past head dim 128: a lane takes 2 (head dim 256) or 4 (512)
  // 16-byte chunks of a row, so that a warp of lanes still covers it.
  {
    GpuDecodeCase c = makeCase("F32NhdCombinedCsrP16D256G2ToF32Window",
                               makeSpec(16, 2, 256, DType::F32), 4,
                               DType::F32, "sm_80", 1072);
    c.params.windowLeft = 100;
    add(c, 4, 60, 14);
  }
  {
    GpuDecodeCase c = makeCase("F32HndSplitBlockTableP8D512G4RopeToBF16Base2",
                               makeSpec(8, 1, 512, DType::F32, Layout::HND,
                                        Storage::Split, Table::BlockTable),
                               4, DType::BF16, "sm_90a", 1073);
    c.params.base = Base::Two;
    c.params.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
    c.params.rope->rotaryDim = 256;
    add(c, 3, 50, 12);
  }
  // vLLM's cache: K [blocks, H, D / x, block, x] by 16-byte rows of x; V
  // [blocks, H, D, block] (dims strided) staged transposed: 16-byte chunks
  // of consecutive slots of one dim by cp.async into [dim][token] tiles,
  // then the block's rows of the tile; the token range starts on a chunk
  // (windows and split chunks start anywhere: the tokens before are
  // masked). Pools NaN past kv_len.
  {
    GpuDecodeCase c = makeCase("VllmBlockTableP16D128G4F16",
                               makeSpec(16, 2, 128, DType::F16, Layout::VLLM,
                                        Storage::Split, Table::BlockTable),
                               8, DType::F16, "sm_80", 1060);
    add(c, 5, 70, 20);
  }
  {
    GpuDecodeCase c = makeCase("VllmBlockTableP8D64G8BF16WindowBase2",
                               makeSpec(8, 2, 64, DType::BF16, Layout::VLLM,
                                        Storage::Split, Table::BlockTable),
                               16, DType::BF16, "sm_90a", 1061);
    c.params.windowLeft = 203;
    c.params.base = Base::Two;
    add(c, 4, 60, 14);
  }
  {
    GpuDecodeCase c = makeCase("VllmBlockTableP32D256G1F16SoftCapToF32",
                               makeSpec(32, 2, 256, DType::F16, Layout::VLLM,
                                        Storage::Split, Table::BlockTable),
                               2, DType::F32, "sm_86", 1062);
    c.params.softCap = 30.0;
    add(c, 4, 80, 20);
  }
  {
    // vLLM's fp8 cache: x = 16, V chunks of 16 slots.
    GpuDecodeCase c = makeCase(
        "VllmFp8E4M3BlockTableP16D128G4BF16Window",
        quantized(makeSpec(16, 2, 128, DType::BF16, Layout::VLLM,
                           Storage::Split, Table::BlockTable),
                  Quant::FP8E4M3),
        8, DType::BF16, "sm_90a", 1063);
    c.params.windowLeft = 150;
    add(c, 4, 60, 16);
  }
  {
    GpuDecodeCase c = makeCase(
        "VllmFp8E5M2BlockTableP16D64G1F16",
        quantized(makeSpec(16, 4, 64, DType::F16, Layout::VLLM,
                           Storage::Split, Table::BlockTable),
                  Quant::FP8E5M2),
        4, DType::F16, "sm_80", 1064);
    add(c, 4, 50, 12);
  }
  // On-the-fly RoPE: keys turn by their position relative to the query's
  // (kv_len - 1) in f32; rotate-half lanes read their partner dims from the
  // same staged row; lanes past rotary_dim leave their dims as they are.
  {
    GpuDecodeCase c = makeCase("RopeRotateHalfNhdCombinedCsrP16D128G4F16",
                               makeSpec(16, 2, 128, DType::F16), 8, DType::F16,
                               "sm_80", 1080);
    c.params.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
    add(c, 5, 70, 20);
  }
  {
    GpuDecodeCase c = makeCase(
        "RopeInterleaveHndSplitBlockTableP8D64G2BF16WindowBase2",
        makeSpec(8, 4, 64, DType::BF16, Layout::HND, Storage::Split,
                 Table::BlockTable),
        8, DType::BF16, "sm_90a", 1081);
    c.params.rope = ref::Rope{ref::RopeStyle::Interleave, 5e5, 0.5};
    c.params.windowLeft = 150;
    c.params.base = Base::Two;
    add(c, 4, 60, 14);
  }
  {
    // Llama 3.1's scaling on the first 64 of 128 dims, a GQA group of 8
    // (the decode kernel: the tensor-core one takes no RoPE), keys up to
    // 3000 positions before the query.
    GpuDecodeCase c = makeCase("RopeLlama31Rotary64NhdSplitCsrP16D128G8F16",
                               makeSpec(16, 1, 128, DType::F16, Layout::NHD,
                                        Storage::Split, Table::CSR),
                               8, DType::F16, "sm_90a", 1082);
    c.params.rope = llama31Rope(ref::RopeStyle::RotateHalf, 64);
    c.runs = {BatchRun{3, 40, {}, true, 3000}};
    cases.push_back(c);
  }
  {
    GpuDecodeCase c = makeCase(
        "RopeInterleaveRotary32VllmBlockTableP16D64G4F16ToF32",
        makeSpec(16, 2, 64, DType::F16, Layout::VLLM, Storage::Split,
                 Table::BlockTable),
        8, DType::F32, "sm_86", 1083);
    c.params.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
    c.params.rope->rotaryDim = 32;
    add(c, 4, 50, 12);
  }
  {
    // int8 groups under a GQA group: the rotation reads the decoded f16
    // tiles, each dim times its group's scale.
    GpuDecodeCase c = makeCase(
        "RopeRotateHalfRotary96Int8G8NhdCombinedCsrP16D128G4F16",
        quantized(makeSpec(16, 2, 128, DType::F16), Quant::Int8Group, 8), 8,
        DType::F16, "sm_80", 1084);
    c.params.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
    c.params.rope->rotaryDim = 96;
    add(c, 5, 70, 20);
  }
  {
    GpuDecodeCase c = makeCase(
        "RopeInterleaveFp8E4M3HndSplitBlockTableP8D64G1BF16",
        quantized(makeSpec(8, 4, 64, DType::BF16, Layout::HND, Storage::Split,
                           Table::BlockTable),
                  Quant::FP8E4M3),
        4, DType::BF16, "sm_90a", 1085);
    c.cacheOptions.kScale = 0.5f;
    c.cacheOptions.vScale = 2.0f;
    c.params.rope = ref::Rope{ref::RopeStyle::Interleave, 1e4, 1.0};
    add(c, 4, 60, 14);
  }
  {
    GpuDecodeCase c = makeCase("RopeRotateHalfF32NhdCombinedCsrP16D64G2ToF32",
                               makeSpec(16, 2, 64, DType::F32), 4, DType::F32,
                               "sm_80", 1086);
    c.params.rope = ref::Rope{ref::RopeStyle::RotateHalf, 1e4, 1.0};
    add(c, 4, 50, 12);
  }
  return cases;
}

class GpuDecode : public ::testing::TestWithParam<GpuDecodeCase> {};

TEST_P(GpuDecode, MatchesReference) { runGpuDecodeCase(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Matrix, GpuDecode, ::testing::ValuesIn(decodeCases()),
    [](const ::testing::TestParamInfo<GpuDecodeCase> &info) {
      return info.param.name;
    });

/// A seeded random sweep: every (layout, storage, table, dtype) combination
/// three times, with random page size, head dim, group, KV heads, output type,
/// LSE base, attributes and chip (sm_90a on either tensor-core instruction); a
/// quarter of the cases store fp8, a sixth take vLLM's layout, a fifth of the
/// rest int8 groups. CI runs the fixed seeds 3000...3047;
/// KVIR_SWEEP_SEED=<first> KVIR_SWEEP_COUNT=<n> runs others (a case's name
/// ends in its seed, so a failure reproduces with KVIR_SWEEP_SEED=<seed>
/// KVIR_SWEEP_COUNT=1).
std::vector<GpuDecodeCase> sweepCases() {
  std::vector<GpuDecodeCase> cases;
  int64_t firstSeed = envInteger("KVIR_SWEEP_SEED", 3000);
  int64_t count = envInteger("KVIR_SWEEP_COUNT", 48);
  const int64_t pages[] = {1, 5, 7, 16, 32, 64, 128};
  const int64_t dims[] = {64, 80, 96, 128, 256};
  const int64_t groups[] = {1, 2, 4, 8};
  const int64_t kvHeadCounts[] = {1, 2, 4};
  const DType outs[] = {DType::F16, DType::BF16, DType::F32};
  const char *chips[] = {"sm_80", "sm_86", "sm_89", "sm_90a"};
  for (int64_t i = 0; i < count; ++i) {
    int64_t sweepSeed = firstSeed + i;
    Rng rng(sweepSeed);
    int combo = sweepSeed % 16;
    Layout layout = combo & 1 ? Layout::HND : Layout::NHD;
    Storage storage = combo & 2 ? Storage::Split : Storage::Combined;
    Table table = combo & 4 ? Table::BlockTable : Table::CSR;
    DType dtype = combo & 8 ? DType::BF16 : DType::F16;
    int64_t page = pages[rng.integer(0, 6)];
    int64_t dim = dims[rng.integer(0, 4)];
    int64_t group = groups[rng.integer(0, 3)];
    int64_t kvHeads = kvHeadCounts[rng.integer(0, 2)];
    GpuDecodeCase c;
    // A sixth of the cases take vLLM's layout (K and V pools, a block
    // table, pages of at least 8 slots), drawn from a generator of their
    // own like the quantizations below.
    Rng layoutRng(sweepSeed * 104729 + 3);
    bool vllm = layoutRng.coin(1.0 / 6);
    if (vllm) {
      const int64_t vllmPages[] = {8, 16, 32, 64, 128};
      page = vllmPages[layoutRng.integer(0, 4)];
      c.spec = makeSpec(page, kvHeads, dim, dtype, Layout::VLLM,
                        Storage::Split, Table::BlockTable);
    } else {
      c.spec = makeSpec(page, kvHeads, dim, dtype, layout, storage, table);
    }
    // A quarter of the cases store fp8 (drawn from a generator of their
    // own, so that the other draws stay what they were), with scales that
    // give ordinary, saturated or subnormal codes.
    Rng quantRng(sweepSeed * 7919 + 17);
    bool fp8 = quantRng.coin(0.25);
    if (fp8) {
      c.spec = quantized(c.spec,
                         quantRng.coin() ? Quant::FP8E4M3 : Quant::FP8E5M2);
      const float scales[] = {1.0f / 16, 1.0f / 512, 32.0f};
      c.cacheOptions.kScale = scales[quantRng.integer(0, 2)];
      c.cacheOptions.vScale = scales[quantRng.integer(0, 2)];
    }
    // A fifth of the others (not vLLM's layout) store int8 groups of 8 or
    // 16 (8 where 16 would leave an odd number of 2-byte scales per row,
    // which cp.async cannot copy: rejected with the reason).
    Rng int8Rng(sweepSeed * 6007 + 29);
    bool int8 = !fp8 && !vllm && int8Rng.coin(0.2);
    if (int8) {
      int64_t group = int8Rng.coin() && (dim / 16) % 2 == 0 ? 16 : 8;
      c.spec = quantized(c.spec, Quant::Int8Group, group);
    }
    c.qHeads = group * kvHeads;
    c.outType = outs[rng.integer(0, 2)];
    c.chip = chips[rng.integer(0, 3)];
    c.seed = sweepSeed + 1000;
    randomizeAttention(rng, c.params, 3 * page + 10);
    // A fifth of the cases rotate by RoPE (a generator of their own).
    Rng ropeRng(sweepSeed * 3571 + 41);
    if (ropeRng.coin(0.2))
      c.params.rope = randomRope(ropeRng, dim);
    // Lengths over a few pages (at least ~40 tokens) for the small batch;
    // short requests for the batch that fills the chip (P == 1).
    int64_t smallMaxLen =
        std::max<int64_t>(40, 3 * page + rng.integer(0, page));
    int64_t largeMaxLen = std::min<int64_t>(std::max<int64_t>(8, page + 3), 40);
    c.runs = bothPaths(c.chip, kvHeads, group, rng.integer(2, 6), smallMaxLen,
                       largeMaxLen, c.params.windowLeft, fp8 || int8);
    // sm_90a cases keep their tensor-core decodes on mma.sync half the time
    // (a generator of its own, so that the other draws stay what they were).
    bool mmaSync = c.chip == "sm_90a" && Rng(sweepSeed * 7727 + 17).coin();
    if (mmaSync)
      c.chip = onMmaSync(c.chip);
    std::ostringstream name;
    name << "Sweep" << i << "_";
    if (vllm)
      name << "VllmBlockTable";
    else
      name << (layout == Layout::HND ? "Hnd" : "Nhd")
           << (storage == Storage::Split ? "Split" : "Combined")
           << (table == Table::CSR ? "Csr" : "BlockTable");
    name << (dtype == DType::BF16 ? "BF16" : "F16")
         << (!fp8                             ? ""
             : c.spec.quant == Quant::FP8E4M3 ? "Fp8E4M3"
                                              : "Fp8E5M2")
         << (int8 ? "Int8G" + std::to_string(c.spec.quantGroup) : "") << "P"
         << page << "D" << dim << "G" << group << "H" << kvHeads << "To"
         << mlirName(c.outType) << (c.params.rope ? "Rope" : "")
         << (mmaSync ? "MmaSync" : "") << "_Seed" << sweepSeed;
    c.name = name.str();
    cases.push_back(c);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(
    Sweep, GpuDecode, ::testing::ValuesIn(sweepCases()),
    [](const ::testing::TestParamInfo<GpuDecodeCase> &info) {
      return info.param.name;
    });

/// An empty batch launches nothing and reports nothing.
TEST(GpuDecodeEdge, EmptyBatchLaunchesNothing) {
  CacheSpec spec = makeSpec(16, 2, 64, DType::F16);
  Rng rng(9);
  PagedCache cache = makeCache(spec, {}, rng);
  Tensor q(DType::F16, {0, 4, 64});
  StateBuffers out = makeStateBuffers(0, 4, 64, DType::F16);
  KernelSource src;
  std::string kvType;
  std::string kv = emitPagedView(src, cache, "kv", kvType);
  std::string qs = src.addMemref("q", q);
  std::string t = stateTypeText(4, 64, DType::F16, Base::E);
  src.addLine("%s = kv.decode " + qs + ", " + kv + " : " + src.typeOf(qs) +
              ", " + kvType + " -> " + t);
  emitStore(src, "%s", t, out);
  RunResult result;
  ASSERT_TRUE(runGpu(src, {out.o, out.lse}, "sm_90a", {"kv.decode"}, result));
  EXPECT_TRUE(noReports(result));
  EXPECT_TRUE(result.launches.empty()) << result.describeLaunches();
}

/// Every KV token of the batch is read from global memory exactly once per
/// KV head by the direct kernel (plus q once and one table entry per page):
/// the GQA group shares each K/V tile.
TEST(GpuDecodeEdge, DirectKernelReadsEachKvByteOnce) {
  CacheSpec spec = makeSpec(16, 2, 128, DType::F16, Layout::HND);
  Rng rng(10);
  int64_t batch = 84, qHeads = 8; // 84 * 2 = 168 = 2 * 84 SMs: P == 1
  std::vector<int64_t> lens(batch);
  for (int64_t &l : lens)
    l = rng.integer(1, 64);
  PagedCache cache = makeCache(spec, lens, rng);
  Tensor q = randomTensor(rng, DType::F16, {batch, qHeads, 128}, 2.0);
  StateBuffers out = makeStateBuffers(batch, qHeads, 128, DType::F16);
  KernelSource src;
  std::string kvType;
  std::string kv = emitPagedView(src, cache, "kv", kvType);
  std::string qs = src.addMemref("q", q);
  std::string t = stateTypeText(qHeads, 128, DType::F16, Base::Two);
  src.addLine("%s = kv.decode " + qs + ", " + kv + " : " + src.typeOf(qs) +
              ", " + kvType + " -> " + t);
  emitStore(src, "%s", t, out);
  RunResult result;
  ASSERT_TRUE(runGpu(src, {out.o, out.lse}, "sm_86", {"kv.decode"}, result));
  EXPECT_TRUE(noReports(result));
  ASSERT_EQ(result.launches.size(), 1u);
  int64_t kvBytes = 0, pageEntries = 0;
  for (int64_t l : lens) {
    kvBytes += l * spec.kvHeads * 2 * 128 * 2;
    // Pages a request's 32-token tiles touch, per KV head.
    pageEntries += spec.kvHeads * ((l + 15) / 16);
  }
  // Per block: q of the group, kv_indptr[b], [b + 1], last_page_len[b].
  int64_t expected = kvBytes + batch * qHeads * 128 * 2 +
                     batch * spec.kvHeads * 3 * 4 + pageEntries * 4;
  EXPECT_EQ(result.launches[0].globalBytesLoaded, uint64_t(expected));
  EXPECT_EQ(result.launches[0].globalBytesStored,
            uint64_t(batch * qHeads * (128 * 2 + 4)));
  ref::AttentionParams params;
  params.base = Base::Two;
  EXPECT_TRUE(check(compareGpuState(
      out, ref::decode(q, ref::PagedSource(cache), params), DType::F16)));
}

} // namespace
