//===- WarpRoles.h - What each warp of a kernel does -----------*- C++ -*-===//
//
// A kernel's block is a sequence of warp roles, each a name, a number of
// warps and the registers per thread it runs with. The kernels of today
// have one role (every warp copies, computes and stores). Warp-specialized
// kernels declare producer warps that only issue copies and consumer
// warpgroups that only compute, with `setmaxnreg` moving registers from
// the former to the latter. The declaration is the one source of the
// block's size and of which warps run which role's code (`emit`); its
// register budget is checked against the chip before a kernel is built.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_WARPROLES_H
#define KVIR_CODEGEN_WARPROLES_H

#include "kvir/Target/GPU/TargetInfo.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace kvir::codegen {

struct WarpRole {
  std::string name;
  int64_t warps = 1;
  /// Registers per thread the role runs with (setmaxnreg: a multiple of 8
  /// in [24, 256], for whole warpgroups), or 0: what ptxas allots the
  /// kernel.
  int64_t maxRegisters = 0;
};

class WarpRoles {
public:
  /// Roles in warp order: role r owns warps [firstWarp(r), firstWarp(r) +
  /// warps).
  explicit WarpRoles(llvm::ArrayRef<WarpRole> roles);
  /// One role of `warps` warps at the kernel's register allotment.
  static WarpRoles single(llvm::StringRef name, int64_t warps);

  llvm::ArrayRef<WarpRole> getRoles() const { return roles; }
  int64_t getNumWarps() const;
  int64_t getNumThreads() const { return 32 * getNumWarps(); }
  int64_t firstWarp(unsigned role) const;

  /// Why the roles cannot form a block on `target`, or nullopt: warps in
  /// every role, at most 1024 threads; a register budget in setmaxnreg's
  /// range and granularity, for whole warpgroups, whose registers fit the
  /// SM's file (roles without a budget are not counted).
  std::optional<std::string> whyNot(const target::TargetInfo &target) const;

  /// The register file setmaxnreg divides (an SM's on every chip that has
  /// the instruction, sm_90a and later).
  static constexpr int64_t kRegisterFile = 64 * 1024;
  /// Whether a role runs with a register budget (setmaxnreg): the kernel
  /// then declares one block per SM (.minnctapersm 1) besides its exact
  /// block size, so that ptxas knows the registers each thread starts
  /// with.
  bool budgetsRegisters() const;
  /// The registers per thread a block starts with at one block per SM:
  /// the file over its threads, in setmaxnreg's steps of 8, at most 256.
  int64_t registersAtLaunch() const;
  /// Declares on `kernel` (whose .reqntid is the roles' block) what
  /// setmaxnreg needs: one block per SM (`nvvm.minctasm` 1) where a role
  /// has a budget; nothing otherwise.
  void declareLaunchBounds(mlir::Operation *kernel) const;

  /// Builds `body(builder, role, warpInRole)` for each role: under a branch
  /// on `warp` (the thread's warp in the block, uniform across the warp)
  /// where there are several roles, at `b` itself for one. A role with a
  /// register budget other than registersAtLaunch() first moves to it
  /// (setmaxnreg.dec / .inc). With several roles a block barrier inside a
  /// body would diverge: roles synchronize through named barriers or
  /// mbarriers.
  void emit(mlir::ImplicitLocOpBuilder &b, mlir::Value warp,
            llvm::function_ref<void(mlir::ImplicitLocOpBuilder &, unsigned,
                                    mlir::Value)>
                body) const;

private:
  llvm::SmallVector<WarpRole> roles;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_WARPROLES_H
