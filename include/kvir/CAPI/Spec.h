//===- Spec.h - kv modules from JSON specs ----------------------*- C++ -*-===//
//
// The spec a framework describes an attention call with (FlashInfer's
// vocabulary: num_qo_heads, head_dim, page_size, kv_layout, ...) as a kv
// module of one function, kvir_main, whose arguments are the call's buffers
// in a fixed order (docs/Frameworks.md). The C API's kvir_module_from_spec
// and kvir-fuzz (specs are user input) use it.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CAPI_SPEC_H
#define KVIR_CAPI_SPEC_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace kvir::capi {

/// The MLIR text of the module `specJson` describes, or an error naming the
/// field that is missing or invalid and what it accepts.
llvm::Expected<std::string> buildSpecModule(llvm::StringRef specJson);

} // namespace kvir::capi

#endif // KVIR_CAPI_SPEC_H
