//===- WarpRoles.cpp - What each warp of a kernel does --------------------===//
#include "kvir/Codegen/WarpRoles.h"
#include "kvir/Codegen/IRBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

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

void WarpRoles::emit(
    ImplicitLocOpBuilder &b, Value warp,
    function_ref<void(ImplicitLocOpBuilder &, unsigned, Value)> body) const {
  IRBuilder ir{b};
  if (roles.size() == 1)
    return body(b, 0, warp);
  for (unsigned r = 0; r < roles.size(); ++r) {
    Value first = ir.idx(firstWarp(r));
    Value inRole = arith::AndIOp::create(
        b, ir.cmp(arith::CmpIPredicate::sge, warp, first),
        ir.lt(warp, ir.idx(firstWarp(r) + roles[r].warps)));
    emitIf(b, inRole, [&](ImplicitLocOpBuilder &rb) {
      body(rb, r, IRBuilder{rb}.sub(warp, first));
    });
  }
}
