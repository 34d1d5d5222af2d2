//===- Wgmma.cpp - Warpgroup MMA (sm_90a wgmma) on the CPU ----------------===//
//
// wgmma.mma_async as the PTX ISA defines it (9.7.15, "Asynchronous
// Warpgroup Level Matrix Multiply-Accumulate Instructions"): the 128 threads
// of a warpgroup together compute D (64 x N) = A (64 x K) * B (K x N) + D,
// A and B read from shared memory through 64-bit matrix descriptors, or A
// from registers. The operation is asynchronous: it completes at some point
// before the wgmma.wait_group that retires its group. The emulator computes
// it at issue and reports every access that could tell the difference —
// a read of D or of the A registers before the retiring wait, a write of a
// shared-memory operand before it — so a kernel without reports gets the
// results the hardware gives, whenever it runs the operation.
//
//===----------------------------------------------------------------------===//
#include "Runtime.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringExtras.h"

#include <cstring>

using namespace kvir::emu;

const WgmmaOp *WarpgroupState::find(uint32_t ticket) const {
  for (const WgmmaOp &op : uncommitted)
    if (op.ticket == ticket)
      return &op;
  for (const std::vector<WgmmaOp> &group : groups)
    for (const WgmmaOp &op : group)
      if (op.ticket == ticket)
        return &op;
  return nullptr;
}

