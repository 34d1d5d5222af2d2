//===- kvir-fuzz.cpp - libFuzzer target over kvir's pipelines -------------===//
//
// Each input is MLIR text, or a JSON spec (an input starting with `{`: what
// the C API's kvir_module_from_spec and Python's kvir.compile take), turned
// into MLIR text by kvir::capi::buildSpecModule. The text is parsed and
// verified with every dialect kvir
// registers; an input that gets that far is run through each of kvir's
// pipelines (kv-lower-to-llvm, kv-to-ptx strict and with host loops, with
// and without fixed CUDA-graph grids, for an sm_80 or sm_90a chip picked by
// the input's hash), each on its own copy of the module.
//
// Rejecting an input is fine; what the fuzzer reports (by aborting, so
// libFuzzer saves the input) is anything else:
//   - a crash, an assertion, a sanitizer report (the build is instrumented);
//   - a hang (libFuzzer's -timeout per input);
//   - a pass that succeeds but leaves IR that does not verify;
//   - a pipeline that fails without an error diagnostic (a silent failure).
//
// The mutator knows kvir's text: besides libFuzzer's byte mutations it
// replaces numbers by boundary values, types by other element types, kv
// keywords and affine operators by others of their kind, and deletes,
// duplicates or swaps lines. scripts/fuzz.sh builds and runs it; docs/
// Reliability.md says how to run it for hours and turn a crash into a test.
//
//===----------------------------------------------------------------------===//
#include "kvir/CAPI/Spec.h"
#include "kvir/Pipelines/Pipelines.h"
#include "kvir/Registration/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size,
                                   size_t maxSize);

namespace {

/// KVIR_FUZZ_VERBOSE=1 prints every diagnostic (to replay one input).
bool verbose() {
  static bool value = std::getenv("KVIR_FUZZ_VERBOSE") != nullptr;
  return value;
}

const mlir::DialectRegistry &registry() {
  static mlir::DialectRegistry *registry = [] {
    auto *r = new mlir::DialectRegistry();
    kvir::registerAllDialects(*r);
    return r;
  }();
  return *registry;
}

[[noreturn]] void reportBug(llvm::StringRef what, mlir::Operation *op) {
  llvm::errs() << "kvir-fuzz: " << what << "\n";
  if (op)
    op->print(llvm::errs(), mlir::OpPrintingFlags().printGenericOpForm());
  llvm::errs() << "\n";
  std::abort();
}

/// Verifies the IR after every pass that succeeded: a pass must never leave
/// invalid IR behind, even on inputs it rejects elsewhere.
class VerifyAfterEachPass : public mlir::PassInstrumentation {
  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    if (mlir::failed(mlir::verify(op)))
      reportBug(("pass '" + pass->getArgument() +
                 "' succeeded but left IR that does not verify")
                    .str(),
                op);
  }
};

/// Counts error diagnostics; prints them only when asked to.
struct DiagnosticCounter {
  explicit DiagnosticCounter(mlir::MLIRContext &context)
      : handler(&context, [this](mlir::Diagnostic &diag) {
          if (diag.getSeverity() == mlir::DiagnosticSeverity::Error)
            ++errors;
          if (verbose())
            llvm::errs() << diag.getLocation() << ": " << diag << "\n";
          return mlir::success();
        }) {}
  int errors = 0;
  mlir::ScopedDiagnosticHandler handler;
};

using PipelineBuilder = std::function<void(mlir::OpPassManager &)>;

void runPipeline(mlir::ModuleOp module, llvm::StringRef name,
                 const PipelineBuilder &build) {
  mlir::MLIRContext *context = module.getContext();
  mlir::OwningOpRef<mlir::ModuleOp> copy(module.clone());
  mlir::PassManager pm(context);
  // The instrumentation verifies instead, so that invalid IR from a pass is
  // a bug rather than a reported failure.
  pm.enableVerifier(false);
  pm.addInstrumentation(std::make_unique<VerifyAfterEachPass>());
  build(pm);
  DiagnosticCounter counter(*context);
  if (verbose())
    llvm::errs() << "kvir-fuzz: running " << name << "\n";
  if (mlir::failed(pm.run(*copy)) && counter.errors == 0)
    reportBug(("pipeline " + name + " failed without an error diagnostic")
                  .str(),
              *copy);
}

