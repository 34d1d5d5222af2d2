//===- DependentLaunch.h - Programmatic dependent launch -------*- C++ -*-===//
//
// Private to lib/Emulator. A grid launched as a programmatic dependent
// (CUDA's programmatic stream serialization) may start while the grid
// before it in the stream still runs: `griddepcontrol.wait` (PTX ISA,
// "griddepcontrol") "causes the executing thread to wait until all
// prerequisite grids in flight have completed and all the memory
// operations from the prerequisite grids are performed and made visible to
// the current grid"; `griddepcontrol.launch_dependents` only lets the
// dependent be scheduled early, and makes nothing visible. Grids run one
// after another here, so what a dependent thread does before its wait is
// checked instead: a global read of bytes the primary grid wrote, or a
// global write of bytes the primary read or wrote, is a race the hardware
// may lose (before or after the primary's trigger alike).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_EMULATOR_DEPENDENTLAUNCH_H
#define KVIR_LIB_EMULATOR_DEPENDENTLAUNCH_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kvir::emu {

struct GpuThread;

/// A union of half-open byte ranges, merged as they are added.
class ByteRanges {
public:
  void add(uint64_t lo, uint64_t hi);
  /// The first added range overlapping [lo, hi), clipped to it.
  std::optional<std::pair<uint64_t, uint64_t>> overlap(uint64_t lo,
                                                       uint64_t hi) const;
  bool empty() const { return ranges.empty(); }

private:
  std::map<uint64_t, uint64_t> ranges; // begin -> end
};

/// The global bytes one grid read and wrote.
struct GridAccesses {
  std::string kernel;
  ByteRanges reads, writes;
};

/// Grids record their global accesses once a kernel using griddepcontrol
/// has been compiled (recording costs every access a map update, so
/// programs without programmatic dependent launches never pay it).
void enableGridAccessRecording();

/// Starts a launch of `kernel`. For a programmatic dependent one, the
/// previous grid must have been recorded: otherwise a report is added and
/// false returned (its accesses cannot be checked).
bool beginGrid(const std::string &kernel, bool programmaticDependent,
               std::vector<std::string> &reports);
/// Whether the grid before the next launch was recorded (a programmatic
/// dependent launch can be checked against it).
bool previousGridRecorded();
/// Ends the running launch: its record becomes the previous grid's.
void endGrid();

/// A global access by thread `t` (a write: store, atomic, or a bulk or
/// tensor copy's global side): recorded, and checked against the primary
/// grid if the running grid is a dependent and `t` has not waited.
void noteGlobalAccess(GpuThread &t, uint64_t addr, uint64_t bytes, bool write,
                      uint32_t site);

} // namespace kvir::emu

#endif // KVIR_LIB_EMULATOR_DEPENDENTLAUNCH_H
