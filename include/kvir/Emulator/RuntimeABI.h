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

// One line per entry point, its signature beside it.
// clang-format off

constexpr const char *kSreg = "__kvemu_sreg";                 // u32(u32 which)
constexpr const char *kBarrier = "__kvemu_barrier";           // void(u32 id, u32 count, u32 site)
constexpr const char *kSyncWarp = "__kvemu_syncwarp";         // void(u32 mask, u32 site)
constexpr const char *kShfl = "__kvemu_shfl";                 // u64(kind, mask, val, b, c, site)
constexpr const char *kVote = "__kvemu_vote";                 // u32(kind, mask, pred, site)
constexpr const char *kMma = "__kvemu_mma";                   // void(m, n, k, atype, a, b, c, d, site)
constexpr const char *kLdMatrix = "__kvemu_ldmatrix";         // void(num, trans, ptr, out, site)
constexpr const char *kStMatrix = "__kvemu_stmatrix";         // void(num, trans, ptr, regs, site)
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
// sm_90 (lib/Emulator/Wgmma.cpp, MBarrier.cpp). wgmma: `shape` is n | k << 16,
// `types` a | b << 8 | d << 16 (WgmmaType), `flags` WgmmaFlags; `acc` holds
// the n / 2 accumulator words in and D out; the result is the op's ticket,
// which every later read of D (or of the A registers) passes to kWgmmaRead.
// kRegDefined returns the thread's register clock after a definition of a
// value a wgmma will read from registers.
constexpr const char *kWgmma = "__kvemu_wgmma"; // u32(shape, types, flags, descA, aRegs, descB, acc, accTicket, accDefined, aDefined, site)
constexpr const char *kWgmmaFence = "__kvemu_wgmma_fence";   // void(site)
constexpr const char *kWgmmaCommit = "__kvemu_wgmma_commit"; // void(site)
constexpr const char *kWgmmaWait = "__kvemu_wgmma_wait";     // void(n, site)
constexpr const char *kWgmmaRead = "__kvemu_wgmma_read";     // void(ticket, site)
constexpr const char *kRegDefined = "__kvemu_reg_defined";   // u64()
constexpr const char *kSetMaxNReg = "__kvemu_setmaxnreg";    // void(count, inc, site)
constexpr const char *kFenceProxyAsync = "__kvemu_fence_proxy_async"; // void(site)
// fence.proxy.tensormap::generic.acquire on the 128-byte tensor map at ptr.
constexpr const char *kFenceProxyTensorMap = "__kvemu_fence_proxy_tensormap"; // void(ptr, site)
// Clusters (lib/Emulator/Cluster.cpp): barrier.cluster.arrive (relaxed: 1
// for .relaxed) and wait; mapa of a shared address to CTA `rank`'s.
constexpr const char *kClusterArrive = "__kvemu_cluster_arrive"; // void(relaxed, site)
constexpr const char *kClusterWait = "__kvemu_cluster_wait";     // void(site)
constexpr const char *kMapa = "__kvemu_mapa"; // ptr(ptr, rank, site)
// griddepcontrol.wait: the primary grid is complete and visible from here.
constexpr const char *kGridDependencyWait = "__kvemu_griddepcontrol_wait"; // void(site)
// mbarrier operations on a shared address: kind is MBarrierOp, `a` the
// count, transaction count or parity, `b` a state; `enabled` the PTX
// predicate (0: the instruction does nothing). The result is the state
// token (arrive) or the predicate (test_wait / try_wait).
constexpr const char *kMBarrier = "__kvemu_mbarrier"; // u64(kind, ptr, u32 a, u64 b, u32 enabled, site)
constexpr const char *kFenceMBarrierInit = "__kvemu_fence_mbarrier_init"; // void(site)
// Named barriers: bar.sync / bar.arrive id, count (0: the whole block).
constexpr const char *kBarrierArrive = "__kvemu_barrier_arrive"; // void(id, count, site)
// Bulk and tensor copies (lib/Emulator/Tma.cpp): `coords` points at `rank`
// i32 tensor coordinates, `enabled` is the PTX predicate.
constexpr const char *kTmaLoad = "__kvemu_tma_load";     // void(map, dst, mbar, coords, rank, enabled, site)
constexpr const char *kTmaStore = "__kvemu_tma_store";   // void(map, src, coords, rank, enabled, site)
constexpr const char *kBulkLoad = "__kvemu_bulk_load";   // void(dst, src, size, mbar, site)
constexpr const char *kBulkStore = "__kvemu_bulk_store"; // void(dst, src, size, site)
constexpr const char *kBulkCommit = "__kvemu_bulk_commit"; // void()
constexpr const char *kBulkWait = "__kvemu_bulk_wait";   // void(n, read)
// Math functions that compute the same bits on every host, by C name:
// "__kvemu_math_exp2f" is float(float), "__kvemu_math_pow" double(double,
// double) (lib/Emulator/HostMath.h lists them).
constexpr const char *kMathPrefix = "__kvemu_math_";

