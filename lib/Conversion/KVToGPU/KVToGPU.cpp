//===- KVToGPU.cpp - kv ops to gpu.module kernels and launches ------------===//
//
// Lowers kv.decode over NHD/HND paged caches (combined or split pools, CSR or
// block-table page tables, f16/bf16) and kv.merge / kv.merge_partitions of
// states held in buffers to gpu.func kernels plus the host code that sizes
// and launches them. Split-KV: the host picks the partition count at run time
// (see splitPartitions) and a merge kernel reduces the partial states. Ops
// this pass does not handle stay as they are for kv-to-loops.
//
//===----------------------------------------------------------------------===//
#include "KernelBuilders.h"

#include "kvir/Conversion/KVToGPU/KVToGPU.h"
#include "kvir/Dialect/KV/Transforms/Tiling.h"
#include "kvir/Dialect/KV/Utils/PagedAddressing.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

namespace kvir {
#define GEN_PASS_DEF_CONVERTKVTOGPU
#include "kvir/Conversion/Passes.h.inc"
} // namespace kvir

using namespace mlir;
using namespace kvir::kv;
using namespace kvir::kv::gpu_lowering;

const char *const kvir::kPlansAttrName = "kv.kernel_plans";

std::optional<std::string> kvir::whyNotGpuDecode(DecodeOp op) {
  auto view = op.getKv().getDefiningOp<PagedViewOp>();
  if (!view)
    return "the KV is not a kv.paged_view of this function";
  PagedType kv = view.getType();
  if (kv.isQuantized())
    return "quantized KV";
  if (!kv.getDtype().isF16() && !kv.getDtype().isBF16())
    return "dtype other than f16/bf16";
  if (kv.getHeadDim() != kv.getHeadDimV())
    return "head_dim != head_dim_v";
  if (op.getRopeAttr())
    return "on-the-fly RoPE";
  for (Value pool : view.getPools()) {
    auto [strides, offset] = cast<MemRefType>(pool.getType()).getStridesAndOffset();
    if (strides.back() != 1)
      return "a pool whose innermost axis is not unit-stride";
  }
  // The kernel's limits for the tiling it would get.
  int64_t qHeads = cast<MemRefType>(op.getQ().getType()).getDimSize(1);
  DecodeTilingAttr tiling = op.getTilingAttr();
  if (!tiling)
    tiling = chooseDecodeTiling(view, qHeads, /*smCount=*/1);
  return whyNotDecodeKernel(kv, DecodeTiling::fromAttr(tiling),
                            qHeads / kv.getKvHeads());
}

namespace {

struct KVToGPULowering {
  ModuleOp module;
  int64_t smCount;
  gpu::GPUModuleOp kernels;
  llvm::StringMap<gpu::GPUFuncOp> built;

  gpu::GPUModuleOp getKernelModule() {
    if (kernels)
      return kernels;
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    kernels = gpu::GPUModuleOp::create(b, module.getLoc(), "kv_kernels");
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    return kernels;
  }

  gpu::GPUFuncOp getDecodeKernel(const DecodeKernelSpec &spec) {
    auto it = built.find(spec.name);
    if (it != built.end())
      return it->second;
    return built[spec.name] = buildDecodeKernel(getKernelModule(), spec);
  }
  gpu::GPUFuncOp getMergeKernel(const MergeKernelSpec &spec) {
    auto it = built.find(spec.name);
    if (it != built.end())
      return it->second;
    return built[spec.name] = buildMergeKernel(getKernelModule(), spec);
  }

