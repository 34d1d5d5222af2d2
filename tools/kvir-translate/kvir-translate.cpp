//===- kvir-translate.cpp - PTX, JSON manifests and C headers -------------===//
//
// Reads a module lowered with kv-to-ptx and writes, into an output directory,
// per gpu.binary: <binary>.ptx, a <kernel>.json manifest per kernel and a C
// header <binary>.h, all derived from the module's launch plans
// (lib/Target/Manifest).
//
//===----------------------------------------------------------------------===//
#include "kvir/Registration/InitAll.h"
#include "kvir/Target/Manifest/Manifest.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

static llvm::cl::opt<std::string> inputFile(llvm::cl::Positional,
                                            llvm::cl::desc("<input .mlir>"),
                                            llvm::cl::init("-"));
static llvm::cl::opt<std::string>
    outputDir("o", llvm::cl::desc("Output directory"), llvm::cl::init("."));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(
      argc, argv, "kvir-translate: PTX, manifests and C headers\n");
  DialectRegistry registry;
  registerAllDialects(registry);
  kvir::registerAllDialects(registry);
  MLIRContext context(registry);
  context.allowUnregisteredDialects(false);
  llvm::SourceMgr sourceMgr;
  std::string error;
  auto file = openInputFile(inputFile, &error);
  if (!file) {
    llvm::errs() << "kvir-translate: " << error << "\n";
    return 1;
  }
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;
  return failed(kvir::manifest::writeOutputs(*module, outputDir)) ? 1 : 0;
}
