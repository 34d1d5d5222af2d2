//===- VariantsBench.cpp - What attention variants cost and save ----------===//
//
// kvir-variants-bench, without a GPU:
//
//   * tile skipping: a prefill of one request of `len` rows over `len`
//     keys (f16, head dim 128, GQA 4, 2 KV heads, pages of 16) whose
//     mask_mod keeps each row inside its document (FlexAttention's document
//     mask: `docs` equal documents, so a density of 1 / docs; the ids
//     computed, or read from a table) against the same prefill without
//     the mask: mma.sync executed and global bytes (emulator counters);
//   * top-k sparse selection: an MLA decode (ckv 512 + kpe 64, bf16, 16
//     heads, pages of 64) and a GQA decode (bf16, head dim 128, 8 query /
//     1 KV heads, pages of 16) of `--topk-batch` requests of `--topk-len`
//     keys each, every request selecting `--topk` of them, against the
//     same decodes reading every key: global bytes against the ideal (the
//     selected K/V rows, q, the lists and the outputs);
//   * compile time: kvir-opt --kv-to-ptx + kvir-translate of a prefill
//     with soft cap and sliding window written as score_mod / mask_mod
//     regions against the same prefill with the built-in attributes, and
//     their registers (ptxas, when present).
//
// Prints markdown (bench/RESULTS.md keeps the last run). Usage:
//   kvir-variants-bench [--len N] [--docs N] [--topk N] [--topk-len N]
//                       [--topk-batch N] [--chip sm_90a] [--no-ptxas]
//
//===----------------------------------------------------------------------===//
#include "BenchSupport.h"
#include "GpuHarness.h"

#include "Harness/Harness.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace kvir::test;
using namespace kvir::test::gpu;
using namespace kvir::bench;
namespace ref = kvir::ref;

