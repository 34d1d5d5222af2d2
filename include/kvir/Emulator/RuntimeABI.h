//===- RuntimeABI.h - Calls instrumented kernels make -----------*- C++ -*-===//
//
// The contract between the instrumentation pass (which rewrites NVVM ops and
// memory accesses of a kernel into calls) and the emulator runtime (which
// implements them on CPU fibers). Names and codes here are the whole ABI.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_EMULATOR_RUNTIMEABI_H
#define KVIR_EMULATOR_RUNTIMEABI_H

#include <cstdint>

namespace kvir::emu::kabi {

constexpr const char *kSreg = "__kvemu_sreg";                 // u32(u32 which)
constexpr const char *kBarrier = "__kvemu_barrier";           // void(u32 id, u32 count, u32 site)
constexpr const char *kSyncWarp = "__kvemu_syncwarp";         // void(u32 mask, u32 site)
constexpr const char *kShfl = "__kvemu_shfl";                 // u64(kind, mask, val, b, c, site)
constexpr const char *kVote = "__kvemu_vote";                 // u32(kind, mask, pred, site)
constexpr const char *kMma = "__kvemu_mma";                   // void(m, n, k, atype, a, b, c, d, site)
constexpr const char *kLdMatrix = "__kvemu_ldmatrix";         // void(num, trans, ptr, out, site)
constexpr const char *kCpAsync = "__kvemu_cp_async";          // void(dst, src, size, srcsize, site, base, arg)
constexpr const char *kCpAsyncCommit = "__kvemu_cp_async_commit";
constexpr const char *kCpAsyncWait = "__kvemu_cp_async_wait"; // void(u32 n)
constexpr const char *kAccess = "__kvemu_access";             // void(ptr, u64 size, u32 flags, u32 site, base, arg)
constexpr const char *kAccessMasked = "__kvemu_access_masked"; // void(ptr, u64 elem size, u64 mask, u32 flags, u32 site, base, arg)
// `base, arg` of an access: the kernel pointer argument the address is
// derived from (through address arithmetic) and its index, or (null, -1).
// The access must stay inside the allocation that argument points into.
constexpr const char *kSharedBase = "__kvemu_shared_base";    // ptr()
constexpr const char *kTrap = "__kvemu_trap";                 // void(u32 site)
// Integer division with a divisor that x86 traps on (0, or -1 with the
// most negative dividend): PTX gives an unspecified value; the emulator
// reports the kernel. `fault`: 0 none, 1 division by zero, 2 overflow.
constexpr const char *kDivide = "__kvemu_divide";             // void(u32 fault, u32 site)
// Math functions that compute the same bits on every host, by C name:
// "__kvemu_math_exp2f" is float(float), "__kvemu_math_pow" double(double,
// double) (lib/Emulator/HostMath.h lists them).
constexpr const char *kMathPrefix = "__kvemu_math_";

/// __kvemu_sreg selectors.
enum Sreg : uint32_t {
  TidX, TidY, TidZ, NtidX, NtidY, NtidZ, CtaidX, CtaidY, CtaidZ,
  NctaidX, NctaidY, NctaidZ, LaneId, WarpSize, WarpId, NWarpId, SmId, NSmId,
  LaneMaskLt, LaneMaskLe, LaneMaskEq, LaneMaskGe, LaneMaskGt, Clock
};

/// __kvemu_access flags. Bits AlignShift.. hold log2 of the alignment the
/// access assumes (a misaligned access faults on a GPU).
enum AccessFlags : uint32_t { Load = 0, Store = 1, Atomic = 2 };
constexpr uint32_t AlignShift = 8;

/// Shuffle kinds, as PTX shfl.sync modes.
enum ShflKind : uint32_t { Bfly = 0, Up = 1, Down = 2, Idx = 3 };

/// Vote kinds.
enum VoteKind : uint32_t { Any = 0, All = 1, Ballot = 2, Uni = 3 };

/// Element types of mma operands.
enum MmaType : uint32_t { F16 = 0, BF16 = 1, F32 = 2, TF32 = 3 };

} // namespace kvir::emu::kabi

#endif // KVIR_EMULATOR_RUNTIMEABI_H