namespace {

const char *typeName(uint32_t type) {
  switch (type) {
  case kabi::WF16:
    return "f16";
  case kabi::WBF16:
    return "bf16";
  case kabi::WE4M3:
    return "e4m3";
  case kabi::WE5M2:
    return "e5m2";
  case kabi::WF32:
    return "f32";
  }
  return "?";
}

uint32_t elementBytes(uint32_t type) {
  return type == kabi::WE4M3 || type == kabi::WE5M2 ? 1
         : type == kabi::WF32                       ? 4
                                                    : 2;
}

/// Every f16, bf16, e4m3 and e5m2 value is exactly a float: the fp8
/// tables built once by APFloat from the formats' definitions.
float elementToFloat(uint32_t type, uint32_t bits) {
  auto build = [](const llvm::fltSemantics &sem) {
    std::vector<float> t(256);
    for (uint32_t i = 0; i < t.size(); ++i)
      t[i] = llvm::APFloat(sem, llvm::APInt(8, i)).convertToFloat();
    return t;
  };
  static const std::vector<float> e4m3 = build(llvm::APFloat::Float8E4M3FN());
  static const std::vector<float> e5m2 = build(llvm::APFloat::Float8E5M2());
  switch (type) {
  case kabi::WF16:
  case kabi::WBF16:
    return halfToFloat(uint16_t(bits), type == kabi::WBF16);
  case kabi::WE4M3:
    return e4m3[bits & 0xff];
  case kabi::WE5M2:
    return e5m2[bits & 0xff];
  }
  return 0;
}

/// The shared-memory matrix descriptor (PTX ISA 9.7.15.5.1.2.2, "Matrix
/// Descriptor Format"): bits 0-13 the start address, 16-29 the leading
/// dimension byte offset, 32-45 the stride dimension byte offset, each
/// encoded >> 4; bits 49-51 the base offset; bits 62-63 the swizzle mode
/// (0 none, 1 128-byte, 2 64-byte, 3 32-byte).
struct Descriptor {
  uint64_t start, leading, stride;
  uint32_t baseOffset;
  uint32_t swizzleBytes; // 0 (none), 32, 64 or 128
};

Descriptor decode(uint64_t desc) {
  Descriptor d;
  d.start = (desc & 0x3fff) << 4;
  d.leading = ((desc >> 16) & 0x3fff) << 4;
  d.stride = ((desc >> 32) & 0x3fff) << 4;
  d.baseOffset = (desc >> 49) & 7;
  static const uint32_t swizzles[4] = {0, 128, 64, 32};
  d.swizzleBytes = swizzles[desc >> 62];
  return d;
}

std::string describe(const Descriptor &d) {
  return "start " + std::to_string(d.start) + ", leading byte offset " +
         std::to_string(d.leading) + ", stride byte offset " +
         std::to_string(d.stride) + ", base offset " +
         std::to_string(d.baseOffset) + ", " +
         (d.swizzleBytes ? std::to_string(d.swizzleBytes) + "-byte swizzle"
                         : std::string("no swizzle"));
}

/// The shared-memory offset of element (mn, k) of an operand: row mn of A
/// (M) or column mn of B (N), index k along K. The canonical layouts of PTX
/// ISA 9.7.15.5.1.2.1 are built of 16-byte units: a core matrix is 8 rows
/// of 16 bytes.
///  - K-major (no transpose), no swizzle: core matrix (mn / 8, k / (16/e))
///    at mn/8 * SBO + k-chunk * LBO, its rows 16 bytes apart.
///  - K-major, swizzle W (32, 64, 128): rows of W bytes hold K contiguously
///    (a wgmma's K is at most 32 bytes, within one row), 8-row groups
///    SBO apart; LBO is not used.
///  - MN-major (transposed; 16-bit types), no swizzle: core matrix of 8 k
///    rows of 16 bytes along MN, at (mn / (16/e)) * SBO + (k / 8) * LBO.
///  - MN-major, swizzle W: rows of W bytes along MN, one per k; the 8-k
///    groups SBO apart, the W-byte blocks along MN LBO apart.
/// Then the swizzle permutes the 16-byte chunks of each W-byte row: address
/// bits [4, 4 + log2(W/16)) are XORed with bits [7, 7 + log2(W/16)).
uint64_t unswizzledOffset(const Descriptor &d, bool mnMajor, uint32_t e,
                          uint32_t mn, uint32_t k) {
  uint32_t perChunk = 16 / e; // elements per 16 bytes
  if (!mnMajor) {
    if (!d.swizzleBytes)
      return d.start + (mn / 8) * d.stride + (k / perChunk) * d.leading +
             (mn % 8) * 16 + (k % perChunk) * e;
    return d.start + (mn / 8) * d.stride + (mn % 8) * d.swizzleBytes + k * e;
  }
  if (!d.swizzleBytes)
    return d.start + (mn / perChunk) * d.stride + (k / 8) * d.leading +
           (k % 8) * 16 + (mn % perChunk) * e;
  uint32_t perRow = d.swizzleBytes / e;
  return d.start + (mn / perRow) * d.leading + (k / 8) * d.stride +
         (k % 8) * d.swizzleBytes + (mn % perRow) * e;
}

/// Loads an operand (rows x cols of `type`, row r and column c along MN
/// and K) through descriptor `d`, checking that every byte lies in the
/// block's shared memory. Returns false after a report.
bool loadOperand(BlockRun &b, const char *name, const Descriptor &d,
                 bool mnMajor, uint32_t type, uint32_t rows, uint32_t cols,
                 std::vector<float> &out, std::vector<uint64_t> &offsets,
                 std::string &error) {
  uint32_t e = elementBytes(type);
  out.assign(size_t(rows) * cols, 0);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < cols; ++c) {
      uint64_t offset =
          swizzleOffset(unswizzledOffset(d, mnMajor, e, r, c), d.swizzleBytes);
      if (offset + e > b.sharedBytes) {
        error = std::string("wgmma operand ") + name + " element (" +
                std::to_string(r) + ", " + std::to_string(c) +
                ") lies at shared offset " + std::to_string(offset) +
                ", outside the block's " + std::to_string(b.sharedBytes) +
                " bytes of shared memory (descriptor: " + describe(d) + ")";
        return false;
      }
      uint32_t bits = 0;
      std::memcpy(&bits, b.shared + offset, e);
      out[size_t(r) * cols + c] = elementToFloat(type, bits);
      offsets.push_back(offset);
    }
  return true;
}

