//===- PrefillBench.cpp - CPU-side quality of the prefill kernels ---------===//
//
// kvir-prefill-bench: for each prefill configuration (head dim, GQA group,
// causal or not; f16, NHD pages of 16, 2 KV heads, 2 requests of
// qo_len = kv_len = 1024 unless overridden), measures without a GPU:
//
//   * ptxas -v on the PTX of kvir-opt --kv-to-ptx | kvir-translate for
//     sm_80 and sm_90a (on wgmma, and on mma.sync as sm_90a/mma_sync):
//     registers, shared memory, spills and occupancy; the wall time of
//     kvir-opt + kvir-translate per generated kernel; PTX instructions per
//     tensor-core instruction (mma.sync or wgmma) in the key loop (a
//     static count);
//   * the emulator's counters over one call (prefill kernel, or split +
//     merge kernels): global bytes against the ideal (each query tile reads
//     the K/V of exactly the keys its rows see, once per KV head; q read,
//     out and lse written once), sector efficiency, shared-memory bank
//     conflicts per shared request, tensor-core multiply-accumulates
//     executed against the minimum for the visible (row, key) pairs and
//     against the dense count;
//   * the result against the float64 reference.
// Then the load balance of three causal batches (head dim 64): a skewed
// one (one 8192-row request among 63 of 128 rows), a chunked-prefill step
// (4 chunks of 2048 rows beside 252 one-row decodes) and a uniform one:
// the busiest block's MACs over the mean, and the makespan of the launch
// list-scheduled in block order onto the chip's resident-block slots over
// a perfect split of the same work.
//
// Prints markdown (bench/RESULTS.md keeps the last run). Not run by the
// tests. Usage:
//   kvir-prefill-bench [--len N] [--chips sm_80,sm_90a] [--configs a,b]
//                      [--no-ptxas] [--no-skew]
//
//===----------------------------------------------------------------------===//
#include "BenchSupport.h"
#include "GpuHarness.h"

#include "Harness/Harness.h"

#include "kvir/Runtime/WorkSchedule.h"
#include "kvir/Target/GPU/TargetInfo.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <queue>

using namespace kvir::test;
using namespace kvir::test::gpu;
using namespace kvir::bench;
namespace ref = kvir::ref;

