//===- kvir-gpu-bench.cpp - Time kvir decode kernels on a GPU -------------===//
//
// Loads the PTX and launch manifests kvir-translate wrote for a kv.decode
// (direct, split and merge kernels), builds a paged KV cache for each shape
// (batch x kv_len, uniform or skewed; page size and heads from the plan),
// launches exactly as the manifest says (split-KV partitions from its
// heuristic with this device's SM count) and times it with CUDA events:
// warm-up, then the median of the timed iterations. Reports achieved GB/s
// (KV bytes once per KV head + q + out + lse) next to a device-to-device copy
// measured in the same run. Uses only the CUDA driver API, loaded at run time.
//
//   kvir-gpu-bench <kvir-translate output dir> [--iters N] [--warmup N]
//                  [--shapes B:L[:skew],...] [--dump-dir DIR]
//
//===----------------------------------------------------------------------===//
#include "cuda_driver.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace cudrv;
namespace json = llvm::json;

static llvm::cl::opt<std::string> dir(llvm::cl::Positional,
                                      llvm::cl::desc("<kvir-translate dir>"),
                                      llvm::cl::Required);
static llvm::cl::opt<int> iters("iters", llvm::cl::init(50));
static llvm::cl::opt<int> warmup("warmup", llvm::cl::init(10));
static llvm::cl::opt<std::string> shapesOpt(
    "shapes",
    llvm::cl::desc("Comma-separated batch:kv_len[:skew] (skew: one request "
                   "of kv_len, the others kv_len/8)"),
    llvm::cl::init("1:512,1:2048,1:8192,1:32768,16:512,16:2048,16:8192,"
                   "64:512,64:2048,256:512,256:1024,16:8192:skew,64:2048:skew"));

static Driver cu;

