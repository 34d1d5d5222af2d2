//===- KernelPipeline.cpp - gpu.module kernels to NVVM --------------------===//
#include "kvir/Target/GPU/KernelPipeline.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace {
/// math.floor / ceil / trunc / roundeven / sqrt as the NVVM intrinsics of
/// PTX's cvt.rmi / rpi / rzi / rni and sqrt.rn (convert-gpu-to-nvvm would
/// make them libdevice calls).
struct MathToNvvmIntrinsic : RewritePattern {
  MathToNvvmIntrinsic(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    StringRef intrinsic =
        llvm::TypeSwitch<Operation *, StringRef>(op)
            .Case([](math::FloorOp) { return "llvm.nvvm.floor.f"; })
            .Case([](math::CeilOp) { return "llvm.nvvm.ceil.f"; })
            .Case([](math::TruncOp) { return "llvm.nvvm.trunc.f"; })
            .Case([](math::RoundEvenOp) { return "llvm.nvvm.round.f"; })
            .Case([](math::SqrtOp) { return "llvm.nvvm.sqrt.rn.f"; })
            .Default([](Operation *) { return StringRef(); });
    if (intrinsic.empty() || !op->getResult(0).getType().isF32())
      return failure();
    rewriter.replaceOpWithNewOp<LLVM::CallIntrinsicOp>(
        op, op->getResult(0).getType(), rewriter.getStringAttr(intrinsic),
        op->getOperands());
    return success();
  }
};

/// |x| and copysign(x, y) on the bits; fma as llvm.intr.fma (PTX fma.rn).
struct MathBitsAndFma : RewritePattern {
  MathBitsAndFma(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isa<math::AbsFOp, math::CopySignOp, math::FmaOp>(op) ||
        !op->getResult(0).getType().isF32())
      return failure();
    Location loc = op->getLoc();
    if (auto fma = dyn_cast<math::FmaOp>(op)) {
      rewriter.replaceOpWithNewOp<LLVM::FMAOp>(op, fma.getA(), fma.getB(),
                                               fma.getC());
      return success();
    }
    Type i32 = rewriter.getI32Type();
    auto bits = [&](Value v) {
      return arith::BitcastOp::create(rewriter, loc, i32, v).getResult();
    };
    auto mask = [&](uint32_t m) {
      return arith::ConstantOp::create(rewriter, loc,
                                       rewriter.getI32IntegerAttr(int32_t(m)))
          .getResult();
    };
    Value magnitude = arith::AndIOp::create(
        rewriter, loc, bits(op->getOperand(0)), mask(0x7fffffffu));
    Value result = magnitude;
    if (isa<math::CopySignOp>(op))
      result = arith::OrIOp::create(
          rewriter, loc, magnitude,
          arith::AndIOp::create(rewriter, loc, bits(op->getOperand(1)),
                                mask(0x80000000u)));
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(op, rewriter.getF32Type(),
                                                  result);
    return success();
  }
};

