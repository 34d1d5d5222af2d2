/* A C engine's batch decode through kvir's generated header: plan on the
   host, launch through the CUDA driver table, compare with a float64
   reference. The header (kv_kernels.h) is kvir-translate's output for
   examples/decode.mlir (32 query heads over 8 KV heads, head dim 128, NHD
   pages of 16 tokens, f16); the build generates it.

     decode_engine <path to examples/decode.mlir>

   On a machine with an NVIDIA driver the kernels run on the GPU; without
   one (or with KVIR_EXAMPLE_EMULATE=1) in kvir's emulator. */
#include "kv_kernels.h"

#include "device.h"

#include <math.h>

enum { HEADS = 32, KV_HEADS = 8, DIM = 128, PAGE = 16, BATCH = 4 };

static uint32_t seed = 12345;
static float uniform(void) { /* in [-1, 1) */
  seed = seed * 1664525u + 1013904223u;
  return (float)(seed >> 8) / 8388608.0f - 1.0f;
}

#define CHECK(call)                                                            \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != 0) {                                                            \
      fprintf(stderr, "%s failed: %d\n", #call, rc_);                          \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(int argc, char **argv) {
  static const int32_t kv_len[BATCH] = {0, 1, 37, 2000};
  int32_t indptr[BATCH + 1], last[BATCH], *indices;
  int64_t num_pages = 0;
  device_t dev;
  kvir_kv_kernels_decode0_plan_t plan;
  kvir_kv_kernels_decode0_kernels_t kernels = {0};
  uint16_t *pool, *q, *out;
  float *lse;
  size_t pool_bytes, q_bytes, out_bytes, lse_bytes;
  uint64_t d_pool, d_q, d_indptr, d_indices, d_last, d_out, d_lse, d_work;
  double worst = 0;
  int b, h, i;

  if (argc != 2) {
    fprintf(stderr, "usage: %s examples/decode.mlir\n", argv[0]);
    return 2;
  }
  if (open_device(&dev, argv[1], "batch_decode", "sm_90a") != 0)
    return 1;
  printf("decode_engine: kernels on %s\n",
         dev.emulated ? "kvir's emulator" : "the GPU");

  /* Page tables: each request's pages, scattered through the pool. */
  indptr[0] = 0;
  for (b = 0; b < BATCH; ++b) {
    int32_t pages = (kv_len[b] + PAGE - 1) / PAGE;
    indptr[b + 1] = indptr[b] + pages;
    last[b] = pages ? kv_len[b] - (pages - 1) * PAGE : 0;
  }
  /* Distinct pages in a scattered order (7 is prime to the pool's 132). */
  num_pages = indptr[BATCH] + 3;
  indices = (int32_t *)malloc(sizeof(int32_t) * (size_t)indptr[BATCH]);
  for (i = 0; i < indptr[BATCH]; ++i)
    indices[i] = (int32_t)((i * 7 + 3) % num_pages);
  pool_bytes = (size_t)num_pages * 2 * PAGE * KV_HEADS * DIM * 2;
  q_bytes = (size_t)BATCH * HEADS * DIM * 2;
  out_bytes = q_bytes;
  lse_bytes = (size_t)BATCH * HEADS * 4;
  pool = (uint16_t *)malloc(pool_bytes);
  q = (uint16_t *)malloc(q_bytes);
  out = (uint16_t *)malloc(out_bytes);
  lse = (float *)malloc(lse_bytes);
  for (i = 0; i < (int)(pool_bytes / 2); ++i)
    pool[i] = f32_to_f16(uniform());
  for (i = 0; i < (int)(q_bytes / 2); ++i)
    q[i] = f32_to_f16(uniform());

  /* Plan (host side): the split-KV work list, the workspace size. */
  CHECK(kvir_kv_kernels_decode0_plan(&plan, BATCH, num_pages, indptr[BATCH],
                                     kv_len));
  printf("plan: %s, %lld work items, workspace %zu bytes\n",
         plan.split ? "split-KV" : "direct", (long long)plan.num_work,
         plan.workspace_bytes);

  CHECK(dev.alloc(&d_pool, pool_bytes));
  CHECK(dev.alloc(&d_q, q_bytes));
  CHECK(dev.alloc(&d_indptr, sizeof indptr));
  CHECK(dev.alloc(&d_indices, sizeof(int32_t) * (size_t)indptr[BATCH]));
  CHECK(dev.alloc(&d_last, sizeof last));
  CHECK(dev.alloc(&d_out, out_bytes));
  CHECK(dev.alloc(&d_lse, lse_bytes));
  CHECK(dev.alloc(&d_work, plan.workspace_bytes));
  CHECK(dev.upload(d_pool, pool, pool_bytes));
  CHECK(dev.upload(d_q, q, q_bytes));
  CHECK(dev.upload(d_indptr, indptr, sizeof indptr));
  CHECK(dev.upload(d_indices, indices, sizeof(int32_t) * (size_t)indptr[BATCH]));
  CHECK(dev.upload(d_last, last, sizeof last));

  CHECK(kvir_kv_kernels_decode0_launch(&dev.cu, &kernels, NULL, &plan, d_q,
                                       d_pool, d_indptr, d_indices, d_last,
                                       d_out, d_lse, d_work));
  CHECK(dev.synchronize());
  /* On sm_90a the split plan's merge is a programmatic dependent of the
     split kernel: its launch overlaps the split kernel's last blocks (the
     emulator checked that it waits before touching their output). */
  if (dev.emulated) {
    printf("programmatic dependent launches: %d\n", dependent_launches);
    if (dependent_launches != (plan.split ? 1 : 0))
      return 1;
  }
  CHECK(dev.download(out, d_out, out_bytes));
  CHECK(dev.download(lse, d_lse, lse_bytes));
  kvir_kv_kernels_decode0_plan_release(&plan);

  /* float64 reference: softmax(q k / sqrt(D)) v, LSE in base 2. */
  for (b = 0; b < BATCH; ++b)
    for (h = 0; h < HEADS; ++h) {
      int g = h / (HEADS / KV_HEADS), j, d;
      double top = -INFINITY, sum = 0, o[DIM] = {0}, scale = 0, *s;
      const uint16_t *qh = q + ((size_t)b * HEADS + h) * DIM;
      const uint16_t *oh = out + ((size_t)b * HEADS + h) * DIM;
      float l = lse[b * HEADS + h];
      if (kv_len[b] == 0) {
        for (d = 0; d < DIM; ++d)
          if (f16_to_f32(oh[d]) != 0.0f)
            worst = INFINITY;
        if (!(isinf(l) && l < 0))
          worst = INFINITY;
        continue;
      }
      s = (double *)malloc(sizeof(double) * (size_t)kv_len[b]);
      for (j = 0; j < kv_len[b]; ++j) {
        int32_t page = indices[indptr[b] + j / PAGE];
        const uint16_t *k = pool + ((((size_t)page * 2 + 0) * PAGE + j % PAGE) *
                                        KV_HEADS + g) * DIM;
        double dot = 0;
        for (d = 0; d < DIM; ++d)
          dot += (double)f16_to_f32(qh[d]) * f16_to_f32(k[d]);
        s[j] = dot / sqrt((double)DIM);
        if (s[j] > top)
          top = s[j];
      }
      for (j = 0; j < kv_len[b]; ++j) {
        int32_t page = indices[indptr[b] + j / PAGE];
        const uint16_t *v = pool + ((((size_t)page * 2 + 1) * PAGE + j % PAGE) *
                                        KV_HEADS + g) * DIM;
        double w = exp(s[j] - top);
        sum += w;
        for (d = 0; d < DIM; ++d)
          o[d] += w * f16_to_f32(v[d]);
      }
      free(s);
      for (d = 0; d < DIM; ++d)
        if (fabs(o[d] / sum) > scale)
          scale = fabs(o[d] / sum);
      for (d = 0; d < DIM; ++d) {
        double err = fabs(f16_to_f32(oh[d]) - o[d] / sum) /
                     (scale > 1e-4 ? scale : 1e-4);
        if (!(err <= worst))
          worst = isnan(err) ? INFINITY : (err > worst ? err : worst);
      }
      if (!(fabs(l - (top + log(sum)) / log(2.0)) <= 1e-3))
        worst = INFINITY;
    }
  printf("max relative error vs float64: %.3g (f16 tolerance 2e-3)\n", worst);
  return worst <= 2e-3 ? 0 : 1;
}