/// What the emulator models of a descriptor's start (PTX ISA
/// 9.7.15.5.1.2.2): 16-byte aligned; with a swizzle, the pattern of 8 rows
/// of W bytes starts on a multiple of 8W bytes, possibly advanced along K
/// within its first row (how kernels step through K). A start further into
/// the pattern needs the base offset field, whose effect the ISA does not
/// define beyond its encoding: reported, never guessed.
std::string checkDescriptor(const char *name, const Descriptor &d) {
  if (d.start % 16)
    return std::string("wgmma descriptor of ") + name +
           " has a start address that is not 16-byte aligned";
  if (!d.swizzleBytes) {
    if (d.baseOffset)
      return std::string("wgmma descriptor of ") + name + " (" + describe(d) +
             "): a base offset without a swizzle";
    return "";
  }
  uint64_t repeat = 8 * d.swizzleBytes;
  if (d.start % repeat >= d.swizzleBytes || d.baseOffset)
    return std::string("wgmma descriptor of ") + name + " (" + describe(d) +
           "): the operand starts " + std::to_string(d.start % repeat) +
           " bytes into its " + std::to_string(repeat) +
           "-byte swizzle pattern; the emulator models starts within the "
           "pattern's first " +
           std::to_string(d.swizzleBytes) +
           "-byte row with base offset 0 (align the operand to " +
           std::to_string(repeat) + " bytes)";
  return "";
}

void blockReport(BlockRun &b, GpuThread &t, const std::string &what,
                 uint32_t site) {
  current.thread = &t;
  b.reports->push_back("kvir-emu: kernel '" + b.kernel->name + "': " + what +
                       "\n  " + describeThread() + "\n  at " +
                       describeSite(site));
  current.thread = nullptr;
  b.aborted = true;
}

/// Whether every thread's issue is the same operation (.aligned).
bool sameIssue(const WgmmaIssue &x, const WgmmaIssue &y) {
  return x.n == y.n && x.k == y.k && x.typeA == y.typeA && x.typeB == y.typeB &&
         x.typeD == y.typeD && x.flags == y.flags && x.descB == y.descB &&
         (x.aRegs != nullptr) == (y.aRegs != nullptr) &&
         (x.aRegs || x.descA == y.descA);
}

/// The accumulator fragment: register i of lane l of warp w holds D(16w +
/// l/4 + 8 ((i >> 1) & 1), 8 (i >> 2) + 2 (l % 4) + (i & 1)) (PTX ISA
/// 9.7.15.5.1.1, "Register Fragments", D for .m64nNk16 / k32 with f32).
std::pair<uint32_t, uint32_t> accumulatorPosition(uint32_t warp, uint32_t lane,
                                                  uint32_t i) {
  return {16 * warp + lane / 4 + 8 * ((i >> 1) & 1),
          8 * (i >> 2) + 2 * (lane % 4) + (i & 1)};
}

/// The A fragment of the RS form (PTX ISA 9.7.15.5.1.1, "Register
/// Fragments", matrix A): lane l of warp w holds four b32 registers, each
/// packing 2 (16-bit types, k16) or 4 (fp8, k32) elements, low bits first.
/// Element i of the thread lies in row 16w + l/4 + 8 ((i >> 1) & 1) and
/// column 8 (i >> 2) + 2 (l % 4) + (i & 1) for 16-bit types; in row 16w +
/// l/4 + 8 ((i >> 2) & 1) and column 16 (i >> 3) + 4 (l % 4) + (i & 3) for
/// fp8.
void gatherRegisterFragment(const std::vector<GpuThread *> &threads,
                            uint32_t type, uint32_t K, std::vector<float> &A) {
  uint32_t e = elementBytes(type), perRegister = 4 / e;
  for (const GpuThread *t : threads) {
    uint32_t w = t->warp % 4, g = t->lane / 4, q = t->lane % 4;
    for (uint32_t i = 0; i < 4 * perRegister; ++i) {
      uint32_t reg = t->wgArrival.mma->aRegs[i / perRegister];
      uint32_t bits =
          (reg >> (8 * e * (i % perRegister))) & ((1u << (8 * e)) - 1);
      uint32_t row = e == 2 ? 16 * w + g + 8 * ((i >> 1) & 1)
                            : 16 * w + g + 8 * ((i >> 2) & 1);
      uint32_t col = e == 2 ? 8 * (i >> 2) + 2 * q + (i & 1)
                            : 16 * (i >> 3) + 4 * q + (i & 3);
      A[size_t(row) * K + col] = elementToFloat(type, bits);
    }
  }
}

