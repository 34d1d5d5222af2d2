//===- BenchSupport.cpp - What the CPU-side benches share -----------------===//
#include "BenchSupport.h"

#include "kvir/Target/GPU/TargetInfo.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
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
                                   const std::string &chip) {
  Compiled result;
  auto tool = [&](const char *name) {
    llvm::SmallString<256> path(binDir);
    llvm::sys::path::append(path, name);
    return std::string(path);
  };
  std::string mlirFile = dir + "/in.mlir", lowered = dir + "/ptx.mlir",
              log = dir + "/log.txt", outDir = dir + "/out-" + chip;
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(mlirFile, ec);
    os << source;
  }
  llvm::sys::fs::remove_directories(outDir);
  llvm::sys::fs::create_directories(outDir);
  auto start = std::chrono::steady_clock::now();
  if (run({tool("kvir-opt"), mlirFile, "--kv-to-ptx=chip=" + chip, "-o",
           lowered},
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
  result.ok = true;
  if (ptxasPath.empty())
    return result;
  std::string ptxasLog = dir + "/ptxas-" + chip + ".txt";
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
  const target::TargetInfo *target = target::TargetInfo::lookup(chip);
  return target ? target->occupancy(threads, registers, sharedBytes) : 0.0;
}

Traffic kvir::bench::sumTraffic(const std::vector<emu::LaunchStats> &launches) {
  Traffic t;
  for (const emu::LaunchStats &l : launches) {
    t.loaded += l.globalBytesLoaded;
    t.stored += l.globalBytesStored;
    t.sectors += l.globalSectors;
    t.useful += l.globalUsefulBytes;
    t.sharedRequests += l.sharedRequests;
    t.bankConflicts += l.bankConflicts;
    t.mma += l.mmaOps;
  }
  return t;
}

bool kvir::bench::isSplitKernel(const std::string &name) {
  std::string stem = name.substr(0, name.rfind('_'));
  return stem.size() >= 6 && stem.compare(stem.size() - 6, 6, "_split") == 0;
}

std::optional<double> kvir::bench::ptxInstructionsPerMma(
    const std::string &ptx, const std::string &kernel) {
  size_t begin = ptx.find(".entry " + kernel + "(");
  if (begin == std::string::npos)
    return std::nullopt;
  size_t end = ptx.find("\n}", begin);
  std::vector<std::string> lines;
  std::istringstream in(ptx.substr(begin, end - begin));
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  size_t top = lines.size();
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find("cp.async.wait_group") != std::string::npos &&
        lines[i].find("\t1;") != std::string::npos) {
      top = i;
      break;
    }
  if (top == lines.size())
    return std::nullopt;
  // The loop's back edge: a branch after `top` to a label before it.
  std::map<std::string, size_t> labels;
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind("$L", 0) == 0)
      labels[lines[i].substr(0, lines[i].find(':'))] = i;
  size_t header = top, back = top;
  for (size_t i = top + 1; i < lines.size(); ++i) {
    size_t bra = lines[i].find("bra");
    if (bra == std::string::npos)
      continue;
    size_t at = lines[i].find("$L", bra);
    std::string target =
        at == std::string::npos
            ? std::string()
            : lines[i].substr(at, lines[i].find(';', at) - at);
    auto it = labels.find(target);
    if (it != labels.end() && it->second <= top) {
      header = it->second;
      back = i;
    }
  }
  if (back == top)
    return std::nullopt;
  int64_t instructions = 0, mma = 0;
  for (size_t i = header + 1; i <= back; ++i) {
    llvm::StringRef l = llvm::StringRef(lines[i]).trim();
    if (l.empty() || l.starts_with("$L") || l.starts_with("//") ||
        l.starts_with(".") || l.starts_with("{") || l.starts_with("}"))
      continue;
    // mma.sync spreads its operands over several lines: count statements.
    if (!l.ends_with(";") && !l.contains("mma.sync"))
      continue;
    if (l.contains("mma.sync"))
      ++mma;
    ++instructions;
  }
  if (!mma)
    return std::nullopt;
  return double(instructions) / double(mma);
}
