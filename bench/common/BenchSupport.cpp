//===- BenchSupport.cpp - What the CPU-side benches share -----------------===//
#include "BenchSupport.h"
#include "GpuHarness.h"

#include "kvir/Target/GPU/TargetInfo.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <queue>
#include <regex>
#include <sstream>

using namespace kvir::bench;

static int run(const std::vector<std::string> &argv, const std::string &out,
               const std::string &err) {
  std::vector<llvm::StringRef> args(argv.begin(), argv.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt,
                                                llvm::StringRef(out),
                                                llvm::StringRef(err)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(argv[0], args, std::nullopt, redirects, 0,
                                     0, &message);
  if (rc < 0)
    llvm::errs() << "bench: " << argv[0] << ": " << message << "\n";
  return rc;
}

static std::string readFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

Toolbox::Toolbox(const char *argv0, bool usePtxas) {
  static int anchor;
  binDir = llvm::sys::path::parent_path(
               llvm::sys::fs::getMainExecutable(argv0, &anchor))
               .str();
  if (usePtxas) {
    if (auto found = llvm::sys::findProgramByName("ptxas"))
      ptxasPath = *found;
    else if (llvm::sys::fs::can_execute("/usr/local/cuda/bin/ptxas"))
      ptxasPath = "/usr/local/cuda/bin/ptxas";
  }
  llvm::SmallString<128> tmp;
  llvm::sys::fs::createUniqueDirectory("kvir-bench", tmp);
  dir = std::string(tmp);
}

Toolbox::~Toolbox() { llvm::sys::fs::remove_directories(dir); }

Toolbox::Compiled Toolbox::compile(const std::string &source,
                                   const std::string &target) {
  Compiled result;
  // A chip, or "chip/mma_sync" (the GPU tests' targets).
  auto [chip, mma] = test::gpu::parseGpuTarget(target);
  std::string tag = chip + (mma == "auto" ? "" : "-" + mma);
  auto tool = [&](const char *name) {
    llvm::SmallString<256> path(binDir);
    llvm::sys::path::append(path, name);
    return std::string(path);
  };
  std::string mlirFile = dir + "/in.mlir", lowered = dir + "/ptx.mlir",
              log = dir + "/log.txt", outDir = dir + "/out-" + tag;
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(mlirFile, ec);
    os << source;
  }
  llvm::sys::fs::remove_directories(outDir);
  llvm::sys::fs::create_directories(outDir);
  auto start = std::chrono::steady_clock::now();
  if (run({tool("kvir-opt"), mlirFile,
           "--kv-to-ptx=chip=" + chip + " mma=" + mma, "-o", lowered},
          log, log) != 0 ||
      run({tool("kvir-translate"), lowered, "-o", outDir}, log, log) != 0) {
    llvm::errs() << "bench: compiling to PTX failed:\n" << readFile(log);
    return result;
  }
  result.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::string ptxFile = outDir + "/kv_kernels.ptx";
  result.ptx = readFile(ptxFile);
  result.lowered = readFile(lowered);
  result.ok = true;
  if (ptxasPath.empty())
    return result;
  std::string ptxasLog = dir + "/ptxas-" + tag + ".txt";
  if (run({ptxasPath, "-arch=" + chip, "-v", ptxFile, "-o", dir + "/k.cubin"},
          ptxasLog, ptxasLog) != 0) {
    llvm::errs() << "bench: ptxas failed:\n" << readFile(ptxasLog);
    result.ok = false;
    return result;
  }
  std::regex entry("Compiling entry function '([^']+)'");
  std::regex spills("(\\d+) bytes spill stores, (\\d+) bytes spill loads");
  std::regex used("Used (\\d+) registers(?:, used \\d+ barriers)?(?:, (\\d+) "
                  "bytes smem)?");
  std::string current;
  std::istringstream lines(readFile(ptxasLog));
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, entry))
      current = m[1];
    else if (std::regex_search(line, m, spills) && !current.empty()) {
      result.kernels[current].spillStores = std::stoll(m[1]);
      result.kernels[current].spillLoads = std::stoll(m[2]);
    } else if (std::regex_search(line, m, used) && !current.empty()) {
      result.kernels[current].registers = std::stoi(m[1]);
      result.kernels[current].smem = m[2].matched ? std::stoll(m[2]) : 0;
    }
  }
  return result;
}

