"""kvir: attention kernels compiled from kvir's kv dialect.

    import kvir
    w = kvir.BatchDecodeWithPagedKVCacheWrapper(kv_layout="NHD")
    w.plan(kv_indptr, kv_indices, kv_last_page_len, num_qo_heads=32,
           num_kv_heads=8, head_dim=128, page_size=16)
    out = w.run(q, paged_kv_cache)   # numpy: emulator; torch CUDA: GPU

`kvir.compile(spec, chip)` compiles a spec to PTX + manifests + C header,
cached on disk (~/.cache/kvir, $KVIR_CACHE_DIR). Importing kvir loads no
native library: compiling and emulating load libKVIRCAPI.so (LLVM, MLIR),
GPU runs of cached kernels only the CUDA driver and libkvir_runtime.so.
"""
from ._lib import KvirError, Module, last_launches
from .compiler import Kernel, cache_dir, compile
from .wrappers import (BatchAttention, BatchDecodeWithPagedKVCache,
                       BatchDecodeWithPagedKVCacheWrapper,
                       BatchPrefillWithPagedKVCache,
                       BatchPrefillWithPagedKVCacheWrapper,
                       BatchPrefillWithRaggedKVCache,
                       BatchPrefillWithRaggedKVCacheWrapper,
                       BatchMLAPagedAttentionWrapper,
                       MultiLevelCascadeAttentionWrapper)
from .merge import merge_state, merge_state_in_place, merge_states
from .flex import BlockMask, TraceError, create_block_mask, flex_attention
from . import distributed, torch_ops

if torch_ops.available():
    torch_ops.register()

__all__ = ["KvirError", "Module", "Kernel", "compile", "cache_dir",
           "last_launches", "BatchAttention", "BatchDecodeWithPagedKVCache",
           "BatchDecodeWithPagedKVCacheWrapper",
           "BatchPrefillWithPagedKVCache",
           "BatchPrefillWithPagedKVCacheWrapper",
           "BatchPrefillWithRaggedKVCache",
           "BatchPrefillWithRaggedKVCacheWrapper",
           "BatchMLAPagedAttentionWrapper",
           "MultiLevelCascadeAttentionWrapper", "merge_state",
           "merge_state_in_place", "merge_states", "BlockMask", "TraceError",
           "create_block_mask", "flex_attention"]