namespace {

struct Problem {
  KernelSource src{"batch_prefill"};
  PagedCache cache;
  Tensor q;
  StateBuffers out;
  std::vector<int32_t> qoIndptr;
  ref::AttentionParams params;
};

CacheSpec benchSpec() {
  CacheSpec spec;
  spec.pageSize = 16;
  spec.kvHeads = 2;
  spec.headDim = spec.headDimV = 128;
  spec.dtype = DType::F16;
  return spec;
}

/// A prefill of `len` rows over `len` keys with `variants` and `params`'
/// attributes (the same cache and queries for every call: seed 7).
std::unique_ptr<Problem> makeProblem(int64_t len, ref::AttentionParams params,
                                     const VariantSource &variants) {
  auto p = std::make_unique<Problem>();
  CacheSpec spec = benchSpec();
  int64_t qHeads = 8;
  Rng rng(7);
  p->cache = makeCache(spec, {len}, rng);
  p->qoIndptr = {0, int32_t(len)};
  p->q = randomTensor(rng, spec.dtype, {len, qHeads, spec.headDim}, 2.0);
  p->out = makeStateBuffers(len, qHeads, spec.headDimV, spec.dtype);
  p->params = params;
  std::string kvType;
  std::string kv = emitPagedView(p->src, p->cache, "kv", kvType);
  std::string qs = p->src.addMemref("q", p->q);
  std::string qo = p->src.addMemref("qo_indptr", makeI32(p->qoIndptr));
  std::string clauses = emitVariants(p->src, p->params, variants);
  std::string stateType =
      stateTypeText(qHeads, spec.headDimV, spec.dtype, params.base);
  p->src.addLine("%s = kv.prefill " + qs + ", " + qo + ", " + kv + clauses +
                 " " + attentionAttrs(p->params) + " : " + p->src.typeOf(qs) +
                 ", " + p->src.typeOf(qo) + ", " + kvType + " -> " + stateType);
  emitStore(p->src, "%s", stateType, p->out);
  return p;
}

struct Measured {
  Traffic traffic;
  double maxRelErr = 0;
  bool ok = false;
};

Measured run(Problem &p, const std::string &chip) {
  Measured m;
  RunResult result;
  ::testing::AssertionResult ran =
      runGpu(p.src, {p.out.o, p.out.lse}, chip, {"kv.prefill"}, result);
  if (!ran) {
    std::fprintf(stderr, "%s\n", ran.message());
    return m;
  }
  for (const std::string &r : result.reports)
    std::fprintf(stderr, "%s\n", r.c_str());
  m.traffic = sumTraffic(result.launches);
  ref::State expected = ref::attention(
      p.q, p.qoIndptr, ref::PagedSource(p.cache), asKernelSees(p.params));
  m.maxRelErr = maxRelativeError(p.out, expected);
  m.ok = result.reports.empty() && m.maxRelErr <= outputTolerance(DType::F16);
  return m;
}

/// `k` distinct keys of [0, len) in random order.
std::vector<int32_t> distinctKeys(Rng &rng, int64_t len, int64_t k) {
  std::vector<int32_t> keys(len);
  for (int64_t j = 0; j < len; ++j)
    keys[j] = int32_t(j);
  for (int64_t i = 0; i < k; ++i)
    std::swap(keys[i], keys[rng.integer(i, len - 1)]);
  keys.resize(k);
  return keys;
}

struct SparseRun {
  Traffic traffic;
  double maxRelErr = 0;
  bool ok = false;
};

/// An MLA decode (`mla`) or a GQA decode of `batch` requests of `len` keys
/// over one cache, with each request's `selected` keys as topk(...) or
/// (empty) every key.
SparseRun runSparse(bool mla, int64_t batch, int64_t len,
                    const std::vector<std::vector<int32_t>> &selected,
                    const std::string &chip) {
  CacheSpec spec = benchSpec();
  int64_t heads = mla ? 16 : 8;
  if (mla) {
    spec.pageSize = 64;
    spec.kvHeads = 1;
    spec.headDim = spec.headDimV = 512;
    spec.peDim = 64;
    spec.storage = Storage::MLA;
    spec.table = Table::BlockTable;
  } else {
    spec.kvHeads = 1;
    spec.table = Table::BlockTable;
  }
  spec.dtype = DType::BF16;
  Rng rng(11);
  PagedCache cache = makeCache(spec, std::vector<int64_t>(batch, len), rng);
  KernelSource src{mla ? "mla_decode" : "decode"};
  std::string kvType;
  std::string kv = emitPagedView(src, cache, "kv", kvType);
  ref::AttentionParams params;
  params.topk = selected;
  std::string clauses = emitVariants(src, params, {});
  std::string stateType = stateTypeText(heads, spec.headDimV, spec.dtype,
                                        Base::E);
  Tensor q = randomTensor(rng, spec.dtype, {batch, heads, spec.headDim},
                          mla ? 0.5 : 2.0);
  Tensor qPe;
  StateBuffers out = makeStateBuffers(batch, heads, spec.headDimV, spec.dtype);
  std::string qs = src.addMemref("q", q);
  if (mla) {
    qPe = randomTensor(rng, spec.dtype, {batch, heads, spec.peDim}, 2.0);
    std::string qp = src.addMemref("q_pe", qPe);
    src.addLine("%s = kv.mla_decode " + qs + ", " + qp + ", " + kv + clauses +
                " : " + src.typeOf(qs) + ", " + src.typeOf(qp) + ", " +
                kvType + " -> " + stateType);
  } else {
    src.addLine("%s = kv.decode " + qs + ", " + kv + clauses + " : " +
                src.typeOf(qs) + ", " + kvType + " -> " + stateType);
  }
  emitStore(src, "%s", stateType, out);
  SparseRun r;
  RunResult result;
  ::testing::AssertionResult ran =
      runGpu(src, {out.o, out.lse}, chip,
             {mla ? "kv.mla_decode" : "kv.decode"}, result);
  if (!ran) {
    std::fprintf(stderr, "%s\n", ran.message());
    return r;
  }
  for (const std::string &report : result.reports)
    std::fprintf(stderr, "%s\n", report.c_str());
  r.traffic = sumTraffic(result.launches);
  ref::State expected =
      mla ? ref::mlaDecode(q, qPe, cache, std::nullopt, Base::E, {}, false,
                           params)
          : ref::decode(q, ref::PagedSource(cache), asKernelSees(params));
  r.maxRelErr = maxRelativeError(out, expected);
  r.ok = result.reports.empty() && r.maxRelErr <= outputTolerance(DType::BF16);
  return r;
}

} // namespace