namespace {

struct Config {
  int64_t headDim, group;
  bool causal;
  std::string name() const {
    return "d" + std::to_string(headDim) + "-g" + std::to_string(group) +
           (causal ? "-causal" : "-full");
  }
};

/// A batch of prefills over a fresh paged cache (or ragged K/V), ready to
/// run.
struct Problem {
  KernelSource src{"batch_prefill"};
  PagedCache cache;
  /// Ragged K/V: [keys, kv heads, head dim], requests one after another.
  Tensor rk, rv;
  std::vector<int32_t> kvIndptr;
  Tensor q;
  StateBuffers out;
  std::vector<int32_t> qoIndptr;
  std::vector<int64_t> qo, kv;
  ref::AttentionParams params;
  int64_t qHeads = 0;
};

std::unique_ptr<Problem> makeProblem(const CacheSpec &spec, int64_t qHeads,
                                     std::vector<int64_t> qo,
                                     std::vector<int64_t> kv, bool causal,
                                     bool ragged, uint64_t seed) {
  auto p = std::make_unique<Problem>();
  Rng rng(seed);
  p->qo = std::move(qo);
  p->kv = std::move(kv);
  p->qHeads = qHeads;
  std::string kvType, kvName;
  if (ragged) {
    p->kvIndptr = indptrOf(p->kv);
    int64_t keys = p->kvIndptr.back();
    p->rk = randomTensor(rng, spec.dtype, {keys, spec.kvHeads, spec.headDim});
    p->rv = randomTensor(rng, spec.dtype, {keys, spec.kvHeads, spec.headDimV});
    kvName = emitRaggedView(p->src, spec, p->rk, p->rv, p->kvIndptr, kvType);
  } else {
    p->cache = makeCache(spec, p->kv, rng);
    kvName = emitPagedView(p->src, p->cache, "kv", kvType);
  }
  p->qoIndptr = indptrOf(p->qo);
  int64_t rows = p->qoIndptr.back();
  p->q = randomTensor(rng, spec.dtype, {rows, qHeads, spec.headDim}, 2.0);
  p->out = makeStateBuffers(rows, qHeads, spec.headDimV, spec.dtype);
  p->params.causal = causal;
  p->params.base = Base::Two;
  std::string qs = p->src.addMemref("q", p->q);
  std::string qoName = p->src.addMemref("qo_indptr", makeI32(p->qoIndptr));
  std::string stateType =
      stateTypeText(qHeads, spec.headDimV, spec.dtype, Base::Two);
  p->src.addLine("%s = kv.prefill " + qs + ", " + qoName + ", " + kvName +
                 " " + attentionAttrs(p->params) + " : " + p->src.typeOf(qs) +
                 ", " + p->src.typeOf(qoName) + ", " + kvType + " -> " +
                 stateType);
  emitStore(p->src, "%s", stateType, p->out);
  return p;
}

/// Visible (row, key) pairs of request (qo, kv) for one query head.
int64_t visiblePairs(int64_t qo, int64_t kv, bool causal) {
  if (!causal)
    return qo * kv;
  int64_t pairs = 0;
  for (int64_t i = 0; i < qo; ++i)
    pairs += std::clamp<int64_t>(kv - qo + i + 1, 0, kv);
  return pairs;
}

/// The K/V bytes a query tile must read at least: the keys any of its rows
/// sees, once per KV head.
int64_t idealKVBytes(const Problem &p, const CacheSpec &spec, int64_t tileRows) {
  int64_t group = p.qHeads / spec.kvHeads, bytes = 0;
  // Codes (one byte when quantized) and int8 groups' f16 scales.
  int64_t codeBytes = spec.quant == Quant::None ? 2 : 1;
  int64_t rowBytes = (spec.headDim + spec.headDimV) * codeBytes;
  if (spec.quant == Quant::Int8Group)
    rowBytes += (spec.headDim + spec.headDimV) / spec.quantGroup * 2;
  for (size_t b = 0; b < p.qo.size(); ++b) {
    int64_t packed = p.qo[b] * group;
    for (int64_t r0 = 0; r0 < packed; r0 += tileRows) {
      int64_t last = std::min(r0 + tileRows, packed) - 1;
      int64_t keys = p.params.causal
                         ? std::clamp<int64_t>(p.kv[b] - p.qo[b] +
                                                   last / group + 1,
                                               0, p.kv[b])
                         : p.kv[b];
      bytes += keys * rowBytes * spec.kvHeads;
    }
  }
  return bytes;
}

/// The launch's blocks list-scheduled in launch order onto `slots`
/// resident-block slots, each block taking time proportional to its mma:
/// the makespan over total / slots.
double makespanRatio(const std::vector<uint64_t> &work, int64_t slots) {
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<uint64_t>>
      free;
  for (int64_t i = 0; i < slots; ++i)
    free.push(0);
  uint64_t total = 0, makespan = 0;
  for (uint64_t w : work) {
    uint64_t at = free.top();
    free.pop();
    free.push(at + w);
    makespan = std::max(makespan, at + w);
    total += w;
  }
  double fair = double(total) / double(slots);
  return fair > 0 ? double(makespan) / fair : 1.0;
}

/// The kernel of `names` that ran (direct, or split), and the merge.
/// The prefill's rows per query tile and computing warps, as kv-tile chose
/// them (the first #kvgpu.prefill of the lowered module), and whether a
/// producer warpgroup copies.
struct ChosenTile {
  int64_t rows = 0, warps = 0;
  bool producer = false;
};
ChosenTile chosenTile(const std::string &lowered) {
  ChosenTile t;
  size_t at = lowered.find("#kvgpu.prefill<");
  if (at == std::string::npos)
    return t;
  llvm::StringRef config = llvm::StringRef(lowered).substr(at).take_until(
      [](char c) { return c == '>'; });
  auto field = [&](llvm::StringRef name) {
    size_t f = config.find(name);
    int64_t v = 0;
    if (f != llvm::StringRef::npos)
      config.substr(f + name.size())
          .take_while(llvm::isDigit)
          .getAsInteger(10, v);
    return v;
  };
  t.rows = field("q_tile = ");
  t.warps = field("warps = ");
  t.producer = config.contains("roles = producer");
  return t;
}

/// A warp-specialized kernel's register budgets per role, as its
/// setmaxnreg instructions set them: "producer/consumers", or "".
std::string roleRegisters(const std::string &ptx, const std::string &kernel) {
  size_t begin = ptx.find(".entry " + kernel + "(");
  if (begin == std::string::npos)
    return "";
  size_t end = ptx.find(".entry ", begin + 1);
  llvm::StringRef body = llvm::StringRef(ptx).slice(begin, end);
  auto budget = [&](llvm::StringRef op) -> std::string {
    size_t at = body.find(op);
    if (at == llvm::StringRef::npos)
      return "";
    return body.substr(at + op.size()).ltrim().take_while(llvm::isDigit).str();
  };
  std::string dec = budget("setmaxnreg.dec.sync.aligned.u32");
  std::string inc = budget("setmaxnreg.inc.sync.aligned.u32");
  return dec.empty() && inc.empty() ? "" : dec + "/" + inc;
}

std::string mainKernel(const RunResult &r) {
  for (const std::string &n : r.kernelNames())
    if (n.rfind("prefill_", 0) == 0)
      return n;
  return {};
}

/// The split column of the table: "items / tiles" of the work schedule
/// when it cut a query tile, "direct" otherwise.
std::string splitColumn(const RunResult &result, const Problem &p) {
  int64_t rows = p.qoIndptr.back();
  std::optional<RunResult::PrefillScheduleCounts> s = result.scheduledPrefill(
      "kv.prefill", p.qoIndptr, p.kv,
      {{"nnz", rows}, {"qo_indptr_len", int64_t(p.qoIndptr.size())}});
  if (!s || !s->cut())
    return "direct";
  return std::to_string(s->items) + " / " + std::to_string(s->tiles);
}

/// The host's time for the prefill work schedule of `result`'s plan over
/// the batch of `p` (kvir_schedule_prefill_work with the plan's
/// parameters, the median of 101 runs), in microseconds; 0 without one.
double scheduleMicros(const RunResult &result, const Problem &p) {
  if (!result.kernel)
    return 0;
  for (kvir::kvgpu::LaunchPlanAttr plan : result.kernel->summary().plans) {
    kvir::kvgpu::WorkScheduleAttr s = plan.getSchedule();
    if (plan.getOp() != "kv.prefill" || !s || !s.isPrefill())
      continue;
    int64_t batch = p.kv.size(), nnz = p.qoIndptr.back();
    std::vector<int32_t> lengths(p.kv.begin(), p.kv.end());
    int64_t maxItems = kvir_schedule_prefill_max_items(
        nnz, batch, s.getTileRows(), s.getTargetItems());
    std::vector<int32_t> items(maxItems * KVIR_PREFILL_WORK_FIELDS),
        indptr(nnz + 1);
    std::vector<double> micros;
    for (int i = 0; i < 101; ++i) {
      int64_t tiles = 0;
      auto start = std::chrono::steady_clock::now();
      kvir_schedule_prefill_work(
          p.qoIndptr.data(), lengths.data(), batch, nnz, s.getTileRows(),
          s.getCausal(), s.getWindowLeft(), s.getTargetItems(), s.getGranule(),
          s.getMinChunk(), maxItems, /*max_partial_rows=*/-1, items.data(),
          indptr.data(), &tiles);
      micros.push_back(std::chrono::duration<double, std::micro>(
                           std::chrono::steady_clock::now() - start)
                           .count());
    }
    std::nth_element(micros.begin(), micros.begin() + 50, micros.end());
    return micros[50];
  }
  return 0;
}

/// The balance of one emulated call: the attention kernel's blocks in
/// launch order (their tensor-core MACs) list-scheduled onto the chip's
/// resident-block slots.
struct Balance {
  size_t blocks = 0;
  int64_t resident = 1;
  double busiestOverMean = 0, makespan = 0, partialShare = 0, relError = 0,
         planMicros = 0;
  std::string split;
  bool ok = false;
};

Balance measureBalance(Toolbox &tools, Problem &p, const std::string &chip,
                       int64_t graphMaxBatch) {
  Balance m;
  RunResult result;
  ::testing::AssertionResult ran = runGpu(p.src, {p.out.o, p.out.lse}, chip,
                                          {"kv.prefill"}, result,
                                          graphMaxBatch);
  if (!ran) {
    std::fprintf(stderr, "%s\n", ran.message());
    return m;
  }
  ref::State expected =
      ref::attention(p.q, p.qoIndptr, ref::PagedSource(p.cache), p.params);
  m.relError = maxRelativeError(p.out, expected);
  m.ok = m.relError <= outputTolerance(DType::F16) && result.reports.empty();
  std::string kernel = mainKernel(result);
  std::vector<uint64_t> work;
  int64_t threads = 0;
  uint64_t partial = 0, all = 0;
  for (const auto &l : result.launches) {
    all += l.globalBytesLoaded + l.globalBytesStored;
    if (l.kernel.rfind("merge", 0) == 0)
      partial += l.globalBytesLoaded;
    else if (isSplitKernel(l.kernel))
      partial += l.globalBytesStored;
    if (l.kernel != kernel)
      continue;
    threads = l.block.count();
    // A fixed grid's blocks past the schedule's items do nothing: they
    // are not blocks of the work.
    for (const auto &b : l.blocks)
      if (!graphMaxBatch || b.tensorCoreMacs)
        work.push_back(b.tensorCoreMacs);
  }
  uint64_t total = 0, busiest = 0;
  for (uint64_t w : work) {
    total += w;
    busiest = std::max(busiest, w);
  }
  const kvir::target::TargetInfo *target =
      kvir::target::TargetInfo::lookup(parseGpuTarget(chip).chip);
  Toolbox::Compiled compiled = tools.compile(p.src.text(), chip);
  if (!compiled.kernels.empty()) {
    int64_t dyn =
        result.launches.empty() ? 0 : result.launches[0].dynamicSharedBytes;
    m.resident = std::max<int64_t>(
        1, target->residentBlocks(threads, compiled.kernels[kernel].registers,
                                  dyn));
  }
  m.blocks = work.size();
  m.busiestOverMean =
      work.empty() ? 0.0
                   : double(busiest) / (double(total) / double(work.size()));
  m.makespan = makespanRatio(work, target->smCount * m.resident);
  m.partialShare = all ? double(partial) / double(all) : 0.0;
  m.split = splitColumn(result, p);
  m.planMicros = scheduleMicros(result, p);
  return m;
}

/// One row of the load-balance table: a causal prefill of `qo` rows over
/// `kv` keys per request on sm_90a, run in the emulator on the plan's work
/// schedule and on the fixed grids of CUDA graphs (the schedule within a
/// fixed workspace), each against the float64 reference.
bool reportBalance(Toolbox &tools, const std::string &name,
                   const std::vector<int64_t> &qo,
                   const std::vector<int64_t> &kv) {
  CacheSpec spec;
  spec.pageSize = 16;
  spec.kvHeads = 1;
  spec.headDim = spec.headDimV = 64;
  spec.dtype = DType::F16;
  std::unique_ptr<Problem> p =
      makeProblem(spec, 1, qo, kv, true, /*ragged=*/false, 99);
  Balance scheduled = measureBalance(tools, *p, "sm_90a", 0);
  Balance fixed = measureBalance(tools, *p, "sm_90a", int64_t(qo.size()));
  bool ok = scheduled.ok && fixed.ok;
  std::printf("| %s | %zu | %s | %lld | %.2f | **%.3f** | %.3f | %.0f | "
              "%s | %.2f | **%.3f** | %.3f | %.1e%s |\n",
              name.c_str(), scheduled.blocks, scheduled.split.c_str(),
              (long long)scheduled.resident, scheduled.busiestOverMean,
              scheduled.makespan, scheduled.partialShare, scheduled.planMicros,
              fixed.split.c_str(), fixed.busiestOverMean, fixed.makespan,
              fixed.partialShare, std::max(scheduled.relError, fixed.relError),
              ok ? "" : " **FAIL**");
  std::fflush(stdout);
  return ok;
}

} // namespace

