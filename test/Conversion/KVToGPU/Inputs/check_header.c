/* Compiled against kvir-translate's header for Inputs/decode-kernels.mlir on
   sm_90a (132 SMs): the split-KV helpers must follow the plan's formulas. */
#include "kv_kernels.h"

#include <stdio.h>
#include <string.h>

static int fails;

/* A driver table recording what the typed launcher asks of the driver. */
static int launches, uploads;
static const char *names[4];
static unsigned grids[4][3], blocks[4][3];
static uint64_t firstPointer[4], firstExtent[4];
static size_t uploaded;
static int fake_load(void **module, const void *image) {
  *module = (void *)image;
  return 0;
}
static int fake_function(void **function, void *module, const char *name) {
  (void)module;
  *function = (void *)name;
  return 0;
}
static int fake_attribute(void *function, int attribute, int value) {
  (void)function, (void)attribute, (void)value;
  return 0;
}
static int fake_launch(void *function, unsigned gx, unsigned gy, unsigned gz,
                       unsigned bx, unsigned by, unsigned bz, unsigned shared,
                       void *stream, void **params, void **extra) {
  (void)shared, (void)stream, (void)extra;
  names[launches] = (const char *)function;
  grids[launches][0] = gx, grids[launches][1] = gy, grids[launches][2] = gz;
  blocks[launches][0] = bx, blocks[launches][1] = by, blocks[launches][2] = bz;
  memcpy(&firstPointer[launches], params[0], 8);
  /* The split kernel's first extent follows its 10 pointers. */
  memcpy(&firstExtent[launches], params[launches == 0 ? 10 : 0], 8);
  ++launches;
  return 0;
}
/* cuLaunchKernelEx: records the launch and its one attribute. */
static int dependent[4];
static int fake_launch_ex(const kvir_cu_launch_config_t *config,
                          void *function, void **params, void **extra) {
  if (config->num_attrs != 1 ||
      config->attrs[0].id !=
          KVIR_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION ||
      config->attrs[0].value.value != 1)
    return 1;
  dependent[launches] = 1;
  return fake_launch(function, config->grid_x, config->grid_y,
                     config->grid_z, config->block_x, config->block_y,
                     config->block_z, config->shared_bytes, config->stream,
                     params, extra);
}
static int fake_upload(uint64_t device, const void *host, size_t bytes,
                       void *stream) {
  (void)device, (void)host, (void)stream;
  uploaded += bytes;
  ++uploads;
  return 0;
}
#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond)) {                                                             \
      printf("FAIL: %s\n", #cond);                                             \
      ++fails;                                                                 \
    }                                                                          \
  } while (0)

