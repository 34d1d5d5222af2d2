/* kvir-translate's header copies cuLaunchKernelEx's structures so that
   building a launcher needs no CUDA headers: they must be laid out as
   cuda.h declares them (CUDA 12+). */
#include <cuda.h>
#include <stddef.h>

#include "kv_kernels.h"

#define SAME(a, b) _Static_assert((a) == (b), #a " != " #b)
SAME(sizeof(kvir_cu_launch_attribute_t), sizeof(CUlaunchAttribute));
SAME(_Alignof(kvir_cu_launch_attribute_t), _Alignof(CUlaunchAttribute));
SAME(offsetof(kvir_cu_launch_attribute_t, id), offsetof(CUlaunchAttribute, id));
SAME(offsetof(kvir_cu_launch_attribute_t, value),
     offsetof(CUlaunchAttribute, value));
SAME(offsetof(kvir_cu_launch_attribute_t, value.value),
     offsetof(CUlaunchAttribute,
              value.programmaticStreamSerializationAllowed));
SAME(sizeof(kvir_cu_launch_config_t), sizeof(CUlaunchConfig));
SAME(offsetof(kvir_cu_launch_config_t, grid_x),
     offsetof(CUlaunchConfig, gridDimX));
SAME(offsetof(kvir_cu_launch_config_t, block_z),
     offsetof(CUlaunchConfig, blockDimZ));
SAME(offsetof(kvir_cu_launch_config_t, shared_bytes),
     offsetof(CUlaunchConfig, sharedMemBytes));
SAME(offsetof(kvir_cu_launch_config_t, stream),
     offsetof(CUlaunchConfig, hStream));
SAME(offsetof(kvir_cu_launch_config_t, attrs), offsetof(CUlaunchConfig, attrs));
SAME(offsetof(kvir_cu_launch_config_t, num_attrs),
     offsetof(CUlaunchConfig, numAttrs));
SAME(KVIR_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
     CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
