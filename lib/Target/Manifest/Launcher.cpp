//===- Launcher.cpp - Typed C launchers from launch plans -----------------===//
#include "Launcher.h"

#include "kvir/Target/Manifest/Manifest.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::kvgpu;

std::string manifest::cudaDriverTable() {
  return R"(#ifndef KVIR_CUDA_DRIVER
#define KVIR_CUDA_DRIVER
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
/* The CUDA driver functions the launchers call (CUresult codes: 0 is
   success; device pointers are 64-bit CUdeviceptr values). kvir_cuda_load
   fills the table from libcuda.so.1 at run time, so building needs no CUDA
   headers or libraries; a caller may fill it with its own functions. The
   launchers use the caller's current CUDA context. */
/* cuLaunchKernelEx's CUlaunchAttribute and CUlaunchConfig (cuda.h, CUDA
   12+), laid out as the driver reads them. */
typedef struct kvir_cu_launch_attribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int value;
    void *align;
  } value;
} kvir_cu_launch_attribute_t;
typedef struct kvir_cu_launch_config {
  unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes;
  void *stream;
  kvir_cu_launch_attribute_t *attrs;
  unsigned num_attrs;
} kvir_cu_launch_config_t;
/* CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: the launch may
   overlap the previous kernel in the stream (the kernel waits for it with
   griddepcontrol.wait). */
#define KVIR_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION 6
typedef struct kvir_cuda {
  int (*module_load_data)(void **module, const void *image);
  int (*module_get_function)(void **function, void *module, const char *name);
  int (*func_set_attribute)(void *function, int attribute, int value);
  int (*launch_kernel)(void *function, unsigned grid_x, unsigned grid_y,
                       unsigned grid_z, unsigned block_x, unsigned block_y,
                       unsigned block_z, unsigned shared_bytes, void *stream,
                       void **params, void **extra);
  int (*memcpy_htod_async)(uint64_t device, const void *host, size_t bytes,
                           void *stream);
  /* cuTensorMapEncodeTiled (CUDA 12+ drivers; null before): launchers of
     TMA kernels encode their tensor maps with it. */
  int (*tensor_map_encode_tiled)(void *map, int data_type, unsigned rank,
                                 void *address, const uint64_t *dims,
                                 const uint64_t *strides, const unsigned *box,
                                 const unsigned *element_strides,
                                 int interleave, int swizzle, int l2_promotion,
                                 int oob_fill);
  /* cuLaunchKernelEx (CUDA 12+ drivers; null before): a kernel the plan
     launches as a programmatic dependent of the one before it (sm_90+)
     goes through it; without it, through launch_kernel (no overlap). */
  int (*launch_kernel_ex)(const kvir_cu_launch_config_t *config,
                          void *function, void **params, void **extra);
} kvir_cuda_t;
/* 0, or -1 when libcuda.so.1 (the NVIDIA driver) is not there. */
static inline int kvir_cuda_load(kvir_cuda_t *cu) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  memset(cu, 0, sizeof *cu);
  if (!lib)
    return -1;
  cu->module_load_data =
      (int (*)(void **, const void *))dlsym(lib, "cuModuleLoadData");
  cu->module_get_function = (int (*)(void **, void *, const char *))dlsym(
      lib, "cuModuleGetFunction");
  cu->func_set_attribute =
      (int (*)(void *, int, int))dlsym(lib, "cuFuncSetAttribute");
  cu->launch_kernel =
      (int (*)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
               unsigned, unsigned, void *, void **, void **))dlsym(
          lib, "cuLaunchKernel");
  cu->memcpy_htod_async = (int (*)(uint64_t, const void *, size_t, void *))
      dlsym(lib, "cuMemcpyHtoDAsync_v2");
  cu->tensor_map_encode_tiled =
      (int (*)(void *, int, unsigned, void *, const uint64_t *,
               const uint64_t *, const unsigned *, const unsigned *, int, int,
               int, int))dlsym(lib, "cuTensorMapEncodeTiled");
  cu->launch_kernel_ex =
      (int (*)(const kvir_cu_launch_config_t *, void *, void **,
               void **))dlsym(lib, "cuLaunchKernelEx");
  return cu->module_load_data && cu->module_get_function &&
                 cu->func_set_attribute && cu->launch_kernel &&
                 cu->memcpy_htod_async
             ? 0
             : -1;
}
#define KVIR_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
/* CUDA_ERROR_NOT_SUPPORTED: a TMA launcher without cuTensorMapEncodeTiled. */
#define KVIR_CU_ERROR_NOT_SUPPORTED 801
#endif

)";
}

