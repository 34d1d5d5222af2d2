//===- Golden.cpp - Emulated runs compared with recorded bytes ------------===//
#include "Golden.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

using namespace kvir::test;
using namespace kvir::test::gpu;

namespace {

const char *goldenDir() { return std::getenv("KVIR_GOLDEN_DIR"); }

bool updating() {
  const char *update = std::getenv("KVIR_GOLDEN_UPDATE");
  return update && std::strcmp(update, "1") == 0;
}

/// The calls of one test: what the record file says and what ran.
struct TestRecord {
  std::string test, path;
  bool exists = false;
  std::vector<std::string> expected, actual;
};

/// "Suite.Test" of the running test, '/' written as '_'.
std::string currentTestName() {
  const ::testing::TestInfo *info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  if (!info)
    return "";
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  std::replace(name.begin(), name.end(), '/', '_');
  return name;
}

/// Splits a record into its calls (each starts with a "call " line).
std::vector<std::string> splitCalls(llvm::StringRef text) {
  std::vector<std::string> calls;
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef line : lines) {
    if (line.starts_with("call ") || calls.empty())
      calls.emplace_back();
    calls.back() += line.str() + "\n";
  }
  return calls;
}

TestRecord &record() {
  static TestRecord current;
  std::string test = currentTestName();
  if (current.test != test) {
    current = TestRecord();
    current.test = test;
    llvm::SmallString<256> path(goldenDir());
    llvm::sys::path::append(path, test + ".txt");
    current.path = path.str().str();
    if (auto buffer = llvm::MemoryBuffer::getFile(current.path)) {
      current.exists = true;
      current.expected = splitCalls((*buffer)->getBuffer());
    }
  }
  return current;
}

/// Failures found after a test ended, reported by the environment.
std::vector<std::string> &lateFailures() {
  static std::vector<std::string> failures;
  return failures;
}

std::string digest(const uint8_t *data, size_t bytes) {
  std::array<uint8_t, 32> hash =
      llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(data, bytes));
  return llvm::toHex(llvm::ArrayRef<uint8_t>(hash.data(), 16),
                     /*LowerCase=*/true);
}

std::string shapeOf(const Tensor &t) {
  std::string s = mlirName(t.dtype());
  for (int64_t d : t.shape())
    s += "x" + std::to_string(d);
  return s;
}

size_t allocationBytes(const Tensor &t) {
  return size_t(t.allocationElements()) * byteSize(t.dtype());
}

std::string describeLaunch(const kvir::emu::LaunchStats &s) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "  launch " << s.kernel << " grid " << s.grid.x << "," << s.grid.y
     << "," << s.grid.z << " block " << s.block.x << "," << s.block.y << ","
     << s.block.z << " shared " << s.staticSharedBytes << "+"
     << s.dynamicSharedBytes << "\n"
     << "    global loaded " << s.globalBytesLoaded << " stored "
     << s.globalBytesStored << " requests " << s.globalRequests << " sectors "
     << s.globalSectors << " useful " << s.globalUsefulBytes << "\n"
     << "    shared loaded " << s.sharedBytesLoaded << " stored "
     << s.sharedBytesStored << " requests " << s.sharedRequests
     << " bank-conflicts " << s.bankConflicts << "\n"
     << "    barriers " << s.barriers << " mma " << s.mmaOps << " wgmma "
     << s.wgmmaOps << " tensor-core-macs " << s.tensorCoreMacs << " shuffles "
     << s.shuffles << " fiber-switches " << s.fiberSwitches << "\n";
  return text;
}

/// The bytes of `t`'s allocation as the digests of its 1 KiB blocks: a
/// difference is found to the block (dump the buffers to see the bytes).
std::string blockDigests(const Tensor &t) {
  const uint8_t *data = static_cast<const uint8_t *>(t.data());
  size_t bytes = allocationBytes(t);
  std::string text;
  for (size_t offset = 0; offset < bytes; offset += 1024)
    text += "    " + llvm::utohexstr(offset, /*LowerCase=*/true, 6) + " " +
            digest(data + offset, std::min<size_t>(1024, bytes - offset)) +
            "\n";
  return text;
}

