//===- KernelFunc.cpp - gpu.func kernels with typed shared memory ---------===//
#include "kvir/Codegen/KernelFunc.h"
#include "kvir/Target/GPU/KernelPipeline.h"
#include "kvir/Target/GPU/TargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace kvir::codegen;

static int64_t bytesOf(ArrayRef<int64_t> shape, Type elementType) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n * elementType.getIntOrFloatBitWidth() / 8;
}

unsigned SharedMemoryLayout::add(StringRef name, ArrayRef<int64_t> shape,
                                 Type elementType, int64_t alignment) {
  SharedBuffer buf;
  buf.name = name.str();
  buf.shape.assign(shape.begin(), shape.end());
  buf.elementType = elementType;
  buf.alignment = alignment;
  buf.offset = llvm::alignTo(getBytes(), alignment);
  buf.bytes = bytesOf(shape, elementType);
  buffers.push_back(std::move(buf));
  return buffers.size() - 1;
}

int64_t SharedMemoryLayout::getBytes() const {
  return buffers.empty() ? 0 : buffers.back().offset + buffers.back().bytes;
}

bool SharedMemoryLayout::isDynamic() const {
  return getBytes() > kvir::target::TargetInfo::kStaticSharedLimit;
}

static constexpr llvm::StringLiteral kDynamicSharedAttr =
    "kvgpu.dynamic_shared_bytes";

KernelFunc KernelFunc::create(gpu::GPUModuleOp module, StringRef name,
                              TypeRange argTypes, std::array<int64_t, 3> block,
                              const SharedMemoryLayout &layout,
                              std::optional<Location> origin) {
  MLIRContext *ctx = module.getContext();
  // Every op of the kernel is located at the kernel, named, at the op it
  // was built for: emulator reports and verifier errors point there.
  Location loc = NameLoc::get(StringAttr::get(ctx, name),
                              origin ? *origin : module.getLoc());
  auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  bool dynamic = layout.isDynamic();
  SmallVector<Type> attributions;
  if (!dynamic)
    for (const SharedBuffer &buf : layout.getBuffers())
      attributions.push_back(
          MemRefType::get(buf.shape, buf.elementType, nullptr, workgroup));

  OpBuilder ob = OpBuilder::atBlockEnd(module.getBody());
  KernelFunc kf;
  kf.block = block;
  kf.func = gpu::GPUFuncOp::create(ob, loc, name,
                                   FunctionType::get(ctx, argTypes, {}),
                                   attributions);
  kf.func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                   UnitAttr::get(ctx));
  // .reqntid rather than known_block_size's .maxntid: kernels always launch
  // with exactly this block, and .maxntid lets ptxas cap registers for an
  // occupancy the launch cannot reach (it spilled decode at head_dim 256,
  // group 8 on sm_90a).
  kf.func->setAttr("nvvm.reqntid",
                   DenseI32ArrayAttr::get(ctx, {int32_t(block[0]),
                                                int32_t(block[1]),
                                                int32_t(block[2])}));
  Block &entry = kf.func.getBody().front();
  OpBuilder eb = OpBuilder::atBlockEnd(&entry);
  gpu::ReturnOp::create(eb, loc);
  ImplicitLocOpBuilder b = kf.getBuilder();
  if (!dynamic) {
    // Without an explicit alignment a buffer gets its element type's, and
    // ptxas may place it anywhere such: 16-byte vectors, ldmatrix and
    // cp.async need more.
    for (auto [i, buf] : llvm::enumerate(layout.getBuffers())) {
      kf.func.setWorkgroupAttributionAttr(
          i, LLVM::LLVMDialect::getAlignAttrName(),
          IntegerAttr::get(IntegerType::get(ctx, 64), buf.alignment));
      kf.shared.push_back(kf.func.getWorkgroupAttributions()[i]);
    }
    kf.staticBytes = kvir::codegen::getStaticSharedBytes(kf.func);
    return kf;
  }
  // One dynamic allocation; each buffer a view at its offset.
  auto bytesType = MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                                   nullptr, workgroup);
  Value base = gpu::DynamicSharedMemoryOp::create(b, bytesType);
  for (const SharedBuffer &buf : layout.getBuffers()) {
    auto type = MemRefType::get(buf.shape, buf.elementType, nullptr, workgroup);
    Value offset = arith::ConstantIndexOp::create(b, buf.offset);
    kf.shared.push_back(
        memref::ViewOp::create(b, type, base, offset, ValueRange{}));
  }
  kf.dynamicBytes = layout.getBytes();
  kf.func->setAttr(kDynamicSharedAttr,
                   IntegerAttr::get(IntegerType::get(ctx, 64), kf.dynamicBytes));
  // The buffers' offsets are aligned from a base the lowering aligns.
  int64_t alignment = 16;
  for (const SharedBuffer &buf : layout.getBuffers())
    alignment = std::max(alignment, buf.alignment);
  if (alignment > 16)
    kf.func->setAttr(target::kDynamicSharedAlignmentAttr,
                     IntegerAttr::get(IntegerType::get(ctx, 64), alignment));
  return kf;
}