namespace {
/// The C type of a plan scalar or of a buffer's elements.
std::string cScalarType(Type type) {
  if (type.isF32())
    return "float";
  if (type.isInteger(64))
    return "int64_t";
  return "int32_t";
}

/// Bytes of a plan buffer as a C expression.
std::string bytesOf(PlanArgAttr arg) {
  auto memref = cast<MemRefType>(arg.getType());
  std::string text =
      "(size_t)(" + std::to_string(memref.getElementTypeBitWidth() / 8);
  for (SizeExprAttr dim : arg.getShape())
    text += " * (" + dim.toC(nullptr, "kvir_") + ")";
  return text + ")";
}

/// The condition (over `split`) under which a kernel of `when` runs.
std::string runsWhen(LaunchCondition when, StringRef split) {
  switch (when) {
  case LaunchCondition::always:
    return "1";
  case LaunchCondition::unsplit:
    return ("!" + split).str();
  case LaunchCondition::split:
    return split.str();
  }
  return "1";
}
/// _launch's statements that encode `arg`'s tensor map `map` over its
/// source (a caller's device buffer, row-major, dims from the plan's
/// sizes) and copy it into the workspace at `arg`'s offset: the map must
/// be in device memory, the kernel acquires it from there.
void emitTensorMapCopy(raw_ostream &os, LaunchPlanAttr plan, PlanArgAttr arg,
                       TensorMapAttr map) {
  PlanArgAttr source = plan.lookupArg(map.getSource());
  auto type = cast<MemRefType>(source.getType());
  ArrayRef<SizeExprAttr> shape = source.getShape();
  int64_t rank = type.getRank();
  std::string name = ("kvir_" + arg.getName()).str();
  // The driver's arrays are innermost first. A zero extent (a pool without
  // pages, a batch without rows) is encoded as 1: the driver takes no empty
  // tensor, and no copy reads such a map.
  std::string dims, box, unit;
  for (int64_t d = 0; d < rank; ++d) {
    std::string sep = d ? ", " : "";
    SizeExprAttr size = shape[rank - 1 - d];
    std::string extent = size.toC(nullptr, "kvir_");
    dims += sep + (size.isConstant()
                       ? "(uint64_t)(" + extent + ")"
                       : "((" + extent + ") ? (uint64_t)(" + extent + ") : 1)");
    box += sep + std::to_string(map.getBox()[rank - 1 - d]);
    unit += sep + "1";
  }
  os << "  {\n"
     << "    uint64_t " << name << "[16] __attribute__((aligned(64)));\n"
     << "    const uint64_t " << name << "_dims[] = {" << dims << "};\n"
     << "    uint64_t " << name << "_strides[" << std::max<int64_t>(1, rank - 1)
     << "];\n"
     << "    const unsigned " << name << "_box[] = {" << box << "};\n"
     << "    const unsigned " << name << "_unit[] = {" << unit << "};\n"
     << "    uint64_t kvir_stride = " << type.getElementTypeBitWidth() / 8
     << ";\n"
     << "    for (unsigned kvir_d = 0; kvir_d + 1 < " << rank
     << "; ++kvir_d) {\n"
     << "      kvir_stride *= " << name << "_dims[kvir_d];\n"
     << "      " << name << "_strides[kvir_d] = kvir_stride;\n"
     << "    }\n"
     << "    if (!kvir_cu->tensor_map_encode_tiled)\n"
     << "      return KVIR_CU_ERROR_NOT_SUPPORTED;\n"
     << "    if ((kvir_rc = kvir_cu->tensor_map_encode_tiled(" << name << ", "
     << *TensorMapAttr::getDataType(type.getElementType()) << ", " << rank
     << ", (void *)(uintptr_t)" << map.getSource() << ", " << name << "_dims, "
     << name << "_strides, " << name << "_box, " << name << "_unit, "
     << TensorMapAttr::kInterleave << ", " << map.getSwizzleMode() << ", "
     << TensorMapAttr::kL2Promotion << ", " << TensorMapAttr::kOobFill
     << ")) != 0)\n"
     << "      return kvir_rc;\n"
     << "    if ((kvir_rc = kvir_cu->memcpy_htod_async(" << arg.getName()
     << ", " << name << ", sizeof " << name << ", kvir_stream)) != 0)\n"
     << "      return kvir_rc;\n"
     << "  }\n";
}
/// Kernel `index` (`k`) launched as a programmatic dependent of the kernel
/// before it, by cuLaunchKernelEx where the driver has it (the launch
/// after this falls through to cuLaunchKernel otherwise).
void emitDependentLaunch(raw_ostream &os, KernelLaunchAttr k, size_t index) {
  os << "      if (kvir_cu->launch_kernel_ex) {\n"
     << "        kvir_cu_launch_attribute_t kvir_attr;\n"
     << "        kvir_cu_launch_config_t kvir_config;\n"
     << "        memset(&kvir_attr, 0, sizeof kvir_attr);\n"
     << "        kvir_attr.id = "
        "KVIR_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;\n"
     << "        kvir_attr.value.value = 1;\n"
     << "        kvir_config.grid_x = (unsigned)kvir_grid[0];\n"
     << "        kvir_config.grid_y = (unsigned)kvir_grid[1];\n"
     << "        kvir_config.grid_z = (unsigned)kvir_grid[2];\n"
     << "        kvir_config.block_x = " << k.getBlock()[0] << ";\n"
     << "        kvir_config.block_y = " << k.getBlock()[1] << ";\n"
     << "        kvir_config.block_z = " << k.getBlock()[2] << ";\n"
     << "        kvir_config.shared_bytes = " << k.getDynamicSharedBytes()
     << ";\n"
     << "        kvir_config.stream = kvir_stream;\n"
     << "        kvir_config.attrs = &kvir_attr;\n"
     << "        kvir_config.num_attrs = 1;\n"
     << "        if ((kvir_rc = kvir_cu->launch_kernel_ex(&kvir_config, "
        "kvir_kernels->functions["
     << index << "],\n                 kvir_params, NULL)) != 0)\n"
     << "          return kvir_rc;\n"
     << "      } else\n";
}
} // namespace