void executeMma(BlockRun &b, uint32_t group,
                std::vector<GpuThread *> &threads) {
  GpuThread &first = *threads.front();
  const WgmmaIssue &op = *first.wgArrival.mma;
  uint32_t site = first.wgArrival.site;
  for (GpuThread *t : threads)
    if (!sameIssue(*t->wgArrival.mma, op))
      return blockReport(
          b, *t,
          "wgmma.mma_async is .aligned: thread (" + std::to_string(t->tid[0]) +
              ") issues other operands (shape, types, flags or descriptors) "
              "than thread (" +
              std::to_string(first.tid[0]) + ") of its warpgroup",
          site);
  uint32_t M = 64, N = op.n, K = op.k;
  bool mnMajorA = op.flags & kabi::TransposeA;
  bool mnMajorB = op.flags & kabi::TransposeB;
  std::vector<float> A(size_t(M) * K), B;
  std::vector<uint64_t> offsets;
  std::string error;
  Descriptor da = decode(op.descA), db = decode(op.descB);
  if (op.aRegs) {
    if (mnMajorA)
      return blockReport(b, first,
                         "wgmma.mma_async with A in registers has no "
                         "transpose of A",
                         site);
    gatherRegisterFragment(threads, op.typeA, K, A);
  } else {
    error = checkDescriptor("A", da);
    if (error.empty())
      loadOperand(b, "A", da, mnMajorA, op.typeA, M, K, A, offsets, error);
  }
  std::vector<float> Bt; // N x K
  if (error.empty())
    error = checkDescriptor("B", db);
  if (error.empty())
    loadOperand(b, "B", db, mnMajorB, op.typeB, N, K, Bt, offsets, error);
  if (!error.empty())
    return blockReport(b, first, error, site);

  for (uint64_t offset : offsets)
    checkNotMBarrier(b, offset, elementBytes(op.typeA), "wgmma.mma_async reads",
                     site);
  // Shared-memory operands written by the generic proxy must have been
  // fenced (fence.proxy.async) by their writer since (PTX ISA 9.7.15.3,
  // "Async Proxy").
  // And whoever wrote them — a thread or a bulk copy — must be ordered
  // before the wgmma (an mbarrier wait, a barrier).
  for (uint64_t offset : offsets) {
    const BlockRun::Shadow &sh = b.shadow[offset];
    if (!writeOrderedBefore(b, first, sh))
      return blockReport(
          b, first,
          "wgmma.mma_async reads shared offset " + std::to_string(offset) +
              ", which " + describeWriter(b, sh) +
              " wrote without being ordered before the wgmma (wait on the "
              "mbarrier the copy completes on, or synchronize)\n  write at " +
              describeSite(sh.writer.site),
          site);
    std::string unfenced = unfencedGenericWrite(b, offset, "wgmma.mma_async");
    if (!unfenced.empty())
      return blockReport(b, first, unfenced, site);
  }

  uint32_t ticket = b.nextTicket++;
  if (b.wgmmaReaders.empty())
    b.wgmmaReaders.assign(b.sharedBytes * BlockRun::kMaxWarpgroups, 0);
  for (uint64_t offset : offsets)
    for (uint32_t i = 0; i < elementBytes(op.typeA) && i < 4; ++i)
      b.wgmmaReaders[(offset + i) * BlockRun::kMaxWarpgroups + group] = ticket;

  float signA = op.flags & kabi::NegateA ? -1.0f : 1.0f;
  float signB = op.flags & kabi::NegateB ? -1.0f : 1.0f;
  bool accumulate = op.flags & kabi::ScaleD;
  for (GpuThread *t : threads) {
    WgmmaIssue &mine = *t->wgArrival.mma;
    for (uint32_t i = 0; i < N / 2; ++i) {
      auto [row, col] = accumulatorPosition(t->warp % 4, t->lane, i);
      float acc = accumulate ? wordToFloat(mine.acc[i]) : 0.0f;
      for (uint32_t x = 0; x < K; ++x)
        acc += (signA * A[size_t(row) * K + x]) *
               (signB * Bt[size_t(col) * K + x]);
      mine.acc[i] = floatToWord(acc);
    }
    t->result = ticket;
  }
  b.warpgroups[group].uncommitted.push_back(
      {ticket, site, N, K, op.typeA | op.typeB << 8 | op.typeD << 16,
       std::move(offsets), elementBytes(op.typeA)});
  b.stats->wgmmaOps++;
  b.stats->tensorCoreMacs += uint64_t(64) * N * K;
  b.work.wgmmaOps++;
  b.work.tensorCoreMacs += uint64_t(64) * N * K;
  b.stats->wgmmaShapes["m64n" + std::to_string(N) + "k" + std::to_string(K) +
                       "." + typeName(op.typeD) + "." + typeName(op.typeA)]++;
}

} // namespace

