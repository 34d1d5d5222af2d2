//===- HostIndependence.cpp - Kernels that run alike on every host --------===//
#include "HostMath.h"
#include "kvir/Emulator/Instrument.h"
#include "kvir/Emulator/RuntimeABI.h"
#include "kvir/Target/Host/Passes.h"

#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

/// The C math name of an LLVM math intrinsic the emulator computes itself
/// ("exp2"), "" for one it has no host-independent version of, or
/// std::nullopt for an op that is not a host-libm math intrinsic.
static std::optional<StringRef> mathName(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<StringRef>>(op)
      .Case([](LLVM::ExpOp) { return "exp"; })
      .Case([](LLVM::Exp2Op) { return "exp2"; })
      .Case([](LLVM::LogOp) { return "log"; })
      .Case([](LLVM::Log2Op) { return "log2"; })
      .Case([](LLVM::SinOp) { return "sin"; })
      .Case([](LLVM::CosOp) { return "cos"; })
      .Case([](LLVM::TanhOp) { return "tanh"; })
      .Case([](LLVM::PowOp) { return "pow"; })
      .Case<LLVM::Log10Op, LLVM::TanOp, LLVM::SinhOp, LLVM::CoshOp,
            LLVM::ASinOp, LLVM::ACosOp, LLVM::ATanOp, LLVM::PowIOp,
            LLVM::SincosOp>([](Operation *) { return StringRef(); })
      .Default([](Operation *) { return std::nullopt; });
}

/// `op` (f32 or f64, scalar or vector) as calls of the emulator's
/// `__kvemu_math_<name>[f]`, one per element.
static LogicalResult callHostMath(Operation *op, StringRef name,
                                  ModuleOp module) {
  Type type = op->getResult(0).getType();
  Type element = getElementTypeOrSelf(type);
  if (!element.isF32() && !element.isF64())
    return op->emitError("the emulator computes '")
           << op->getName() << "' in f32 and f64 only, not " << element;
  std::string symbol = (kvir::emu::kabi::kMathPrefix + name +
                        (element.isF32() ? "f" : ""))
                           .str();
  OpBuilder b(op);
  Location loc = op->getLoc();
  SmallVector<Type> params(op->getNumOperands(), element);
  FailureOr<LLVM::LLVMFuncOp> fn =
      LLVM::lookupOrCreateFn(b, module, symbol, params, element);
  if (failed(fn))
    return op->emitError("the emulator's ") << symbol << " is declared "
                                               "with another type";
  auto vector = dyn_cast<VectorType>(type);
  if (vector && vector.isScalable())
    return op->emitError("the emulator cannot execute '")
           << op->getName() << "' on a scalable vector";
  if (!vector) {
    Value r = LLVM::CallOp::create(b, loc, *fn, op->getOperands()).getResult();
    op->getResult(0).replaceAllUsesWith(r);
    op->erase();
    return success();
  }
  Value result = LLVM::PoisonOp::create(b, loc, type);
  for (int64_t i = 0; i < vector.getNumElements(); ++i) {
    Value index =
        LLVM::ConstantOp::create(b, loc, b.getI64Type(), b.getI64IntegerAttr(i));
    SmallVector<Value> args;
    for (Value v : op->getOperands())
      args.push_back(LLVM::ExtractElementOp::create(b, loc, v, index));
    Value r = LLVM::CallOp::create(b, loc, *fn, args).getResult();
    result = LLVM::InsertElementOp::create(b, loc, result, r, index);
  }
  op->getResult(0).replaceAllUsesWith(result);
  op->erase();
  return success();
}

/// Whether a kernel may call the external function `name`: the emulator's
/// runtime, libdevice (the emulator's shims; a missing one fails to link),
/// and CUDA's device-side printf and assert.
static bool isDeviceCallable(StringRef name) {
  return name.starts_with("__kvemu_") || name.starts_with("__nv_") ||
         name == "vprintf" || name == "__assertfail";
}

LogicalResult kvir::emu::makeHostIndependent(ModuleOp module) {
  PassManager pm(module.getContext());
  pm.addPass(kvir::target::createLLVMHostIndependentFloat());
  if (failed(pm.run(module)))
    return failure();
  SmallVector<std::pair<Operation *, StringRef>> calls;
  WalkResult unsupported = module.walk([&](Operation *op) {
    std::optional<StringRef> name = mathName(op);
    if (!name)
      return WalkResult::advance();
    if (name->empty()) {
      op->emitError("the emulator has no host-independent '")
          << op->getName()
          << "' (it computes exp, exp2, log, log2, sin, cos, tanh and pow; "
             "the host's libm differs from CPU to CPU)";
      return WalkResult::interrupt();
    }
    calls.push_back({op, *name});
    return WalkResult::advance();
  });
  if (unsupported.wasInterrupted())
    return failure();
  for (auto [op, name] : calls)
    if (failed(callHostMath(op, name, module)))
      return failure();
  for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
    if (fn.isExternal() && !isDeviceCallable(fn.getSymName()))
      return fn.emitError("kernels call '")
             << fn.getSymName()
             << "', which is neither a function of their module nor one a "
                "GPU kernel can call (libdevice's __nv_*, vprintf, "
                "__assertfail); the emulator does not run host functions in "
                "kernels";
  return success();
}