#define CHECK(call)                                                            \
  do {                                                                         \
    CUresult rc_ = (call);                                                     \
    if (rc_ != 0) {                                                            \
      const char *msg = "?";                                                   \
      cu.cuGetErrorString(rc_, &msg);                                          \
      llvm::errs() << "CUDA error " << rc_ << " (" << msg << ") at "          \
                   << #call << "\n";                                           \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

namespace {
struct Shape {
  int64_t batch, kvLen;
  bool skew;
};

/// A device buffer and the memref view the kernel gets of it.
struct Buffer {
  CUdeviceptr ptr = 0;
  std::vector<int64_t> sizes;
  size_t bytes = 0;
};

int64_t elementBytes(llvm::StringRef dtype) {
  if (dtype == "f16" || dtype == "bf16")
    return 2;
  if (dtype == "f32" || dtype == "i32")
    return 4;
  return 8;
}

/// Evaluates a size expression of a manifest (an integer, or the text of a
/// #kvgpu.size: integers, names, +, *, min / max / ceildiv / floordiv calls
/// and parentheses) over the sizes known so far.
struct SizeEval {
  const std::map<std::string, int64_t> &env;
  llvm::StringRef s;

  void skip() { s = s.ltrim(); }
  int64_t expr() {
    int64_t v = term();
    for (skip(); s.consume_front("+"); skip())
      v += term();
    return v;
  }
  int64_t term() {
    int64_t v = factor();
    for (skip(); s.consume_front("*"); skip())
      v *= factor();
    return v;
  }
  int64_t factor() {
    skip();
    if (s.consume_front("(")) {
      int64_t v = expr();
      skip();
      s.consume_front(")");
      return v;
    }
    size_t n = 0;
    while (n < s.size() && (llvm::isAlnum(s[n]) || s[n] == '_' || s[n] == '-'))
      ++n;
    llvm::StringRef word = s.take_front(n);
    s = s.drop_front(n);
    int64_t value;
    if (!word.getAsInteger(10, value))
      return value;
    skip();
    if (!s.consume_front("(")) {
      auto it = env.find(word.str());
      if (it == env.end()) {
        llvm::errs() << "kvir-gpu-bench: unknown size '" << word << "'\n";
        std::exit(1);
      }
      return it->second;
    }
    std::vector<int64_t> args{expr()};
    for (skip(); s.consume_front(","); skip())
      args.push_back(expr());
    s.consume_front(")");
    if (word == "min")
      return *std::min_element(args.begin(), args.end());
    if (word == "max")
      return *std::max_element(args.begin(), args.end());
    if (word == "ceildiv")
      return (args[0] + args[1] - 1) / args[1];
    if (word == "floordiv")
      return args[0] / args[1];
    llvm::errs() << "kvir-gpu-bench: unknown function '" << word << "'\n";
    std::exit(1);
  }
};

int64_t evalDim(const json::Value &v, const std::map<std::string, int64_t> &env) {
  if (auto i = v.getAsInteger())
    return *i;
  return SizeEval{env, v.getAsString().value_or("")}.expr();
}

uint16_t toHalf(float f) {
  // Round-to-nearest-even f32 -> f16 for the random inputs (normal range).
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (exp <= 0)
    return sign;
  uint32_t h = sign | (uint32_t(exp) << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h;
  return uint16_t(h);
}
} // namespace

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(argc, argv, "kvir decode GPU benchmark\n");
  const char *why = nullptr;
  if (!cu.load(&why)) {
    llvm::outs() << "kvir-gpu-bench: " << why << "; nothing to measure\n";
    return 0;
  }

  // The plan and the kernels of each role, from the decode manifests.
  json::Object plan;
  std::map<std::string, json::Object> kernels;
  std::string ptxFile;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    if (llvm::sys::path::extension(it->path()) != ".json")
      continue;
    auto buf = llvm::MemoryBuffer::getFile(it->path());
    auto parsed = json::parse((*buf)->getBuffer());
    if (!parsed) {
      llvm::consumeError(parsed.takeError());
      continue;
    }
    json::Object *m = parsed->getAsObject();
    const json::Object *p = m->getObject("plan");
    if (!p || p->getString("op") != std::optional<llvm::StringRef>("kv.decode"))
      continue;
    plan = *p;
    ptxFile = m->getString("ptx")->str();
    kernels[m->getString("role")->str()] = *m;
  }
  if (ptxFile.empty() || !kernels.count("direct") || !kernels.count("split") ||
      !kernels.count("merge")) {
    llvm::errs() << "kvir-gpu-bench: no kv.decode manifests in " << dir << "\n";
    return 1;
  }
  auto ptx = llvm::MemoryBuffer::getFile(dir + "/" + ptxFile, true);
  std::string ptxText = (*ptx)->getBuffer().str();

  CHECK(cu.cuInit(0));
  CUdevice dev;
  CHECK(cu.cuDeviceGet(&dev, 0));
  char name[256];
  CHECK(cu.cuDeviceGetName(name, sizeof(name), dev));
  int sms = 0;
  CHECK(cu.cuDeviceGetAttribute(&sms, kAttrMultiprocessorCount, dev));
  CUcontext ctx;
  CHECK(cu.cuCtxCreate(&ctx, 0, dev));
  CUmodule module;
  CHECK(cu.cuModuleLoadData(&module, ptxText.c_str()));
  auto kernelOf = [&](const char *role) {
    const json::Object *k = &kernels.at(role);
    CUfunction f;
    CHECK(cu.cuModuleGetFunction(&f, module,
                                 k->getString("kernel")->str().c_str()));
    return std::make_pair(f, k);
  };
  auto [directFn, direct] = kernelOf("direct");
  auto [splitFn, split] = kernelOf("split");
  auto [mergeFn, merge] = kernelOf("merge");
  // Heads and head dim from the output buffer's shape [batch, Hq, Dv]; page
  // size and the KV heads from the pool's shape of the plan's arguments.
  const json::Object *outArg = nullptr, *poolArg = nullptr;
  bool blockTable = false;
  for (const json::Value &v : *plan.getArray("args")) {
    const json::Object *a = v.getAsObject();
    llvm::StringRef argName = *a->getString("name");
    if (argName == "out")
      outArg = a;
    if (argName == "pool" || argName == "k_pool")
      poolArg = a;
    blockTable |= argName == "block_table";
  }
  int64_t hq = *(*outArg->getArray("shape"))[1].getAsInteger();
  int64_t d = *(*outArg->getArray("shape"))[2].getAsInteger();
  // NHD pools [pages, (2,) page_size, H, D]: the bench builds NHD caches.
  const json::Array &poolShape = *poolArg->getArray("shape");
  int64_t hkv = *poolShape[poolShape.size() - 2].getAsInteger();
  int64_t pageSize = *poolShape[poolShape.size() - 3].getAsInteger();

  CUevent start, stop;
  CHECK(cu.cuEventCreate(&start, 0));
  CHECK(cu.cuEventCreate(&stop, 0));
  auto median = [](std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };

  // Device-to-device copy bandwidth in the same run: the roofline to beat.
  size_t copyBytes = size_t(1) << 30;
  CUdeviceptr a, b;
  CHECK(cu.cuMemAlloc(&a, copyBytes));
  CHECK(cu.cuMemAlloc(&b, copyBytes));
  std::vector<float> copyMs;
  for (int i = 0; i < warmup + iters; ++i) {
    CHECK(cu.cuEventRecord(start, nullptr));
    CHECK(cu.cuMemcpyDtoD(b, a, copyBytes));
    CHECK(cu.cuEventRecord(stop, nullptr));
    CHECK(cu.cuEventSynchronize(stop));
    float ms;
    CHECK(cu.cuEventElapsedTime(&ms, start, stop));
    if (i >= warmup)
      copyMs.push_back(ms);
  }
  double copyGBs = 2.0 * copyBytes / (median(copyMs) * 1e-3) / 1e9;
  CHECK(cu.cuMemFree(a));
  CHECK(cu.cuMemFree(b));

  llvm::outs() << "## " << name << " (" << sms << " SMs), kernel "
               << direct->getString("kernel")->str() << "\n\n"
               << "Device-to-device copy: " << llvm::format("%.0f", copyGBs)
               << " GB/s (read + write)\n\n"
               << "| batch | kv_len | skew | partitions | time (us) | GB/s | "
                  "% of copy |\n|---|---|---|---|---|---|---|\n";

  std::mt19937_64 rng(42);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  llvm::SmallVector<llvm::StringRef> shapeTexts;
  llvm::StringRef(shapesOpt).split(shapeTexts, ',');
  for (llvm::StringRef text : shapeTexts) {
    llvm::SmallVector<llvm::StringRef> parts;
    text.split(parts, ':');
    Shape s{std::stoll(parts[0].str()), std::stoll(parts[1].str()),
            parts.size() > 2 && parts[2] == "skew"};
    std::vector<int64_t> lens(s.batch, s.skew ? std::max<int64_t>(1, s.kvLen / 8)
                                              : s.kvLen);
    if (s.skew)
      lens[0] = s.kvLen;
    std::vector<int32_t> indptr{0}, indices, last, seqLens;
    int64_t maxBlocks = 0, totalTokens = 0;
    for (int64_t len : lens) {
      int64_t pages = (len + pageSize - 1) / pageSize;
      maxBlocks = std::max(maxBlocks, pages);
      indptr.push_back(indptr.back() + int32_t(pages));
      last.push_back(int32_t(len - (pages - 1) * pageSize));
      seqLens.push_back(int32_t(len));
      totalTokens += len;
    }
    int64_t numPages = indptr.back();
    for (int64_t i = 0; i < numPages; ++i)
      indices.push_back(int32_t(i));
    std::shuffle(indices.begin(), indices.end(), rng);
    std::vector<int32_t> table(s.batch * maxBlocks, 0);
    for (int64_t r = 0, k = 0; r < s.batch; ++r)
      for (int64_t p = 0; p < indptr[r + 1] - indptr[r]; ++p)
        table[r * maxBlocks + p] = indices[k++];

    // The plan's sizes, its split-KV rule included, evaluated as the host
    // code would.
    std::map<std::string, int64_t> env{{"batch", s.batch},
                                       {"num_pages", numPages},
                                       {"num_page_ids", numPages},
                                       {"max_pages", maxBlocks}};
    for (const json::Value &v : *plan.getArray("sizes")) {
      const json::Object *size = v.getAsObject();
      if (const json::Value *value = size->get("value"))
        env[size->getString("name")->str()] = evalDim(*value, env);
    }
    int64_t numParts = env.at(plan.getString("partitions")->str());
    std::map<std::string, Buffer> buffers;
    auto bufferFor = [&](const json::Object &arg) -> Buffer & {
      std::string argName = arg.getString("name")->str();
      Buffer &buf = buffers[argName];
      if (buf.ptr)
        return buf;
      int64_t count = 1;
      for (const json::Value &dim : *arg.getArray("shape")) {
        buf.sizes.push_back(evalDim(dim, env));
        count *= buf.sizes.back();
      }
      buf.bytes = std::max<size_t>(16, count * elementBytes(*arg.getString("dtype")));
      CHECK(cu.cuMemAlloc(&buf.ptr, buf.bytes));
      std::vector<char> host(buf.bytes, 0);
      auto put = [&](const std::vector<int32_t> &v) {
        std::memcpy(host.data(), v.data(), std::min(host.size(), v.size() * 4));
      };
      if (argName == "kv_indptr")
        put(indptr);
      else if (argName == "kv_indices")
        put(indices);
      else if (argName == "kv_last_page_len")
        put(last);
      else if (argName == "seq_lens")
        put(seqLens);
      else if (argName == "block_table")
        put(table);
      else if (elementBytes(*arg.getString("dtype")) == 2)
        for (size_t i = 0; i < buf.bytes / 2; ++i) {
          uint16_t h = toHalf(uni(rng));
          std::memcpy(host.data() + 2 * i, &h, 2);
        }
      CHECK(cu.cuMemcpyHtoD(buf.ptr, host.data(), buf.bytes));
      return buf;
    };
    // Kernel parameters: every memref expands to (allocated, aligned,
    // offset, sizes..., strides...) of a contiguous row-major buffer.
    auto paramsFor = [&](const json::Object &kernel,
                         std::vector<uint64_t> &storage) {
      storage.clear();
      for (const json::Value &v : *kernel.getArray("params")) {
        const json::Object &arg = *v.getAsObject();
        if (arg.getArray("shape")->empty()) {
          storage.push_back(uint64_t(env.at(arg.getString("name")->str())));
          continue;
        }
        Buffer &buf = bufferFor(arg);
        storage.push_back(buf.ptr);
        storage.push_back(buf.ptr);
        storage.push_back(0);
        for (int64_t size : buf.sizes)
          storage.push_back(uint64_t(size));
        int64_t stride = 1;
        std::vector<uint64_t> strides(buf.sizes.size());
        for (size_t i = buf.sizes.size(); i-- > 0;) {
          strides[i] = uint64_t(stride);
          stride *= buf.sizes[i];
        }
        storage.insert(storage.end(), strides.begin(), strides.end());
      }
      std::vector<void *> ptrs;
      for (uint64_t &value : storage)
        ptrs.push_back(&value);
      return ptrs;
    };
    auto launch = [&](CUfunction fn, const json::Object &kernel,
                      std::vector<uint64_t> &storage) {
      std::vector<void *> args = paramsFor(kernel, storage);
      const json::Array &grid = *kernel.getArray("grid");
      const json::Array &block = *kernel.getArray("block");
      unsigned g[3], t[3];
      for (int i = 0; i < 3; ++i) {
        g[i] = unsigned(evalDim(grid[i], env));
        t[i] = unsigned(*block[i].getAsInteger());
      }
      CHECK(cu.cuLaunchKernel(fn, g[0], g[1], g[2], t[0], t[1], t[2], 0,
                              nullptr, args.data(), nullptr));
    };
    std::vector<uint64_t> s1, s2;
    std::vector<float> ms;
    for (int i = 0; i < warmup + iters; ++i) {
      CHECK(cu.cuEventRecord(start, nullptr));
      if (numParts == 1) {
        launch(directFn, *direct, s1);
      } else {
        launch(splitFn, *split, s1);
        launch(mergeFn, *merge, s2);
      }
      CHECK(cu.cuEventRecord(stop, nullptr));
      CHECK(cu.cuEventSynchronize(stop));
      float t;
      CHECK(cu.cuEventElapsedTime(&t, start, stop));
      if (i >= warmup)
        ms.push_back(t);
    }
    double bytes = double(totalTokens) * hkv * d * 2 * 2 +
                   double(s.batch) * hq * d * 2 * 2 + double(s.batch) * hq * 4;
    double t = median(ms);
    double gbs = bytes / (t * 1e-3) / 1e9;
    llvm::outs() << "| " << s.batch << " | " << s.kvLen << " | "
                 << (s.skew ? "yes" : "no") << " | " << numParts << " | "
                 << llvm::format("%.1f", t * 1e3) << " | "
                 << llvm::format("%.0f", gbs) << " | "
                 << llvm::format("%.0f%%", 100.0 * gbs / copyGBs) << " |\n";
    for (auto &[n, buf] : buffers)
      CHECK(cu.cuMemFree(buf.ptr));
    (void)blockTable;
  }
  return 0;
}
