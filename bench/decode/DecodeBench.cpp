//===- DecodeBench.cpp - CPU-side quality of the decode kernels -----------===//
//
// kvir-decode-bench: for each decode configuration (NHD/HND x page 16/64 x
// group 1/4/8, head_dim 128, f16, 8 KV heads; batch 4 x kv_len 2048 unless
// overridden), measures what can be measured without a GPU:
//
//   * ptxas -v (when ptxas exists) on the PTX that kvir-opt --kv-to-ptx and
//     kvir-translate write, for sm_80 and sm_90a: registers, static shared
//     memory, spill bytes, and the occupancy they allow on that chip;
//   * the emulator's counters over the launches of one decode call (split
//     kernel + merge kernel, or the direct kernel), for the partition count
//     the chip's split heuristic picks: global bytes loaded + stored against
//     the ideal traffic (every KV byte once per KV head, q read once, out and
//     lse written once), and sector efficiency (useful bytes / 32-byte sectors
//     touched, per warp request, as the emulator counts them);
//   * the result against the float64 reference (max relative error).
//
// Prints a markdown table (bench/RESULTS.md keeps the last one). Not run by
// the tests. Usage:
//   kvir-decode-bench [--batch N] [--kv-len N] [--chips sm_80,sm_90a]
//                     [--configs nhd-p16-g4,...]
//                     [--kv f16|fp8_e4m3|fp8_e5m2|int8_g8|int8_g16]
//                     [--rope rotate_half|interleave] [--no-ptxas]
// With an fp8 cache the ideal counts one byte per K/V element; with int8
// groups one byte per element plus an f16 scale per group.
//
//===----------------------------------------------------------------------===//
#include "BenchSupport.h"
#include "kvir/Target/GPU/TargetInfo.h"
#include "GpuHarness.h"

#include "Harness/Harness.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

using namespace kvir::test;
using namespace kvir::test::gpu;
using namespace kvir::bench;
namespace ref = kvir::ref;

namespace {

struct Config {
  Layout layout;
  int64_t pageSize, group;
  std::string name() const {
    return std::string(layout == Layout::NHD   ? "nhd"
                       : layout == Layout::HND ? "hnd"
                                               : "vllm") +
           "-p" +
           std::to_string(pageSize) + "-g" + std::to_string(group);
  }
};

bool startsWith(const std::string &s, const std::string &prefix) {
  return s.rfind(prefix, 0) == 0;
}

} // namespace

/// The decode configuration kv-tile chose, read from the lowered module's
/// launch plan.
struct DecodeShape {
  int64_t vector = 0, threadsX = 0, tile = 0, stages = 0;
  /// On the tensor-core kernel (GQA groups of 8 and more): its config.
  std::string tensorCores;
  /// K and V rows of one stage, of `elementBytes`-byte elements.
  int64_t stageBytes(int64_t elementBytes) const {
    return 2 * tile * threadsX * vector * elementBytes;
  }
};
DecodeShape decodeShape(const std::string &lowered, int64_t headDim) {
  DecodeShape s;
  std::smatch m;
  std::regex config("#kvgpu\\.decode<vector = ([0-9]+), threads_x = ([0-9]+), "
                    "threads_z = [0-9]+, tile_tokens = ([0-9]+), stages = "
                    "([0-9]+)");
  std::regex tc("#kvgpu\\.prefill<q_tile = ([0-9]+), kv_tile = ([0-9]+), "
                "warps = ([0-9]+), stages = ([0-9]+)[^>]*>");
  if (std::regex_search(lowered, m, tc)) {
    bool wgmma = m[0].str().find("mma = wgmma") != std::string::npos;
    s.tensorCores = "tc " + m[1].str() + " x " + m[2].str() + ", " +
                    m[3].str() + " warp(s), " + m[4].str() + " stages, " +
                    (wgmma ? "wgmma" : "mma.sync");
    // A stage holds a K and a V tile of kv_tile whole head-dim rows.
    s.vector = headDim;
    s.threadsX = 1;
    s.tile = std::stoll(m[2]);
    s.stages = std::stoll(m[4]);
  } else if (std::regex_search(lowered, m, config)) {
    s.vector = std::stoll(m[1]);
    s.threadsX = std::stoll(m[2]);
    s.tile = std::stoll(m[3]);
    s.stages = std::stoll(m[4]);
  }
  return s;
}

