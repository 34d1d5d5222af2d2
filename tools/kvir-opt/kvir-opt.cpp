//===- kvir-opt.cpp - kvir's mlir-opt -------------------------------------===//
//
// mlir-opt with the kv dialect and kvir's passes, plus every upstream dialect
// and pass so that kvir pipelines compose with the standard ones.
//
//===----------------------------------------------------------------------===//
#include "kvir/Registration/InitAll.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#ifdef KVIR_INCLUDE_TESTS
namespace kvir::test {
void registerTestCodegenPass();
} // namespace kvir::test
#endif

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  kvir::registerAllPasses();
#ifdef KVIR_INCLUDE_TESTS
  kvir::test::registerTestCodegenPass();
#endif
  mlir::DialectRegistry registry;
  // gpu-module-to-binary translates kernels to LLVM IR to emit PTX.
  kvir::registerEverything(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "kvir optimizer driver\n", registry));
}