/// Kernels call no libdevice (PTX without a CUDA path leaves `__nv_*`
/// unresolved), but a score_mod region may use math ops that
/// convert-gpu-to-nvvm would lower to it: tanh, exp, log and the like are
/// expanded and approximated with polynomials in arith; floor, sqrt, |x|,
/// fma (which the approximations use too) become NVVM / LLVM intrinsics or
/// bit operations. A math op left after that is an error at the op.
struct ExpandKernelMath
    : PassWrapper<ExpandKernelMath, OperationPass<gpu::GPUModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandKernelMath)
  StringRef getArgument() const override { return "kvir-expand-kernel-math"; }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, LLVM::LLVMDialect, math::MathDialect,
                    vector::VectorDialect>();
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    math::populateExpansionPatterns(patterns);
    populateMathPolynomialApproximationPatterns(patterns,
                                                [](StringRef) { return true; });
    patterns.add<MathToNvvmIntrinsic, MathBitsAndFma>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    WalkResult left = getOperation()->walk([](Operation *op) {
      if (!isa<math::MathDialect>(op->getDialect()))
        return WalkResult::advance();
      op->emitOpError() << "has no lowering in kvir's kernels: they call no "
                           "libdevice, and no approximation or PTX "
                           "instruction computes it for these types";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};
/// Why LLVM's NVPTX backend cannot compile `op`, or "" when it can. The
/// backend reports such an op by exiting the process (LLVMContext::emitError
/// without a handler, from inside gpu-module-to-binary), so kernels are
/// checked before: LLVM math intrinsics PTX has no instruction for (they
/// would be libm calls; kvir's kernels call no libdevice), the .approx ones
/// without `afn` or for types PTX lacks, and conversions between floats and
/// integers wider than 64 bits. (Found with llc-22 for sm_80 and sm_90.)
std::string whyNotLowerableToPtx(Operation *op) {
  Type type = op->getNumResults() ? op->getResult(0).getType() : Type();
  Type element = type ? getElementTypeOrSelf(type) : Type();
  auto approx = [&]() {
    auto fmf = dyn_cast<LLVM::FastmathFlagsInterface>(op);
    return fmf && fmf.getFastmathAttr() &&
           LLVM::bitEnumContainsAll(fmf.getFastmathAttr().getValue(),
                                    LLVM::FastmathFlags::afn);
  };
  if (isa<LLVM::ExpOp, LLVM::Exp10Op, LLVM::LogOp, LLVM::Log2Op,
          LLVM::Log10Op, LLVM::TanOp, LLVM::SinhOp, LLVM::CoshOp,
          LLVM::ASinOp, LLVM::ACosOp, LLVM::ATanOp, LLVM::ATan2Op,
          LLVM::PowOp>(op))
    return "PTX has no instruction for it (use the math dialect op, which "
           "kvir expands, or an NVVM .approx intrinsic)";
  if (isa<LLVM::Exp2Op>(op) && element &&
      !isa<Float32Type, Float16Type, BFloat16Type>(element))
    return "PTX's ex2 takes f32, f16 and bf16 only";
  if (isa<LLVM::SinOp, LLVM::CosOp, LLVM::SincosOp>(op) &&
      (!approx() || !isa<Float32Type, Float16Type>(element)))
    return "PTX computes it only approximately (sin.approx / cos.approx, "
           "f32 and f16): mark it `afn`";
  if (isa<LLVM::TanhOp>(op) && (!approx() || !element.isF32()))
    return "PTX computes it only approximately (tanh.approx.f32): mark it "
           "`afn`";
  if (isa<LLVM::FPToSIOp, LLVM::FPToUIOp, LLVM::SIToFPOp, LLVM::UIToFPOp>(
          op)) {
    for (Type t : {op->getOperand(0).getType(), type})
      if (auto integer = dyn_cast<IntegerType>(getElementTypeOrSelf(t));
          integer && integer.getWidth() > 64)
        return "PTX converts between floats and integers of up to 64 bits";
  }
  return "";
}

/// Fails, at the op and saying why, on an op of the kernels that LLVM's
/// NVPTX backend cannot compile (whyNotLowerableToPtx): an error instead of
/// the backend ending the process, in kv-to-ptx and the emulator alike (a
/// kernel the emulator runs must compile to PTX).
struct CheckPtxLowerable
    : PassWrapper<CheckPtxLowerable, OperationPass<gpu::GPUModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckPtxLowerable)
  StringRef getArgument() const override { return "kvir-check-ptx-lowerable"; }
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([](Operation *op) {
      std::string why = whyNotLowerableToPtx(op);
      if (why.empty())
        return WalkResult::advance();
      op->emitOpError() << "cannot be compiled for the GPU: " << why;
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
/// Fails with a diagnostic at the first NVVM op the kernels' chip lacks
/// (a wgmma on sm_80): nvvm-attach-target would attach the chip and leave
/// a module that does not verify.
struct CheckChipOps
    : PassWrapper<CheckChipOps, OperationPass<gpu::GPUModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckChipOps)
  explicit CheckChipOps(std::string chip) : chip(std::move(chip)) {}
  StringRef getArgument() const override { return "kvir-check-chip-ops"; }
  void runOnOperation() override {
    NVVM::NVVMCheckSMVersion target =
        NVVM::NVVMCheckSMVersion::getTargetSMVersionFromStr(chip);
    WalkResult result = getOperation()->walk([&](Operation *op) {
      std::optional<NVVM::NVVMCheckSMVersion> required;
      if (auto gated = dyn_cast<NVVM::RequiresSMInterface>(op))
        required = gated.getRequiredMinSMVersion();
      // setmaxnreg (sm_90a, PTX ISA 9.7.19.5) carries no requirement in
      // MLIR 22: LLVM would fail to select it.
      else if (isa<NVVM::SetMaxRegisterOp>(op))
        required = NVVM::NVVMCheckSMVersion(/*archAccelerated=*/true, 90);
      if (!required || required->isCompatibleWith(target))
        return WalkResult::advance();
      const NVVM::NVVMCheckSMVersion &needed = *required;
      op->emitOpError() << "needs sm_" << needed.smVersionList.front()
                        << (needed.archAccelerated ? "a" : "")
                        << (needed.archAccelerated ? "" : " or later")
                        << ", not the target's " << chip;
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
  std::string chip;
};
/// Raises the alignment of the module's dynamic shared memory (the global
/// convert-gpu-to-nvvm declares, 16-byte aligned) to what its kernels ask
/// for (kDynamicSharedAlignmentAttr).
struct AlignDynamicShared
    : PassWrapper<AlignDynamicShared, OperationPass<gpu::GPUModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AlignDynamicShared)
  StringRef getArgument() const override { return "kvir-align-dynamic-shared"; }
  void runOnOperation() override {
    int64_t alignment = 0;
    getOperation()->walk([&](LLVM::LLVMFuncOp func) {
      if (auto attr = func->getAttrOfType<IntegerAttr>(
              kvir::target::kDynamicSharedAlignmentAttr))
        alignment = std::max(alignment, attr.getInt());
    });
    if (!alignment)
      return;
    getOperation()->walk([&](LLVM::GlobalOp global) {
      if (global.getAddrSpace() == 3 &&
          global.getSymName().starts_with("__dynamic_shmem__") &&
          global.getAlignment().value_or(0) < uint64_t(alignment))
        global.setAlignment(alignment);
    });
  }
};
} // namespace

