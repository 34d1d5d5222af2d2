//===- Instrument.cpp - Rewrite NVVM kernels into runtime calls -----------===//
#include "Instrumenter.h"
#include "kvir/Emulator/RuntimeABI.h"

#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>

using namespace mlir;

namespace kvir::emu {

LLVM::LLVMFuncOp Instrumenter::hook(StringRef name, ArrayRef<Type> params,
                                    Type resultType) {
  OpBuilder::InsertionGuard guard(builder);
  FailureOr<LLVM::LLVMFuncOp> fn = LLVM::lookupOrCreateFn(
      builder, module, name, params,
      resultType ? resultType : LLVM::LLVMVoidType::get(module.getContext()));
  assert(succeeded(fn) && "hook declarations never conflict");
  return *fn;
}

Value Instrumenter::call(Location loc, StringRef name, Type resultType,
                         ValueRange args) {
  LLVM::LLVMFuncOp fn =
      hook(name, llvm::to_vector(args.getTypes()), resultType);
  auto callOp = LLVM::CallOp::create(builder, loc, fn, args);
  return resultType ? callOp.getResult() : Value();
}

Value Instrumenter::i32(Location loc, int64_t v) {
  return LLVM::ConstantOp::create(builder, loc, builder.getI32Type(),
                                  builder.getI32IntegerAttr(v));
}

Value Instrumenter::i64(Location loc, int64_t v) {
  return LLVM::ConstantOp::create(builder, loc, builder.getI64Type(),
                                  builder.getI64IntegerAttr(v));
}

Value Instrumenter::toGeneric(Location loc, Value ptr) {
  auto type = cast<LLVM::LLVMPointerType>(ptr.getType());
  if (type.getAddressSpace() == 0)
    return ptr;
  return LLVM::AddrSpaceCastOp::create(
      builder, loc, LLVM::LLVMPointerType::get(module.getContext()), ptr);
}

std::pair<Value, Value> Instrumenter::provenance(Location loc, Value ptr) {
  Value at = ptr;
  while (true) {
    if (auto arg = dyn_cast<BlockArgument>(at)) {
      Block *owner = arg.getOwner();
      if (owner->isEntryBlock() &&
          isa<LLVM::LLVMFuncOp>(owner->getParentOp()))
        return {toGeneric(loc, arg), i32(loc, arg.getArgNumber())};
      break;
    }
    Operation *def = at.getDefiningOp();
    if (auto gep = dyn_cast<LLVM::GEPOp>(def)) {
      at = gep.getBase();
      continue;
    }
    if (auto cast = dyn_cast<LLVM::AddrSpaceCastOp>(def)) {
      at = cast.getArg();
      continue;
    }
    break;
  }
  return {LLVM::ZeroOp::create(builder, loc,
                               LLVM::LLVMPointerType::get(module.getContext())),
          i32(loc, -1)};
}

Value Instrumenter::toI32Bits(Location loc, Value v) {
  if (v.getType().isInteger(32))
    return v;
  return LLVM::BitcastOp::create(builder, loc, builder.getI32Type(), v);
}

Value Instrumenter::fromI32Bits(Location loc, Value bits, Type type) {
  if (type.isInteger(32))
    return bits;
  return LLVM::BitcastOp::create(builder, loc, type, bits);
}

Value Instrumenter::entryAlloca(Operation *at, unsigned slots) {
  auto fn = at->getParentOfType<LLVM::LLVMFuncOp>();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&fn.getBody().front());
  Location loc = at->getLoc();
  Value count = i32(loc, slots);
  return LLVM::AllocaOp::create(builder, loc,
                                LLVM::LLVMPointerType::get(module.getContext()),
                                builder.getI32Type(), count, /*alignment=*/16);
}

uint32_t Instrumenter::site(Operation *op) {
  // "file:line:col (op)" where the location has a file position (possibly
  // inside a fused or call-site location), the raw location otherwise.
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto file = op->getLoc()->findInstanceOf<FileLineColLoc>())
    os << file.getFilename().getValue() << ":" << file.getLine() << ":"
       << file.getColumn();
  else
    os << op->getLoc();
  os << " (" << op->getName() << ")";
  result.sites.push_back(std::move(text));
  return result.sites.size() - 1;
}

static bool isKernel(LLVM::LLVMFuncOp fn) {
  return fn->hasAttr("nvvm.kernel") || fn->hasAttr("gpu.kernel");
}

