// A C++ engine's serving step through kvir's generated header: append the
// new tokens' K/V into the paged cache, then a causal batch prefill of the
// new query rows (two typed launchers on one stream), compared with a
// float64 reference. The header (kv_kernels.h) is kvir-translate's output
// for examples/prefill.mlir (32 query heads over 8 KV heads, head dim 128,
// NHD pages of 16 tokens, f16); the build generates it.
//
//   serving_engine <path to examples/prefill.mlir>
//
// On a machine with an NVIDIA driver the kernels run on the GPU; without
// one (or with KVIR_EXAMPLE_EMULATE=1) in kvir's emulator.
#include "kv_kernels.h"

#include "device.h"

#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {
constexpr int kHeads = 32, kKvHeads = 8, kDim = 128, kPage = 16;

void check(int rc, const char *what) {
  if (rc != 0)
    throw std::runtime_error(std::string(what) + " failed: " +
                             std::to_string(rc));
}

/// A device buffer holding a host vector's bytes.
template <typename T> struct DeviceBuffer {
  uint64_t ptr = 0;
  DeviceBuffer(device_t &dev, const std::vector<T> &host) {
    check(dev.alloc(&ptr, host.size() * sizeof(T)), "alloc");
    check(dev.upload(ptr, host.data(), host.size() * sizeof(T)), "upload");
  }
};

struct Request {
  int newRows, keys; // query rows appended, keys after the append
};

class ServingEngine {
public:
  explicit ServingEngine(device_t &dev) : dev(dev) {}

  /// Appends the rows' K/V, then attends the rows causally; returns the
  /// output and LSE copied back to the host.
  void step(const std::vector<Request> &batch, const std::vector<uint16_t> &q,
            const std::vector<uint16_t> &k, const std::vector<uint16_t> &v,
            std::vector<uint16_t> &pool, const std::vector<int32_t> &indptr,
            const std::vector<int32_t> &indices,
            const std::vector<int32_t> &last, std::vector<uint16_t> &out,
            std::vector<float> &lse) {
    int64_t nnz = 0;
    std::vector<int32_t> qoIndptr{0}, batchIndices, positions, kvLengths;
    for (size_t b = 0; b < batch.size(); ++b) {
      kvLengths.push_back(batch[b].keys);
      for (int i = 0; i < batch[b].newRows; ++i) {
        batchIndices.push_back(int32_t(b));
        positions.push_back(batch[b].keys - batch[b].newRows + i);
      }
      nnz += batch[b].newRows;
      qoIndptr.push_back(int32_t(nnz));
    }
    int64_t numPages = int64_t(pool.size()) / (2 * kPage * kKvHeads * kDim);

    // Plans: sizes on the host, and the prefill's work schedule from the
    // requests' rows and keys (the tables' lengths, known on the host).
    kvir_kv_kernels_append0_plan_t append;
    kvir_kv_kernels_prefill1_plan_t prefill;
    check(kvir_kv_kernels_append0_plan(&append, nnz, numPages,
                                       int64_t(indptr.size()),
                                       int64_t(indices.size())),
          "append plan");
    check(kvir_kv_kernels_prefill1_plan(&prefill, nnz,
                                        int64_t(qoIndptr.size()), numPages,
                                        int64_t(indices.size()),
                                        kvLengths.data(), qoIndptr.data()),
          "prefill plan");
    std::printf("plan: %lld rows, prefill %s (%lld items of %lld query "
                "tiles), workspace %zu bytes\n",
                (long long)nnz, prefill.split ? "split" : "direct",
                (long long)prefill.num_work,
                (long long)prefill.num_query_tiles, prefill.workspace_bytes);

    DeviceBuffer<uint16_t> dq(dev, q), dk(dev, k), dv(dev, v),
        dpool(dev, pool), dout(dev, out);
    DeviceBuffer<int32_t> dqo(dev, qoIndptr), dbatch(dev, batchIndices),
        dpos(dev, positions), dindptr(dev, indptr), dindices(dev, indices),
        dlast(dev, last);
    DeviceBuffer<float> dlse(dev, lse);
    uint64_t workspace = 0;
    check(dev.alloc(&workspace, std::max(append.workspace_bytes,
                                         prefill.workspace_bytes)),
          "alloc");
    check(kvir_kv_kernels_append0_launch(
              &dev.cu, &appendKernels, nullptr, &append, dk.ptr, dv.ptr,
              dbatch.ptr, dpos.ptr, dpool.ptr, dindptr.ptr, dindices.ptr,
              dlast.ptr, workspace),
          "append launch");
    check(kvir_kv_kernels_prefill1_launch(
              &dev.cu, &prefillKernels, nullptr, &prefill, dq.ptr, dqo.ptr,
              dpool.ptr, dindptr.ptr, dindices.ptr, dlast.ptr, dout.ptr,
              dlse.ptr, workspace),
          "prefill launch");
    check(dev.synchronize(), "synchronize");
    check(dev.download(out.data(), dout.ptr, out.size() * 2), "download");
    check(dev.download(lse.data(), dlse.ptr, lse.size() * 4), "download");
    check(dev.download(pool.data(), dpool.ptr, pool.size() * 2), "download");
    kvir_kv_kernels_append0_plan_release(&append);
    kvir_kv_kernels_prefill1_plan_release(&prefill);
  }

private:
  device_t &dev;
  kvir_kv_kernels_append0_kernels_t appendKernels{};
  kvir_kv_kernels_prefill1_kernels_t prefillKernels{};
};