int main(int argc, char **argv) {
  // Every return destroys the host engines before static destruction.
  kvir::test::gpu::GpuKernelCacheScope kernelCacheScope;
  int64_t batch = 4, kvLen = 2048, kvHeads = 8, headDim = 128;
  std::vector<std::string> chips{"sm_80", "sm_90a"};
  std::vector<std::string> only;
  bool usePtxas = true;
  std::optional<ref::Rope> rope;
  Quant quant = Quant::None;
  int64_t quantGroup = 0;
  std::string kvName = "f16";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--batch")
      batch = std::stoll(next());
    else if (a == "--kv-len")
      kvLen = std::stoll(next());
    else if (a == "--chips") {
      chips.clear();
      std::string list = next();
      for (llvm::StringRef c : llvm::split(list, ','))
        chips.push_back(c.str());
    } else if (a == "--configs") {
      std::string list = next();
      for (llvm::StringRef c : llvm::split(list, ','))
        only.push_back(c.str());
    } else if (a == "--kv") {
      kvName = next();
      std::optional<CacheQuant> parsed = parseCacheQuant(kvName);
      if (!parsed) {
        std::fprintf(stderr, "--kv takes f16, fp8_e4m3, fp8_e5m2, int8_g8 or "
                             "int8_g16\n");
        return 2;
      }
      quant = parsed->quant;
      quantGroup = parsed->group;
    } else if (a == "--rope") {
      std::string style = next();
      if (style != "rotate_half" && style != "interleave") {
        std::fprintf(stderr, "--rope takes rotate_half or interleave\n");
        return 2;
      }
      rope = ref::Rope{style == "interleave" ? ref::RopeStyle::Interleave
                                             : ref::RopeStyle::RotateHalf,
                       1e4, 1.0};
    } else if (a == "--no-ptxas")
      usePtxas = false;
    else {
      std::fprintf(stderr,
                   "usage: %s [--batch N] [--kv-len N] [--chips "
                   "a,b] [--configs nhd-p16-g4,...] [--kv f16|fp8_e4m3|"
                   "fp8_e5m2|int8_g8|int8_g16] [--rope rotate_half|"
                   "interleave] [--no-ptxas]\n",
                   argv[0]);
      return 2;
    }
  }
  Toolbox tools(argv[0], usePtxas);
  const std::string &ptxas = tools.ptxas();

  std::vector<Config> configs;
  for (Layout layout : {Layout::NHD, Layout::HND, Layout::VLLM})
    for (int64_t page : {16, 64})
      for (int64_t group : {1, 4, 8})
        configs.push_back({layout, page, group});

  int64_t kvElementBytes = quant == Quant::None ? 2 : 1;
  std::printf("Decode, head_dim %lld, %s KV, f16 q/out, %lld KV heads, batch "
              "%lld x kv_len %lld, CSR pages scattered over the pool.%s\n\n",
              (long long)headDim, kvName.c_str(), (long long)kvHeads,
              (long long)batch,
              (long long)kvLen,
              ptxas.empty() ? " (no ptxas: register columns empty)" : "");
  std::printf("| config | chip | regs (split/direct/merge) | smem B | spill B "
              "| occupancy | stages x tile | in flight KB / SM (need) | loop "
              "instr / token | items | bytes / ideal | loads / ideal loads | "
              "workspace / ideal | sector eff | max rel err |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  bool allOk = true;
  for (const Config &cfg : configs) {
    if (!only.empty() &&
        std::find(only.begin(), only.end(), cfg.name()) == only.end())
      continue;
    int64_t qHeads = kvHeads * cfg.group;
    CacheSpec spec;
    spec.pageSize = cfg.pageSize;
    spec.kvHeads = kvHeads;
    spec.headDim = spec.headDimV = headDim;
    spec.dtype = DType::F16;
    spec.layout = cfg.layout;
    // vLLM's layout has a K and a V pool (and its block table).
    bool vllm = cfg.layout == Layout::VLLM;
    spec.storage = vllm ? Storage::Split : Storage::Combined;
    spec.table = vllm ? Table::BlockTable : Table::CSR;
    spec.quant = quant;
    spec.quantGroup = quantGroup;
    Rng rng(42 + cfg.pageSize + cfg.group);
    std::vector<int64_t> lens(batch, kvLen);
    PagedCache cache = makeCache(spec, lens, rng);
    Tensor q = randomTensor(rng, DType::F16, {batch, qHeads, headDim}, 2.0);
    StateBuffers out = makeStateBuffers(batch, qHeads, headDim, DType::F16);
    KernelSource src("batch_decode");
    std::string kvType;
    std::string kv = emitPagedView(src, cache, "kv", kvType);
    std::string qs = src.addMemref("q", q);
    std::string stateType =
        stateTypeText(qHeads, headDim, DType::F16, Base::Two);
    ref::AttentionParams params;
    params.base = Base::Two;
    params.rope = rope;
    src.addLine("%s = kv.decode " + qs + ", " + kv + " " +
                attentionAttrs(params, /*withCausal=*/false) + " : " +
                src.typeOf(qs) + ", " + kvType + " -> " + stateType);
    emitStore(src, "%s", stateType, out);
    ref::State expected = ref::decode(q, ref::PagedSource(cache), params);

    // The ideal traffic: K and V once per (token, KV head), q once, out and
    // lse once.
    int64_t kvBytes = 0;
    // int8 groups: an f16 scale per quant_group codes too.
    int64_t scaleBytes = quantGroup ? 2 * headDim / quantGroup * 2 : 0;
    for (int64_t l : lens)
      kvBytes += l * kvHeads * ((2 * headDim) * kvElementBytes + scaleBytes);
    int64_t qBytes = batch * qHeads * headDim * 2;
    int64_t outBytes = batch * qHeads * headDim * 2,
            lseBytes = batch * qHeads * 4;
    double idealLoads = double(kvBytes + qBytes);
    double ideal = idealLoads + double(outBytes + lseBytes);

    for (const std::string &chip : chips) {
      Toolbox::Compiled compiled = tools.compile(src.text(), chip);
      std::map<std::string, PtxasInfo> ptx = compiled.kernels;
      DecodeShape shape = decodeShape(compiled.lowered, headDim);
      RunResult result;
      ::testing::AssertionResult ran =
          runGpu(src, {out.o, out.lse}, chip, {"kv.decode"}, result);
      if (!ran) {
        std::fprintf(stderr, "%s\n", ran.message());
        return 1;
      }
      if (!result.reports.empty()) {
        allOk = false;
        for (const std::string &r : result.reports)
          std::fprintf(stderr, "%s\n", r.c_str());
      }
      uint64_t loaded = 0, stored = 0, sectors = 0, useful = 0;
      // The split-KV workspace: written by the split kernel, read back by
      // the merge kernel (which also writes out and lse).
      uint64_t workspace = 0;
      int64_t parts = batch; // work items: one per request unless split
      for (const auto &l : result.launches) {
        loaded += globalBytesLoaded(l);
        stored += globalBytesStored(l);
        sectors += l.globalSectors;
        useful += l.globalUsefulBytes;
        if (isSplitKernel(l.kernel)) {
          parts = l.grid.x;
          workspace += globalBytesStored(l);
        } else if (startsWith(l.kernel, "merge")) {
          workspace += globalBytesLoaded(l);
        }
      }
      double rel = maxRelativeError(out, expected);

      // ptxas numbers of the kernels this call launched.
      std::string regs, smem, spill, occ, inFlight = "?", perToken = "?";
      if (!ptx.empty()) {
        std::string splitName, directName, mergeName;
        for (const auto &[name, info] : ptx) {
          if (startsWith(name, "merge"))
            mergeName = name;
          else if (isSplitKernel(name))
            splitName = name;
          else
            directName = name;
        }
        auto regsOf = [&](const std::string &n) {
          return ptx.count(n) ? std::to_string(ptx[n].registers) : "?";
        };
        regs = regsOf(splitName) + "/" + regsOf(directName) + "/" +
               regsOf(mergeName);
        const std::string &main = parts > batch ? splitName : directName;
        // Static shared memory (ptxas) and the launch's dynamic shared
        // memory (the wgmma kernels' swizzled tiles).
        int64_t mainSmem = ptx[main].smem;
        for (const auto &l : result.launches)
          if (l.kernel == main) {
            mainSmem += l.dynamicSharedBytes;
            break;
          }
        smem = std::to_string(mainSmem);
        int64_t spills = 0;
        for (const auto &[name, info] : ptx)
          spills += info.spillStores + info.spillLoads;
        spill = std::to_string(spills);
        int64_t threads =
            result.launches.empty() ? 0 : result.launches[0].block.count();
        char buf[32];
        std::snprintf(
            buf, sizeof(buf), "%.0f%%",
            100.0 * occupancy(chip, ptx[main].registers, mainSmem, threads));
        occ = buf;
        // Little's law: what the resident blocks keep in flight (stages - 1
        // tiles of K and V each) against the SM's share of bandwidth x
        // latency.
        const kvir::target::TargetInfo *info =
            kvir::target::TargetInfo::lookup(chip);
        if (info && shape.stages) {
          int64_t resident =
              info->residentBlocks(threads, ptx[main].registers, mainSmem);
          double kb = double(resident * (shape.stages - 1) *
                             shape.stageBytes(kvElementBytes)) /
                      1024.0;
          std::snprintf(buf, sizeof(buf), "%.0f (%.1f)", kb,
                        info->bytesInFlightPerSM() / 1024.0);
          inFlight = buf;
        }
        // The hot loop's PTX statements per token per KV head: one block
        // iteration scores `tile` tokens of one KV head with all its warps.
        if (std::optional<LoopStatements> loop = hotLoopStatements(
                compiled.ptx, main,
                "cp.async.wait_group " + std::to_string(shape.stages - 2) +
                    ";")) {
          std::snprintf(buf, sizeof(buf), "%.1f",
                        double(loop->statements) * double(threads / 32) /
                            double(shape.tile));
          perToken = buf;
        }
      }
      double ratio = double(loaded + stored) / ideal;
      double loadRatio = double(loaded) / idealLoads;
      double efficiency = sectors ? double(useful) / (32.0 * sectors) : 1.0;
      bool ok = ratio <= 1.05 && loadRatio <= 1.05 && efficiency >= 0.90 &&
                rel <= outputTolerance(DType::F16) && result.reports.empty();
      allOk &= ok;
      std::string stagesTile =
          shape.tensorCores.empty()
              ? std::to_string(shape.stages) + " x " +
                    std::to_string(shape.tile)
              : shape.tensorCores;
      std::printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | "
                  "%lld | %.3f | %.3f | %.3f | %.1f%% | %.1e%s |\n",
                  cfg.name().c_str(), chip.c_str(), regs.c_str(), smem.c_str(),
                  spill.c_str(), occ.c_str(), stagesTile.c_str(),
                  inFlight.c_str(), perToken.c_str(),
                  (long long)parts, ratio,
                  loadRatio, double(workspace) / ideal, 100.0 * efficiency, rel,
                  ok ? "" : " **FAIL**");
      std::fflush(stdout);
    }
  }
  std::printf("\nbytes / ideal: global bytes loaded + stored by all launches "
              "of the call / (KV bytes once per KV head + q + out + lse); "
              "loads / ideal loads: loaded / (KV + q); workspace / ideal: the "
              "split-KV partial states written by the split kernel and read "
              "by the merge kernel, included in bytes / ideal; in flight: "
              "resident blocks x (stages - 1) K/V tiles, against the SM's "
              "share of DRAM bandwidth x 600 ns; loop instr / token: PTX "
              "statements of the tile loop (all paths) x warps / tile tokens. "
              "Bounds: both ratios <= 1.05, sector efficiency >= 90%%.\n");
  return allOk ? 0 : 1;
}