void kvir::target::addLoopLoweringPasses(OpPassManager &pm) {
  pm.addPass(createLowerAffinePass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  // expand-strided-metadata leaves affine.apply for the offsets it computes.
  pm.addPass(createLowerAffinePass());
  // Transfer ops with masks or out-of-bounds dims become scf + vector loads.
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
}

void kvir::target::buildGpuKernelLoweringPipeline(OpPassManager &modulePm) {
  OpPassManager &kernels = modulePm.nest<gpu::GPUModuleOp>();
  kernels.addPass(std::make_unique<ExpandKernelMath>());
  addLoopLoweringPasses(kernels);
  kernels.addPass(createConvertNVGPUToNVVMPass());
  // convert-gpu-to-nvvm maps the GPU address spaces and lowers gpu, memref,
  // arith, cf and func; vector ops (and the arith and ub ops their lowering
  // creates) follow, now that every memref has an integer address space.
  // Kernels take bare pointers (kvgpu-bare-kernel-abi has given every
  // memref argument a static rank-0 type), not memref descriptors.
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  kernels.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  kernels.addPass(std::make_unique<AlignDynamicShared>());
  kernels.addPass(createConvertVectorToLLVMPass());
  kernels.addPass(createArithToLLVMConversionPass());
  kernels.addPass(createUBToLLVMConversionPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(std::make_unique<CheckPtxLowerable>());
}

void kvir::target::addNVVMTarget(OpPassManager &modulePm,
                                 const TargetInfo &target) {
  GpuNVVMAttachTargetOptions options;
  options.chip = target.chip.str();
  options.features = TargetInfo::ptxFeatures().str();
  options.optLevel = 3;
  modulePm.addNestedPass<gpu::GPUModuleOp>(
      std::make_unique<CheckChipOps>(target.chip.str()));
  modulePm.addPass(createGpuNVVMAttachTarget(options));
}