LogicalResult Instrumenter::layoutSharedMemory() {
  // Each kernel gets its own shared-memory layout: its static shared globals
  // one after another, then the dynamic region at the next 16 bytes, as CUDA
  // aligns it (zero-sized globals all alias it). A kernel's arena is then
  // exactly as large as on a GPU, so an access past its buffers is out of
  // bounds even if another kernel of the module has more shared memory. Only if
  // a non-kernel function uses a shared global (its address must be the same
  // for every caller) do all kernels share one layout of all shared globals.
  SmallVector<LLVM::GlobalOp> shared, dynamic;
  for (auto global : module.getOps<LLVM::GlobalOp>())
    if (global.getAddrSpace() == 3)
      (layout.getTypeSize(global.getGlobalType()) == 0 ? dynamic : shared)
          .push_back(global);
  llvm::StringSet<> sharedNames;
  for (LLVM::GlobalOp global : llvm::concat<LLVM::GlobalOp>(shared, dynamic))
    sharedNames.insert(global.getSymName());

  SmallVector<LLVM::AddressOfOp> uses;
  // Kernel (or null for the common layout) -> global -> offset.
  DenseMap<Operation *, llvm::StringMap<uint64_t>> offsets;
  DenseMap<Operation *, llvm::StringSet<>> usedBy;
  bool perKernel = true;
  module.walk([&](LLVM::AddressOfOp op) {
    if (!sharedNames.count(op.getGlobalName()))
      return;
    uses.push_back(op);
    auto fn = op->getParentOfType<LLVM::LLVMFuncOp>();
    if (!fn || !isKernel(fn))
      perKernel = false;
    else
      usedBy[fn].insert(op.getGlobalName());
  });

  auto assign = [&](Operation *kernel, auto &&uses) {
    uint64_t offset = 0;
    for (LLVM::GlobalOp global : shared) {
      if (!uses(global))
        continue;
      // As ptxas places a .shared variable: at its declared alignment, or
      // its type's. Padding them further would hide under-aligned vector
      // accesses that fault on a GPU.
      uint64_t align = global.getAlignment().value_or(0);
      if (!align)
        align = layout.getTypeABIAlignment(global.getGlobalType());
      offset = llvm::alignTo(offset, align);
      offsets[kernel][global.getSymName()] = offset;
      offset += layout.getTypeSize(global.getGlobalType());
    }
    offset = llvm::alignTo(offset, 16);
    for (LLVM::GlobalOp global : dynamic)
      offsets[kernel][global.getSymName()] = offset;
    return offset;
  };
  SmallVector<LLVM::LLVMFuncOp> kernels;
  for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
    if (isKernel(fn))
      kernels.push_back(fn);
  uint64_t common = 0;
  if (!perKernel)
    common = assign(nullptr, [](LLVM::GlobalOp) { return true; });
  for (LLVM::LLVMFuncOp fn : kernels) {
    uint64_t bytes = common;
    if (perKernel) {
      const llvm::StringSet<> &used = usedBy[fn];
      bytes = assign(
          fn, [&](LLVM::GlobalOp g) { return used.contains(g.getSymName()); });
    }
    result.kernelSharedBytes[fn.getName().str()] = bytes;
    result.staticSharedBytes = std::max(result.staticSharedBytes, bytes);
  }

  auto ptrType = LLVM::LLVMPointerType::get(module.getContext());
  for (LLVM::AddressOfOp op : uses) {
    Operation *kernel =
        perKernel ? op->getParentOfType<LLVM::LLVMFuncOp>().getOperation()
                  : nullptr;
    builder.setInsertionPoint(op);
    Location loc = op.getLoc();
    Value base = call(loc, kabi::kSharedBase, ptrType, {});
    Value at =
        LLVM::GEPOp::create(builder, loc, ptrType, builder.getI8Type(), base,
                            ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(
                                offsets[kernel][op.getGlobalName()])});
    Value cast = LLVM::AddrSpaceCastOp::create(builder, loc, op.getType(), at);
    op.replaceAllUsesWith(cast);
    op.erase();
  }
  for (LLVM::GlobalOp global : llvm::concat<LLVM::GlobalOp>(shared, dynamic))
    global.erase();
  return success();
}

void Instrumenter::instrumentAccess(Operation *op, Value ptr, Value bytes,
                                    uint32_t flags, uint64_t align) {
  builder.setInsertionPoint(op);
  Location loc = op->getLoc();
  uint32_t id = site(op);
  flags |= llvm::Log2_64(std::max<uint64_t>(align, 1)) << kabi::AlignShift;
  if (!bytes.getType().isInteger(64))
    bytes = LLVM::ZExtOp::create(builder, loc, builder.getI64Type(), bytes);
  auto [base, arg] = provenance(loc, ptr);
  call(loc, kabi::kAccess, Type(),
       {toGeneric(loc, ptr), bytes, i32(loc, flags), i32(loc, id), base, arg});
}