int main(int argc, char **argv) {
  // Every return destroys the host engines before static destruction.
  kvir::test::gpu::GpuKernelCacheScope kernelCacheScope;
  int64_t len = 1024, kvHeads = 2;
  std::vector<std::string> chips{"sm_80", "sm_90a/mma_sync", "sm_90a"};
  std::vector<std::string> only;
  bool usePtxas = true, skew = true;
  Quant quant = Quant::None;
  int64_t quantGroup = 0;
  std::string kvName = "f16";
  bool vllm = false, ragged = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--len")
      len = std::stoll(next());
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
    } else if (a == "--layout") {
      std::string name = next();
      if (name != "nhd" && name != "vllm" && name != "ragged") {
        std::fprintf(stderr, "--layout takes nhd, vllm or ragged\n");
        return 2;
      }
      vllm = name == "vllm";
      ragged = name == "ragged";
    } else if (a == "--no-ptxas")
      usePtxas = false;
    else if (a == "--no-skew")
      skew = false;
    else {
      std::fprintf(stderr,
                   "usage: %s [--len N] [--chips a,b] [--configs "
                   "d128-g4-causal,...] [--kv f16|fp8_e4m3|fp8_e5m2|int8_g8|"
                   "int8_g16] [--layout nhd|vllm|ragged] [--no-ptxas] "
                   "[--no-skew]\n",
                   argv[0]);
      return 2;
    }
  }
  Toolbox tools(argv[0], usePtxas);
  std::vector<Config> configs{{128, 1, true}, {128, 4, true}, {128, 4, false},
                              {64, 8, true},  {256, 1, true}};
  std::string kvLayout =
      ragged ? std::string("ragged (contiguous per request)")
             : std::string(vllm ? "vLLM" : "NHD") + " pages of 16 (" +
                   (vllm ? "block table" : "CSR") + ", scattered)";
  std::printf(
      "Prefill, f16, %s KV, %s, %lld KV heads, 2 requests of qo_len "
      "= kv_len = %lld.%s\n\n",
      kvName.c_str(), kvLayout.c_str(), (long long)kvHeads, (long long)len,
      tools.ptxas().empty() ? " (no ptxas: register columns empty)" : "");
  std::printf("| config | chip | q tile, warps | regs (split/direct) | "
              "smem KB | spill B | occupancy | split | bytes / ideal | workspace / "
              "ideal | sector eff "
              "| bank conflicts / shared req | mma / min | mma / dense | PTX "
              "instr / mma | compile s / kernel | max rel err |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---"
              "|---|\n");
  bool allOk = true;
  for (const Config &cfg : configs) {
    if (!only.empty() &&
        std::find(only.begin(), only.end(), cfg.name()) == only.end())
      continue;
    CacheSpec spec;
    spec.pageSize = 16;
    spec.kvHeads = kvHeads;
    spec.headDim = spec.headDimV = cfg.headDim;
    spec.dtype = DType::F16;
    spec.layout = vllm ? Layout::VLLM : Layout::NHD;
    spec.storage = vllm ? Storage::Split : Storage::Combined;
    spec.table = vllm ? Table::BlockTable : Table::CSR;
    spec.quant = quant;
    spec.quantGroup = quantGroup;
    int64_t qHeads = kvHeads * cfg.group;
    std::unique_ptr<Problem> p =
        makeProblem(spec, qHeads, {len, len}, {len, len}, cfg.causal, ragged,
                    7 + cfg.headDim);
    ref::State expected =
        ragged ? ref::attention(p->q, p->qoIndptr,
                                ref::RaggedSource(p->rk, p->rv, p->kvIndptr),
                                p->params)
               : ref::attention(p->q, p->qoIndptr, ref::PagedSource(p->cache),
                                p->params);
    for (const std::string &chip : chips) {
      Toolbox::Compiled compiled = tools.compile(p->src.text(), chip);
      RunResult result;
      ::testing::AssertionResult ran =
          runGpu(p->src, {p->out.o, p->out.lse}, chip, {"kv.prefill"}, result);
      if (!ran) {
        std::fprintf(stderr, "%s\n", ran.message());
        return 1;
      }
      for (const std::string &r : result.reports)
        std::fprintf(stderr, "%s\n", r.c_str());
      if (std::getenv("KVIR_BENCH_VERBOSE"))
        std::fprintf(stderr, "%s", result.describeLaunches().c_str());
      Traffic t = sumTraffic(result.launches);
      std::string kernel = mainKernel(result);
      // The split-KV partial states: written by the split kernel, read by
      // the merge kernel.
      uint64_t workspace = 0;
      for (const auto &l : result.launches) {
        if (isSplitKernel(l.kernel))
          workspace += l.globalBytesStored;
        else if (l.kernel.rfind("merge", 0) == 0)
          workspace += l.globalBytesLoaded;
      }
      int64_t threads = 0;
      for (const auto &l : result.launches)
        if (l.kernel == kernel)
          threads = l.block.count();
      std::string split = splitColumn(result, *p);
      // kv-tile's configurations give every computing warp one 16-row mma
      // tile.
      ChosenTile chosen = chosenTile(compiled.lowered);
      int64_t warps = chosen.warps ? chosen.warps : threads / 32;
      int64_t tileRows = chosen.rows ? chosen.rows : 16 * warps;

      int64_t rows = p->qoIndptr.back();
      int64_t qBytes = rows * qHeads * cfg.headDim * 2;
      double ideal = double(idealKVBytes(*p, spec, tileRows) + qBytes +
                            qBytes + rows * qHeads * 4);
      int64_t pairs = 0, dense = 0;
      for (size_t b = 0; b < p->qo.size(); ++b) {
        pairs += visiblePairs(p->qo[b], p->kv[b], cfg.causal) * qHeads;
        dense += p->qo[b] * p->kv[b] * qHeads;
      }
      // Multiply-accumulates a (row, key) pair takes: D for its score, Dv
      // for its value.
      double perPair = double(2 * cfg.headDim);
      double rel = maxRelativeError(p->out, expected);

      std::string regs, smem, spill, occ, perMma;
      if (!compiled.kernels.empty()) {
        std::string splitName, directName;
        for (const auto &[name, info] : compiled.kernels)
          if (name.rfind("prefill_", 0) == 0)
            (isSplitKernel(name) ? splitName : directName) = name;
        PtxasInfo &s = compiled.kernels[splitName];
        PtxasInfo &d = compiled.kernels[directName];
        regs = std::to_string(s.registers) + "/" + std::to_string(d.registers);
        // setmaxnreg's budgets: what the roles run with after the entry's.
        if (std::string roles = roleRegisters(compiled.ptx, directName);
            !roles.empty())
          regs += " (roles " + roles + ")";
        int64_t dyn = result.launches.empty()
                          ? 0
                          : result.launches[0].dynamicSharedBytes;
        int64_t sharedBytes = d.smem + dyn;
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%.1f", sharedBytes / 1024.0);
        smem = buf;
        int64_t spills = 0;
        for (const auto &[name, info] : compiled.kernels)
          spills += info.spillStores + info.spillLoads;
        spill = std::to_string(spills);
        std::snprintf(buf, sizeof(buf), "%.0f%%",
                      100.0 * occupancy(chip, d.registers, sharedBytes,
                                        threads));
        occ = buf;
      }
      if (std::optional<double> r =
              ptxInstructionsPerMma(compiled.ptx, kernel)) {
        char buf[32];
        std::snprintf(buf, sizeof(buf), "%.2f", *r);
        perMma = buf;
      }
      int64_t numKernels = 0;
      for (size_t at = compiled.ptx.find(".entry "); at != std::string::npos;
           at = compiled.ptx.find(".entry ", at + 1))
        ++numKernels;
      double ratio = double(t.loaded + t.stored) / ideal;
      bool ok = rel <= outputTolerance(DType::F16) && result.reports.empty() &&
                (spill.empty() || spill == "0");
      allOk &= ok;
      std::printf(
          "| %s | %s | %lld, %lld%s | %s | %s | %s | %s | %s | "
          "%.3f | %.3f | %.1f%% | %.4f | %.3f | %.3f | %s | %.2f | "
          "%.1e%s |\n",
          cfg.name().c_str(), chip.c_str(), (long long)tileRows,
          (long long)warps, (chosen.producer ? "+4" : ""), regs.c_str(),
          smem.c_str(), spill.c_str(), occ.c_str(), split.c_str(), ratio,
          double(workspace) / ideal, 100.0 * t.sectorEfficiency(),
          t.sharedRequests ? double(t.bankConflicts) / double(t.sharedRequests)
                           : 0.0,
          double(t.macs) / (double(pairs) * perPair),
          double(t.macs) / (double(dense) * perPair), perMma.c_str(),
          compiled.compileSeconds / double(std::max<int64_t>(1, numKernels)),
          rel, ok ? "" : " **FAIL**");
      std::fflush(stdout);
    }
  }
  std::printf(
      "\nbytes / ideal: global bytes loaded + stored by the call's launches / "
      "(for each query tile and KV head the K and V rows of the keys its rows "
      "see + q + out + lse); with P > 1 it includes the f32 partial states. "
      "mma / min: tensor-core multiply-accumulates executed (mma.sync and "
      "wgmma alike) / (visible (row, key) pairs x (D + Dv), what a perfect "
      "tiling of exactly the visible work would take); mma / dense: the same "
      "against all qo x kv pairs (causal "
      "skipping makes it about half). compile s / kernel: kvir-opt --kv-to-ptx "
      "+ kvir-translate wall time over the kernels of the op (direct, split, "
      "merge).\n");

  if (skew) {
    std::printf(
        "\nLoad balance on sm_90a (head dim 64, 1 KV head and 1 query head, "
        "f16, causal): the work schedule's launch (`blocks` of its attention "
        "kernel, `items / tiles` when it cut tiles, the busiest block's "
        "MACs over the mean, the makespan of the blocks list-scheduled in "
        "launch order onto SMs x resident slots over a perfect split, the "
        "partial states' share of all global bytes, the host's "
        "kvir_schedule_prefill_work time, median of 101) and the same under "
        "the fixed grids of CUDA graphs (graph-max-batch: grids and a "
        "workspace fixed by the shapes; blocks past the items, which do "
        "nothing, left out):\n\n"
        "| batch | blocks | items / tiles | resident per SM | busiest / mean "
        "| makespan / perfect | partial states / all bytes | host plan us "
        "| fixed grids: items / tiles | fixed grids: busiest / mean | fixed "
        "grids: makespan / perfect | fixed grids: partial states / all bytes "
        "| max rel err |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    // (a) One long prompt among 63 short ones.
    std::vector<int64_t> qo(64, 128);
    qo[17] = 8192;
    allOk &= reportBalance(tools, "skewed: 1 x 8192 + 63 x 128", qo, qo);
    // (b) A chunked-prefill step: 4 chunks of 2048 new rows over 0-16k
    // cached keys beside 252 decodes of 1-8k keys, as one kv.prefill.
    std::vector<int64_t> stepQo, stepKv;
    for (int64_t i = 0; i < 4; ++i) {
      stepQo.push_back(2048);
      stepKv.push_back(2048 + i * 16384 / 3);
    }
    Rng rng(4242);
    for (int64_t i = 0; i < 252; ++i) {
      stepQo.push_back(1);
      stepKv.push_back(rng.integer(1024, 8192));
    }
    allOk &= reportBalance(tools, "chunked-prefill step: 4 x 2048 over 0-16k "
                                  "cached + 252 decodes of 1-8k",
                           stepQo, stepKv);
    // (c) Prompts that fill the chip alike.
    std::vector<int64_t> uniform(16, 2048);
    allOk &= reportBalance(tools, "uniform: 16 x 2048", uniform, uniform);
  }
  return allOk ? 0 : 1;
}