int main(int argc, char **argv) {
  // Every return destroys the host engines before static destruction.
  kvir::test::gpu::GpuKernelCacheScope kernelCacheScope;
  int64_t len = 2048, docs = 10;
  int64_t topk = 2048, topkLen = 32768, topkBatch = 2;
  std::string chip = "sm_90a";
  bool usePtxas = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--len")
      len = std::atoll(value().c_str());
    else if (a == "--docs")
      docs = std::atoll(value().c_str());
    else if (a == "--topk")
      topk = std::atoll(value().c_str());
    else if (a == "--topk-len")
      topkLen = std::atoll(value().c_str());
    else if (a == "--topk-batch")
      topkBatch = std::atoll(value().c_str());
    else if (a == "--chip")
      chip = value();
    else if (a == "--no-ptxas")
      usePtxas = false;
    else {
      std::fprintf(stderr,
                   "usage: %s [--len N] [--docs N] [--topk N] "
                   "[--topk-len N] [--topk-batch N] [--chip sm_90a] "
                   "[--no-ptxas]\n",
                   argv[0]);
      return 2;
    }
  }
  if (len < 1 || docs < 1 || docs > len || topk < 1 || topk > topkLen ||
      topkBatch < 1) {
    std::fprintf(stderr,
                 "need 1 <= docs <= len, 1 <= topk <= topk-len, a batch\n");
    return 2;
  }
  bool allOk = true;

  // Tile skipping: a document mask against no mask.
  std::vector<int32_t> docOf(len);
  for (int64_t t = 0; t < len; ++t)
    docOf[t] = int32_t(t * docs / len);
  Tensor doc(DType::I32, {len});
  for (int64_t t = 0; t < len; ++t)
    doc.set({t}, docOf[t]);
  VariantSource masked;
  masked.captures = {{"doc", doc}};
  std::string type = "memref<" + std::to_string(len) + "xi32>";
  masked.maskMod = "^bb0(%b: index, %h: index, %p: index, %j: index):\n"
                   "      %dp = memref.load $doc[%p] : " +
                   type +
                   "\n"
                   "      %dj = memref.load $doc[%j] : " +
                   type +
                   "\n"
                   "      %same = arith.cmpi eq, %dp, %dj : i32\n"
                   "      kv.yield %same : i1";
  ref::AttentionParams base;
  base.base = Base::Two;
  ref::AttentionParams maskedParams = base;
  maskedParams.maskMod = [docOf](int64_t, int64_t, int64_t p, int64_t j) {
    return docOf[p] == docOf[j];
  };
  int64_t visible = 0;
  for (int64_t p = 0; p < len; ++p)
    for (int64_t j = 0; j < len; ++j)
      visible += docOf[p] == docOf[j];
  double density = double(visible) / double(len * len);
  // The same documents from arithmetic (doc = pos * docs / len): no
  // memory read by the region, so the bytes are the attention's own.
  VariantSource computed;
  computed.maskMod = "^bb0(%b: index, %h: index, %p: index, %j: index):\n"
                     "      %n = arith.constant " +
                     std::to_string(docs) +
                     " : index\n"
                     "      %l = arith.constant " +
                     std::to_string(len) +
                     " : index\n"
                     "      %pn = arith.muli %p, %n : index\n"
                     "      %jn = arith.muli %j, %n : index\n"
                     "      %dp = arith.divui %pn, %l : index\n"
                     "      %dj = arith.divui %jn, %l : index\n"
                     "      %same = arith.cmpi eq, %dp, %dj : index\n"
                     "      kv.yield %same : i1";
  auto dense = makeProblem(len, base, {});
  auto document = makeProblem(len, maskedParams, masked);
  auto arithmetic = makeProblem(len, maskedParams, computed);
  Measured d = run(*dense, chip), m = run(*document, chip),
           c = run(*arithmetic, chip);
  allOk &= d.ok && m.ok && c.ok;
  std::printf("Tile skipping: one prefill of %lld rows over %lld keys, f16, "
              "head dim 128, 8 query / 2 KV heads, pages of 16, %s; a "
              "document mask of %lld equal documents (density %.1f%%) "
              "against no mask.\n\n",
              (long long)len, (long long)len, chip.c_str(), (long long)docs,
              100.0 * density);
  std::printf("| mask | mma.sync | global bytes | mma / dense | bytes / "
              "dense | max rel err |\n|---|---|---|---|---|---|\n");
  auto row = [&](const char *name, const Measured &x) {
    std::printf("| %s | %llu | %llu | %.3f | %.3f | %.1e%s |\n", name,
                (unsigned long long)x.traffic.mma,
                (unsigned long long)(x.traffic.loaded + x.traffic.stored),
                double(x.traffic.mma) / double(d.traffic.mma),
                double(x.traffic.loaded + x.traffic.stored) /
                    double(d.traffic.loaded + d.traffic.stored),
                x.maxRelErr, x.ok ? "" : " **FAIL**");
  };
  row("none", d);
  row("mask_mod, document ids computed", c);
  row("mask_mod, document ids read from a table", m);
  std::printf("\nglobal bytes: loaded + stored by the launches, every "
              "thread's access counted (no cache model): a region that reads "
              "a table adds its reads for each (row, key) pair it decides, "
              "which a GPU's L1 mostly serves.\n");

  // Top-k: bytes against the ideal and against reading every key.
  {
    Rng rng(13);
    std::vector<std::vector<int32_t>> lists;
    for (int64_t b = 0; b < topkBatch; ++b)
      lists.push_back(distinctKeys(rng, topkLen, topk));
    std::printf("\nTop-k sparse selection: %lld requests of %lld keys, each "
                "selecting %lld (bf16, block tables), %s: global bytes "
                "(loaded + stored) against the ideal (the selected K/V rows, "
                "q, the lists and the outputs) and against the same decode "
                "reading every key.\n\n",
                (long long)topkBatch, (long long)topkLen, (long long)topk,
                chip.c_str());
    std::printf("| op | keys read | global bytes | ideal bytes | bytes / "
                "ideal | bytes / dense | max rel err |\n"
                "|---|---|---|---|---|---|---|\n");
    for (bool mla : {true, false}) {
      SparseRun sparse = runSparse(mla, topkBatch, topkLen, lists, chip);
      SparseRun full = runSparse(mla, topkBatch, topkLen, {}, chip);
      allOk &= sparse.ok && full.ok;
      // Per key: ckv + kpe (MLA) or K + V rows of the KV head; per request:
      // q (and q_pe), the output and LSE, the list.
      int64_t heads = mla ? 16 : 8;
      int64_t rowBytes = mla ? (512 + 64) * 2 : 2 * 128 * 2;
      int64_t qBytes = heads * (mla ? 512 + 64 : 128) * 2;
      int64_t outBytes = heads * (mla ? 512 : 128) * 2 + heads * 4;
      auto ideal = [&](int64_t keys, bool lists) {
        return topkBatch * (keys * rowBytes + qBytes + outBytes +
                            (lists ? topk * 4 : 0));
      };
      auto row = [&](const char *name, const SparseRun &x, int64_t keys,
                     bool withLists) {
        uint64_t bytes = x.traffic.loaded + x.traffic.stored;
        std::printf("| %s | %lld | %llu | %lld | %.3f | %.3f | %.1e%s |\n",
                    name, (long long)keys, (unsigned long long)bytes,
                    (long long)ideal(keys, withLists),
                    double(bytes) / double(ideal(keys, withLists)),
                    double(bytes) /
                        double(full.traffic.loaded + full.traffic.stored),
                    x.maxRelErr, x.ok ? "" : " **FAIL**");
      };
      row(mla ? "kv.mla_decode topk" : "kv.decode topk", sparse, topk, true);
      row(mla ? "kv.mla_decode (every key)" : "kv.decode (every key)", full,
          topkLen, false);
    }
    std::printf("\nThe bytes past the ideal: page-table entries (one per "
                "selected key), split-KV's f32 partial states and their "
                "merge.\n");
  }

  // Compile time: regions against the built-in attributes.
  Toolbox tools(argv[0], usePtxas);
  ref::AttentionParams builtin = base;
  builtin.causal = true;
  builtin.softCap = 30.0;
  builtin.windowLeft = 511;
  VariantSource regions;
  regions.scoreMod =
      "^bb0(%s: f32, %b: index, %h: index, %p: index, %j: index):\n"
      "      %c = arith.constant 30.0 : f32\n"
      "      %x = arith.divf %s, %c : f32\n"
      "      %t = math.tanh %x : f32\n"
      "      %r = arith.mulf %c, %t : f32\n"
      "      kv.yield %r : f32";
  regions.maskMod = "^bb0(%b: index, %h: index, %p: index, %j: index):\n"
                    "      %w = arith.constant 511 : index\n"
                    "      %d = arith.subi %p, %j : index\n"
                    "      %in = arith.cmpi sle, %d, %w : index\n"
                    "      kv.yield %in : i1";
  ref::AttentionParams regionParams = base;
  regionParams.causal = true;
  std::printf("\nCompile time of a causal prefill (head dim 128, GQA 4) with "
              "soft cap 30 and a 512-key window, %s: kvir-opt --kv-to-ptx + "
              "kvir-translate wall time (mean of 3), ptxas registers of the "
              "direct kernel.\n\n",
              chip.c_str());
  std::printf("| variant as | compile s | kernels | regs (direct) | spills "
              "|\n|---|---|---|---|---|\n");
  auto compileRow = [&](const char *name, const ref::AttentionParams &params,
                        const VariantSource &variants) {
    auto p = makeProblem(256, params, variants);
    double seconds = 0;
    Toolbox::Compiled c;
    for (int k = 0; k < 3; ++k) {
      c = tools.compile(p->src.text(), chip);
      seconds += c.compileSeconds;
    }
    std::string regs = "-";
    int64_t spills = 0;
    for (const auto &[name, info] : c.kernels) {
      spills += info.spillStores + info.spillLoads;
      if (name.rfind("prefill_", 0) == 0 && !isSplitKernel(name))
        regs = std::to_string(info.registers);
    }
    std::printf("| %s | %.3f | %zu | %s | %lld |\n", name, seconds / 3.0,
                c.kernels.size(), regs.c_str(), (long long)spills);
    allOk &= c.ok;
  };
  compileRow("built-in attributes", builtin, {});
  compileRow("score_mod + mask_mod regions", regionParams, regions);
  return allOk ? 0 : 1;
}