void kvir::emu::checkWgmmaOperandWrite(BlockRun &b, uint64_t offset,
                                       uint64_t bytes, const std::string &what,
                                       uint32_t site) {
  if (b.wgmmaReaders.empty())
    return;
  for (uint64_t i = offset; i < offset + bytes && i < b.sharedBytes; ++i)
    for (uint32_t g = 0; g < b.warpgroups.size(); ++g) {
      uint32_t ticket = b.wgmmaReaders[i * BlockRun::kMaxWarpgroups + g];
      const WarpgroupState &wg = b.warpgroups[g];
      if (!ticket || ticket < wg.oldestPending(b.nextTicket))
        continue;
      const WgmmaOp *op = wg.find(ticket);
      fail(what + " shared offset " + std::to_string(i) +
               ", an operand of the wgmma.mma_async of warpgroup " +
               std::to_string(g) + " at " +
               (op ? describeSite(op->site) : std::string("?")) +
               ", before the wgmma.wait_group that retires it",
           site);
    }
}

void kvir::emu::executeWarpgroupCollective(BlockRun &b, uint32_t group,
                                           std::vector<GpuThread *> &threads) {
  WarpgroupState &wg = b.warpgroups[group];
  const WarpgroupArrival &a = threads.front()->wgArrival;
  switch (a.kind) {
  case WarpgroupArrival::Fence:
    for (GpuThread *t : threads)
      t->lastWgmmaFence = ++t->regClock;
    return;
  case WarpgroupArrival::Mma:
    return executeMma(b, group, threads);
  case WarpgroupArrival::Commit:
    // An empty group is still a group (PTX ISA 9.7.15.7.2).
    wg.groups.push_back(std::move(wg.uncommitted));
    wg.uncommitted.clear();
    return;
  case WarpgroupArrival::WaitGroup:
    for (GpuThread *t : threads)
      if (t->wgArrival.value != a.value)
        return blockReport(b, *t,
                           "wgmma.wait_group is .aligned: its threads wait "
                           "for different group counts",
                           a.site);
    while (wg.groups.size() > a.value) {
      for (const WgmmaOp &op : wg.groups.front())
        recordWgmmaReads(b, group, op);
      wg.groups.erase(wg.groups.begin());
    }
    return;
  case WarpgroupArrival::SetMaxNReg: {
    for (GpuThread *t : threads)
      if (t->wgArrival.value != a.value)
        return blockReport(b, *t,
                           "setmaxnreg is .aligned: the threads of a "
                           "warpgroup request different register counts",
                           a.site);
    wg.maxRegisters = a.value & 0xffff;
    uint64_t total = 0;
    bool allSet = true;
    for (const WarpgroupState &other : b.warpgroups) {
      allSet &= other.maxRegisters != 0;
      total += uint64_t(other.maxRegisters) * 128;
    }
    if (allSet && total > 64 * 1024)
      return blockReport(
          b, *threads.front(),
          "setmaxnreg: the warpgroups' register budgets add up to " +
              std::to_string(total) +
              " registers, more than the 65536 of an SM's register file",
          a.site);
    return;
  }
  }
}