  LogicalResult lowerDecode(DecodeOp op);
  void recordDecodePlan(DecodeOp op, PagedViewOp view,
                        const DecodeKernelSpec &spec, gpu::GPUFuncOp direct,
                        gpu::GPUFuncOp split, gpu::GPUFuncOp merge);
  LogicalResult lowerMerge(Operation *op);
};

std::string typeName(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

/// A name that identifies everything the kernel is specialized on.
std::string decodeKernelName(const DecodeKernelSpec &s) {
  PagedType kv = s.kv;
  std::string key;
  llvm::raw_string_ostream os(key);
  os << s.qType << s.outType << s.lseType << s.smScale;
  for (Type t : s.kvTypes)
    os << t;
  if (s.softCap)
    os << "cap" << *s.softCap;
  if (s.windowLeft)
    os << "win" << *s.windowLeft;
  os << s.tiling.threadsZ << "/" << s.tiling.tileTokens;
  std::string name = "decode_" + stringifyLayoutKind(kv.getLayout()).str() +
                     "_" + stringifyStorage(kv.getStorage()).str() + "_" +
                     stringifyTableForm(kv.getTable()).str() + "_p" +
                     std::to_string(kv.getPageSize()) + "_h" +
                     std::to_string(s.qHeads) + "x" +
                     std::to_string(kv.getKvHeads()) + "_d" +
                     std::to_string(kv.getHeadDim()) + "_" +
                     typeName(kv.getDtype()) + "_" +
                     typeName(s.outType.getElementType()) +
                     (s.partitioned ? "_split" : "");
  return name + "_" + llvm::utohexstr(llvm::hash_value(key), /*LowerCase=*/true);
}

Value idx(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}

} // namespace

/// The number of KV partitions for B requests over Hkv heads: enough blocks
/// to fill the chip about twice, capped at maxPartitions; one when B * Hkv
/// already does. FlashInfer's split-KV heuristic in spirit, without needing
/// the KV lengths on the host. Partitions past a request's kv_len are empty
/// states, which the merge ignores.
static Value splitPartitions(ImplicitLocOpBuilder &b, Value batch,
                             int64_t kvHeads, const DecodeTiling &t) {
  Value blocks = arith::MulIOp::create(b, batch, idx(b, kvHeads));
  Value wanted = arith::CeilDivUIOp::create(b, idx(b, 2 * t.smCount),
                                            arith::MaxUIOp::create(b, blocks, idx(b, 1)));
  return arith::MinUIOp::create(b, idx(b, t.maxPartitions),
                                arith::MaxUIOp::create(b, wanted, idx(b, 1)));
}

/// Bytes of shared memory a kernel's workgroup attributions take, each
/// placed at its alignment (as ptxas reports it).
static int64_t staticSharedBytes(gpu::GPUFuncOp func) {
  int64_t bytes = 0;
  for (auto [i, arg] : llvm::enumerate(func.getWorkgroupAttributions())) {
    auto type = cast<MemRefType>(arg.getType());
    int64_t align = type.getElementTypeBitWidth() / 8;
    Attribute alignAttr = func.getWorkgroupAttributionAttr(
        i, LLVM::LLVMDialect::getAlignAttrName());
    if (auto attr = dyn_cast_or_null<IntegerAttr>(alignAttr))
      align = std::max<int64_t>(align, attr.getInt());
    bytes = llvm::alignTo(bytes, align) +
            type.getNumElements() * type.getElementTypeBitWidth() / 8;
  }
  return bytes;
}

static Attribute dimExpr(Builder &b, int64_t size, std::string symbol) {
  if (ShapedType::isDynamic(size))
    return b.getStringAttr(symbol);
  return b.getI64IntegerAttr(size);
}

/// A description of one kernel argument for frameworks: its name, element
/// type and shape, with dynamic sizes as symbols.
static Attribute describeArg(Builder &b, StringRef name, Type type,
                             ArrayRef<std::string> symbols = {}) {
  SmallVector<NamedAttribute> fields{b.getNamedAttr("name", b.getStringAttr(name))};
  if (auto memref = dyn_cast<MemRefType>(type)) {
    fields.push_back(b.getNamedAttr(
        "dtype", b.getStringAttr(typeName(memref.getElementType()))));
    SmallVector<Attribute> shape;
    for (int64_t i = 0; i < memref.getRank(); ++i)
      shape.push_back(dimExpr(b, memref.getDimSize(i),
                              i < int64_t(symbols.size()) && !symbols[i].empty()
                                  ? symbols[i]
                                  : (name + ".dim" + Twine(i)).str()));
    fields.push_back(b.getNamedAttr("shape", b.getArrayAttr(shape)));
  } else {
    fields.push_back(b.getNamedAttr("dtype", b.getStringAttr(typeName(type))));
    fields.push_back(b.getNamedAttr("shape", b.getArrayAttr({})));
  }
  return b.getDictionaryAttr(fields);
}


void KVToGPULowering::recordDecodePlan(DecodeOp op, PagedViewOp view,
                                       const DecodeKernelSpec &spec,
                                       gpu::GPUFuncOp direct,
                                       gpu::GPUFuncOp split,
                                       gpu::GPUFuncOp merge) {
  Builder b(op.getContext());
  PagedType kv = spec.kv;
  int64_t hq = spec.qHeads, hkv = kv.getKvHeads(), d = kv.getHeadDim();
  const DecodeTiling &t = spec.tiling;
  int64_t group = hq / hkv;
  auto ints = [&](ArrayRef<int64_t> v) {
    SmallVector<Attribute> a;
    for (int64_t x : v)
      a.push_back(b.getI64IntegerAttr(x));
    return b.getArrayAttr(a);
  };
  auto dims = [&](ArrayRef<Attribute> v) { return b.getArrayAttr(v); };
  Attribute batch = b.getStringAttr("batch");
  Attribute parts = b.getStringAttr("num_partitions");

  SmallVector<Attribute> args{describeArg(b, "q", spec.qType, {"batch"})};
  SmallVector<StringRef> poolNames =
      kv.getStorage() == Storage::combined ? SmallVector<StringRef>{"pool"}
                                           : SmallVector<StringRef>{"k_pool", "v_pool"};
  for (auto [name, pool] : llvm::zip(poolNames, view.getPools()))
    args.push_back(describeArg(b, name, pool.getType(), {"num_pages"}));
  for (auto [name, table] : llvm::zip(getTableNames(kv.getTable()), view.getTables())) {
    SmallVector<std::string> symbols;
    if (name == "kv_indptr")
      symbols = {"batch + 1"};
    else if (name == "kv_indices")
      symbols = {"num_page_ids"};
    else
      symbols = {"batch", "max_blocks"};
    args.push_back(describeArg(b, name, table.getType(), symbols));
  }
  SmallVector<Attribute> outArgs(args), splitArgs(args);
  outArgs.push_back(describeArg(b, "out", spec.outType, {"batch"}));
  outArgs.push_back(describeArg(b, "lse", spec.lseType, {"batch"}));
  DecodeKernelSpec splitSpec = spec;
  Type f32 = b.getF32Type();
  auto wsOut = MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic, hq, d}, f32);
  auto wsLse = MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic, hq}, f32);
  splitArgs.push_back(describeArg(b, "partial_out", wsOut, {"num_partitions", "batch"}));
  splitArgs.push_back(describeArg(b, "partial_lse", wsLse, {"num_partitions", "batch"}));
  splitArgs.push_back(describeArg(b, "num_partitions", b.getIndexType()));
  SmallVector<Attribute> mergeArgs{splitArgs[splitArgs.size() - 3],
                                   splitArgs[splitArgs.size() - 2],
                                   outArgs[outArgs.size() - 2], outArgs.back()};

  auto kernel = [&](gpu::GPUFuncOp func, ArrayAttr grid, ArrayAttr block,
                    ArrayRef<Attribute> kernelArgs) {
    return b.getDictionaryAttr({
        b.getNamedAttr("name", b.getStringAttr(func.getName())),
        b.getNamedAttr("grid", grid),
        b.getNamedAttr("block", block),
        b.getNamedAttr("static_shared_bytes",
                       b.getI64IntegerAttr(staticSharedBytes(func))),
        b.getNamedAttr("dynamic_shared_bytes", b.getI64IntegerAttr(0)),
        b.getNamedAttr("args", b.getArrayAttr(kernelArgs)),
    });
  };
  ArrayAttr block = ints({t.threadsX, group, t.threadsZ});
  std::string numPartitions =
      "min(" + std::to_string(t.maxPartitions) + ", max(1, ceil(" +
      std::to_string(2 * t.smCount) + " / (batch * " + std::to_string(hkv) +
      "))))";
  std::string workspace = "num_partitions == 1 ? 0 : num_partitions * batch * " +
                          std::to_string(hq) + " * " + std::to_string(d + 1) +
                          " * 4";
  DictionaryAttr plan = b.getDictionaryAttr({
      b.getNamedAttr("op", b.getStringAttr("kv.decode")),
      b.getNamedAttr("kv_type", TypeAttr::get(kv)),
      b.getNamedAttr("state_type", TypeAttr::get(op.getType())),
      b.getNamedAttr("num_partitions", b.getStringAttr(numPartitions)),
      b.getNamedAttr("split_heuristic",
                     b.getDictionaryAttr({
                         b.getNamedAttr("sm_count", b.getI64IntegerAttr(t.smCount)),
                         b.getNamedAttr("max_partitions",
                                        b.getI64IntegerAttr(t.maxPartitions)),
                         b.getNamedAttr("kv_heads", b.getI64IntegerAttr(hkv)),
                         b.getNamedAttr("q_heads", b.getI64IntegerAttr(hq)),
                         b.getNamedAttr("head_dim_v", b.getI64IntegerAttr(d)),
                     })),
      b.getNamedAttr("workspace_bytes", b.getStringAttr(workspace)),
      b.getNamedAttr("direct", kernel(direct, dims({batch, b.getI64IntegerAttr(hkv),
                                                     b.getI64IntegerAttr(1)}),
                                      block, outArgs)),
      b.getNamedAttr("split", kernel(split, dims({batch, b.getI64IntegerAttr(hkv), parts}),
                                     block, splitArgs)),
      b.getNamedAttr("merge", kernel(merge, dims({batch, b.getI64IntegerAttr(hq),
                                                   b.getI64IntegerAttr(1)}),
                                     ints({d, 1, 1}), mergeArgs)),
  });
  SmallVector<Attribute> plans;
  if (auto existing = module->getAttrOfType<ArrayAttr>(kvir::kPlansAttrName))
    llvm::append_range(plans, existing);
  plans.push_back(plan);
  module->setAttr(kvir::kPlansAttrName, b.getArrayAttr(plans));
}