float uniform(uint32_t &seed) {
  seed = seed * 1664525u + 1013904223u;
  return float(seed >> 8) / 8388608.0f - 1.0f;
}
} // namespace

int main(int argc, char **argv) try {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s examples/prefill.mlir\n", argv[0]);
    return 2;
  }
  device_t dev;
  if (open_device(&dev, argv[1], "serving_step", "sm_90a") != 0)
    return 1;
  std::printf("serving_engine: kernels on %s\n",
              dev.emulated ? "kvir's emulator" : "the GPU");

  const std::vector<Request> batch{{7, 37}, {64, 300}, {1, 1}};
  std::vector<int32_t> indptr{0}, indices, last;
  int pages = 0;
  for (const Request &r : batch) {
    int n = (r.keys + kPage - 1) / kPage;
    pages += n;
    indptr.push_back(pages);
    last.push_back(r.keys - (n - 1) * kPage);
  }
  // Distinct pages in a scattered order (7 is prime to the pool's 25).
  const int poolPages = pages + 2;
  for (int i = 0; i < pages; ++i)
    indices.push_back((i * 7 + 1) % poolPages);
  uint32_t seed = 2024;
  auto randomHalves = [&](size_t n) {
    std::vector<uint16_t> x(n);
    for (uint16_t &h : x)
      h = f32_to_f16(uniform(seed));
    return x;
  };
  int nnz = 0;
  for (const Request &r : batch)
    nnz += r.newRows;
  std::vector<uint16_t> pool = randomHalves(size_t(poolPages) * 2 * kPage *
                                            kKvHeads * kDim);
  const std::vector<uint16_t> before = pool;
  std::vector<uint16_t> q = randomHalves(size_t(nnz) * kHeads * kDim),
                        k = randomHalves(size_t(nnz) * kKvHeads * kDim),
                        v = randomHalves(size_t(nnz) * kKvHeads * kDim);
  std::vector<uint16_t> out(q.size(), 0x7e00); // NaN: unwritten fails
  std::vector<float> lse(size_t(nnz) * kHeads, NAN);

  ServingEngine engine(dev);
  engine.step(batch, q, k, v, pool, indptr, indices, last, out, lse);

  // float64 reference: the request's keys are the cache's (old tokens)
  // followed by the appended rows; row i sees keys j <= keys - newRows + i.
  double worst = 0;
  int row0 = 0;
  for (size_t b = 0; b < batch.size(); ++b) {
    const Request &r = batch[b];
    auto slot = [&](int j, int kv, int g) {
      int page = indices[indptr[b] + j / kPage];
      return ((((size_t)page * 2 + kv) * kPage + j % kPage) * kKvHeads + g) *
             kDim;
    };
    auto key = [&](int j, int kv, int g, int d) -> double {
      int fresh = j - (r.keys - r.newRows);
      if (fresh >= 0) {
        const std::vector<uint16_t> &src = kv ? v : k;
        return f16_to_f32(src[((size_t)(row0 + fresh) * kKvHeads + g) * kDim +
                              d]);
      }
      return f16_to_f32(before[slot(j, kv, g) + d]);
    };
    for (int i = 0; i < r.newRows; ++i)
      for (int h = 0; h < kHeads; ++h) {
        int g = h / (kHeads / kKvHeads), visible = r.keys - r.newRows + i + 1;
        std::vector<double> s(visible), o(kDim, 0.0);
        double top = -INFINITY, sum = 0, scale = 1e-4;
        const uint16_t *qh = &q[((size_t)(row0 + i) * kHeads + h) * kDim];
        for (int j = 0; j < visible; ++j) {
          double dot = 0;
          for (int d = 0; d < kDim; ++d)
            dot += f16_to_f32(qh[d]) * key(j, 0, g, d);
          s[j] = dot / std::sqrt(double(kDim));
          top = std::max(top, s[j]);
        }
        for (int j = 0; j < visible; ++j) {
          double w = std::exp(s[j] - top);
          sum += w;
          for (int d = 0; d < kDim; ++d)
            o[d] += w * key(j, 1, g, d);
        }
        for (int d = 0; d < kDim; ++d)
          scale = std::max(scale, std::fabs(o[d] / sum));
        const uint16_t *oh = &out[((size_t)(row0 + i) * kHeads + h) * kDim];
        for (int d = 0; d < kDim; ++d) {
          double err = std::fabs(f16_to_f32(oh[d]) - o[d] / sum) / scale;
          worst = std::isnan(err) ? INFINITY : std::max(worst, err);
        }
        double ref = (top + std::log(sum)) / std::log(2.0);
        if (!(std::fabs(lse[(size_t)(row0 + i) * kHeads + h] - ref) <= 2e-3))
          worst = INFINITY;
      }
    // The append wrote the new rows into the cache.
    for (int i = 0; i < r.newRows; ++i) {
      int j = r.keys - r.newRows + i;
      for (int kv = 0; kv < 2; ++kv)
        for (int g = 0; g < kKvHeads; ++g)
          for (int d = 0; d < kDim; ++d)
            if (f16_to_f32(pool[slot(j, kv, g) + d]) != key(j, kv, g, d))
              worst = INFINITY;
    }
    row0 += r.newRows;
  }
  std::printf("max relative error vs float64: %.3g (f16 tolerance 2e-3)\n",
              worst);
  return worst <= 2e-3 ? 0 : 1;
} catch (const std::exception &e) {
  std::fprintf(stderr, "serving_engine: %s\n", e.what());
  return 1;
}