extern "C" {

uint32_t __kvemu_wgmma(uint32_t shape, uint32_t types, uint32_t flags,
                       uint64_t descA, const uint32_t *aRegs, uint64_t descB,
                       uint32_t *acc, uint32_t accTicket, uint64_t accDefined,
                       uint64_t aDefined, uint32_t site) {
  BlockRun &b = *current.block;
  GpuThread &t = *current.thread;
  WgmmaIssue op{shape & 0xffff, shape >> 16, types & 0xff, (types >> 8) & 0xff,
                types >> 16,    flags,       descA,        descB,
                aRegs,          acc,         accTicket,    accDefined,
                aDefined};
  // PTX ISA 9.7.15.7.1 (wgmma.fence): a fence must separate a register
  // access from a wgmma accessing the same registers — the accumulators,
  // unless they come straight from a wgmma of the same shape, and the A
  // fragment.
  WarpgroupState &wg = b.warpgroups[t.linear / 128];
  if (accTicket) {
    const WgmmaOp *producer = wg.find(accTicket);
    if (producer && (producer->n != op.n || producer->k != op.k))
      fail("wgmma.mma_async m64n" + std::to_string(op.n) + "k" +
               std::to_string(op.k) +
               " accumulates into the registers of an m64n" +
               std::to_string(producer->n) + "k" + std::to_string(producer->k) +
               " still in flight (only wgmmas of one shape chain without "
               "a wait)",
           site);
  } else if (t.lastWgmmaFence <= accDefined) {
    fail("wgmma.mma_async without a wgmma.fence between the last write of "
         "its accumulator registers and the wgmma",
         site);
  }
  if (aRegs && t.lastWgmmaFence <= aDefined)
    fail("wgmma.mma_async without a wgmma.fence between the definition of "
         "its A registers and the wgmma",
         site);
  t.wgArrival = {WarpgroupArrival::Mma, site, 0, &op};
  t.wait = Wait::Warpgroup;
  t.waitSite = site;
  yieldToScheduler();
  return uint32_t(t.result);
}

static void warpgroupCollective(WarpgroupArrival::Kind kind, uint32_t value,
                                uint32_t site) {
  GpuThread &t = *current.thread;
  t.wgArrival = {kind, site, value, nullptr};
  t.wait = Wait::Warpgroup;
  t.waitSite = site;
  yieldToScheduler();
}

void __kvemu_wgmma_fence(uint32_t site) {
  warpgroupCollective(WarpgroupArrival::Fence, 0, site);
}

void __kvemu_wgmma_commit(uint32_t site) {
  warpgroupCollective(WarpgroupArrival::Commit, 0, site);
}

void __kvemu_wgmma_wait(uint32_t n, uint32_t site) {
  warpgroupCollective(WarpgroupArrival::WaitGroup, n, site);
}

/// A read of a wgmma's accumulators (or of the A registers of an RS wgmma)
/// by any other instruction: undefined before the wait that retires it
/// (PTX ISA 9.7.15.7.3, wgmma.wait_group).
void __kvemu_wgmma_read(uint32_t ticket, uint32_t site) {
  BlockRun &b = *current.block;
  GpuThread &t = *current.thread;
  if (!ticket)
    return;
  WarpgroupState &wg = b.warpgroups[t.linear / 128];
  if (ticket < wg.oldestPending(b.nextTicket))
    return;
  const WgmmaOp *op = wg.find(ticket);
  fail("reads the registers of the wgmma.mma_async at " +
           (op ? describeSite(op->site) : std::string("?")) +
           " before the wgmma.wait_group that retires it",
       site);
}

uint64_t __kvemu_reg_defined() { return ++current.thread->regClock; }

/// setmaxnreg.{inc,dec}.sync.aligned.u32 (PTX ISA 9.7.19.x): 24 to 256 in
/// steps of 8, the same for the whole warpgroup.
void __kvemu_setmaxnreg(uint32_t count, uint32_t inc, uint32_t site) {
  if (count < 24 || count > 256 || count % 8)
    fail("setmaxnreg." + std::string(inc ? "inc" : "dec") + " " +
             std::to_string(count) +
             ": the register count must be a multiple of 8 in [24, 256]",
         site);
  warpgroupCollective(WarpgroupArrival::SetMaxNReg, count | inc << 31, site);
}

void __kvemu_fence_proxy_async(uint32_t) { current.thread->proxyFences++; }

void __kvemu_griddepcontrol_wait(uint32_t) {
  current.thread->gridDependencySynced = true;
}

} // extern "C"