LogicalResult KVToGPULowering::lowerDecode(DecodeOp op) {
  auto view = op.getKv().getDefiningOp<PagedViewOp>();
  PagedOperands kv = PagedOperands::fromView(view);
  PagedType kvType = kv.type;
  StateType stateType = op.getType();
  auto qType = cast<MemRefType>(op.getQ().getType());
  int64_t qHeads = qType.getDimSize(1);
  int64_t headDim = kvType.getHeadDim();

  // The output buffers: those of the only kv.store_state user, or new ones.
  // Writing them directly is the same as storing the state later if they
  // exist already, or if nothing in between writes memory (the state is a
  // value: a kv.append in between must not change it).
  StoreStateOp store;
  Operation *at = op;
  if (op->hasOneUse())
    store = dyn_cast<StoreStateOp>(*op->getUsers().begin());
  if (store) {
    DominanceInfo dom(op->getParentOp());
    bool available = dom.properlyDominates(store.getOutput(), op) &&
                     (!store.getLse() || dom.properlyDominates(store.getLse(), op));
    if (!available) {
      bool quiet = store->getBlock() == op->getBlock();
      for (Operation *it = op->getNextNode(); quiet && it != store;
           it = it->getNextNode()) {
        auto effects = dyn_cast<MemoryEffectOpInterface>(it);
        quiet = (effects && !effects.hasEffect<MemoryEffects::Write>()) ||
                isa<PagedViewOp, RaggedViewOp>(it);
      }
      if (quiet)
        at = store;
      else
        store = nullptr;
    }
  }
  ImplicitLocOpBuilder b(op.getLoc(), at);
  Value batch = memref::DimOp::create(b, op.getQ(), 0);
  auto outType = MemRefType::get(stateType.getOutputShape(),
                                 stateType.getElementType());
  auto lseType = MemRefType::get(stateType.getLseShape(), b.getF32Type());
  SmallVector<Value> dynRows;
  if (ShapedType::isDynamic(stateType.getRows()))
    dynRows.push_back(batch);
  Value out, lse;
  bool ownsLse = false;
  if (store) {
    out = store.getOutput();
    lse = store.getLse();
  } else {
    out = memref::AllocOp::create(b, outType, dynRows);
  }
  if (!lse) {
    lse = memref::AllocOp::create(b, lseType, dynRows);
    ownsLse = static_cast<bool>(store);
  }

  DecodeKernelSpec spec;
  spec.kv = kvType;
  for (Value v : kv.flatten())
    spec.kvTypes.push_back(v.getType());
  spec.qType = qType;
  spec.outType = cast<MemRefType>(out.getType());
  spec.lseType = cast<MemRefType>(lse.getType());
  spec.qHeads = qHeads;
  spec.base = stateType.getBase();
  spec.smScale = op.getSmScale() ? op.getSmScale()->convertToDouble()
                                 : 1.0 / std::sqrt(double(headDim));
  if (auto cap = op.getLogitsSoftCap())
    spec.softCap = cap->convertToDouble();
  spec.windowLeft = op.getWindowLeft();
  DecodeTilingAttr tiling = op.getTilingAttr();
  if (!tiling)
    tiling = chooseDecodeTiling(view, qHeads, smCount);
  spec.tiling = DecodeTiling::fromAttr(tiling);
  spec.name = decodeKernelName(spec);
  gpu::GPUFuncOp direct = getDecodeKernel(spec);

  DecodeKernelSpec split = spec;
  split.partitioned = true;
  auto f32 = b.getF32Type();
  const int64_t dyn = ShapedType::kDynamic;
  split.outType = MemRefType::get({dyn, dyn, qHeads, headDim}, f32);
  split.lseType = MemRefType::get({dyn, dyn, qHeads}, f32);
  split.name = decodeKernelName(split);
  gpu::GPUFuncOp splitKernel = getDecodeKernel(split);

  MergeKernelSpec merge;
  merge.numInputs = 0;
  merge.inOutputType = split.outType;
  merge.inLseType = split.lseType;
  merge.outType = spec.outType;
  merge.lseType = spec.lseType;
  merge.inBase = LseBase::two;
  merge.outBase = spec.base;
  merge.heads = qHeads;
  merge.headDimV = headDim;
  merge.name = "merge_partitions_h" + std::to_string(qHeads) + "_d" +
               std::to_string(headDim) + "_" +
               typeName(spec.outType.getElementType()) +
               (spec.base == LseBase::e ? "_base_e" : "_base_2") + "_" +
               llvm::utohexstr(llvm::hash_value(typeName(spec.outType) +
                                                typeName(spec.lseType)),
                               true);
  gpu::GPUFuncOp mergeKernel = getMergeKernel(merge);

  const DecodeTiling &t = spec.tiling;
  int64_t group = qHeads / kvType.getKvHeads();
  recordDecodePlan(op, view, spec, direct, splitKernel, mergeKernel);
  gpu::KernelDim3 block{idx(b, t.threadsX), idx(b, group), idx(b, t.threadsZ)};
  SmallVector<Value> args{op.getQ()};
  llvm::append_range(args, kv.flatten());
  Value parts = splitPartitions(b, batch, kvType.getKvHeads(), t);
  Value one = idx(b, 1);
  Value nonEmpty = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, batch,
                                         idx(b, 0));
  scf::IfOp::create(b, nonEmpty, [&](OpBuilder &nb, Location l) {
    ImplicitLocOpBuilder ib(l, nb);
    Value single = arith::CmpIOp::create(ib, arith::CmpIPredicate::eq, parts, one);
    scf::IfOp::create(
        ib, single,
        [&](OpBuilder &nb2, Location l2) {
          ImplicitLocOpBuilder jb(l2, nb2);
          SmallVector<Value> a(args);
          a.append({out, lse});
          gpu::LaunchFuncOp::create(
              jb, direct,
              gpu::KernelDim3{batch, idx(jb, kvType.getKvHeads()), idx(jb, 1)},
              block, Value(), a);
          scf::YieldOp::create(jb);
        },
        [&](OpBuilder &nb2, Location l2) {
          ImplicitLocOpBuilder jb(l2, nb2);
          // Workspace: f32 partial outputs and base-2 LSEs per partition.
          Value wsOut = memref::AllocOp::create(jb, split.outType,
                                                ValueRange{parts, batch});
          Value wsLse = memref::AllocOp::create(jb, split.lseType,
                                                ValueRange{parts, batch});
          SmallVector<Value> a(args);
          a.append({wsOut, wsLse, parts});
          gpu::LaunchFuncOp::create(
              jb, splitKernel,
              gpu::KernelDim3{batch, idx(jb, kvType.getKvHeads()), parts},
              block, Value(), a);
          gpu::LaunchFuncOp::create(
              jb, mergeKernel,
              gpu::KernelDim3{batch, idx(jb, qHeads), idx(jb, 1)},
              gpu::KernelDim3{idx(jb, headDim), idx(jb, 1), idx(jb, 1)},
              Value(), ValueRange{wsOut, wsLse, out, lse});
          memref::DeallocOp::create(jb, wsOut);
          memref::DeallocOp::create(jb, wsLse);
          scf::YieldOp::create(jb);
        });
    scf::YieldOp::create(ib);
  });

  if (store) {
    if (ownsLse) {
      b.setInsertionPointAfter(store);
      memref::DeallocOp::create(b, lse);
    }
    store.erase();
    op.erase();
    return success();
  }
  // Other kv ops use the state: hand them the buffers as a state value.
  Value state = LoadStateOp::create(b, stateType, out, lse);
  op.getResult().replaceAllUsesWith(state);
  op.erase();
  return success();
}

