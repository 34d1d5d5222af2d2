//===- DependentLaunch.cpp - Programmatic dependent launch ----------------===//
//
// DependentLaunch.h says what is checked and why.
//
//===----------------------------------------------------------------------===//
#include "DependentLaunch.h"
#include "Runtime.h"

#include "llvm/ADT/StringExtras.h"

using namespace kvir::emu;

void ByteRanges::add(uint64_t lo, uint64_t hi) {
  if (lo >= hi)
    return;
  // Merge with every range that overlaps or touches [lo, hi).
  auto it = ranges.upper_bound(lo);
  if (it != ranges.begin() && std::prev(it)->second >= lo)
    --it;
  while (it != ranges.end() && it->first <= hi) {
    lo = std::min(lo, it->first);
    hi = std::max(hi, it->second);
    it = ranges.erase(it);
  }
  ranges.emplace(lo, hi);
}

std::optional<std::pair<uint64_t, uint64_t>>
ByteRanges::overlap(uint64_t lo, uint64_t hi) const {
  auto it = ranges.upper_bound(lo);
  if (it != ranges.begin() && std::prev(it)->second > lo)
    --it;
  if (it == ranges.end() || it->first >= hi)
    return std::nullopt;
  return std::make_pair(std::max(lo, it->first), std::min(hi, it->second));
}

namespace {
struct GridDependencyState {
  bool recording = false;
  bool dependent = false;
  std::optional<GridAccesses> previous;
  GridAccesses running;
};

GridDependencyState &state() {
  static GridDependencyState s;
  return s;
}

std::string hexRange(std::pair<uint64_t, uint64_t> r) {
  return "[0x" + llvm::utohexstr(r.first) + ", 0x" + llvm::utohexstr(r.second) +
         ")";
}
} // namespace

void kvir::emu::enableGridAccessRecording() { state().recording = true; }

bool kvir::emu::beginGrid(const std::string &kernel, bool programmaticDependent,
                          std::vector<std::string> &reports) {
  GridDependencyState &s = state();
  s.dependent = programmaticDependent;
  s.running = GridAccesses{kernel, {}, {}};
  if (programmaticDependent && !s.previous) {
    reports.push_back(
        "kvir-emu: kernel '" + kernel +
        "': launched as a programmatic dependent, but the grid before it "
        "was not recorded (no kernel using griddepcontrol had been "
        "compiled, or it is the first launch): what it does before "
        "griddepcontrol.wait cannot be checked");
    return false;
  }
  return true;
}

bool kvir::emu::previousGridRecorded() { return state().previous.has_value(); }

void kvir::emu::endGrid() {
  GridDependencyState &s = state();
  if (s.recording)
    s.previous = std::move(s.running);
  else
    s.previous.reset();
  s.running = GridAccesses();
  s.dependent = false;
}

void kvir::emu::noteGlobalAccess(GpuThread &t, uint64_t addr, uint64_t bytes,
                                 bool write, uint32_t site) {
  GridDependencyState &s = state();
  if (!s.recording)
    return;
  (write ? s.running.writes : s.running.reads).add(addr, addr + bytes);
  if (!s.dependent || t.gridDependencySynced || !s.previous)
    return;
  const GridAccesses &primary = *s.previous;
  auto conflict = primary.writes.overlap(addr, addr + bytes);
  const char *primaryDid = "writes";
  if (!conflict && write) {
    conflict = primary.reads.overlap(addr, addr + bytes);
    primaryDid = "reads";
  }
  if (conflict)
    fail(std::string(write ? "writes" : "reads") + " global bytes " +
             hexRange(*conflict) + " that the primary grid ('" +
             primary.kernel + "') " + primaryDid +
             ", before griddepcontrol.wait: a programmatic dependent grid "
             "may run while its primary does, and only the wait makes the "
             "primary's memory operations complete and visible",
         site);
}