int main(void) {
  /* Plan 0: 8 KV heads, 32 q heads, head_dim 128; 132 SMs holding 7
     decode blocks each (29.8 KB of shared memory per block): a work list
     of at most max(batch * P, batch, ceil(132 * 7 / 8) = 116) items per
     KV head. */
  EXPECT(kvir_kv_kernels_plan0_num_partitions(1) == 32); /* ceil(264/8) = 33 */
  EXPECT(kvir_kv_kernels_plan0_num_partitions(4) == 9);  /* ceil(264/32) */
  EXPECT(kvir_kv_kernels_plan0_num_partitions(33) == 1); /* 264 blocks */
  EXPECT(kvir_kv_kernels_plan0_num_partitions(32) == 2);
  EXPECT(kvir_kv_kernels_plan0_max_work(4) == 116);
  EXPECT(kvir_kv_kernels_plan0_max_work(200) == 200);
  EXPECT(kvir_kv_kernels_plan0_max_work(1) == 116);
  EXPECT(kvir_kv_kernels_plan0_workspace_bytes(4) ==
         (size_t)116 * 32 * (128 + 1) * 4);
  EXPECT(kvir_kv_kernels_plan0_workspace_bytes(200) ==
         (size_t)200 * 32 * (128 + 1) * 4);
  /* Plan 1: 2 KV heads, 16 q heads, head_dim 64: 7 resident blocks per
     SM, ceil(132 * 7 / 2) = 462 items per KV head. */
  EXPECT(kvir_kv_kernels_plan1_num_partitions(3) == 32); /* ceil(264/6) = 44 */
  EXPECT(kvir_kv_kernels_plan1_max_work(3) == 462);
  EXPECT(kvir_kv_kernels_plan1_workspace_bytes(3) ==
         (size_t)462 * 16 * (64 + 1) * 4);
  {
    /* One request of 1000 keys among three short ones: chunks of 256 (the
       smallest allowed for group 4) cut it into 4; the others stay whole. */
    int32_t lengths[4] = {5, 1000, 0, 100};
    int32_t items[132 * 4], indptr[5];
    int64_t n = kvir_kv_kernels_plan0_schedule(lengths, 4, items, 132, indptr);
    EXPECT(n == 7);
    EXPECT(indptr[0] == 0 && indptr[1] == 1 && indptr[2] == 5 &&
           indptr[3] == 6 && indptr[4] == 7);
    EXPECT(items[0] == 1 && items[2] == 4); /* longest chunks first */
    EXPECT(items[7 * 4] == -1);             /* padding past the items */
    /* Without lengths: every request in num_partitions(4) = 9 pieces. */
    EXPECT(kvir_kv_kernels_plan0_schedule(NULL, 4, items, 132, indptr) == 36);
    /* Too small a work list is an error, not an overflow. */
    EXPECT(kvir_kv_kernels_plan0_schedule(lengths, 4, items, 6, indptr) < 0);
  }
  {
    /* Plan 0's tables are CSR over pages of 16 tokens: a pool of 4 pages
       holds page ids 0..3. */
    int32_t indptr[3] = {0, 1, 3}, indices[3] = {2, 0, 3}, last[2] = {16, 5};
    char message[128];
    EXPECT(kvir_kv_kernels_plan0_validate(indptr, indices, last, 2, 3, 4,
                                          message, sizeof message) == 0);
    indices[2] = 4;
    EXPECT(kvir_kv_kernels_plan0_validate(indptr, indices, last, 2, 3, 4,
                                          message, sizeof message) == -1);
    EXPECT(strcmp(message, "request 1: kv_indices[2] = 4 names a page past "
                           "the pool (4 pages of 16 tokens)") == 0);
    indices[2] = 3;
    last[1] = 0;
    EXPECT(kvir_kv_kernels_plan0_validate(indptr, indices, last, 2, 3, 4,
                                          message, sizeof message) == -1);
    EXPECT(strstr(message, "kv_last_page_len[1] = 0") != NULL);
  }
  {
    /* The typed launcher of plan 0: the plan runs the schedule on the host
       (one long request: split), the launch copies it into the workspace
       and launches the split kernel over the work list, then the merge. */
    int32_t lengths[4] = {5, 1000, 0, 100};
    kvir_kv_kernels_decode0_plan_t plan;
    kvir_kv_kernels_decode0_kernels_t kernels = {0};
    kvir_cuda_t cu = {fake_load, fake_function, fake_attribute, fake_launch,
                      fake_upload};
    EXPECT(kvir_kv_kernels_decode0_plan(&plan, 4, 100, 20, lengths) == 0);
    EXPECT(plan.split == 1 && plan.num_work == 7 && plan.max_work == 116);
    /* Work list (1856 bytes), merge_indptr (20), partial outputs and LSEs,
       each from a 256-byte boundary. */
    EXPECT(plan.workspace_bytes ==
           (size_t)2048 + 256 + 116 * 32 * 128 * 4 + 116 * 32 * 4);
    EXPECT(kvir_kv_kernels_decode0_launch(&cu, &kernels, NULL, &plan, 0x1000,
                                          0x2000, 0x3000, 0x4000, 0x5000,
                                          0x6000, 0x7000, 0x100000) == 0);
    EXPECT(uploads == 2 && uploaded == 116 * 4 * 4 + 5 * 4);
    EXPECT(launches == 2);
    EXPECT(strncmp(names[0], "decode_", 7) == 0 && strstr(names[0], "split"));
    EXPECT(grids[0][0] == 7 && grids[0][1] == 8 && blocks[0][0] == 16);
    EXPECT(firstPointer[0] == 0x1000 && firstExtent[0] == 4);
    EXPECT(strncmp(names[1], "merge_rows", 10) == 0);
    EXPECT(grids[1][0] == 4 && grids[1][1] == 32 && blocks[1][0] == 128);
    /* Without cuLaunchKernelEx both are plain launches; with it, the merge
       is a programmatic dependent of the split kernel (sm_90a), which is
       not one itself. */
    EXPECT(!dependent[0] && !dependent[1]);
    cu.launch_kernel_ex = fake_launch_ex;
    launches = 0;
    EXPECT(kvir_kv_kernels_decode0_launch(&cu, &kernels, NULL, &plan, 0x1000,
                                          0x2000, 0x3000, 0x4000, 0x5000,
                                          0x6000, 0x7000, 0x100000) == 0);
    EXPECT(launches == 2 && !dependent[0] && dependent[1]);
    EXPECT(strncmp(names[1], "merge_rows", 10) == 0);
    EXPECT(grids[1][0] == 4 && grids[1][1] == 32 && grids[1][2] == 1);
    EXPECT(blocks[1][0] == 128 && blocks[1][1] == 1);
    kvir_kv_kernels_decode0_plan_release(&plan);
  }
  EXPECT(strstr(kvir_kv_kernels_ptx, ".target sm_90a") != NULL);
  EXPECT(kvir_kv_kernels_plan0_kernels[0].block[0] == 16);
  EXPECT(kvir_kv_kernels_plan0_kernels[2].block[0] == 128);
  EXPECT(strncmp(kvir_kv_kernels_plan0_kernels[1].name, "decode_", 7) == 0);
  printf("%s\n", fails ? "header check failed" : "header check passed");
  return fails != 0;
}
