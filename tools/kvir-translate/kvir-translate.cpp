//===- kvir-translate.cpp - PTX, JSON manifests and C headers -------------===//
//
// Reads a module lowered with kv-to-ptx and writes, into an output directory:
//   <binary>.ptx     the PTX of each gpu.binary (all its kernels)
//   <kernel>.json    a manifest per kernel: entry name, parameters (name,
//                    dtype, shape expressions, ABI), grid/block formulas,
//                    shared memory, the split-KV plan and workspace bytes
//   <binary>.h       a C header embedding the PTX, the launch table and the
//                    split-KV / workspace formulas as functions
//
//===----------------------------------------------------------------------===//
#include "kvir/Conversion/KVToGPU/KVToGPU.h"
#include "kvir/Registration/InitAll.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

static llvm::cl::opt<std::string> inputFile(llvm::cl::Positional,
                                            llvm::cl::desc("<input .mlir>"),
                                            llvm::cl::init("-"));
static llvm::cl::opt<std::string>
    outputDir("o", llvm::cl::desc("Output directory"), llvm::cl::init("."));

/// MLIR attributes of a kernel plan as JSON.
static llvm::json::Value toJson(Attribute attr) {
  if (auto dict = dyn_cast<DictionaryAttr>(attr)) {
    llvm::json::Object obj;
    for (NamedAttribute entry : dict)
      obj[entry.getName().strref()] = toJson(entry.getValue());
    return std::move(obj);
  }
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    llvm::json::Array arr;
    for (Attribute a : array)
      arr.push_back(toJson(a));
    return std::move(arr);
  }
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return i.getInt();
  if (auto s = dyn_cast<StringAttr>(attr))
    return s.str();
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto type = dyn_cast<TypeAttr>(attr))
    os << type.getValue();
  else
    os << attr;
  return text;
}

/// Scalar parameters a kernel argument expands to in the PTX entry: MLIR
/// memrefs become (allocated, aligned, offset, sizes..., strides...).
static int64_t paramCount(DictionaryAttr arg) {
  auto shape = arg.getAs<ArrayAttr>("shape");
  if (!shape || shape.empty())
    return 1;
  return 3 + 2 * int64_t(shape.size());
}

static bool writeFile(StringRef path, StringRef contents) {
  std::string error;
  auto out = openOutputFile(path, &error);
  if (!out) {
    llvm::errs() << "kvir-translate: " << error << "\n";
    return false;
  }
  out->os() << contents;
  out->keep();
  return true;
}

static std::string cIdentifier(StringRef s) {
  std::string id;
  for (char c : s)
    id += llvm::isAlnum(c) ? c : '_';
  return id;
}

