//===- main.cpp - A downstream user of the installed kvir libraries -------===//
//
// Parses a module with a kv.decode, verifies it, runs kv-to-loops through the
// C++ API and checks that no kv op is left; then compiles the same module to
// PTX with the kv-to-ptx pipeline builder and checks that it leaves a launch
// plan with a decode kernel whose manifest names it. Exits non-zero on any
// failure.
//
//===----------------------------------------------------------------------===//
#include "kvir/Conversion/KVToLoops/KVToLoops.h"
#include "kvir/Dialect/KV/IR/KVOps.h"
#include "kvir/Pipelines/Pipelines.h"
#include "kvir/Registration/InitAll.h"
#include "kvir/Target/Manifest/Manifest.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

static const char *kModule = R"mlir(
!kvt = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64,
                 dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @decode(%pool: memref<?x2x16x2x64xf16>, %indptr: memref<?xi32>,
                  %indices: memref<?xi32>, %last: memref<?xi32>,
                  %q: memref<?x8x64xf16>, %o: memref<?x8x64xf16>,
                  %lse: memref<?x8xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x2x64xf16>)
      tables(%indptr, %indices, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !kvt
  %s = kv.decode %q, %kv : memref<?x8x64xf16>, !kvt -> !kv.state<?x8x64xf16, base = 2>
  kv.store_state %s, %o, %lse : !kv.state<?x8x64xf16, base = 2>, memref<?x8x64xf16>, memref<?x8xf32>
  return
}
)mlir";

static int compileToPTX(mlir::MLIRContext &context) {
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(kModule, &context);
  if (!module)
    return 1;
  mlir::PassManager pm(&context);
  kvir::KVToGPUPipelineOptions options;
  options.chip = "sm_80";
  kvir::buildKVToPTXPipeline(pm, options);
  if (mlir::failed(pm.run(*module))) {
    llvm::errs() << "consumer: kv-to-ptx failed\n";
    return 1;
  }
  auto plans = kvir::manifest::getLaunchPlans(*module);
  if (plans.size() != 1 || plans[0].getKernels().empty()) {
    llvm::errs() << "consumer: expected one launch plan with kernels\n";
    return 1;
  }
  auto kernel = plans[0].getKernels().front();
  llvm::json::Value manifest =
      kvir::manifest::kernelManifest(plans[0], kernel, "kv.ptx", "sm_80");
  const llvm::json::Object *object = manifest.getAsObject();
  std::optional<llvm::StringRef> name =
      object ? object->getString("kernel") : std::nullopt;
  if (!name || !name->starts_with("decode_")) {
    llvm::errs() << "consumer: the manifest does not name a decode kernel\n";
    return 1;
  }
  llvm::outs() << "consumer: compiled kv.decode to PTX kernel " << *name
               << "\n";
  return 0;
}

int main() {
  mlir::DialectRegistry registry;
  kvir::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(kModule, &context);
  if (!module) {
    llvm::errs() << "consumer: failed to parse the kv module\n";
    return 1;
  }
  mlir::PassManager pm(&context);
  pm.addPass(kvir::createConvertKVToLoops());
  if (mlir::failed(pm.run(*module))) {
    llvm::errs() << "consumer: kv-to-loops failed\n";
    return 1;
  }
  bool leftover = false;
  module->walk([&](mlir::Operation *op) {
    if (llvm::isa<kvir::kv::KVDialect>(op->getDialect()))
      leftover = true;
  });
  if (leftover) {
    llvm::errs() << "consumer: kv ops survived kv-to-loops\n";
    return 1;
  }
  llvm::outs() << "consumer: lowered kv.decode through the installed kvir\n";
  return compileToPTX(context);
}
