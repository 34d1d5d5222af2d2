//===- WarpRoles.cpp - What each warp of a kernel does --------------------===//
#include "kvir/Codegen/WarpRoles.h"
#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <cassert>

using namespace mlir;
using namespace kvir::codegen;

WarpRoles::WarpRoles(ArrayRef<WarpRole> roles) : roles(roles) {
  assert(!roles.empty() && "a block has at least one role");
}

WarpRoles WarpRoles::single(StringRef name, int64_t warps) {
  return WarpRoles({WarpRole{name.str(), warps, 0}});
}

int64_t WarpRoles::getNumWarps() const {
  int64_t warps = 0;
  for (const WarpRole &role : roles)
    warps += role.warps;
  return warps;
}

int64_t WarpRoles::firstWarp(unsigned role) const {
  int64_t first = 0;
  for (unsigned r = 0; r < role; ++r)
    first += roles[r].warps;
  return first;
}

std::optional<std::string>
WarpRoles::whyNot(const target::TargetInfo &target) const {
  for (const WarpRole &role : roles)
    if (role.warps <= 0)
      return "warp role '" + role.name + "' has no warps";
  if (getNumThreads() > target::TargetInfo::kMaxThreadsPerBlock)
    return "warp roles of " + std::to_string(getNumWarps()) +
           " warps exceed a block's " +
           std::to_string(target::TargetInfo::kMaxThreadsPerBlock) +
           " threads";
  // Roles at the kernel's allotment are not counted: their registers are
  // ptxas's, known only after compiling.
  int64_t budgeted = 0;
  for (unsigned r = 0; r < roles.size(); ++r) {
    const WarpRole &role = roles[r];
    if (!role.maxRegisters)
      continue;
    // setmaxnreg applies to a warpgroup's four warps at once.
    if (role.maxRegisters < 24 || role.maxRegisters > 256 ||
        role.maxRegisters % 8 || role.warps % 4 || firstWarp(r) % 4)
      return "warp role '" + role.name + "': a register budget of " +
             std::to_string(role.maxRegisters) + " for " +
             std::to_string(role.warps) +
             " warps (setmaxnreg takes a multiple of 8 in [24, 256] for "
             "whole warpgroups)";
    budgeted += role.maxRegisters * 32 * role.warps;
  }
  if (budgeted > target.registersPerSM)
    return "warp roles budget " + std::to_string(budgeted) +
           " registers; an SM of " + target.chip.str() + " has " +
           std::to_string(target.registersPerSM);
  return std::nullopt;
}

bool WarpRoles::budgetsRegisters() const {
  return llvm::any_of(roles,
                      [](const WarpRole &role) { return role.maxRegisters; });
}

int64_t WarpRoles::registersAtLaunch() const {
  return std::min<int64_t>(256, kRegisterFile / getNumThreads() / 8 * 8);
}

void WarpRoles::declareLaunchBounds(Operation *kernel) const {
  if (!budgetsRegisters())
    return;
  // Without it ptxas cannot tell the registers a thread starts with and
  // ignores setmaxnreg (C7508).
  kernel->setAttr(
      NVVM::NVVMDialect::getMinctasmAttrName(),
      IntegerAttr::get(IntegerType::get(kernel->getContext(), 32), 1));
}

/// Moves the warpgroups of `role` to its register budget, if it has one.
static void setRegisterBudget(ImplicitLocOpBuilder &b, const WarpRole &role,
                              int64_t atLaunch) {
  if (!role.maxRegisters || role.maxRegisters == atLaunch)
    return;
  NVVM::SetMaxRegisterOp::create(b, role.maxRegisters,
                                 role.maxRegisters > atLaunch
                                     ? NVVM::SetMaxRegisterAction::increase
                                     : NVVM::SetMaxRegisterAction::decrease);
}

void WarpRoles::emit(
    ImplicitLocOpBuilder &b, Value warp,
    function_ref<void(ImplicitLocOpBuilder &, unsigned, Value)> body) const {
  IRBuilder ir{b};
  int64_t atLaunch = registersAtLaunch();
  if (roles.size() == 1) {
    setRegisterBudget(b, roles.front(), atLaunch);
    return body(b, 0, warp);
  }
  for (unsigned r = 0; r < roles.size(); ++r) {
    Value first = ir.idx(firstWarp(r));
    Value inRole = arith::AndIOp::create(
        b, ir.cmp(arith::CmpIPredicate::sge, warp, first),
        ir.lt(warp, ir.idx(firstWarp(r) + roles[r].warps)));
    emitIf(b, inRole, [&](ImplicitLocOpBuilder &rb) {
      setRegisterBudget(rb, roles[r], atLaunch);
      body(rb, r, IRBuilder{rb}.sub(warp, first));
    });
  }
}