Value KernelFunc::getArgument(unsigned i) const {
  gpu::GPUFuncOp f = func;
  return f.getBody().front().getArgument(i);
}

ValueRange KernelFunc::getArguments() const {
  gpu::GPUFuncOp f = func;
  return f.getBody().front().getArguments().take_front(f.getNumArguments());
}

ImplicitLocOpBuilder KernelFunc::getBuilder() const {
  gpu::GPUFuncOp f = func;
  ImplicitLocOpBuilder b(f.getLoc(), f.getContext());
  b.setInsertionPoint(f.getBody().front().getTerminator());
  return b;
}

int64_t kvir::codegen::getStaticSharedBytes(gpu::GPUFuncOp func) {
  int64_t bytes = 0;
  for (auto [i, arg] : llvm::enumerate(func.getWorkgroupAttributions())) {
    auto type = cast<MemRefType>(arg.getType());
    int64_t align = type.getElementTypeBitWidth() / 8;
    if (auto attr = dyn_cast_or_null<IntegerAttr>(
            func.getWorkgroupAttributionAttr(
                i, LLVM::LLVMDialect::getAlignAttrName())))
      align = std::max<int64_t>(align, attr.getInt());
    bytes = llvm::alignTo(bytes, align) +
            type.getNumElements() * type.getElementTypeBitWidth() / 8;
  }
  return bytes;
}

int64_t kvir::codegen::getDynamicSharedBytes(gpu::GPUFuncOp func) {
  if (auto attr = func->getAttrOfType<IntegerAttr>(kDynamicSharedAttr))
    return attr.getInt();
  return 0;
}

std::array<int64_t, 3> kvir::codegen::getBlock(gpu::GPUFuncOp func) {
  std::array<int64_t, 3> block{1, 1, 1};
  if (auto attr = func->getAttrOfType<DenseI32ArrayAttr>("nvvm.reqntid"))
    for (auto [i, v] : llvm::enumerate(attr.asArrayRef()))
      block[i] = v;
  return block;
}

void kvir::codegen::orderAfterPrimaryGrid(gpu::GPUFuncOp func) {
  auto b = ImplicitLocOpBuilder::atBlockBegin(func.getLoc(),
                                              &func.getBody().front());
  NVVM::GriddepcontrolOp::create(b, NVVM::GridDepActionKind::wait);
  NVVM::GriddepcontrolOp::create(b, NVVM::GridDepActionKind::launch_dependents);
}

KernelIdentity &KernelIdentity::add(StringRef text) {
  key += text;
  key += ';';
  return *this;
}

KernelIdentity &KernelIdentity::add(int64_t value) {
  return add(StringRef(std::to_string(value)));
}

KernelIdentity &KernelIdentity::add(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return add(StringRef(s));
}

KernelIdentity &KernelIdentity::add(Attribute attr) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (attr)
    os << attr;
  return add(StringRef(s));
}

KernelIdentity &KernelIdentity::add(Operation *op) {
  add(op->getName().getStringRef());
  add(op->getAttrDictionary());
  for (Type t : op->getOperandTypes())
    add(t);
  for (Type t : op->getResultTypes())
    add(t);
  // Regions (score_mod, mask_mod) are code of the kernel: every nested op,
  // its attributes and result types, and where each operand comes from (a
  // block argument, an earlier result, a constant from above by its value,
  // another value from above by its type and which one it is: the op's own
  // operands first, so that a region reading, say, the op's sinks (one
  // kernel parameter) and one reading another buffer (two) differ).
  DenseMap<Value, int64_t> numbering, captures;
  for (Value operand : op->getOperands())
    captures.try_emplace(operand, captures.size());
  for (Region &region : op->getRegions()) {
    if (region.empty())
      continue;
    add("region");
    for (Block &block : region)
      for (BlockArgument arg : block.getArguments())
        numbering.try_emplace(arg, numbering.size());
    region.walk<WalkOrder::PreOrder>([&](Operation *nested) {
      for (Region &inner : nested->getRegions())
        for (Block &block : inner)
          for (BlockArgument arg : block.getArguments())
            numbering.try_emplace(arg, numbering.size());
      add(nested->getName().getStringRef());
      add(nested->getAttrDictionary());
      for (Value operand : nested->getOperands()) {
        if (auto it = numbering.find(operand); it != numbering.end()) {
          add(it->second);
          continue;
        }
        Operation *def = operand.getDefiningOp();
        if (def && def->hasTrait<OpTrait::ConstantLike>()) {
          add(def->getAttrDictionary());
        } else {
          add("capture");
          add(captures.try_emplace(operand, captures.size()).first->second);
        }
        add(operand.getType());
      }
      for (Value result : nested->getResults()) {
        numbering.try_emplace(result, numbering.size());
        add(result.getType());
      }
    });
  }
  return *this;
}

std::string KernelIdentity::getSymbol() const {
  uint64_t h = llvm::xxh3_64bits(key);
  std::string hex = llvm::utohexstr(h, /*LowerCase=*/true, /*Width=*/16);
  return stem + "_" + hex;
}