// clang-format on

/// __kvemu_sreg selectors.
enum Sreg : uint32_t {
  TidX,
  TidY,
  TidZ,
  NtidX,
  NtidY,
  NtidZ,
  CtaidX,
  CtaidY,
  CtaidZ,
  NctaidX,
  NctaidY,
  NctaidZ,
  LaneId,
  WarpSize,
  WarpId,
  NWarpId,
  SmId,
  NSmId,
  LaneMaskLt,
  LaneMaskLe,
  LaneMaskEq,
  LaneMaskGe,
  LaneMaskGt,
  Clock,
  ClusterIdX,
  ClusterIdY,
  ClusterIdZ,
  NClusterIdX,
  NClusterIdY,
  NClusterIdZ,
  ClusterCtaIdX,
  ClusterCtaIdY,
  ClusterCtaIdZ,
  ClusterNCtaIdX,
  ClusterNCtaIdY,
  ClusterNCtaIdZ,
  ClusterCtaRank,
  ClusterNCtaRank
};

/// __kvemu_access flags. Bits AlignShift.. hold log2 of the alignment the
/// access assumes (a misaligned access faults on a GPU).
enum AccessFlags : uint32_t { Load = 0, Store = 1, Atomic = 2 };
constexpr uint32_t AlignShift = 8;

/// Shuffle kinds, as PTX shfl.sync modes.
enum ShflKind : uint32_t { Bfly = 0, Up = 1, Down = 2, Idx = 3 };

/// Vote kinds.
enum VoteKind : uint32_t { Any = 0, All = 1, Ballot = 2, Uni = 3 };

/// wgmma operand types, as PTX names them.
enum WgmmaType : uint32_t {
  WF16 = 0,
  WBF16 = 1,
  WE4M3 = 2,
  WE5M2 = 3,
  WF32 = 4
};
/// wgmma flags: scale-d (accumulate), imm-scale-a/b = -1, imm-trans-a/b.
enum WgmmaFlags : uint32_t {
  ScaleD = 1,
  NegateA = 2,
  NegateB = 4,
  TransposeA = 8,
  TransposeB = 16
};
/// mbarrier operations.
enum MBarrierOp : uint32_t {
  MbInit = 0,
  MbInval,
  MbArrive,
  MbArriveDrop,
  MbExpectTx,
  MbCompleteTx,
  MbArriveExpectTx,
  MbArriveDropExpectTx,
  MbTestWait,
  MbTestWaitParity,
  MbTryWait,
  MbTryWaitParity
};

/// Element types of mma operands.
enum MmaType : uint32_t { F16 = 0, BF16 = 1, F32 = 2, TF32 = 3 };

} // namespace kvir::emu::kabi

#endif // KVIR_EMULATOR_RUNTIMEABI_H
