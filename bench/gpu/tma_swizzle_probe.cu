// What the hardware's swizzles do, read off silicon: a TMA load
// (cp.async.bulk.tensor.2d, completed through an mbarrier) of a
// rows x cols u16 matrix whose element (r, c) holds r * cols + c, in boxes
// of `box_cols` columns (the swizzle's span) placed one after another in
// shared memory from `offset` bytes past a 1024-byte boundary; the block
// then copies the bytes from that address out as they lie. kvir's
// TileLayout must put every element where the hardware did
// (test/Unit/TileLayoutTest.cpp reads the recorded output). Needs sm_90;
// built on the GPU machine by run_device.sh (nvcc -arch=sm_90a -lcuda).
//   tma_swizzle_probe <swizzle 0|32|64|128> <rows> <cols> <box_cols> <offset>
// prints "probe swizzle=S rows=R cols=C box_cols=B offset=O:" and the
// shared-memory u16 values in address order, or "error: ..." and exits 1.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(x)                                                          \
  do {                                                                         \
    cudaError_t e = (x);                                                       \
    if (e != cudaSuccess) {                                                    \
      std::printf("error: %s: %s\n", #x, cudaGetErrorString(e));               \
      return 1;                                                                \
    }                                                                          \
  } while (0)

__global__ void probe(const __grid_constant__ CUtensorMap map, int rows,
                      int boxCols, int boxes, int offset, uint16_t *out) {
  extern __shared__ uint8_t raw[];
  __shared__ alignas(8) uint64_t barrier;
  uint32_t rawAddr = static_cast<uint32_t>(__cvta_generic_to_shared(raw));
  uint32_t base = (rawAddr + 1023u) & ~1023u;
  uint8_t *tile = raw + (base - rawAddr) + offset;
  int elements = rows * boxCols * boxes;
  // Poison: an element TMA does not write reads 0xffff.
  for (int i = threadIdx.x; i < elements; i += blockDim.x)
    reinterpret_cast<uint16_t *>(tile)[i] = 0xffff;
  uint32_t bar = static_cast<uint32_t>(__cvta_generic_to_shared(&barrier));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  // The poison (generic proxy) before TMA's writes (async proxy).
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile(
        "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
        "r"(elements * 2)
        : "memory");
    for (int k = 0; k < boxes; ++k) {
      uint32_t dst = base + offset + k * rows * boxCols * 2;
      asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
                   "complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
                   "l"(reinterpret_cast<uint64_t>(&map)), "r"(k * boxCols),
                   "r"(0), "r"(bar)
                   : "memory");
    }
  }
  asm volatile("{\n"
               ".reg .pred done;\n"
               "WAIT%=:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
               "@!done bra WAIT%=;\n"
               "}\n" ::"r"(bar)
               : "memory");
  for (int i = threadIdx.x; i < elements; i += blockDim.x)
    out[i] = reinterpret_cast<uint16_t *>(tile)[i];
}

int main(int argc, char **argv) {
  if (argc != 6) {
    std::printf("usage: %s swizzle rows cols box_cols offset\n", argv[0]);
    return 2;
  }
  int swizzle = std::atoi(argv[1]), rows = std::atoi(argv[2]),
      cols = std::atoi(argv[3]), boxCols = std::atoi(argv[4]),
      offset = std::atoi(argv[5]);
  CUtensorMapSwizzle mode;
  switch (swizzle) {
  case 0: mode = CU_TENSOR_MAP_SWIZZLE_NONE; break;
  case 32: mode = CU_TENSOR_MAP_SWIZZLE_32B; break;
  case 64: mode = CU_TENSOR_MAP_SWIZZLE_64B; break;
  case 128: mode = CU_TENSOR_MAP_SWIZZLE_128B; break;
  default: std::printf("error: swizzle %d\n", swizzle); return 2;
  }
  int boxes = cols / boxCols, elements = rows * cols;
  std::vector<uint16_t> host(elements);
  for (int i = 0; i < elements; ++i)
    host[i] = static_cast<uint16_t>(i);
  uint16_t *matrix, *out;
  CHECK_CUDA(cudaMalloc(&matrix, elements * 2));
  CHECK_CUDA(cudaMalloc(&out, elements * 2));
  CHECK_CUDA(cudaMemcpy(matrix, host.data(), elements * 2,
                        cudaMemcpyHostToDevice));
  CUtensorMap map;
  cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};
  cuuint64_t strides[1] = {cuuint64_t(cols) * 2};
  cuuint32_t box[2] = {cuuint32_t(boxCols), cuuint32_t(rows)};
  cuuint32_t unit[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(
      &map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, matrix, dims, strides, box,
      unit, CU_TENSOR_MAP_INTERLEAVE_NONE, mode,
      CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    const char *why = nullptr;
    cuGetErrorString(r, &why);
    std::printf("error: cuTensorMapEncodeTiled: %s\n", why ? why : "?");
    return 1;
  }
  int shared = 1024 + offset + elements * 2;
  CHECK_CUDA(cudaFuncSetAttribute(
      probe, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  probe<<<1, 128, shared>>>(map, rows, boxCols, boxes, offset, out);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(host.data(), out, elements * 2,
                        cudaMemcpyDeviceToHost));
  std::printf("probe swizzle=%d rows=%d cols=%d box_cols=%d offset=%d:",
              swizzle, rows, cols, boxCols, offset);
  for (int i = 0; i < elements; ++i)
    std::printf(" %u", host[i]);
  std::printf("\n");
  return 0;
}