void runPipelines(mlir::ModuleOp module, uint64_t hash) {
  runPipeline(module, "kv-lower-to-llvm", [](mlir::OpPassManager &pm) {
    kvir::buildKVLowerToLLVMPipeline(pm);
  });
  kvir::KVToGPUPipelineOptions options;
  options.chip = hash & 1 ? "sm_80" : "sm_90a";
  options.allowHostLoops = hash & 2;
  options.graphMaxBatch = hash & 4 ? 8 : 0;
  std::string name = "kv-to-ptx{chip=" + options.chip +
                     (options.allowHostLoops ? " allow-host-loops" : "") +
                     (options.graphMaxBatch ? " graph-max-batch=8" : "") + "}";
  runPipeline(module, name, [&](mlir::OpPassManager &pm) {
    kvir::buildKVToPTXPipeline(pm, options);
  });
}

/// Inputs that crash Debian's MLIR 22 itself, before any kvir code runs
/// (mlir-opt crashes on them too). Skipped so that the fuzzer keeps looking
/// for kvir's bugs; docs/Reliability.md lists them.
bool crashesUpstreamMLIR(llvm::StringRef text) {
  // `array<index: ...>`: Parser::parseDenseArrayAttr asks an index type for
  // its float width (null dereference).
  static const llvm::Regex denseIndexArray("array[[:space:]]*<[[:space:]]*index");
  return denseIndexArray.match(text);
}

/// Inputs that MLIR 22's own canonicalize turns into IR that does not
/// verify: a program reshaping N elements into M != N with sizes given by
/// constants (undefined behaviour at run time) has the constants folded
/// into a memref.expand_shape / collapse_shape whose static sizes then
/// disagree. Skipped like the parser crash above (docs/Reliability.md);
/// only that verifier message counts, so kvir's own canonicalization
/// patterns stay under test.
bool invalidatedByUpstreamCanonicalize(mlir::ModuleOp module) {
  mlir::OwningOpRef<mlir::ModuleOp> copy(module.clone());
  mlir::PassManager pm(module.getContext());
  pm.enableVerifier(false);
  pm.addPass(mlir::createCanonicalizerPass());
  if (mlir::failed(pm.run(*copy)))
    return false;
  bool reshapeMismatch = false;
  mlir::ScopedDiagnosticHandler capture(
      module.getContext(), [&](mlir::Diagnostic &diag) {
        reshapeMismatch |= llvm::StringRef(diag.str()).contains(
            "must equal reassociation group size");
        return mlir::success();
      });
  return mlir::failed(mlir::verify(*copy)) && reshapeMismatch;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  std::string fromSpec;
  if (text.ltrim().starts_with("{")) {
    // A spec: rejected with a message, or a module to run like any other.
    llvm::Expected<std::string> module = kvir::capi::buildSpecModule(text);
    if (!module) {
      llvm::consumeError(module.takeError());
      return 0;
    }
    fromSpec = std::move(*module);
    text = fromSpec;
  }
  if (crashesUpstreamMLIR(text))
    return -1; // Not added to the corpus.
  // A fresh context per input: no state carries from one input to the next,
  // so every saved input replays alone.
  mlir::MLIRContext context(registry(),
                            mlir::MLIRContext::Threading::DISABLED);
  DiagnosticCounter counter(context);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "fuzz-input"), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    return 0;
  if (mlir::failed(mlir::verify(*module)))
    return 0;
  if (invalidatedByUpstreamCanonicalize(*module))
    return -1;
  runPipelines(*module, llvm::xxh3_64bits(text));
  return 0;
}

//===----------------------------------------------------------------------===//
// Structure-aware mutation of kvir's MLIR text.
//===----------------------------------------------------------------------===//

