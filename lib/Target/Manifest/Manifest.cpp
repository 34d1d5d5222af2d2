//===- Manifest.cpp - Manifests and C headers from launch plans -----------===//
#include "kvir/Target/Manifest/Manifest.h"
#include "ManifestParts.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"
#include "kvir/Dialect/KVGPU/IR/KernelABI.h"
#include "kvir/Target/GPU/TargetInfo.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::kvgpu;
using kvir::manifest::kernelsWhen;
using kvir::manifest::workspaceBytes;

SmallVector<LaunchPlanAttr> manifest::getLaunchPlans(ModuleOp module) {
  SmallVector<LaunchPlanAttr> plans;
  if (auto attr = module->getAttrOfType<ArrayAttr>(
          KVGPUDialect::getLaunchPlansAttrName()))
    for (Attribute a : attr)
      if (auto plan = dyn_cast<LaunchPlanAttr>(a))
        plans.push_back(plan);
  return plans;
}

static std::string typeName(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

/// A size expression as JSON: an integer, or its text.
static llvm::json::Value exprJson(SizeExprAttr e) {
  if (e.isConstant())
    return e.getValue();
  return e.str();
}

/// What a host passes cuTensorMapEncodeTiled for `map` over `source`
/// (besides the source's pointer, dims and row-major strides): the box
/// outermost dim first, as the source's shape.
static llvm::json::Value tensorMapJson(TensorMapAttr map, PlanArgAttr source) {
  Type element = cast<MemRefType>(source.getType()).getElementType();
  return llvm::json::Object{
      {"of", map.getSource()},
      {"data_type", *TensorMapAttr::getDataType(element)},
      {"element_bytes", int64_t(element.getIntOrFloatBitWidth() / 8)},
      {"box", llvm::json::Array(map.getBox())},
      {"swizzle_bytes", map.getSwizzle()},
      {"swizzle", map.getSwizzleMode()},
      {"interleave", TensorMapAttr::kInterleave},
      {"l2_promotion", TensorMapAttr::kL2Promotion},
      {"oob_fill", TensorMapAttr::kOobFill}};
}

static llvm::json::Value argJson(LaunchPlanAttr plan, PlanArgAttr arg) {
  llvm::json::Array shape;
  for (SizeExprAttr dim : arg.getShape())
    shape.push_back(exprJson(dim));
  Type elt = arg.getType();
  if (auto memref = dyn_cast<MemRefType>(elt))
    elt = memref.getElementType();
  llvm::json::Object json{{"name", arg.getName()},
                          {"role", stringifyArgRole(arg.getRole())},
                          {"dtype", typeName(elt)},
                          {"shape", std::move(shape)}};
  if (TensorMapAttr map = arg.getMap())
    json["map"] = tensorMapJson(map, plan.lookupArg(map.getSource()));
  return json;
}

SmallVector<manifest::KernelParam>
manifest::getKernelParams(LaunchPlanAttr plan, KernelLaunchAttr kernel) {
  SmallVector<KernelParam> params;
  SmallVector<Type> types;
  SmallVector<PlanArgAttr> args;
  MLIRContext *ctx = plan.getContext();
  for (Attribute a : kernel.getArgs()) {
    StringRef name = cast<StringAttr>(a).getValue();
    PlanArgAttr arg = plan.lookupArg(name);
    KernelParam param;
    param.name = name.str();
    param.arg = arg;
    if (!arg)
      param.kind = KernelParam::Kind::size;
    else if (isa<MemRefType>(arg.getType()))
      param.kind = KernelParam::Kind::pointer;
    else
      param.kind = KernelParam::Kind::scalar;
    params.push_back(param);
    args.push_back(arg);
    types.push_back(arg ? arg.getType() : IndexType::get(ctx));
  }
  for (const KernelExtent &extent : getKernelExtents(types)) {
    PlanArgAttr arg = args[extent.arg];
    ArrayRef<SizeExprAttr> shape = arg.getShape();
    KernelParam param;
    param.kind = KernelParam::Kind::extent;
    param.arg = arg;
    param.extent = extent;
    param.value = SizeExprAttr::constant(ctx, 0);
    param.name = (arg.getName() + "_offset").str();
    if (extent.kind == KernelExtent::Kind::size) {
      param.value = shape[extent.axis];
      param.name = (arg.getName() + "_size" + Twine(extent.axis)).str();
    } else if (extent.kind == KernelExtent::Kind::stride) {
      param.value = SizeExprAttr::constant(ctx, 1);
      for (SizeExprAttr dim : shape.drop_front(extent.axis + 1))
        param.value = SizeExprAttr::mul(param.value, dim);
      param.name = (arg.getName() + "_stride" + Twine(extent.axis)).str();
    }
    // A strided view (e.g. a transposed buffer): its strides and offset are
    // the caller's buffer's, which the plan's shapes do not give.
    if (extent.kind != KernelExtent::Kind::size &&
        !cast<MemRefType>(arg.getType()).getLayout().isIdentity())
      param.value = nullptr;
    params.push_back(param);
  }
  return params;
}

/// kernel's parameters as the manifest lists them.
static llvm::json::Array kernelParams(LaunchPlanAttr plan,
                                      KernelLaunchAttr kernel) {
  using Kind = manifest::KernelParam::Kind;
  llvm::json::Array params;
  for (const manifest::KernelParam &p : manifest::getKernelParams(plan,
                                                                  kernel)) {
    switch (p.kind) {
    case Kind::pointer:
    case Kind::scalar: {
      llvm::json::Object param = *argJson(plan, p.arg).getAsObject();
      if (p.kind == Kind::pointer) {
        param["abi"] = "pointer";
        param["align"] = p.arg.getMap() ? TensorMapAttr::kAlignment : 16;
      } else {
        param["abi"] = typeName(p.arg.getType());
      }
      params.push_back(std::move(param));
      break;
    }
    case Kind::size:
      params.push_back(llvm::json::Object{{"name", p.name},
                                          {"role", "size"},
                                          {"abi", "i64"},
                                          {"dtype", "index"},
                                          {"shape", llvm::json::Array{}}});
      break;
    case Kind::extent: {
      static const char *kinds[] = {"size", "stride", "offset"};
      llvm::json::Object param{
          {"name", p.name},
          {"role", "extent"},
          {"abi", "i64"},
          {"dtype", "index"},
          {"shape", llvm::json::Array{}},
          {"extent", kinds[int(p.extent.kind)]},
          {"of", p.arg.getName()},
          {"value",
           p.value ? exprJson(p.value) : llvm::json::Value(nullptr)}};
      if (p.extent.kind != KernelExtent::Kind::offset)
        param["axis"] = p.extent.axis;
      params.push_back(std::move(param));
      break;
    }
    }
  }
  return params;
}

SizeExprAttr manifest::workspaceBytes(LaunchPlanAttr plan,
                                      ArrayRef<KernelLaunchAttr> kernels) {
  MLIRContext *ctx = plan.getContext();
  llvm::SetVector<StringRef> used;
  for (KernelLaunchAttr k : kernels)
    for (Attribute a : k.getArgs())
      used.insert(cast<StringAttr>(a).getValue());
  SizeExprAttr total = SizeExprAttr::constant(ctx, 0);
  for (PlanArgAttr arg : plan.getArgs()) {
    if (arg.getRole() != ArgRole::workspace || !used.contains(arg.getName()))
      continue;
    auto memref = cast<MemRefType>(arg.getType());
    SizeExprAttr bytes = SizeExprAttr::constant(ctx, 1);
    for (SizeExprAttr dim : arg.getShape())
      bytes = SizeExprAttr::mul(bytes, dim);
    bytes = SizeExprAttr::mul(
        bytes,
        SizeExprAttr::constant(ctx, memref.getElementTypeBitWidth() / 8));
    total = SizeExprAttr::add(total, bytes);
  }
  return total;
}

SmallVector<KernelLaunchAttr> manifest::kernelsWhen(LaunchPlanAttr plan,
                                                    LaunchCondition when) {
  SmallVector<KernelLaunchAttr> result;
  for (KernelLaunchAttr k : plan.getKernels())
    if (k.getWhen() == when || k.getWhen() == LaunchCondition::always)
      result.push_back(k);
  return result;
}

/// A #kvgpu configuration's parameters.
static llvm::json::Value configJson(Attribute config) {
  if (auto d = dyn_cast<DecodeConfigAttr>(config))
    return llvm::json::Object{{"kind", "decode"},
                              {"vector", d.getVector()},
                              {"threads_x", d.getThreadsX()},
                              {"threads_z", d.getThreadsZ()},
                              {"tile_tokens", d.getTileTokens()},
                              {"stages", d.getStages()},
                              {"max_partitions", d.getMaxPartitions()}};
  if (auto p = dyn_cast<PrefillConfigAttr>(config))
    return llvm::json::Object{
        {"kind", "prefill"},
        {"q_tile", p.getQTile()},
        {"kv_tile", p.getKvTile()},
        {"warps", p.getWarps()},
        {"stages", p.getStages()},
        {"q_in_registers", p.getQInRegisters()},
        {"max_partitions", p.getMaxPartitions()},
        {"value_warps", p.getValueWarps()},
        {"mma", stringifyMmaAtomKind(p.getMma())},
        {"schedule", stringifyTileSchedule(p.getSchedule())},
        {"roles", stringifyPrefillRoles(p.getRoles())},
        {"copy", stringifyTileCopy(p.getCopy())}};
  std::string text;
  llvm::raw_string_ostream os(text);
  config.print(os);
  return text;
}

bool manifest::waitsForPreviousGrid(StringRef chip) {
  const target::TargetInfo *target = target::TargetInfo::lookup(chip);
  return target && target->hasGridDependencyControl;
}

bool manifest::launchesAsDependent(LaunchPlanAttr plan, KernelLaunchAttr kernel,
                                   StringRef chip) {
  if (!waitsForPreviousGrid(chip))
    return false;
  auto samePath = [](LaunchCondition a, LaunchCondition b) {
    return a == b || a == LaunchCondition::always ||
           b == LaunchCondition::always;
  };
  for (KernelLaunchAttr k : plan.getKernels()) {
    if (k == kernel)
      return false;
    if (samePath(k.getWhen(), kernel.getWhen()))
      return true;
  }
  return false;
}

/// Where the work schedule's kv lengths come from, for a host that has
/// only the plan's inputs (the host function computes them the same way):
/// a selection's list width ("topk", every request alike), the paged
/// tables (CSR's page counts and last page, or the form's length table),
/// or a ragged KV's row offsets.
static std::optional<llvm::json::Object> lengthsSource(LaunchPlanAttr plan) {
  auto input = [&](StringRef name) {
    PlanArgAttr arg = plan.lookupArg(name);
    return arg && arg.getRole() == ArgRole::input;
  };
  if (input("topk"))
    return llvm::json::Object{{"kind", "columns"}, {"of", "topk"}};
  if (PagedTablesAttr tables = plan.getTables()) {
    auto form = *kvir::kv::symbolizeTableForm(tables.getTable());
    ArrayRef<StringRef> names = kvir::kv::getTableNames(form);
    if (form == kvir::kv::TableForm::csr)
      return llvm::json::Object{{"kind", "csr"},
                                {"indptr", names[0]},
                                {"last_page_len", names[2]},
                                {"page_size", tables.getPageSize()}};
    return llvm::json::Object{{"kind", "copy"}, {"of", names.back()}};
  }
  if (input("kv_indptr"))
    return llvm::json::Object{{"kind", "indptr"}, {"of", "kv_indptr"}};
  return std::nullopt;
}

static llvm::json::Value planJson(LaunchPlanAttr plan, StringRef chip) {
  llvm::json::Array args, sizes, kernels;
  for (PlanArgAttr arg : plan.getArgs())
    args.push_back(argJson(plan, arg));
  for (SizeDefAttr size : plan.getSizes()) {
    llvm::json::Object s{{"name", size.getName()}};
    if (!size.getArg().empty())
      s["from"] = llvm::json::Object{{"arg", size.getArg()},
                                     {"axis", size.getAxis()}};
    else
      s["value"] = exprJson(size.getValue());
    sizes.push_back(std::move(s));
  }
  for (KernelLaunchAttr k : plan.getKernels())
    kernels.push_back(llvm::json::Object{
        {"role", k.getRole()},
        {"kernel", k.getKernel().getLeafReference().getValue()},
        {"when", stringifyLaunchCondition(k.getWhen())},
        {"programmatic_dependent",
         manifest::launchesAsDependent(plan, k, chip)}});
  llvm::json::Object workspace;
  if (plan.getPartitions().empty() && !plan.getSchedule()) {
    workspace["always"] = exprJson(workspaceBytes(plan, plan.getKernels()));
  } else {
    for (LaunchCondition when :
         {LaunchCondition::unsplit, LaunchCondition::split})
      workspace[stringifyLaunchCondition(when)] =
          exprJson(workspaceBytes(plan, kernelsWhen(plan, when)));
  }
  llvm::json::Object result{{"op", plan.getOp()},
                            {"name", plan.getName()},
                            {"args", std::move(args)},
                            {"sizes", std::move(sizes)},
                            {"kernels", std::move(kernels)},
                            {"workspace_bytes", std::move(workspace)}};
  if (!plan.getPartitions().empty())
    result["partitions"] = plan.getPartitions();
  if (WorkScheduleAttr s = plan.getSchedule()) {
    result["schedule"] = llvm::json::Object{
        {"function", "kvir_schedule_work"},
        {"lengths", s.getLengths()},
        {"items", s.getItems()},
        {"merge_indptr", s.getMergeIndptr()},
        {"count", s.getCount()},
        {"batch", s.getBatch()},
        {"uniform_chunks", s.getUniformChunks()},
        {"target_items", s.getTargetItems()},
        {"granule", s.getGranule()},
        {"min_chunk", s.getMinChunk()},
        {"window_left", s.getWindowLeft()},
        {"split_when", (s.getCount() + " > " + s.getUnsplitCount()).str()}};
    llvm::json::Object &schedule = *result["schedule"].getAsObject();
    if (std::optional<llvm::json::Object> from = lengthsSource(plan))
      schedule["lengths_from"] = std::move(*from);
    if (!s.getMaxBatch().empty()) {
      schedule["max_batch"] = s.getMaxBatch();
      schedule["pad_function"] = "kvir_schedule_pad_batch";
    }
    if (s.isPrefill()) {
      // kvir_schedule_prefill_work's: query tiles times chunks.
      schedule["function"] = "kvir_schedule_prefill_work";
      schedule.erase("uniform_chunks");
      schedule["qo_indptr"] = s.getQoIndptr();
      // The host copy of the requests' row offsets (as i32).
      if (PlanArgAttr rows = plan.lookupArg("qo_indptr");
          rows && rows.getRole() == ArgRole::input)
        schedule["qo_indptr_from"] = "qo_indptr";
      schedule["tiles"] = s.getTiles();
      schedule["workspace_rows"] = s.getWorkspaceRows();
      schedule["tile_rows"] = s.getTileRows();
      schedule["causal"] = s.getCausal();
      if (!s.getWorkspaceLimit().empty())
        schedule["workspace_limit"] = s.getWorkspaceLimit();
    }
  }
  if (PagedTablesAttr tables = plan.getTables()) {
    llvm::json::Object t{{"form", tables.getTable()},
                         {"page_size", tables.getPageSize()},
                         {"check_function",
                          ("kvir_check_" + tables.getTable()).str()}};
    if (SizeExprAttr tokens = tables.getPoolTokens())
      t["pool_tokens"] = exprJson(tokens);
    result["tables"] = std::move(t);
  }
  if (Attribute config = plan.getConfig())
    result["config"] = configJson(config);
  return result;
}

llvm::json::Value manifest::kernelManifest(LaunchPlanAttr plan,
                                           KernelLaunchAttr kernel,
                                           StringRef ptxFile, StringRef chip) {
  llvm::json::Array grid, block, params;
  for (SizeExprAttr dim : kernel.getGrid())
    grid.push_back(exprJson(dim));
  for (int64_t dim : kernel.getBlock())
    block.push_back(dim);
  params = kernelParams(plan, kernel);
  int64_t numParams = params.size();
  return llvm::json::Object{
      {"kernel", kernel.getKernel().getLeafReference().getValue()},
      {"role", kernel.getRole()},
      {"when", stringifyLaunchCondition(kernel.getWhen())},
      {"ptx", ptxFile},
      {"chip", chip},
      {"waits_for_previous_grid", waitsForPreviousGrid(chip)},
      {"grid", std::move(grid)},
      {"block", std::move(block)},
      {"static_shared_bytes", kernel.getStaticSharedBytes()},
      {"dynamic_shared_bytes", kernel.getDynamicSharedBytes()},
      {"params", std::move(params)},
      {"num_params", numParams},
      {"param_abi", "buffers as bare device pointers (16-byte aligned) and "
                    "sizes as int64, in order; then each buffer's dynamic "
                    "extents as int64 (role extent, value an expression)"},
      {"plan", planJson(plan, chip)},
  };
}

static LogicalResult writeFile(StringRef path, StringRef contents,
                               Location loc) {
  std::string error;
  auto out = openOutputFile(path, &error);
  if (!out)
    return emitError(loc) << "kvir-translate: " << error;
  out->os() << contents;
  out->keep();
  return success();
}

/// The number of parameters the PTX entry `kernel` declares, if found.
static std::optional<size_t> ptxParamCount(StringRef ptx, StringRef kernel) {
  size_t at = ptx.find((".entry " + kernel + "(").str());
  if (at == StringRef::npos)
    return std::nullopt;
  StringRef params = ptx.drop_front(at);
  params = params.take_until([](char c) { return c == ')'; });
  return params.count(".param ");
}

LogicalResult manifest::writeOutputs(ModuleOp module, StringRef outputDir) {
  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
    return module.emitError() << "kvir-translate: cannot create " << outputDir
                              << ": " << ec.message();
  SmallVector<LaunchPlanAttr> plans = getLaunchPlans(module);
  unsigned binaries = 0;
  for (auto binary : module.getOps<gpu::BinaryOp>()) {
    std::string ptx, chip;
    for (Attribute a : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(a);
      if (object.getFormat() != gpu::CompilationTarget::Assembly)
        continue;
      ptx = object.getObject().str();
      if (auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget()))
        chip = target.getChip().str();
    }
    if (ptx.empty())
      return binary.emitError("kvir-translate needs PTX: lower with kv-to-ptx "
                              "(gpu-module-to-binary format=isa)");
    ++binaries;
    StringRef name = binary.getName();
    // The plans whose kernels this binary holds.
    SmallVector<LaunchPlanAttr> mine;
    for (LaunchPlanAttr plan : plans)
      if (llvm::any_of(plan.getKernels(), [&](KernelLaunchAttr k) {
            return k.getKernel().getRootReference() == name;
          }))
        mine.push_back(plan);
    SmallString<128> path(outputDir);
    llvm::sys::path::append(path, name + ".ptx");
    if (failed(writeFile(path, ptx, binary.getLoc())))
      return failure();
    llvm::StringSet<> written;
    for (LaunchPlanAttr plan : mine)
      for (KernelLaunchAttr kernel : plan.getKernels()) {
        StringRef kernelName = kernel.getKernel().getLeafReference().getValue();
        // A kernel shared by plans (a merge kernel) gets the first's manifest.
        if (!written.insert(kernelName).second)
          continue;
        // The manifest and the kernel must agree on the parameters.
        size_t listed = getKernelParams(plan, kernel).size();
        std::optional<size_t> declared = ptxParamCount(ptx, kernelName);
        if (declared && *declared != listed)
          return binary.emitError()
                 << "kvir-translate: kernel " << kernelName << " declares "
                 << *declared << " parameters, its launch plan lists "
                 << listed;
        SmallString<128> jsonPath(outputDir);
        llvm::sys::path::append(jsonPath, kernelName + ".json");
        std::string json;
        llvm::raw_string_ostream js(json);
        js << llvm::formatv(
                  "{0:2}", kernelManifest(plan, kernel, (name + ".ptx").str(),
                                          chip))
           << "\n";
        if (failed(writeFile(jsonPath, json, binary.getLoc())))
          return failure();
      }
    SmallString<128> headerPath(outputDir);
    llvm::sys::path::append(headerPath, name + ".h");
    if (failed(writeFile(headerPath, cHeader(name, ptx, chip, mine),
                         binary.getLoc())))
      return failure();
  }
  if (!binaries)
    return module.emitError("kvir-translate: no gpu.binary with PTX in the "
                            "module; lower it with --kv-to-ptx first");
  for (llvm::json::Object &program : describePrograms(module)) {
    SmallString<128> path(outputDir);
    llvm::sys::path::append(
        path, *program.getString("function") + ".program.json");
    std::string json;
    llvm::raw_string_ostream js(json);
    js << llvm::formatv("{0:2}", llvm::json::Value(std::move(program)))
       << "\n";
    if (failed(writeFile(path, json, module.getLoc())))
      return failure();
  }
  return success();
}