/// The first lines where `got` and `want` differ, numbered within the call.
std::string firstDifferences(const std::string &got, const std::string &want) {
  llvm::SmallVector<llvm::StringRef> a, b;
  llvm::StringRef(got).split(a, '\n');
  llvm::StringRef(want).split(b, '\n');
  std::string out;
  int shown = 0;
  for (size_t i = 0; i < std::max(a.size(), b.size()) && shown < 6; ++i) {
    llvm::StringRef x = i < a.size() ? a[i] : "<none>";
    llvm::StringRef y = i < b.size() ? b[i] : "<none>";
    if (x == y)
      continue;
    ++shown;
    out += "  line " + std::to_string(i + 1) + "\n    got:  " + x.str() +
           "\n    want: " + y.str() + "\n";
  }
  return out;
}

/// Writes records (update mode) and finds tests that made fewer calls
/// than their record holds.
class GoldenListener : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo &) override {
    if (!golden::enabled())
      return;
    TestRecord &r = record();
    if (r.actual.empty())
      return;
    if (updating()) {
      std::error_code ec;
      llvm::raw_fd_ostream os(r.path, ec);
      if (ec) {
        lateFailures().push_back("cannot write " + r.path + ": " +
                                 ec.message());
        return;
      }
      for (const std::string &call : r.actual)
        os << call;
      return;
    }
    if (r.exists && r.actual.size() < r.expected.size())
      lateFailures().push_back(r.test + " made " +
                               std::to_string(r.actual.size()) +
                               " emulated calls; its record " + r.path +
                               " has " + std::to_string(r.expected.size()));
  }
};

class GoldenEnvironment : public ::testing::Environment {
  void TearDown() override {
    for (const std::string &failure : lateFailures())
      ADD_FAILURE() << "golden record: " << failure;
  }
};

const bool registered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new GoldenListener);
  ::testing::AddGlobalTestEnvironment(new GoldenEnvironment);
  return true;
}();

} // namespace

bool golden::enabled() { return goldenDir() != nullptr; }

std::vector<std::string> golden::describeArguments(const KernelSource &src) {
  (void)registered;
  std::vector<std::string> lines;
  for (auto [i, arg] : llvm::enumerate(src.args())) {
    std::string line = "  arg " + std::to_string(i) + " ";
    if (arg.kind == KernelArg::Kind::F32) {
      uint32_t bits;
      std::memcpy(&bits, &arg.scalar, 4);
      line += "f32 0x" + llvm::utohexstr(bits, true, 8);
    } else {
      const Tensor &t = arg.tensor;
      line += shapeOf(t) + " sha256 " +
              digest(static_cast<const uint8_t *>(t.data()),
                     allocationBytes(t));
    }
    lines.push_back(line);
  }
  return lines;
}

void golden::recordCall(const KernelSource &src,
                        const std::vector<std::string> &argumentsBefore,
                        const std::vector<Tensor> &outputs,
                        const RunResult &result) {
  TestRecord &r = record();
  if (!r.exists && !updating())
    return;
  size_t index = r.actual.size();
  std::string text = "call " + std::to_string(index) + " @" + src.getName() +
                     "\n";
  for (const std::string &line : argumentsBefore)
    text += line + "\n";
  for (const kvir::emu::LaunchStats &launch : result.launches)
    text += describeLaunch(launch);
  for (auto [i, out] : llvm::enumerate(outputs))
    text += "  output " + std::to_string(i) + " " + shapeOf(out) + ", " +
            std::to_string(allocationBytes(out)) + " bytes\n" +
            blockDigests(out);
  // What the call wrote anywhere else (a cache kv.append filled, ...).
  for (const std::string &line : describeArguments(src))
    text += "  after" + line.substr(1) + "\n";
  r.actual.push_back(text);
  if (updating())
    return;
  if (index >= r.expected.size()) {
    ADD_FAILURE() << "golden record " << r.path << " has "
                  << r.expected.size() << " calls; this is call " << index;
    return;
  }
  if (text == r.expected[index])
    return;
  // The arguments before the call are the test's inputs: if they differ,
  // the host generated other inputs, and the outputs cannot be compared.
  bool inputsDiffer = false;
  for (const std::string &line : argumentsBefore)
    inputsDiffer |= r.expected[index].find(line + "\n") == std::string::npos;
  if (inputsDiffer)
    ADD_FAILURE() << "the inputs of emulated call " << index
                  << " differ from its golden record " << r.path
                  << ": this host generated other random inputs (the test's "
                     "generators, not the emulator, depend on the host):\n"
                  << firstDifferences(text, r.expected[index]);
  else
    ADD_FAILURE() << "emulated call " << index << " differs from its golden "
                  << "record " << r.path
                  << " (the emulator must give the same bits on every host; "
                     "KVIR_GOLDEN_UPDATE=1 rewrites records after an intended "
                     "change):\n"
                  << firstDifferences(text, r.expected[index]);
}