double kvir::bench::occupancy(const std::string &chip, int registers,
                              int64_t sharedBytes, int64_t threads) {
  const target::TargetInfo *target =
      target::TargetInfo::lookup(test::gpu::parseGpuTarget(chip).chip);
  return target ? target->occupancy(threads, registers, sharedBytes) : 0.0;
}

Traffic kvir::bench::sumTraffic(const std::vector<emu::LaunchStats> &launches) {
  Traffic t;
  for (const emu::LaunchStats &l : launches) {
    // TMA's bytes are global traffic too, every one of them useful.
    t.loaded += globalBytesLoaded(l);
    t.stored += globalBytesStored(l);
    t.sectors += l.globalSectors + l.tmaSectorsLoaded;
    t.useful += l.globalUsefulBytes + l.tmaBytesLoaded;
    t.sharedRequests += l.sharedRequests;
    t.bankConflicts += l.bankConflicts;
    t.mma += l.mmaOps;
    t.macs += l.tensorCoreMacs;
  }
  return t;
}

std::optional<kvir::bench::LoopStatements>
kvir::bench::hotLoopStatements(const std::string &ptx,
                               const std::string &kernel,
                               const std::string &marker, int64_t occurrence) {
  size_t begin = ptx.find(".entry " + kernel + "(");
  if (begin == std::string::npos)
    return std::nullopt;
  // The body runs to the next entry (a "}" at the start of a line may
  // close an inline asm scope, e.g. wgmma's, as well as the function).
  size_t end = ptx.find(".entry ", begin + 1);
  if (end == std::string::npos)
    end = ptx.size();
  // The body's statements, split into basic blocks: a block starts at a
  // label and after a branch.
  struct Block {
    std::string label;
    std::vector<std::string> statements;
    std::vector<std::string> targets;
    bool fallsThrough = true;
  };
  std::vector<Block> blocks(1);
  std::istringstream in(ptx.substr(begin, end - begin));
  bool inBody = false;
  for (std::string raw; std::getline(in, raw);) {
    llvm::StringRef l = llvm::StringRef(raw).trim();
    if (!inBody) {
      inBody = l.starts_with("{");
      continue;
    }
    if (l.starts_with("$L") && l.ends_with(":")) {
      blocks.push_back(Block{l.drop_back().str(), {}, {}, true});
      continue;
    }
    if (l.empty() || l.starts_with("//") || l.starts_with(".") ||
        l.starts_with("{") || l.starts_with("}"))
      continue;
    // mma.sync and wgmma spread their operands over several lines: count
    // statements.
    if (!l.ends_with(";") && !l.contains("mma.sync") &&
        !l.contains("wgmma.mma_async"))
      continue;
    // Whitespace-normalized: "op a, b;" with single spaces.
    std::string statement;
    for (char c : l)
      if (c == ' ' || c == '\t') {
        if (!statement.empty() && statement.back() != ' ')
          statement += ' ';
      } else {
        statement += c;
      }
    blocks.back().statements.push_back(statement);
    size_t bra = l.find("bra");
    bool isBranch = bra != llvm::StringRef::npos &&
                    (bra == 0 || l.starts_with("@")) &&
                    l.contains("$L");
    if (isBranch) {
      size_t at = l.find("$L", bra);
      blocks.back().targets.push_back(
          l.substr(at, l.find(';', at) - at).trim().str());
      blocks.back().fallsThrough = l.starts_with("@");
      blocks.push_back(Block{});
    } else if (l.starts_with("ret") || l.starts_with("exit")) {
      blocks.back().fallsThrough = false;
      blocks.push_back(Block{});
    }
  }
  std::map<std::string, size_t> byLabel;
  for (size_t b = 0; b < blocks.size(); ++b)
    if (!blocks[b].label.empty())
      byLabel[blocks[b].label] = b;
  std::vector<std::vector<size_t>> preds(blocks.size());
  for (size_t b = 0; b < blocks.size(); ++b) {
    for (const std::string &t : blocks[b].targets)
      if (auto it = byLabel.find(t); it != byLabel.end())
        preds[it->second].push_back(b);
    if (blocks[b].fallsThrough && b + 1 < blocks.size())
      preds[b + 1].push_back(b);
  }
  size_t header = blocks.size();
  int64_t seen = 0;
  for (size_t b = 0; b < blocks.size() && header == blocks.size(); ++b)
    for (const std::string &st : blocks[b].statements)
      if (st.find(marker) != std::string::npos) {
        if (seen++ == occurrence)
          header = b;
        break;
      }
  if (header == blocks.size())
    return std::nullopt;
  // The header's loop: walk predecessors back from it, stopping at it.
  // (Blocks before the loop reach the header too, but not from the header's
  // successors: keep only blocks the header reaches.)
  std::vector<bool> reached(blocks.size(), false);
  std::vector<size_t> work{header};
  reached[header] = true;
  while (!work.empty()) {
    size_t b = work.back();
    work.pop_back();
    std::vector<size_t> succs;
    for (const std::string &t : blocks[b].targets)
      if (auto it = byLabel.find(t); it != byLabel.end())
        succs.push_back(it->second);
    if (blocks[b].fallsThrough && b + 1 < blocks.size())
      succs.push_back(b + 1);
    for (size_t s : succs)
      if (!reached[s]) {
        reached[s] = true;
        work.push_back(s);
      }
  }
  std::vector<bool> inLoop(blocks.size(), false);
  inLoop[header] = true;
  for (size_t p : preds[header])
    if (reached[p] && !inLoop[p]) {
      inLoop[p] = true;
      work.push_back(p);
    }
  if (work.empty())
    return std::nullopt; // no back edge: not a loop
  while (!work.empty()) {
    size_t b = work.back();
    work.pop_back();
    for (size_t p : preds[b])
      if (reached[p] && !inLoop[p]) {
        inLoop[p] = true;
        work.push_back(p);
      }
  }
  LoopStatements counts;
  for (size_t b = 0; b < blocks.size(); ++b)
    if (inLoop[b])
      for (const std::string &st : blocks[b].statements) {
        ++counts.statements;
        if (st.find("mma.sync") != std::string::npos ||
            st.find("wgmma.mma_async") != std::string::npos)
          ++counts.mma;
      }
  return counts;
}