namespace {

const char *const kIntegers[] = {
    "0",          "1",          "-1",         "2",          "3",
    "7",          "8",          "16",         "31",         "32",
    "33",         "63",         "64",         "65",         "128",
    "255",        "256",        "512",        "576",        "1024",
    "1025",       "4096",       "65536",      "65537",      "1048576",
    "2147483647", "2147483648", "-2147483648", "4294967296", "-9",
    "9223372036854775807"};
const char *const kFloats[] = {"0.0",    "-0.0",   "1.0",     "-1.0",
                               "0.5",    "1.0e38", "3.4e39",  "1.0e-45",
                               "1.0e-30", "448.0", "65504.0", "-65504.0"};
const char *const kElementTypes[] = {"f16",      "bf16",    "f32", "f64",
                                     "i1",       "i8",      "i16", "i32",
                                     "i64",      "index",   "f8E4M3FN",
                                     "f8E5M2",   "f8E4M3FNUZ"};
const char *const kKeywords[] = {
    "nhd",      "hnd",        "affine",     "vllm",    "ppl0",
    "ppl1",     "ppl2",       "ppl3",       "llama",   "mla",
    "combined", "split",      "csr",        "block_table", "token_table",
    "token_offset", "causal", "window_left", "soft_cap", "sm_scale",
    "base",     "page_size",  "kv_heads",   "head_dim", "head_dim_v",
    "dtype",    "layout",     "storage",    "table",    "e",
    "true",     "false",      "floordiv",   "ceildiv",  "mod",
    "?",        "vector_width", "interleave", "rotate_half", "rope"};

struct Span {
  size_t begin, end;
  enum Kind { Integer, Float, Word } kind;
};

bool isWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

/// Numbers and identifiers of the text (outside `%`/`@`/`^`/`#`/`!` names,
/// whose spelling only matters for references).
std::vector<Span> tokenize(llvm::StringRef text) {
  std::vector<Span> spans;
  size_t i = 0, n = text.size();
  while (i < n) {
    char c = text[i];
    if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n')
        ++i;
      continue;
    }
    if (c == '%' || c == '@' || c == '^' || c == '#' || c == '!') {
      ++i;
      while (i < n && (isWordChar(text[i]) || text[i] == '.'))
        ++i;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '-' && i + 1 < n &&
         std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      size_t begin = i++;
      bool isFloat = false;
      while (i < n && (std::isdigit(static_cast<unsigned char>(text[i])) ||
                       text[i] == '.' || text[i] == 'e' ||
                       (text[i] == '-' && text[i - 1] == 'e'))) {
        isFloat |= text[i] == '.' || text[i] == 'e';
        ++i;
      }
      // `4x64xf16`: a dimension is an integer even when `x` follows.
      spans.push_back({begin, i, isFloat ? Span::Float : Span::Integer});
      continue;
    }
    if (isWordChar(c)) {
      size_t begin = i;
      while (i < n && isWordChar(text[i]))
        ++i;
      spans.push_back({begin, i, Span::Word});
      continue;
    }
    if (c == '?') {
      spans.push_back({i, i + 1, Span::Word});
      ++i;
      continue;
    }
    ++i;
  }
  return spans;
}

template <size_t N>
std::string pick(std::mt19937_64 &rng, const char *const (&list)[N]) {
  return list[rng() % N];
}

std::string replacementFor(llvm::StringRef text, const Span &span,
                           const std::vector<Span> &spans,
                           std::mt19937_64 &rng) {
  llvm::StringRef token = text.slice(span.begin, span.end);
  switch (span.kind) {
  case Span::Integer: {
    if (rng() % 3 == 0) {
      // Wrapping (unsigned) arithmetic: the neighbours of INT64_MAX too.
      uint64_t value = std::strtoll(token.str().c_str(), nullptr, 10);
      switch (rng() % 4) {
      case 0:
        return std::to_string(static_cast<int64_t>(value + 1));
      case 1:
        return std::to_string(static_cast<int64_t>(value - 1));
      case 2:
        return std::to_string(static_cast<int64_t>(value * 2));
      default:
        return std::to_string(static_cast<int64_t>(value) / 2);
      }
    }
    return pick(rng, kIntegers);
  }
  case Span::Float:
    return pick(rng, kFloats);
  case Span::Word:
    break;
  }
  for (const char *type : kElementTypes)
    if (token == type)
      return pick(rng, kElementTypes);
  switch (rng() % 3) {
  case 0:
    return pick(rng, kKeywords);
  case 1: {
    // Another word of the same input: swaps attribute names and values.
    const Span &other = spans[rng() % spans.size()];
    return text.slice(other.begin, other.end).str();
  }
  default:
    return pick(rng, kElementTypes);
  }
}

/// Splits at newlines, mutates the line list, joins.
std::string mutateLines(llvm::StringRef text, std::mt19937_64 &rng) {
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  if (lines.empty())
    return text.str();
  size_t a = rng() % lines.size(), b = rng() % lines.size();
  switch (rng() % 3) {
  case 0:
    lines.erase(lines.begin() + a);
    break;
  case 1:
    lines.insert(lines.begin() + a, lines[b]);
    break;
  default:
    std::swap(lines[a], lines[b]);
    break;
  }
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i)
      out += '\n';
    out += lines[i].str();
  }
  return out;
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned int seed) {
  std::mt19937_64 rng(seed);
  if (rng() % 3 == 0)
    return LLVMFuzzerMutate(data, size, maxSize);
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  std::string mutated;
  if (rng() % 5 == 0) {
    mutated = mutateLines(text, rng);
  } else {
    std::vector<Span> spans = tokenize(text);
    if (spans.empty())
      return LLVMFuzzerMutate(data, size, maxSize);
    const Span &span = spans[rng() % spans.size()];
    mutated = (text.take_front(span.begin) +
               replacementFor(text, span, spans, rng) +
               text.drop_front(span.end))
                  .str();
  }
  if (mutated.size() > maxSize || mutated.empty())
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, mutated.data(), mutated.size());
  return mutated.size();
}