std::string manifest::typedLauncher(LaunchPlanAttr plan, StringRef name,
                                    StringRef helpers, StringRef ptx,
                                    StringRef chip, bool hasSchedule) {
  std::string text;
  llvm::raw_string_ostream os(text);
  WorkScheduleAttr schedule = plan.getSchedule();
  // The strides (and offsets) of strided views: the caller's buffers give
  // them, as int64 parameters of _launch after the buffers.
  SmallVector<std::string> callerExtents;
  for (KernelLaunchAttr k : plan.getKernels())
    for (const KernelParam &p : getKernelParams(plan, k))
      if (p.kind == KernelParam::Kind::extent && !p.value &&
          !llvm::is_contained(callerExtents, p.name))
        callerExtents.push_back(p.name);
  if (schedule && !hasSchedule) {
    os << "/* (no typed launcher " << name
       << ": its work schedule reads more than the batch size) */\n";
    return text;
  }

  // Sizes, in plan order; the schedule's count after them.
  SmallVector<std::string> sizes, inputs;
  for (SizeDefAttr def : plan.getSizes()) {
    sizes.push_back(def.getName().str());
    if (!def.getArg().empty())
      inputs.push_back(def.getName().str());
  }
  if (schedule && !llvm::is_contained(sizes, schedule.getCount().str()))
    sizes.push_back(schedule.getCount().str());
  if (schedule && schedule.isPrefill())
    sizes.append({schedule.getTiles().str(),
                  schedule.getWorkspaceRows().str()});
  SmallVector<PlanArgAttr> callerArgs, hostArgs, deviceScratch;
  for (PlanArgAttr arg : plan.getArgs()) {
    switch (arg.getRole()) {
    case ArgRole::input:
    case ArgRole::output:
    case ArgRole::scalar:
      callerArgs.push_back(arg);
      break;
    case ArgRole::host:
      hostArgs.push_back(arg);
      break;
    case ArgRole::workspace:
    case ArgRole::schedule:
    case ArgRole::tensor_map:
      deviceScratch.push_back(arg);
      break;
    case ArgRole::size:
      break;
    }
  }
  std::string split =
      schedule ? (schedule.getCount() + " > " + schedule.getUnsplitCount()).str()
      : !plan.getPartitions().empty() ? (plan.getPartitions() + " > 1").str()
                                      : std::string("0");

  // The plan struct.
  os << "/* The typed launcher of " << plan.getOp() << " '" << plan.getName()
     << "': " << name << "_plan (host side: sizes,";
  if (schedule)
    os << " the work schedule,";
  os << " workspace\n   bytes), then " << name
     << "_launch (every kernel on `stream` through the driver\n   table; "
        "the plan's schedule copied into the workspace first). Zero-"
        "initialize\n   the kernels struct once; it keeps the loaded module. "
        "*/\n";
  os << "typedef struct {\n";
  for (const std::string &s : sizes)
    os << "  int64_t " << s << ";\n";
  os << "  int split; /* the split kernels run (else the direct ones) */\n"
     << "  size_t workspace_bytes; /* device workspace _launch needs */\n";
  for (PlanArgAttr arg : deviceScratch)
    os << "  size_t " << arg.getName() << "_offset; /* in the workspace */\n";
  for (PlanArgAttr arg : deviceScratch)
    if (arg.getRole() == ArgRole::schedule)
      os << "  void *" << arg.getName() << "_host; size_t " << arg.getName()
         << "_bytes;\n";
  os << "} " << name << "_plan_t;\n";
  os << "typedef struct {\n  void *module;\n  void *functions["
     << plan.getKernels().size() << "];\n} " << name << "_kernels_t;\n";

  // Release.
  os << "static inline void " << name << "_plan_release(" << name
     << "_plan_t *kvir_plan) {\n";
  for (PlanArgAttr arg : deviceScratch)
    if (arg.getRole() == ArgRole::schedule)
      os << "  free(kvir_plan->" << arg.getName() << "_host);\n  kvir_plan->"
         << arg.getName() << "_host = NULL;\n";
  os << "  (void)kvir_plan;\n}\n";

  // Plan.
  os << "/* 0, or -1 when the work schedule fails (bad lengths, no memory).\n"
        "   Release the plan with "
     << name << "_plan_release. */\n";
  os << "static inline int " << name << "_plan(" << name
     << "_plan_t *kvir_plan";
  for (const std::string &in : inputs)
    os << ", int64_t " << in;
  for (PlanArgAttr arg : hostArgs)
    os << ", const "
       << cScalarType(cast<MemRefType>(arg.getType()).getElementType()) << " *"
       << arg.getName();
  os << ") {\n  size_t kvir_at = 0;\n  memset(kvir_plan, 0, sizeof "
        "*kvir_plan);\n";
  for (SizeDefAttr def : plan.getSizes())
    if (def.getArg().empty())
      os << "  const int64_t " << def.getName() << " = "
         << def.getValue().toC(nullptr, "kvir_") << ";\n";
  if (schedule) {
    PlanArgAttr items = plan.lookupArg(schedule.getItems());
    PlanArgAttr merge = plan.lookupArg(schedule.getMergeIndptr());
    os << "  int64_t " << schedule.getCount() << ";\n";
    for (PlanArgAttr arg : {items, merge})
      os << "  kvir_plan->" << arg.getName() << "_bytes = " << bytesOf(arg)
         << ";\n  kvir_plan->" << arg.getName() << "_host = malloc(kvir_plan->"
         << arg.getName() << "_bytes ? kvir_plan->" << arg.getName()
         << "_bytes : 1);\n";
    os << "  if (!kvir_plan->" << items.getName() << "_host || !kvir_plan->"
       << merge.getName() << "_host) {\n    " << name
       << "_plan_release(kvir_plan);\n    return -1;\n  }\n";
    if (schedule.isPrefill())
      os << "  int64_t " << schedule.getTiles() << " = 0;\n";
    os << "  " << schedule.getCount() << " = " << helpers << "_schedule(";
    if (schedule.isPrefill())
      os << schedule.getQoIndptr() << ", ";
    os << schedule.getLengths() << ", " << schedule.getBatch();
    if (schedule.isPrefill())
      os << ", " << merge.getShape().front().toC(nullptr, "kvir_") << " - 1";
    os << ", (int32_t *)kvir_plan->" << items.getName() << "_host, "
       << items.getShape().front().toC(nullptr, "kvir_")
       << ", (int32_t *)kvir_plan->" << merge.getName() << "_host";
    if (schedule.isPrefill())
      os << ", &" << schedule.getTiles();
    if (!schedule.getWorkspaceLimit().empty())
      os << ", "
         << SizeExprAttr::symbolRef(plan.getContext(),
                                   schedule.getWorkspaceLimit())
                .toC(nullptr, "kvir_");
    os << ");\n";
    os << "  if (" << schedule.getCount() << " < 0) {\n    " << name
       << "_plan_release(kvir_plan);\n    return -1;\n  }\n";
    if (schedule.isPrefill())
      // The partial-state rows: merge_indptr's last entry.
      os << "  const int64_t " << schedule.getWorkspaceRows()
         << " = ((const int32_t *)kvir_plan->" << merge.getName() << "_host)["
         << merge.getShape().front().toC(nullptr, "kvir_") << " - 1];\n";
  }
  os << "  kvir_plan->split = " << split << ";\n";
  // Each scratch buffer a launched kernel takes, 256-byte aligned.
  for (PlanArgAttr arg : deviceScratch) {
    SmallVector<std::string> when;
    for (KernelLaunchAttr k : plan.getKernels()) {
      std::string condition = runsWhen(k.getWhen(), "kvir_plan->split");
      if (llvm::is_contained(
              k.getArgs(), StringAttr::get(plan.getContext(), arg.getName())) &&
          !llvm::is_contained(when, condition))
        when.push_back(condition);
    }
    if (when.empty())
      continue;
    // Taken on both paths: unconditional (`!split || split` warns).
    if (when.size() > 1)
      when.assign({runsWhen(LaunchCondition::always, "")});
    os << "  if (" << llvm::join(when, " || ") << ") {\n    kvir_plan->"
       << arg.getName() << "_offset = kvir_at;\n    kvir_at += ("
       << bytesOf(arg) << " + 255) / 256 * 256;\n  }";
    if (arg.getRole() == ArgRole::schedule)
      os << " else {\n    kvir_plan->" << arg.getName() << "_bytes = 0;\n  }";
    os << "\n";
  }
  os << "  kvir_plan->workspace_bytes = kvir_at;\n";
  for (const std::string &s : sizes)
    os << "  kvir_plan->" << s << " = " << s << ";\n";
  os << "  return 0;\n}\n";

  // Launch.
  os << "/* 0, or the first failing driver call's CUresult. Buffers are "
        "device\n   pointers (16-byte aligned), in the plan's order; "
        "`workspace` holds\n   plan->workspace_bytes. */\n";
  os << "static inline int " << name << "_launch(const kvir_cuda_t *kvir_cu, "
     << name << "_kernels_t *kvir_kernels, void *kvir_stream,\n    const "
     << name << "_plan_t *kvir_plan";
  for (PlanArgAttr arg : callerArgs) {
    if (arg.getRole() == ArgRole::scalar)
      os << ", " << cScalarType(arg.getType()) << " " << arg.getName();
    else
      os << ", uint64_t " << arg.getName();
  }
  for (const std::string &e : callerExtents)
    os << ", int64_t " << e;
  os << ", uint64_t kvir_workspace) {\n  int kvir_rc = 0;\n";
  for (const std::string &s : sizes)
    os << "  const int64_t " << s << " = kvir_plan->" << s << ";\n";
  for (PlanArgAttr arg : deviceScratch)
    os << "  uint64_t " << arg.getName() << " = kvir_workspace + kvir_plan->"
       << arg.getName() << "_offset;\n";
  for (const std::string &s : sizes)
    os << "  (void)" << s << ";\n";
  os << "  (void)kvir_workspace;\n";
  os << "  if (!kvir_kernels->module && (kvir_rc = "
        "kvir_cu->module_load_data(&kvir_kernels->module, "
     << ptx << ")) != 0)\n    return kvir_rc;\n";
  for (PlanArgAttr arg : deviceScratch)
    if (TensorMapAttr map = arg.getMap())
      emitTensorMapCopy(os, plan, arg, map);
  for (PlanArgAttr arg : deviceScratch)
    if (arg.getRole() == ArgRole::schedule)
      os << "  if (kvir_plan->" << arg.getName() << "_bytes && (kvir_rc = "
         << "kvir_cu->memcpy_htod_async(" << arg.getName() << ", kvir_plan->"
         << arg.getName() << "_host, kvir_plan->" << arg.getName()
         << "_bytes, kvir_stream)) != 0)\n    return kvir_rc;\n";
  for (auto [index, k] : llvm::enumerate(plan.getKernels())) {
    SmallVector<KernelParam> params = getKernelParams(plan, k);
    os << "  if (" << runsWhen(k.getWhen(), "kvir_plan->split") << ") {\n";
    os << "    const int64_t kvir_grid[3] = {";
    llvm::interleaveComma(k.getGrid(), os, [&](SizeExprAttr d) {
      os << d.toC(nullptr, "kvir_");
    });
    for (size_t d = k.getGrid().size(); d < 3; ++d)
      os << ", 1";
    os << "};\n";
    // Values the parameters point to.
    for (auto [i, p] : llvm::enumerate(params)) {
      if (p.kind == KernelParam::Kind::size)
        os << "    int64_t kvir_v" << i << " = " << p.name << ";\n";
      else if (p.kind == KernelParam::Kind::extent)
        os << "    int64_t kvir_v" << i << " = "
           << (p.value ? p.value.toC(nullptr, "kvir_") : p.name) << ";\n";
    }
    os << "    void *kvir_params[] = {";
    for (auto [i, p] : llvm::enumerate(params)) {
      os << (i ? ", " : "");
      if (p.kind == KernelParam::Kind::pointer ||
          p.kind == KernelParam::Kind::scalar)
        os << "(void *)&" << p.arg.getName();
      else
        os << "(void *)&kvir_v" << i;
    }
    if (params.empty())
      os << "NULL";
    os << "};\n";
    int64_t dynamic = k.getDynamicSharedBytes();
    os << "    if (kvir_grid[0] > 0 && kvir_grid[1] > 0 && kvir_grid[2] > 0) "
          "{\n"
       << "      if (!kvir_kernels->functions[" << index << "]) {\n"
       << "        if ((kvir_rc = "
          "kvir_cu->module_get_function(&kvir_kernels->functions["
       << index << "], kvir_kernels->module,\n                 \""
       << k.getKernel().getLeafReference().getValue() << "\")) != 0)\n"
       << "          return kvir_rc;\n";
    if (dynamic > 48 * 1024)
      os << "        if ((kvir_rc = "
            "kvir_cu->func_set_attribute(kvir_kernels->functions["
         << index
         << "],\n                 "
            "KVIR_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "
         << dynamic << ")) != 0)\n          return kvir_rc;\n";
    os << "      }\n";
    if (launchesAsDependent(plan, k, chip))
      emitDependentLaunch(os, k, index);
    os << "      if ((kvir_rc = kvir_cu->launch_kernel(kvir_kernels->functions["
       << index << "], (unsigned)kvir_grid[0], (unsigned)kvir_grid[1],\n"
       << "               (unsigned)kvir_grid[2], " << k.getBlock()[0] << ", "
       << k.getBlock()[1] << ", " << k.getBlock()[2] << ", " << dynamic
       << ", kvir_stream, kvir_params, NULL)) != 0)\n        return kvir_rc;\n"
       << "    }\n    (void)kvir_params;\n  }\n";
  }
  os << "  return 0;\n}\n";
  return text;
}