std::optional<double> kvir::bench::ptxInstructionsPerMma(
    const std::string &ptx, const std::string &kernel) {
  std::optional<LoopStatements> loop =
      hotLoopStatements(ptx, kernel, "cp.async.wait_group 1;");
  // A single-buffered kernel (stages = 1) waits for all its copies, in
  // its prologue too; a warp-specialized kernel's consumers wait on
  // mbarriers (the producer's loop comes first): of the loops headed by
  // such a wait, the one with the tensor-core instructions.
  for (const char *wait :
       {"cp.async.wait_group 0;", "mbarrier.try_wait.parity"})
    for (int64_t n = 0; (!loop || !loop->mma) && n < 4; ++n)
      loop = hotLoopStatements(ptx, kernel, wait, n);
  if (!loop || !loop->mma)
    return std::nullopt;
  return double(loop->statements) / double(loop->mma);
}

double kvir::bench::busiestSmWork(const std::vector<double> &blockWork,
                                  int64_t sms) {
  std::priority_queue<double, std::vector<double>, std::greater<double>> load;
  for (int64_t i = 0; i < sms; ++i)
    load.push(0.0);
  double busiest = 0.0;
  for (double w : blockWork) {
    double next = load.top() + w;
    load.pop();
    load.push(next);
    busiest = std::max(busiest, next);
  }
  return busiest;
}

double kvir::bench::memoryBoundSeconds(const std::vector<double> &blockBytes,
                                       double roofBytesPerSecond,
                                       int64_t sms) {
  double total = 0.0;
  for (double b : blockBytes)
    total += b;
  return std::max(total / roofBytesPerSecond,
                  busiestSmWork(blockBytes, sms) / (roofBytesPerSecond / sms));
}
