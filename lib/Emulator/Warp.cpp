//===- Warp.cpp - PTX semantics of warp collectives -----------------------===//
#include "Runtime.h"

#include "llvm/ADT/APFloat.h"

#include <vector>
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cstring>

using namespace kvir::emu;

float kvir::emu::halfToFloat(uint16_t bits, bool bf16) {
  if (bf16) {
    uint32_t word = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &word, 4);
    return f;
  }
  // Every f16 is exactly an f32: a table of all 65536, built once by
  // APFloat (the emulator converts each mma operand).
  static const std::vector<float> table = [] {
    std::vector<float> t(1 << 16);
    for (uint32_t i = 0; i < t.size(); ++i)
      t[i] = llvm::APFloat(llvm::APFloat::IEEEhalf(), llvm::APInt(16, i))
                 .convertToFloat();
    return t;
  }();
  return table[bits];
}

namespace {

/// shfl.sync (PTX ISA, "Data Movement and Conversion Instructions:
/// shfl.sync"): with b = b[4:0] (all modes: an offset of 33
/// acts as 1), c = clamp[4:0] and segmask = clamp[12:8], minLane = lane &
/// segmask, maxLane = minLane | (c & ~segmask); the source is j = lane - b
/// (up, valid iff j >= maxLane), lane + b (down, j <= maxLane), lane ^ b
/// (bfly, j <= maxLane) or minLane | (b & ~segmask) (idx, j <= maxLane); an
/// invalid source reads the lane's own value.
void shuffle(BlockRun &b, std::vector<GpuThread *> &lanes) {
  GpuThread *byLane[32] = {};
  for (GpuThread *t : lanes)
    byLane[t->lane] = t;
  for (GpuThread *t : lanes) {
    const Arrival &a = t->arrival;
    int lane = t->lane;
    int c = a.c & 0x1f, segmask = (a.c >> 8) & 0x1f;
    int minLane = lane & segmask;
    int maxLane = minLane | (c & ~segmask);
    int bval = static_cast<int>(a.b & 0x1f);
    int j = lane;
    bool valid = false;
    switch (a.mode) {
    case kabi::Up:
      j = lane - bval;
      valid = j >= maxLane;
      break;
    case kabi::Down:
      j = lane + bval;
      valid = j <= maxLane;
      break;
    case kabi::Bfly:
      j = lane ^ bval;
      valid = j <= maxLane;
      break;
    case kabi::Idx:
      j = minLane | (bval & ~segmask);
      valid = j <= maxLane;
      break;
    }
    if (!valid)
      j = lane;
    if (j < 0 || j > 31 || !byLane[j]) {
      current.thread = t;
      b.reports->push_back("kvir-emu: kernel '" + b.kernel->name +
                           "': shuffle reads lane " + std::to_string(j) +
                           ", which is not in the membermask 0x" +
                           llvm::utohexstr(a.mask) + "\n  " + describeThread() +
                           "\n  at " + describeSite(a.site));
      b.aborted = true;
      return;
    }
    t->result = uint64_t(byLane[j]->arrival.value) | (uint64_t(valid) << 32);
  }
  b.stats->shuffles++;
}

void vote(std::vector<GpuThread *> &lanes) {
  uint32_t ballot = 0;
  bool any = false, all = true;
  for (GpuThread *t : lanes) {
    bool p = t->arrival.value;
    ballot |= uint32_t(p) << t->lane;
    any |= p;
    all &= p;
  }
  bool uniform = any == all;
  for (GpuThread *t : lanes) {
    switch (t->arrival.mode) {
    case kabi::Any:
      t->result = any;
      break;
    case kabi::All:
      t->result = all;
      break;
    case kabi::Ballot:
      t->result = ballot;
      break;
    case kabi::Uni:
      t->result = uniform;
      break;
    }
  }
}

uint16_t floatToHalf(float f) {
  llvm::APFloat v(f);
  bool lost;
  v.convert(llvm::APFloat::IEEEhalf(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  return uint16_t(v.bitcastToAPInt().getZExtValue());
}

/// mma.sync.aligned.m16n8k{8,16}.row.col with f16/bf16 inputs, following
/// the PTX ISA tables "Matrix Fragments for mma.m16n8k16 with floating point
/// type" (9.7.14.5.8) and "... mma.m16n8k8" (9.7.14.5.7). With groupID = lane
/// >> 2 and tig = lane % 4:
///  A (16 x K, 2 elements per 32-bit register, a_i = element i):
///    row = groupID + 8 * ((i >> 1) & 1), col = 2 * tig + (i & 1) + 8 * (i >>
///    2)
///  B (K x 8): row = 2 * tig + (i & 1) + 8 * (i >> 1), col = groupID
///  C, D (16 x 8): row = groupID + 8 * (i >> 1), col = 2 * tig + (i & 1)
/// where m16n8k8 uses a_0..a_3 and b_0, b_1 of the same formulas.
void mma(BlockRun &b, std::vector<GpuThread *> &lanes) {
  const Arrival &first = lanes.front()->arrival;
  uint32_t m = first.m, n = first.n, k = first.k;
  uint32_t aType = first.types & 0xff, cType = first.types >> 8;
  if (lanes.size() != 32 || m != 16 || n != 8 || (k != 16 && k != 8)) {
    current.thread = lanes.front();
    b.reports->push_back(
        "kvir-emu: kernel '" + b.kernel->name + "': mma.sync m" +
        std::to_string(m) + "n" + std::to_string(n) + "k" + std::to_string(k) +
        " needs all 32 lanes and shape m16n8k16 or m16n8k8\n  " +
        describeThread() + "\n  at " + describeSite(first.site));
    b.aborted = true;
    return;
  }
  bool bf16 = aType == kabi::BF16;
  float A[16][16] = {}, B[16][8] = {}, C[16][8] = {};
  auto element = [&](const uint32_t *regs, unsigned i) {
    uint32_t word = regs[i / 2];
    return halfToFloat(i % 2 ? word >> 16 : word & 0xffff, bf16);
  };
  unsigned aElems = k == 16 ? 8 : 4, bElems = k == 16 ? 4 : 2;
  for (GpuThread *t : lanes) {
    unsigned group = t->lane >> 2, tig = t->lane % 4;
    const Arrival &a = t->arrival;
    for (unsigned i = 0; i < aElems; ++i)
      A[group + 8 * ((i >> 1) & 1)][2 * tig + (i & 1) + 8 * (i >> 2)] =
          element(a.a, i);
    for (unsigned i = 0; i < bElems; ++i)
      B[2 * tig + (i & 1) + 8 * (i >> 1)][group] = element(a.bFrag, i);
    for (unsigned i = 0; i < 4; ++i) {
      float c = cType == kabi::F32
                    ? wordToFloat(a.cFrag[i])
                    : halfToFloat(i % 2 ? a.cFrag[i / 2] >> 16
                                        : a.cFrag[i / 2] & 0xffff,
                                  false);
      C[group + 8 * (i >> 1)][2 * tig + (i & 1)] = c;
    }
  }
  float D[16][8];
  for (unsigned r = 0; r < 16; ++r)
    for (unsigned c = 0; c < 8; ++c) {
      float acc = C[r][c];
      for (unsigned x = 0; x < k; ++x)
        acc += A[r][x] * B[x][c];
      D[r][c] = acc;
    }
  for (GpuThread *t : lanes) {
    unsigned group = t->lane >> 2, tig = t->lane % 4;
    uint32_t *out = t->arrival.out;
    if (cType == kabi::F32) {
      for (unsigned i = 0; i < 4; ++i)
        out[i] = floatToWord(D[group + 8 * (i >> 1)][2 * tig + (i & 1)]);
    } else {
      for (unsigned r = 0; r < 2; ++r)
        out[r] = floatToHalf(D[group + 8 * r][2 * tig]) |
                 uint32_t(floatToHalf(D[group + 8 * r][2 * tig + 1])) << 16;
    }
  }
  b.stats->mmaOps++;
  b.stats->tensorCoreMacs += 16 * 8 * k;
  b.work.mmaOps++;
  b.work.tensorCoreMacs += 16 * 8 * k;
}

/// Whether all 32 lanes take part in a warp-wide matrix instruction;
/// reports (and stops the block) otherwise.
bool wholeWarp(BlockRun &b, std::vector<GpuThread *> &lanes, const char *name) {
  if (lanes.size() == 32)
    return true;
  current.thread = lanes.front();
  b.reports->push_back("kvir-emu: kernel '" + b.kernel->name + "': " + name +
                       " needs all 32 lanes of the warp\n  " +
                       describeThread() + "\n  at " +
                       describeSite(lanes.front()->arrival.site));
  b.aborted = true;
  return false;
}

/// ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].b16 (PTX ISA 9.7.14.5.15,
/// "Warp-level matrix load instruction: ldmatrix"):
/// lanes 8i..8i+7 give the row addresses of matrix i; register i of lane t
/// holds row t / 4, elements 2 (t % 4) and 2 (t % 4) + 1 of matrix i, or with
/// .trans those of the transposed matrix.
void ldmatrix(BlockRun &b, std::vector<GpuThread *> &lanes) {
  if (!wholeWarp(b, lanes, "ldmatrix"))
    return;
  GpuThread *byLane[32];
  for (GpuThread *t : lanes)
    byLane[t->lane] = t;
  uint32_t num = lanes.front()->arrival.num;
  bool trans = lanes.front()->arrival.trans;
  auto at = [&](unsigned matrix, unsigned row, unsigned col) {
    const char *rowPtr =
        static_cast<const char *>(byLane[8 * matrix + row]->arrival.ptr);
    uint16_t v;
    std::memcpy(&v, rowPtr + 2 * col, 2);
    return uint32_t(v);
  };
  for (GpuThread *t : lanes) {
    unsigned r = t->lane / 4, c = 2 * (t->lane % 4);
    for (unsigned i = 0; i < num; ++i) {
      uint32_t lo = trans ? at(i, c, r) : at(i, r, c);
      uint32_t hi = trans ? at(i, c + 1, r) : at(i, r, c + 1);
      t->arrival.out[i] = lo | hi << 16;
    }
  }
}

/// stmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16 (PTX ISA
/// 9.7.14.5.16), the inverse of ldmatrix: lanes 8i..8i+7 give the row
/// addresses of matrix i; register i of lane t holds row t / 4, columns
/// 2 (t % 4) and 2 (t % 4) + 1 of matrix i, stored as that row — or, with
/// .trans, as that column: row j of memory holds column j of the fragment.
void stmatrix(BlockRun &b, std::vector<GpuThread *> &lanes) {
  if (!wholeWarp(b, lanes, "stmatrix"))
    return;
  GpuThread *byLane[32];
  for (GpuThread *t : lanes)
    byLane[t->lane] = t;
  uint32_t num = lanes.front()->arrival.num;
  bool trans = lanes.front()->arrival.trans;
  // Element (r, c) of fragment matrix i.
  auto fragment = [&](unsigned i, unsigned r, unsigned c) {
    uint32_t word = byLane[4 * r + c / 2]->arrival.a[i];
    return uint16_t(c % 2 ? word >> 16 : word & 0xffff);
  };
  for (unsigned i = 0; i < num; ++i)
    for (unsigned row = 0; row < 8; ++row) {
      char *rowPtr = static_cast<char *>(
          const_cast<void *>(byLane[8 * i + row]->arrival.ptr));
      for (unsigned c = 0; c < 8; ++c) {
        uint16_t v = trans ? fragment(i, c, row) : fragment(i, row, c);
        std::memcpy(rowPtr + 2 * c, &v, 2);
      }
    }
}

} // namespace

void kvir::emu::executeCollective(BlockRun &b,
                                  std::vector<GpuThread *> &lanes) {
  switch (lanes.front()->arrival.kind) {
  case Arrival::Shfl:
    shuffle(b, lanes);
    return;
  case Arrival::Vote:
    vote(lanes);
    return;
  case Arrival::SyncWarp: {
    // bar.warp.sync orders the memory accesses of its members (PTX ISA,
    // "bar.warp.sync"): merge their warp clocks, then each starts a new
    // segment of its own.
    uint32_t merged[32] = {};
    for (GpuThread *t : lanes)
      for (unsigned l = 0; l < 32; ++l)
        merged[l] = std::max(merged[l], t->clock[l]);
    for (GpuThread *t : lanes) {
      std::copy(merged, merged + 32, t->clock);
      t->clock[t->lane]++;
    }
    // And what the members synchronized with through named barriers or
    // mbarriers (an elected lane's wait, before the warp reads).
    if (!b.clocks.empty())
      joinClocks(b, lanes);
    return;
  }
  case Arrival::Mma:
    mma(b, lanes);
    return;
  case Arrival::LdMatrix:
    ldmatrix(b, lanes);
    return;
  case Arrival::StMatrix:
    stmatrix(b, lanes);
    return;
  }
}
