//===- CaseDump.cpp - Write emulated GPU calls out for replay -------------===//
#include "CaseDump.h"
#include "GpuHarness.h"

#include "kvir/Emulator/Emulator.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <map>

using namespace kvir::test;
namespace json = llvm::json;

namespace {
/// The case written last: reference checks are added to it.
struct LastCase {
  std::string dir;
  json::Object doc;
  /// Allocation base -> its id in the case.
  std::map<uint64_t, int64_t> allocationIds;
  int checks = 0;
};
LastCase &lastCase() {
  static LastCase last;
  return last;
}

const char *dumpRoot() { return std::getenv("KVIR_DUMP_CASES"); }

bool writeFile(const std::string &path, const void *data, size_t bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return false;
  os.write(static_cast<const char *>(data), bytes);
  return true;
}

void writeJson(const LastCase &c) {
  std::error_code ec;
  llvm::raw_fd_ostream os(c.dir + "/case.json", ec);
  if (!ec)
    os << json::Value(json::Object(c.doc)) << "\n";
}

std::string caseName() {
  std::string name = "case";
  if (const auto *info =
          ::testing::UnitTest::GetInstance()->current_test_info())
    name = std::string(info->test_suite_name()) + "." + info->name();
  for (char &c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_')
      c = '_';
  static std::map<std::string, int> calls;
  return name + "." + std::to_string(calls[name]++);
}

json::Array toArray(const std::vector<int64_t> &v) {
  json::Array a;
  for (int64_t x : v)
    a.push_back(x);
  return a;
}

/// The arguments' (tensor) view of a buffer: where `t` lies in its case
/// allocation.
json::Object viewOf(const LastCase &c, const Tensor &t) {
  auto it = c.allocationIds.find(reinterpret_cast<uint64_t>(t.data()));
  return json::Object{{"alloc", it == c.allocationIds.end()
                                    ? json::Value(nullptr)
                                    : json::Value(it->second)},
                      {"dtype", mlirName(t.dtype())},
                      {"shape", toArray(t.shape())},
                      {"strides", toArray(t.strides())},
                      {"offset", t.offset()}};
}
} // namespace

bool kvir::test::gpu::caseDumpEnabled() { return dumpRoot() != nullptr; }

void kvir::test::gpu::collectModule(const std::string &text,
                                    const std::string &chip,
                                    int64_t graphMaxBatch) {
  const char *dir = std::getenv("KVIR_COLLECT_MODULES");
  if (!dir)
    return;
  std::string header = "// kvir-gate: chip=" + parseGpuTarget(chip).chip +
                       " graph-max-batch=" + std::to_string(graphMaxBatch) +
                       "\n";
  std::string contents = header + text;
  std::string name =
      llvm::utohexstr(llvm::xxh3_64bits(contents), /*LowerCase=*/true);
  llvm::sys::fs::create_directories(dir);
  std::string path = std::string(dir) + "/" + name + ".mlir";
  if (!llvm::sys::fs::exists(path))
    writeFile(path, contents.data(), contents.size());
}

void kvir::test::gpu::dumpCase(const KernelSource &src, const std::string &chip,
                               int64_t graphMaxBatch) {
  const emu::Emulator &emu = emu::Emulator::get();
  LastCase &c = lastCase();
  c = LastCase();
  c.dir = std::string(dumpRoot()) + "/" + caseName();
  llvm::sys::fs::create_directories(c.dir);
  std::string text = src.text();
  writeFile(c.dir + "/source.mlir", text.data(), text.size());

  // Allocations: the test's tensors (final contents too) and whatever the
  // host code allocated (workspaces, schedules) that the launches used.
  json::Array allocs;
  auto addAllocation = [&](uint64_t base, const std::string &what,
                           const std::vector<uint8_t> &firstUse) {
    int64_t id = int64_t(c.allocationIds.size());
    c.allocationIds[base] = id;
    std::string file = "alloc" + std::to_string(id) + ".bin";
    writeFile(c.dir + "/" + file, firstUse.data(), firstUse.size());
    allocs.push_back(json::Object{{"id", id},
                                  {"what", what},
                                  {"bytes", int64_t(firstUse.size())},
                                  {"file", file}});
  };
  for (const auto &[base, alloc] : emu.getRecordedAllocations())
    addAllocation(base, alloc.what, alloc.firstUse);
  json::Array args;
  const auto &types = src.argTypes();
  for (size_t i = 0; i < src.args().size(); ++i) {
    const KernelArg &a = src.args()[i];
    json::Object arg{{"name", types[i].first.substr(1)},
                     {"type", types[i].second}};
    if (a.kind == KernelArg::Kind::Memref) {
      const Tensor &t = a.tensor;
      uint64_t base = reinterpret_cast<uint64_t>(t.data());
      size_t bytes = size_t(t.allocationElements()) * byteSize(t.dtype());
      if (!c.allocationIds.count(base))
        addAllocation(base, "unused test tensor", {});
      // Final contents where the call changed them (outputs, appended pools).
      const auto &recorded = emu.getRecordedAllocations();
      auto first = recorded.find(base);
      if (first == recorded.end() || first->second.firstUse.size() != bytes ||
          std::memcmp(first->second.firstUse.data(), t.data(), bytes) != 0) {
        std::string file =
            "alloc" + std::to_string(c.allocationIds[base]) + ".final.bin";
        writeFile(c.dir + "/" + file, t.data(), bytes);
        arg["final_file"] = file;
      }
      for (auto [key, value] : viewOf(c, t))
        arg[key] = std::move(value);
    } else {
      arg["value"] = double(a.scalar);
    }
    args.push_back(std::move(arg));
  }

  json::Array launches;
  for (const emu::LaunchRecord &r : emu.getLaunchRecords()) {
    json::Array params;
    for (const emu::LaunchRecord::Param &p : r.params) {
      std::string hex;
      for (uint8_t b : p.bytes) {
        static const char digits[] = "0123456789abcdef";
        hex += digits[b >> 4];
        hex += digits[b & 15];
      }
      json::Object param{{"bytes", hex}};
      if (p.allocation) {
        param["alloc"] = c.allocationIds.at(p.allocation);
        param["offset"] = int64_t(p.offset);
      }
      params.push_back(std::move(param));
    }
    launches.push_back(
        json::Object{{"kernel", r.kernel},
                     {"grid", json::Array{r.grid.x, r.grid.y, r.grid.z}},
                     {"block", json::Array{r.block.x, r.block.y, r.block.z}},
                     {"dynamic_shared_bytes", int64_t(r.dynamicSharedBytes)},
                     {"params", std::move(params)}});
  }
  c.doc = json::Object{
      {"function", src.getName()},        {"chip", parseGpuTarget(chip).chip},
      {"mma", parseGpuTarget(chip).mma},  {"graph_max_batch", graphMaxBatch},
      {"allocations", std::move(allocs)}, {"args", std::move(args)},
      {"launches", std::move(launches)},  {"checks", json::Array()}};
  writeJson(c);
}

void kvir::test::gpu::dumpStateCheck(const StateBuffers &got,
                                     const ref::State &expected,
                                     double outputTolerance,
                                     double lseTolerance) {
  LastCase &c = lastCase();
  if (!caseDumpEnabled() || c.dir.empty())
    return;
  int n = c.checks++;
  std::string oFile = "ref" + std::to_string(n) + "_o.f64";
  std::string lseFile = "ref" + std::to_string(n) + "_lse.f64";
  writeFile(c.dir + "/" + oFile, expected.o.data(),
            expected.o.size() * sizeof(double));
  writeFile(c.dir + "/" + lseFile, expected.lse.data(),
            expected.lse.size() * sizeof(double));
  c.doc.getArray("checks")->push_back(
      json::Object{{"o", viewOf(c, got.o)},
                   {"lse", viewOf(c, got.lse)},
                   {"ref_o", oFile},
                   {"ref_lse", lseFile},
                   {"rows", expected.rows},
                   {"heads", expected.heads},
                   {"head_dim_v", expected.headDimV},
                   {"base", expected.base == ref::Base::Two ? 2 : 0},
                   {"tolerance", outputTolerance},
                   {"lse_tolerance", lseTolerance}});
  writeJson(c);
}