LogicalResult KVToGPULowering::lowerMerge(Operation *op) {
  // Standalone merges of states held in buffers (kv.load_state), written by
  // a kv.store_state: states produced by FlashInfer (base 2) or vLLM (base e).
  if (!op->hasOneUse())
    return success();
  auto store = dyn_cast<StoreStateOp>(*op->getUsers().begin());
  if (!store || !store.getLse())
    return success();
  SmallVector<LoadStateOp> inputs;
  for (Value operand : op->getOperands()) {
    auto load = operand.getDefiningOp<LoadStateOp>();
    if (!load)
      return success();
    inputs.push_back(load);
  }
  auto inType = cast<StateType>(op->getOperand(0).getType());
  auto outState = cast<StateType>(op->getResult(0).getType());
  MergeKernelSpec spec;
  spec.numInputs = isa<MergePartitionsOp>(op) ? 0 : inputs.size();
  spec.inOutputType = cast<MemRefType>(inputs[0].getOutput().getType());
  spec.inLseType = cast<MemRefType>(inputs[0].getLse().getType());
  for (LoadStateOp in : inputs)
    if (in.getOutput().getType() != spec.inOutputType ||
        in.getLse().getType() != spec.inLseType)
      return success();
  spec.outType = cast<MemRefType>(store.getOutput().getType());
  spec.lseType = cast<MemRefType>(store.getLse().getType());
  spec.inBase = inType.getBase();
  spec.outBase = outState.getBase();
  spec.heads = outState.getHeads();
  spec.headDimV = outState.getHeadDimV();
  std::string key = typeName(spec.inOutputType) + typeName(spec.inLseType) +
                    typeName(spec.outType) + typeName(spec.lseType);
  spec.name = (spec.numInputs ? "merge" + std::to_string(spec.numInputs)
                              : std::string("merge_partitions")) +
              "_h" + std::to_string(spec.heads) + "_d" +
              std::to_string(spec.headDimV) + "_" +
              llvm::utohexstr(llvm::hash_value(key), true);
  gpu::GPUFuncOp kernel = getMergeKernel(spec);

  ImplicitLocOpBuilder b(op->getLoc(), store);
  SmallVector<Value> args;
  for (LoadStateOp in : inputs)
    args.append({in.getOutput(), in.getLse()});
  args.append({store.getOutput(), store.getLse()});
  Value rows = memref::DimOp::create(b, store.getLse(), 0);
  Value nonEmpty = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, rows,
                                         idx(b, 0));
  scf::IfOp::create(b, nonEmpty, [&](OpBuilder &nb, Location l) {
    ImplicitLocOpBuilder ib(l, nb);
    gpu::LaunchFuncOp::create(
        ib, kernel, gpu::KernelDim3{rows, idx(ib, spec.heads), idx(ib, 1)},
        gpu::KernelDim3{idx(ib, spec.headDimV), idx(ib, 1), idx(ib, 1)},
        Value(), args);
    scf::YieldOp::create(ib);
  });
  store.erase();
  op->erase();
  for (LoadStateOp in : inputs)
    if (in->use_empty())
      in.erase();
  return success();
}

namespace {
struct ConvertKVToGPUPass
    : kvir::impl::ConvertKVToGPUBase<ConvertKVToGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t sms = getSmCount(chip);
    if (!sms) {
      module.emitError("convert-kv-to-gpu: unknown chip '")
          << chip << "', expected sm_80, sm_86, sm_89, sm_90 or sm_90a";
      return signalPassFailure();
    }
    KVToGPULowering lowering{module, sms, nullptr, {}};
    SmallVector<Operation *> work;
    module.walk([&](Operation *op) {
      if (isa<DecodeOp, MergeOp, MergePartitionsOp>(op))
        work.push_back(op);
    });
    for (Operation *op : work) {
      LogicalResult result = success();
      if (auto decode = dyn_cast<DecodeOp>(op)) {
        if (kvir::whyNotGpuDecode(decode))
          continue;
        result = lowering.lowerDecode(decode);
      } else {
        result = lowering.lowerMerge(op);
      }
      if (failed(result))
        return signalPassFailure();
    }
  }
};
} // namespace