void Instrumenter::instrumentAccess(Operation *op, Value ptr, Type valueType,
                                    uint32_t flags,
                                    std::optional<uint64_t> align) {
  // Without an alignment attribute LLVM assumes the type's ABI alignment,
  // and so does the NVPTX backend when it picks ld/st(.v2/.v4) forms: a GPU
  // faults on addresses that are not aligned that much.
  uint64_t need =
      align && *align ? *align : layout.getTypeABIAlignment(valueType);
  builder.setInsertionPoint(op);
  Value bytes = i64(op->getLoc(), layout.getTypeSize(valueType));
  instrumentAccess(op, ptr, bytes, flags, need);
}

/// llvm.intr.masked.load / store (what vector.transfer_read / write and
/// vector.maskedload / maskedstore lower to): only the enabled elements are
/// accessed, so the check covers the span from the first to the last of
/// them, and nothing if none is enabled.
void Instrumenter::instrumentMasked(Operation *op, Value ptr, Value mask,
                                    VectorType vectorType, uint32_t flags) {
  builder.setInsertionPoint(op);
  Location loc = op->getLoc();
  uint32_t id = site(op);
  int64_t n = vectorType.getNumElements();
  uint64_t elementBytes = layout.getTypeSize(vectorType.getElementType());
  Type bitsType = builder.getIntegerType(n);
  Value bits = LLVM::BitcastOp::create(builder, loc, bitsType, mask);
  if (n < 64)
    bits = LLVM::ZExtOp::create(builder, loc, builder.getI64Type(), bits);
  flags |= llvm::Log2_64(std::max<uint64_t>(elementBytes, 1))
           << kabi::AlignShift;
  auto [base, arg] = provenance(loc, ptr);
  call(loc, kabi::kAccessMasked, Type(),
       {toGeneric(loc, ptr), i64(loc, elementBytes), bits, i32(loc, flags),
        i32(loc, id), base, arg});
}

static std::optional<kabi::Sreg> getSreg(Operation *op) {
  return TypeSwitch<Operation *, std::optional<kabi::Sreg>>(op)
      .Case([](NVVM::ThreadIdXOp) { return kabi::TidX; })
      .Case([](NVVM::ThreadIdYOp) { return kabi::TidY; })
      .Case([](NVVM::ThreadIdZOp) { return kabi::TidZ; })
      .Case([](NVVM::BlockDimXOp) { return kabi::NtidX; })
      .Case([](NVVM::BlockDimYOp) { return kabi::NtidY; })
      .Case([](NVVM::BlockDimZOp) { return kabi::NtidZ; })
      .Case([](NVVM::BlockIdXOp) { return kabi::CtaidX; })
      .Case([](NVVM::BlockIdYOp) { return kabi::CtaidY; })
      .Case([](NVVM::BlockIdZOp) { return kabi::CtaidZ; })
      .Case([](NVVM::GridDimXOp) { return kabi::NctaidX; })
      .Case([](NVVM::GridDimYOp) { return kabi::NctaidY; })
      .Case([](NVVM::GridDimZOp) { return kabi::NctaidZ; })
      .Case([](NVVM::LaneIdOp) { return kabi::LaneId; })
      .Case([](NVVM::WarpSizeOp) { return kabi::WarpSize; })
      .Case([](NVVM::WarpIdOp) { return kabi::WarpId; })
      .Case([](NVVM::WarpDimOp) { return kabi::NWarpId; })
      .Case([](NVVM::SmIdOp) { return kabi::SmId; })
      .Case([](NVVM::SmDimOp) { return kabi::NSmId; })
      .Case([](NVVM::LaneMaskLtOp) { return kabi::LaneMaskLt; })
      .Case([](NVVM::LaneMaskLeOp) { return kabi::LaneMaskLe; })
      .Case([](NVVM::LaneMaskEqOp) { return kabi::LaneMaskEq; })
      .Case([](NVVM::LaneMaskGeOp) { return kabi::LaneMaskGe; })
      .Case([](NVVM::LaneMaskGtOp) { return kabi::LaneMaskGt; })
      .Case([](NVVM::ClockOp) { return kabi::Clock; })
      .Case([](NVVM::Clock64Op) { return kabi::Clock; })
      .Case([](NVVM::ClusterIdXOp) { return kabi::ClusterIdX; })
      .Case([](NVVM::ClusterIdYOp) { return kabi::ClusterIdY; })
      .Case([](NVVM::ClusterIdZOp) { return kabi::ClusterIdZ; })
      .Case([](NVVM::ClusterDimXOp) { return kabi::NClusterIdX; })
      .Case([](NVVM::ClusterDimYOp) { return kabi::NClusterIdY; })
      .Case([](NVVM::ClusterDimZOp) { return kabi::NClusterIdZ; })
      .Case([](NVVM::BlockInClusterIdXOp) { return kabi::ClusterCtaIdX; })
      .Case([](NVVM::BlockInClusterIdYOp) { return kabi::ClusterCtaIdY; })
      .Case([](NVVM::BlockInClusterIdZOp) { return kabi::ClusterCtaIdZ; })
      .Case([](NVVM::ClusterDimBlocksXOp) { return kabi::ClusterNCtaIdX; })
      .Case([](NVVM::ClusterDimBlocksYOp) { return kabi::ClusterNCtaIdY; })
      .Case([](NVVM::ClusterDimBlocksZOp) { return kabi::ClusterNCtaIdZ; })
      .Case([](NVVM::ClusterId) { return kabi::ClusterCtaRank; })
      .Case([](NVVM::ClusterDim) { return kabi::ClusterNCtaRank; })
      .Default([](Operation *) { return std::nullopt; });
}

