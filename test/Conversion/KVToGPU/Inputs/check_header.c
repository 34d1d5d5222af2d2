/* Compiled against kvir-translate's header for Inputs/decode-kernels.mlir on
   sm_90a (132 SMs): the split-KV helpers must follow the plan's formulas. */
#include "kv_kernels.h"

#include <stdio.h>
#include <string.h>

static int fails;
#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond)) {                                                             \
      printf("FAIL: %s\n", #cond);                                             \
      ++fails;                                                                 \
    }                                                                          \
  } while (0)

int main(void) {
  /* Plan 0: 8 KV heads, 32 q heads, head_dim 128. */
  EXPECT(kvir_kv_kernels_plan0_num_partitions(1) == 32); /* ceil(264/8) = 33 */
  EXPECT(kvir_kv_kernels_plan0_num_partitions(4) == 9);  /* ceil(264/32) */
  EXPECT(kvir_kv_kernels_plan0_num_partitions(33) == 1); /* 264 blocks */
  EXPECT(kvir_kv_kernels_plan0_num_partitions(32) == 2);
  EXPECT(kvir_kv_kernels_plan0_workspace_bytes(33) == 0);
  EXPECT(kvir_kv_kernels_plan0_workspace_bytes(4) ==
         (size_t)9 * 4 * 32 * (128 + 1) * 4);
  /* Plan 1: 2 KV heads, 16 q heads, head_dim 64. */
  EXPECT(kvir_kv_kernels_plan1_num_partitions(3) == 32); /* ceil(264/6) = 44 */
  EXPECT(kvir_kv_kernels_plan1_workspace_bytes(3) ==
         (size_t)32 * 3 * 16 * (64 + 1) * 4);
  EXPECT(strstr(kvir_kv_kernels_ptx, ".target sm_90a") != NULL);
  EXPECT(kvir_kv_kernels_plan0_kernels[0].block[0] == 16);
  EXPECT(kvir_kv_kernels_plan0_kernels[2].block[0] == 128);
  EXPECT(strncmp(kvir_kv_kernels_plan0_kernels[1].name, "decode_", 7) == 0);
  printf("%s\n", fails ? "header check failed" : "header check passed");
  return fails != 0;
}
