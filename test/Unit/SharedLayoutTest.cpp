//===- SharedLayoutTest.cpp - One shared-memory layout for chooser and kernel =//
//
// The config chooser sizes a tensor-core config by the kernel's own layout
// (TensorCoreLayout.h): for ops over i32 and i64 tables, masks, mask_mod,
// quantized pools, vLLM's transposed V, ragged KV, MLA and top-k, on chips
// with little and much shared memory, the bytes the chooser counts for the
// config it picked equal the largest shared memory of the kernels the
// lowering then builds (the direct kernel's), and fit the chip.
//
//===----------------------------------------------------------------------===//
#include "kvir/Codegen/KernelFunc.h"
#include "kvir/Dialect/KVGPU/Transforms/ConfigSelection.h"
#include "kvir/Pipelines/Pipelines.h"
#include "kvir/Registration/InitAll.h"
#include "kvir/Target/GPU/TargetInfo.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

namespace {

mlir::MLIRContext &context() {
  static mlir::MLIRContext *ctx = [] {
    mlir::DialectRegistry registry;
    kvir::registerEverything(registry);
    auto *c = new mlir::MLIRContext(registry);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

/// The chooser's bytes for the one tensor-core op of `source` on `chip`,
/// and the largest shared memory of the kernels lowering it builds.
std::pair<int64_t, int64_t> chooserAndKernel(const std::string &source,
                                             const std::string &chip) {
  mlir::MLIRContext &ctx = context();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &ctx);
  EXPECT_TRUE(module) << source;
  if (!module)
    return {-1, -1};
  const kvir::target::TargetInfo *target =
      kvir::target::TargetInfo::lookup(chip);
  int64_t chosen = -1;
  std::string whyNot;
  module->walk([&](mlir::Operation *op) {
    if (auto prefill = llvm::dyn_cast<kvir::kv::PrefillOp>(op)) {
      auto config =
          kvir::kvgpu::getOrChoosePrefillConfig(prefill, *target, whyNot);
      EXPECT_TRUE(mlir::succeeded(config)) << whyNot;
      chosen = kvir::kvgpu::prefillSharedBytes(*config, prefill);
    } else if (auto mla = llvm::dyn_cast<kvir::kv::MlaDecodeOp>(op)) {
      auto config = kvir::kvgpu::getOrChooseMlaConfig(mla, *target, whyNot);
      EXPECT_TRUE(mlir::succeeded(config)) << whyNot;
      chosen = kvir::kvgpu::mlaSharedBytes(*config, mla);
    }
  });
  mlir::PassManager pm(&ctx);
  kvir::KVToGPUPipelineOptions options;
  options.chip = chip;
  kvir::buildKVToGPUPipeline(pm, options);
  EXPECT_TRUE(mlir::succeeded(pm.run(*module))) << source;
  int64_t largest = -1;
  module->walk([&](mlir::gpu::GPUFuncOp fn) {
    largest = std::max(largest, kvir::codegen::getStaticSharedBytes(fn) +
                                    kvir::codegen::getDynamicSharedBytes(fn));
  });
  EXPECT_LE(chosen, target->maxSharedBytesPerBlock) << chip;
  return {chosen, largest};
}

/// A function returning the kv.prefill of q (`qType`, rows by qo) over
/// the view `view` (of the function's `kvArgs`) with `attrs`.
/// The state of `heads` x `dim` rows in `elt`, stored to %o and %l.
struct StateOf {
  std::string type, outs, store;
  StateOf(int heads, int dim, const std::string &elt, const std::string &base) {
    std::string h = std::to_string(heads), d = std::to_string(dim);
    std::string out = "memref<?x" + h + "x" + d + "x" + elt + ">";
    std::string lse = "memref<?x" + h + "xf32>";
    type = "!kv.state<?x" + h + "x" + d + "x" + elt + ", base = " + base + ">";
    outs = ", %o: " + out + ", %l: " + lse;
    store = "  kv.store_state %s, %o, %l : !s, " + out + ", " + lse + "\n";
  }
};

std::string prefill(const std::string &kvType, const std::string &kvArgs,
                    const std::string &view, const std::string &qType,
                    const StateOf &state, const std::string &attrs) {
  return "!c = " + kvType + "\n!s = " + state.type +
         "\nfunc.func @f(%q: " + qType + ", %qo: memref<?xi32>, " + kvArgs +
         state.outs + ") {\n  %kv = kv.paged_view " + view +
         " : !c\n  %s = kv.prefill %q, %qo, %kv " + attrs + " : " + qType +
         ", memref<?xi32>, !c -> !s\n" + state.store + "  return\n}\n";
}

/// A CSR cache's arguments and view with i`bits` tables.
std::pair<std::string, std::string> csr(const std::string &pool, int bits) {
  std::string t = "memref<?xi" + std::to_string(bits) + ">";
  return {"%pool: " + pool + ", %a: " + t + ", %b: " + t + ", %c: " + t,
          "pools(%pool : " + pool + ") tables(%a, %b, %c : " + t + ", " + t +
              ", " + t + ")"};
}

TEST(SharedLayout, PrefillI32AndI64TablesEveryChip) {
  for (const char *chip : {"sm_80", "sm_86", "sm_90a"})
    for (int bits : {32, 64}) {
      auto [args, view] = csr("memref<?x2x16x2x128xf16>", bits);
      auto [chosen, built] = chooserAndKernel(
          prefill("!kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, "
                  "head_dim_v = 128, dtype = f16, layout = nhd, storage = "
                  "combined, table = csr>",
                  args, view, "memref<?x8x128xf16>",
                  StateOf(8, 128, "f16", "2"), "{causal}"),
          chip);
      EXPECT_EQ(chosen, built) << chip << " i" << bits;
    }
}

TEST(SharedLayout, PrefillD256BF16OutputStagedOnSm86) {
  // A bf16 state over f16 KV: the output is staged in a tile of its own.
  auto [args, view] = csr("memref<?x2x16x1x256xf16>", 64);
  auto [chosen, built] = chooserAndKernel(
      prefill("!kv.paged<page_size = 16, kv_heads = 1, head_dim = 256, "
              "head_dim_v = 256, dtype = f16, layout = nhd, storage = "
              "combined, table = csr>",
              args, view, "memref<?x4x256xf16>",
              StateOf(4, 256, "bf16", "e"), "{causal}"),
      "sm_86");
  EXPECT_EQ(chosen, built);
}

TEST(SharedLayout, PrefillFp8TransposedVOnSm86) {
  // vLLM's cache: fp8 codes, V's dims strided (a transposed V ring).
  std::string k = "memref<?x2x8x16x16xf8E4M3FN>", v = "memref<?x2x128x16xf8E4M3FN>";
  auto [chosen, built] = chooserAndKernel(
      prefill("!kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, "
              "head_dim_v = 128, dtype = f16, layout = vllm, storage = "
              "split, table = block_table, quant = fp8_e4m3>",
              "%k: " + k + ", %v: " + v +
                  ", %t: memref<?x?xi32>, %lens: memref<?xi32>, %ks: f32, %vs: f32",
              "pools(%k, %v : " + k + ", " + v +
                  ") tables(%t, %lens : memref<?x?xi32>, memref<?xi32>) "
                  "fp8_scales(%ks, %vs)",
              "memref<?x8x128xf16>", StateOf(8, 128, "f16", "2"), "{causal}"),
      "sm_86");
  EXPECT_EQ(chosen, built);
}

TEST(SharedLayout, MlaTopk) {
  for (const char *chip : {"sm_86", "sm_90a"}) {
    StateOf state(16, 512, "bf16", "e");
    std::string source =
        "!c = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, "
        "head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table "
        "= csr, pe_dim = 64>\n"
        "!s = " + state.type + "\n"
        "func.func @f(%ckv: memref<?x64x512xbf16>, %kpe: "
        "memref<?x64x64xbf16>, %a: memref<?xi32>, %b: memref<?xi32>, %c: "
        "memref<?xi32>, %qn: memref<?x16x512xbf16>, %qp: "
        "memref<?x16x64xbf16>, %t: memref<?x64xi32>" + state.outs + ") {\n"
        "  %kv = kv.paged_view pools(%ckv, %kpe : memref<?x64x512xbf16>, "
        "memref<?x64x64xbf16>) tables(%a, %b, %c : memref<?xi32>, "
        "memref<?xi32>, memref<?xi32>) : !c\n"
        "  %s = kv.mla_decode %qn, %qp, %kv topk(%t : memref<?x64xi32>) : "
        "memref<?x16x512xbf16>, memref<?x16x64xbf16>, !c -> !s\n" +
        state.store + "  return\n}\n";
    auto [chosen, built] = chooserAndKernel(source, chip);
    EXPECT_EQ(chosen, built) << chip;
  }
}

} // namespace