static std::optional<kabi::MmaType>
getMmaType(Type type, std::optional<NVVM::MMATypes> ptx) {
  if (ptx) {
    switch (*ptx) {
    case NVVM::MMATypes::f16:
      return kabi::F16;
    case NVVM::MMATypes::bf16:
      return kabi::BF16;
    case NVVM::MMATypes::f32:
      return kabi::F32;
    case NVVM::MMATypes::tf32:
      return kabi::TF32;
    default:
      return std::nullopt;
    }
  }
  if (auto vec = dyn_cast<VectorType>(type);
      vec && vec.getElementType().isF16())
    return kabi::F16;
  if (type.isF32())
    return kabi::F32;
  return std::nullopt;
}

LogicalResult Instrumenter::rewriteNvvm(Operation *op) {
  Location loc = op->getLoc();
  builder.setInsertionPoint(op);
  Type i32Type = builder.getI32Type();
  auto ptrType = LLVM::LLVMPointerType::get(module.getContext());

  if (std::optional<LogicalResult> sm90 = rewriteSm90(op))
    return *sm90;
  if (std::optional<kabi::Sreg> sreg = getSreg(op)) {
    Value v = call(loc, kabi::kSreg, i32Type, {i32(loc, *sreg)});
    Type resultType = op->getResult(0).getType();
    if (resultType != i32Type)
      v = LLVM::ZExtOp::create(builder, loc, resultType, v);
    op->getResult(0).replaceAllUsesWith(v);
    op->erase();
    return success();
  }
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](NVVM::Barrier0Op b) -> LogicalResult {
        call(loc, kabi::kBarrier, Type(),
             {i32(loc, 0), i32(loc, 0), i32(loc, site(b))});
        b.erase();
        return success();
      })
      .Case([&](NVVM::BarrierOp b) -> LogicalResult {
        if (b.getRes())
          return b.emitError(
              "the emulator does not support barrier reductions");
        Value id = b.getBarrierId() ? b.getBarrierId() : i32(loc, 0);
        Value count =
            b.getNumberOfThreads() ? b.getNumberOfThreads() : i32(loc, 0);
        call(loc, kabi::kBarrier, Type(), {id, count, i32(loc, site(b))});
        b.erase();
        return success();
      })
      .Case([&](NVVM::SyncWarpOp s) -> LogicalResult {
        call(loc, kabi::kSyncWarp, Type(), {s.getMask(), i32(loc, site(s))});
        s.erase();
        return success();
      })
      .Case([&](NVVM::ShflOp s) -> LogicalResult {
        Type valType = s.getVal().getType();
        if (layout.getTypeSizeInBits(valType) != 32)
          return s.emitError("the emulator supports 32-bit shuffles, got ")
                 << valType;
        uint32_t id = site(s);
        Value packed = call(loc, kabi::kShfl, builder.getI64Type(),
                            {i32(loc, static_cast<uint32_t>(s.getKind())),
                             s.getThreadMask(), toI32Bits(loc, s.getVal()),
                             s.getOffset(), s.getMaskAndClamp(), i32(loc, id)});
        Value bits = LLVM::TruncOp::create(builder, loc, i32Type, packed);
        Value value = fromI32Bits(loc, bits, valType);
        Value replacement = value;
        if (s.getReturnValueAndIsValid()) {
          Value hi = LLVM::LShrOp::create(builder, loc, packed, i64(loc, 32));
          Value valid =
              LLVM::TruncOp::create(builder, loc, builder.getI1Type(), hi);
          Type structType = s.getRes().getType();
          Value agg = LLVM::PoisonOp::create(builder, loc, structType);
          agg = LLVM::InsertValueOp::create(builder, loc, agg, value,
                                            ArrayRef<int64_t>{0});
          replacement = LLVM::InsertValueOp::create(builder, loc, agg, valid,
                                                    ArrayRef<int64_t>{1});
        }
        s.getRes().replaceAllUsesWith(replacement);
        s.erase();
        return success();
      })
      .Case([&](NVVM::VoteSyncOp v) -> LogicalResult {
        uint32_t id = site(v);
        Value pred = LLVM::ZExtOp::create(builder, loc, i32Type, v.getPred());
        Value r = call(loc, kabi::kVote, i32Type,
                       {i32(loc, static_cast<uint32_t>(v.getKind())),
                        v.getMask(), pred, i32(loc, id)});
        if (!v.getRes().getType().isInteger(32))
          r = LLVM::TruncOp::create(builder, loc, v.getRes().getType(), r);
        v.getRes().replaceAllUsesWith(r);
        v.erase();
        return success();
      })
      .Case([&](NVVM::MmaOp m) -> LogicalResult {
        auto resultType = dyn_cast<LLVM::LLVMStructType>(m.getRes().getType());
        if (!resultType)
          return m.emitError(
              "the emulator expects mma.sync to return a struct");
        std::optional<kabi::MmaType> aType = getMmaType(
            m.getOperandA().front().getType(), m.getMultiplicandAPtxType());
        std::optional<kabi::MmaType> cType =
            getMmaType(resultType.getBody().front(), std::nullopt);
        if (!aType || !cType || (*aType != kabi::F16 && *aType != kabi::BF16))
          return m.emitError("the emulator supports mma.sync with f16/bf16 "
                             "inputs and f16/f32 accumulators");
        NVVM::MMAShapeAttr shape = m.getShape();
        if (m.getLayoutA() != NVVM::MMALayout::row ||
            m.getLayoutB() != NVVM::MMALayout::col)
          return m.emitError("mma.sync with f16/bf16 requires row/col layouts");
        uint32_t id = site(m);
        auto store = [&](ValueRange values) {
          Value buf = entryAlloca(m, std::max<unsigned>(values.size(), 1));
          for (auto [i, v] : llvm::enumerate(values)) {
            Value slot = LLVM::GEPOp::create(
                builder, loc, ptrType, i32Type, buf,
                ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
            LLVM::StoreOp::create(builder, loc, toI32Bits(loc, v), slot);
          }
          return buf;
        };
        Value a = store(m.getOperandA());
        Value b = store(m.getOperandB());
        Value c = store(m.getOperandC());
        unsigned numResults = resultType.getBody().size();
        Value d = entryAlloca(m, numResults);
        call(loc, kabi::kMma, Type(),
             {i32(loc, shape.getM()), i32(loc, shape.getN()),
              i32(loc, shape.getK()), i32(loc, *aType | (*cType << 8)), a, b, c,
              d, i32(loc, id)});
        Value agg = LLVM::PoisonOp::create(builder, loc, resultType);
        for (unsigned i = 0; i < numResults; ++i) {
          Value slot = LLVM::GEPOp::create(
              builder, loc, ptrType, i32Type, d,
              ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
          Value bits = LLVM::LoadOp::create(builder, loc, i32Type, slot);
          agg = LLVM::InsertValueOp::create(
              builder, loc, agg,
              fromI32Bits(loc, bits, resultType.getBody()[i]), i);
        }
        m.getRes().replaceAllUsesWith(agg);
        m.erase();
        return success();
      })
      .Case([&](NVVM::LdMatrixOp l) -> LogicalResult {
        if (l.getShape().getM() != 8 || l.getShape().getN() != 8 ||
            l.getEltType() != NVVM::LdStMatrixEltType::B16)
          return l.emitError("the emulator supports ldmatrix .m8n8 .b16");
        uint32_t id = site(l);
        unsigned num = l.getNum();
        Value out = entryAlloca(l, 4);
        bool trans = l.getLayout() == NVVM::MMALayout::col;
        call(loc, kabi::kLdMatrix, Type(),
             {i32(loc, num), i32(loc, trans), toGeneric(loc, l.getPtr()), out,
              i32(loc, id)});
        Type resType = l.getRes().getType();
        auto loadSlot = [&](unsigned i) -> Value {
          Value slot = LLVM::GEPOp::create(
              builder, loc, ptrType, i32Type, out,
              ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
          return LLVM::LoadOp::create(builder, loc, i32Type, slot);
        };
        Value replacement;
        if (auto st = dyn_cast<LLVM::LLVMStructType>(resType)) {
          replacement = LLVM::PoisonOp::create(builder, loc, resType);
          for (unsigned i = 0; i < num; ++i)
            replacement = LLVM::InsertValueOp::create(
                builder, loc, replacement,
                fromI32Bits(loc, loadSlot(i), st.getBody()[i]), i);
        } else {
          replacement = fromI32Bits(loc, loadSlot(0), resType);
        }
        l.getRes().replaceAllUsesWith(replacement);
        l.erase();
        return success();
      })
      .Case([&](NVVM::CpAsyncOp c) -> LogicalResult {
        uint32_t id = site(c);
        Value size = i32(loc, c.getSize());
        Value srcSize = c.getCpSize() ? c.getCpSize() : size;
        auto [base, arg] = provenance(loc, c.getSrc());
        call(loc, kabi::kCpAsync, Type(),
             {toGeneric(loc, c.getDst()), toGeneric(loc, c.getSrc()), size,
              srcSize, i32(loc, id), base, arg});
        c.erase();
        return success();
      })
      .Case([&](NVVM::CpAsyncCommitGroupOp c) -> LogicalResult {
        call(loc, kabi::kCpAsyncCommit, Type(), {});
        c.erase();
        return success();
      })
      .Case([&](NVVM::CpAsyncWaitGroupOp w) -> LogicalResult {
        call(loc, kabi::kCpAsyncWait, Type(), {i32(loc, w.getN())});
        w.erase();
        return success();
      })
      .Case([&](NVVM::RcpApproxFtzF32Op r) -> LogicalResult {
        Value one = LLVM::ConstantOp::create(builder, loc, builder.getF32Type(),
                                             builder.getF32FloatAttr(1.0f));
        Value q = LLVM::FDivOp::create(builder, loc, one, r.getArg());
        r.getRes().replaceAllUsesWith(q);
        r.erase();
        return success();
      })
      .Default([&](Operation *other) -> LogicalResult {
        return other->emitError("the emulator cannot execute ")
               << other->getName();
      });
}

/// NVVM approximation intrinsics called by name (llvm.call_intrinsic) run
/// as exact functions (LLVM math intrinsics, which makeHostIndependent
/// makes correctly rounded calls): the emulator may be more precise than
/// the GPU, never less.
LogicalResult Instrumenter::rewriteNvvmIntrinsics() {
  SmallVector<LLVM::CallIntrinsicOp> calls;
  module.walk([&](LLVM::CallIntrinsicOp op) {
    if (op.getIntrin().starts_with("llvm.nvvm."))
      calls.push_back(op);
  });
  for (LLVM::CallIntrinsicOp op : calls) {
    StringRef name = op.getIntrin();
    builder.setInsertionPoint(op);
    Location loc = op.getLoc();
    Value x = op.getArgs().empty() ? Value() : op.getArgs()[0];
    Value r;
    if (name.starts_with("llvm.nvvm.ex2.approx"))
      r = LLVM::Exp2Op::create(builder, loc, x.getType(), x);
    else if (name.starts_with("llvm.nvvm.lg2.approx"))
      r = LLVM::Log2Op::create(builder, loc, x.getType(), x);
    else if (name.starts_with("llvm.nvvm.rcp.approx")) {
      Value one = LLVM::ConstantOp::create(
          builder, loc, x.getType(), builder.getFloatAttr(x.getType(), 1.0));
      r = LLVM::FDivOp::create(builder, loc, one, x);
    } else
      return op.emitError("the emulator cannot execute intrinsic ") << name;
    op.getResult(0).replaceAllUsesWith(r);
    op.erase();
  }
  return success();
}

/// NVVM intrinsics kernels call by name (llvm.call_intrinsic), e.g. the
/// ex2.approx / lg2.approx kvir's attention kernels use. They become the
/// corresponding LLVM intrinsics, which makeHostIndependent turns into
/// correctly rounded functions, where PTX's .approx forms differ by a few
/// ulp (PTX ISA, "Floating Point Instructions: ex2": about 2 ulp for
/// ex2.approx.f32): results agree with a GPU to about that, not bit for bit.
LogicalResult Instrumenter::rewriteIntrinsic(LLVM::CallIntrinsicOp op) {
  StringRef name = op.getIntrin();
  name.consume_front("llvm.nvvm.");
  if (op.getNumResults() != 1 || op.getArgs().empty())
    return op.emitError("the emulator cannot execute intrinsic ")
           << op.getIntrin();
  builder.setInsertionPoint(op);
  Location loc = op.getLoc();
  Type type = op.getResult(0).getType();
  Value x = op.getArgs()[0];
  // .ftz: subnormal inputs and results are flushed to zero of the same
  // sign (PTX ISA, "Floating Point Instructions": subnormal numbers).
  bool ftz = name.contains(".ftz") && type.isF32();
  auto flush = [&](Value v) -> Value {
    Value tiny = LLVM::ConstantOp::create(
        builder, loc, type,
        builder.getFloatAttr(type, std::numeric_limits<float>::min()));
    Value small = LLVM::FCmpOp::create(
        builder, loc, LLVM::FCmpPredicate::olt,
        LLVM::FAbsOp::create(builder, loc, type, v), tiny);
    Value zero = LLVM::CopySignOp::create(
        builder, loc, type,
        LLVM::ConstantOp::create(builder, loc, type,
                                 builder.getFloatAttr(type, 0.0)),
        v);
    return LLVM::SelectOp::create(builder, loc, small, zero, v);
  };
  if (ftz)
    x = flush(x);
  auto one = [&]() -> Value {
    return LLVM::ConstantOp::create(builder, loc, type,
                                    builder.getFloatAttr(type, 1.0));
  };
  Value r;
  if (name.starts_with("ex2.approx"))
    r = LLVM::Exp2Op::create(builder, loc, type, x);
  else if (name.starts_with("lg2.approx"))
    r = LLVM::Log2Op::create(builder, loc, type, x);
  else if (name.starts_with("sqrt."))
    r = LLVM::SqrtOp::create(builder, loc, type, x);
  else if (name.starts_with("rsqrt.approx"))
    r = LLVM::FDivOp::create(builder, loc, one(),
                             LLVM::SqrtOp::create(builder, loc, type, x));
  else if (name.starts_with("rcp."))
    r = LLVM::FDivOp::create(builder, loc, one(), x);
  else if (name.starts_with("sin.approx"))
    r = LLVM::SinOp::create(builder, loc, type, x);
  else if (name.starts_with("cos.approx"))
    r = LLVM::CosOp::create(builder, loc, type, x);
  else if (name.starts_with("tanh.approx"))
    r = LLVM::TanhOp::create(builder, loc, type, x);
  else if (name.starts_with("fabs"))
    r = LLVM::FAbsOp::create(builder, loc, type, x);
  // cvt.rmi / rpi / rzi / rni: exact roundings to an integral value.
  else if (name.starts_with("floor."))
    r = LLVM::FFloorOp::create(builder, loc, type, x);
  else if (name.starts_with("ceil."))
    r = LLVM::FCeilOp::create(builder, loc, type, x);
  else if (name.starts_with("trunc."))
    r = LLVM::FTruncOp::create(builder, loc, type, x);
  else if (name.starts_with("round."))
    r = LLVM::RoundEvenOp::create(builder, loc, type, x);
  else if ((name.starts_with("fmax") || name.starts_with("fmin")) &&
           op.getArgs().size() == 2 && !name.contains("nan"))
    r = name.starts_with("fmax")
            ? LLVM::MaxNumOp::create(builder, loc, type, x, op.getArgs()[1])
                  .getResult()
            : LLVM::MinNumOp::create(builder, loc, type, x, op.getArgs()[1])
                  .getResult();
  else
    return op.emitError("the emulator cannot execute intrinsic ")
           << op.getIntrin();
  if (ftz)
    r = flush(r);
  op.getResult(0).replaceAllUsesWith(r);
  op.erase();
  return success();
}

/// Whether `divisor` is a constant the host can divide by without a trap.
static bool isSafeDivisor(Value divisor, bool isSigned) {
  APInt value;
  if (!matchPattern(divisor, m_ConstantInt(&value)))
    return false;
  return !value.isZero() && !(isSigned && value.isAllOnes());
}

/// An integer division or remainder whose divisor may be 0 (or -1 with the
/// most negative dividend, signed): x86 traps where PTX only leaves the
/// result unspecified. A check reports the kernel (the thread stops) and
/// the division itself gets a safe divisor.
LogicalResult Instrumenter::instrumentDivision(Operation *op, bool isSigned) {
  Value dividend = op->getOperand(0), divisor = op->getOperand(1);
  if (isSafeDivisor(divisor, isSigned))
    return success();
  auto type = dyn_cast<IntegerType>(divisor.getType());
  if (!type)
    return op->emitError("the emulator cannot check a vector integer "
                         "division (a lane may divide by zero)");
  builder.setInsertionPoint(op);
  Location loc = op->getLoc();
  auto constant = [&](const APInt &v) {
    return LLVM::ConstantOp::create(builder, loc, type,
                                    builder.getIntegerAttr(type, v));
  };
  unsigned width = type.getWidth();
  Value zero = constant(APInt::getZero(width));
  Value isZero = LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::eq,
                                      divisor, zero);
  Value fault = LLVM::SelectOp::create(builder, loc, isZero, i32(loc, 1),
                                       i32(loc, 0));
  Value bad = isZero;
  if (isSigned) {
    Value minusOne = LLVM::ICmpOp::create(builder, loc,
                                          LLVM::ICmpPredicate::eq, divisor,
                                          constant(APInt::getAllOnes(width)));
    Value lowest = LLVM::ICmpOp::create(
        builder, loc, LLVM::ICmpPredicate::eq, dividend,
        constant(APInt::getSignedMinValue(width)));
    Value overflow = LLVM::AndOp::create(builder, loc, minusOne, lowest);
    fault = LLVM::SelectOp::create(builder, loc, overflow, i32(loc, 2), fault);
    bad = LLVM::OrOp::create(builder, loc, isZero, overflow);
  }
  call(loc, kabi::kDivide, Type(), {fault, i32(loc, site(op))});
  Value safe = LLVM::SelectOp::create(builder, loc, bad,
                                      constant(APInt(width, 1)), divisor);
  op->setOperand(1, safe);
  return success();
}

FailureOr<InstrumentedModule> Instrumenter::run() {
  if (failed(layoutSharedMemory()))
    return failure();
  // Collect first: rewriting inserts calls and loads of its own.
  SmallVector<Operation *> nvvmOps, accesses;
  SmallVector<LLVM::CallIntrinsicOp> intrinsics;
  SmallVector<LLVM::InlineAsmOp> inlineAsms;
  SmallVector<std::pair<Operation *, bool>> divisions;
  module.walk([&](Operation *op) {
    if (isa<LLVM::SDivOp, LLVM::SRemOp>(op))
      divisions.push_back({op, true});
    else if (isa<LLVM::UDivOp, LLVM::URemOp>(op))
      divisions.push_back({op, false});
    else if (isa<NVVM::NVVMDialect>(op->getDialect()))
      nvvmOps.push_back(op);
    else if (auto inlineAsm = dyn_cast<LLVM::InlineAsmOp>(op))
      inlineAsms.push_back(inlineAsm);
    else if (auto call = dyn_cast<LLVM::CallIntrinsicOp>(op);
             call && call.getIntrin().starts_with("llvm.nvvm."))
      intrinsics.push_back(call);
    else if (isa<LLVM::LoadOp, LLVM::StoreOp, LLVM::AtomicRMWOp,
                 LLVM::AtomicCmpXchgOp, LLVM::MaskedLoadOp, LLVM::MaskedStoreOp,
                 LLVM::MemcpyOp, LLVM::MemmoveOp, LLVM::MemsetOp,
                 LLVM::MemcpyInlineOp, LLVM::MemsetInlineOp,
                 LLVM::masked_gather, LLVM::masked_scatter,
                 LLVM::masked_expandload, LLVM::masked_compressstore>(op))
      accesses.push_back(op);
  });
  for (Operation *op : accesses) {
    LogicalResult ok =
        TypeSwitch<Operation *, LogicalResult>(op)
            .Case([&](LLVM::LoadOp l) {
              instrumentAccess(l, l.getAddr(), l.getType(), kabi::Load,
                               l.getAlignment());
              return success();
            })
            .Case([&](LLVM::StoreOp s) {
              instrumentAccess(s, s.getAddr(), s.getValue().getType(),
                               kabi::Store, s.getAlignment());
              return success();
            })
            .Case([&](LLVM::AtomicRMWOp a) {
              instrumentAccess(a, a.getPtr(), a.getVal().getType(),
                               kabi::Store | kabi::Atomic, a.getAlignment());
              return success();
            })
            .Case([&](LLVM::AtomicCmpXchgOp a) {
              instrumentAccess(a, a.getPtr(), a.getVal().getType(),
                               kabi::Store | kabi::Atomic, a.getAlignment());
              return success();
            })
            .Case([&](LLVM::MaskedLoadOp l) {
              instrumentMasked(l, l.getData(), l.getMask(),
                               cast<VectorType>(l.getRes().getType()),
                               kabi::Load);
              return success();
            })
            .Case([&](LLVM::MaskedStoreOp s) {
              instrumentMasked(s, s.getData(), s.getMask(),
                               cast<VectorType>(s.getValue().getType()),
                               kabi::Store);
              return success();
            })
            .Case<LLVM::MemcpyOp, LLVM::MemmoveOp>([&](auto c) {
              instrumentAccess(c, c.getSrc(), c.getLen(), kabi::Load, 1);
              instrumentAccess(c, c.getDst(), c.getLen(), kabi::Store, 1);
              return success();
            })
            .Case([&](LLVM::MemsetOp m) {
              instrumentAccess(m, m.getDst(), m.getLen(), kabi::Store, 1);
              return success();
            })
            .Default([&](Operation *other) {
              // Memory the checks cannot follow (vectors of pointers, inline
              // memcpy with an attribute length, ...) must not go unchecked.
              return other->emitError("the emulator cannot check ")
                     << other->getName();
            });
    if (failed(ok))
      return failure();
  }
  for (auto [op, isSigned] : divisions)
    if (failed(instrumentDivision(op, isSigned)))
      return failure();
  for (Operation *op : nvvmOps)
    if (failed(rewriteNvvm(op)))
      return failure();
  for (LLVM::InlineAsmOp op : inlineAsms)
    if (failed(rewriteInlineAsm(op)))
      return failure();
  if (failed(trackWgmmaTickets()))
    return failure();
  for (LLVM::CallIntrinsicOp op : intrinsics)
    if (failed(rewriteIntrinsic(op)))
      return failure();
  if (failed(rewriteNvvmIntrinsics()))
    return failure();
  for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
    if (isKernel(fn))
      result.kernels.push_back(fn.getName().str());
  return std::move(result);
}

} // namespace kvir::emu

FailureOr<kvir::emu::InstrumentedModule>
kvir::emu::instrumentKernelModule(ModuleOp module) {
  return Instrumenter(module).run();
}