static std::string cString(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n')
      out += "\\n\"\n\"";
    else if (c == '"' || c == '\\')
      out += std::string("\\") + c;
    else if (c == '\t')
      out += "\\t";
    else
      out += c;
  }
  return out + "\"";
}

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
  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir)) {
    llvm::errs() << "kvir-translate: cannot create " << outputDir << ": "
                 << ec.message() << "\n";
    return 1;
  }

  auto plans = (*module)->getAttrOfType<ArrayAttr>(kvir::kPlansAttrName);
  unsigned binaries = 0;
  for (auto binary : module->getOps<gpu::BinaryOp>()) {
    std::string ptx, chip;
    for (Attribute a : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(a);
      if (object.getFormat() != gpu::CompilationTarget::Assembly)
        continue;
      ptx = object.getObject().str();
      if (auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget()))
        chip = target.getChip().str();
    }
    if (ptx.empty()) {
      binary.emitError("kvir-translate needs PTX: lower with kv-to-ptx "
                       "(gpu-module-to-binary format=isa)");
      return 1;
    }
    ++binaries;
    std::string name = binary.getName().str();
    SmallString<128> ptxPath(outputDir);
    llvm::sys::path::append(ptxPath, name + ".ptx");
    if (!writeFile(ptxPath, ptx))
      return 1;

    std::string id = cIdentifier(name);
    std::string header;
    llvm::raw_string_ostream h(header);
    h << "/* Generated by kvir-translate. PTX for " << chip
      << " and how to launch it. */\n#ifndef KVIR_" << id << "_H\n#define KVIR_"
      << id << "_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
      << "/* Memref arguments are passed as MLIR memref descriptors expanded\n"
      << "   into scalars: allocated ptr, aligned ptr, offset, sizes[rank],\n"
      << "   strides[rank] (int64). Pointers must be 16-byte aligned. */\n"
      << "typedef struct {\n  const char *name;\n  uint32_t block[3];\n"
      << "  uint32_t static_shared_bytes;\n  uint32_t dynamic_shared_bytes;\n"
      << "  uint32_t num_params;\n} kvir_kernel_t;\n\n"
      << "static const char kvir_" << id << "_ptx[] =\n" << cString(ptx)
      << ";\n\n";

    unsigned planIndex = 0;
    ArrayRef<Attribute> planList = plans ? plans.getValue() : ArrayRef<Attribute>();
    for (Attribute planAttr : planList) {
      auto plan = cast<DictionaryAttr>(planAttr);
      std::string pid = "kvir_" + id + "_plan" + std::to_string(planIndex++);
      h << "/* " << toJson(plan.get("op")).getAsString().value_or("")
        << " over " << toJson(plan.get("kv_type")).getAsString().value_or("")
        << " */\n";
      h << "static const kvir_kernel_t " << pid << "_kernels[3] = {\n";
      for (StringRef role : {"direct", "split", "merge"}) {
        auto kernel = plan.getAs<DictionaryAttr>(role);
        int64_t params = 0;
        for (Attribute arg : kernel.getAs<ArrayAttr>("args"))
          params += paramCount(cast<DictionaryAttr>(arg));
        auto block = kernel.getAs<ArrayAttr>("block");
        h << "  {\"" << kernel.getAs<StringAttr>("name").getValue() << "\", {";
        for (unsigned i = 0; i < 3; ++i)
          h << (i ? ", " : "") << cast<IntegerAttr>(block[i]).getInt();
        h << "}, " << kernel.getAs<IntegerAttr>("static_shared_bytes").getInt()
          << ", " << kernel.getAs<IntegerAttr>("dynamic_shared_bytes").getInt()
          << ", " << params << "},  /* " << role << ": grid "
          << llvm::formatv("{0}", toJson(kernel.get("grid"))) << " */\n";

        // One manifest per kernel entry point.
        llvm::json::Object manifest{
            {"kernel", kernel.getAs<StringAttr>("name").getValue()},
            {"role", role},
            {"ptx", name + ".ptx"},
            {"chip", chip},
            {"grid", toJson(kernel.get("grid"))},
            {"block", toJson(kernel.get("block"))},
            {"static_shared_bytes", toJson(kernel.get("static_shared_bytes"))},
            {"dynamic_shared_bytes", toJson(kernel.get("dynamic_shared_bytes"))},
            {"params", toJson(kernel.get("args"))},
            {"num_params", params},
            {"param_abi", "memref -> (allocated ptr, aligned ptr, offset, "
                          "sizes[rank], strides[rank]); scalars as themselves"},
            {"plan", toJson(plan)},
        };
        SmallString<128> jsonPath(outputDir);
        llvm::sys::path::append(
            jsonPath, kernel.getAs<StringAttr>("name").getValue() + ".json");
        std::string json;
        llvm::raw_string_ostream js(json);
        js << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest)))
           << "\n";
        if (!writeFile(jsonPath, json))
          return 1;
      }
      h << "};\n";
      auto heur = plan.getAs<DictionaryAttr>("split_heuristic");
      auto get = [&](StringRef k) { return heur.getAs<IntegerAttr>(k).getInt(); };
      h << "/* Split-KV partitions: " << toJson(plan.get("num_partitions")).getAsString().value_or("")
        << ". Launch direct when 1, else split then merge. */\n"
        << "static inline uint32_t " << pid
        << "_num_partitions(uint32_t batch) {\n  uint32_t blocks = batch * "
        << get("kv_heads") << "u;\n  uint32_t wanted = (" << 2 * get("sm_count")
        << "u + (blocks ? blocks : 1u) - 1u) / (blocks ? blocks : 1u);\n"
        << "  if (wanted < 1u) wanted = 1u;\n  return wanted < "
        << get("max_partitions") << "u ? wanted : " << get("max_partitions")
        << "u;\n}\n"
        << "/* Workspace: f32 partial outputs and LSEs of the split kernel. */\n"
        << "static inline size_t " << pid
        << "_workspace_bytes(uint32_t batch) {\n  uint32_t p = " << pid
        << "_num_partitions(batch);\n  return p == 1u ? 0 : (size_t)p * batch * "
        << get("q_heads") << "u * " << get("head_dim_v") + 1 << "u * 4u;\n}\n\n";
    }
    h << "#endif\n";
    SmallString<128> headerPath(outputDir);
    llvm::sys::path::append(headerPath, name + ".h");
    if (!writeFile(headerPath, header))
      return 1;
  }
  if (!binaries) {
    module->emitError("kvir-translate: no gpu.binary with PTX in the module; "
                      "lower it with --kv-to-ptx first");
    return 1;
  }
  return 0;
}
