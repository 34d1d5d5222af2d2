#!/usr/bin/env bash
# Writes the modules bench/gpu/time_attention.py times (FlashInfer's
# benchmark configurations: head_dim 128, NHD pages of 16 tokens, CSR
# tables, 8 KV heads, f16 and bf16, LSE in base 2), compiled to PTX +
# manifests for a chip:
#   decode_<dtype>_g<group>/   kv.decode, GQA group 4 and 8
#   decode_<dtype>_g<group>_tc/ the same on the tensor-core kernel
#   prefill_<dtype>_<mask>/    kv.prefill, causal and not, group 4
#   timing_modules.sh <out dir> [chip]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${KVIR_BUILD_DIR:-$ROOT/build}"
out="$1"
chip="${2:-sm_90a}"
mkdir -p "$out"
compile() {
  "$BUILD/bin/kvir-opt" "$out/$1.mlir" --kv-to-ptx="chip=$chip" |
    "$BUILD/bin/kvir-translate" -o "$out/$1"
}
for t in f16 bf16; do
  for g in 4 8; do
    hq=$((8 * g))
    cat > "$out/decode_${t}_g$g.mlir" <<MLIR
!cache = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128,
                   dtype = $t, layout = nhd, storage = combined, table = csr>
!state = !kv.state<?x${hq}x128x$t, base = 2>
func.func @decode(%q: memref<?x${hq}x128x$t>, %pool: memref<?x2x16x8x128x$t>,
                  %kv_indptr: memref<?xi32>, %kv_indices: memref<?xi32>,
                  %kv_last_page_len: memref<?xi32>,
                  %out: memref<?x${hq}x128x$t>, %lse: memref<?x${hq}xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128x$t>)
      tables(%kv_indptr, %kv_indices, %kv_last_page_len
             : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !cache
  %s = kv.decode %q, %kv : memref<?x${hq}x128x$t>, !cache -> !state
  kv.store_state %s, %out, %lse : !state, memref<?x${hq}x128x$t>, memref<?x${hq}xf32>
  return
}
MLIR
    compile "decode_${t}_g$g"
    # The same decode forced onto the tensor-core kernel (the config kv-tile
    # picks for it when it must).
    for tc in "tc:kv_tile = 32"; do
      sed "s/kv.decode %q, %kv :/kv.decode %q, %kv {kvgpu.config = #kvgpu.prefill<q_tile = 16, ${tc#*:}, warps = 1, stages = 2, q_in_registers = false, max_partitions = 32>} :/" \
        "$out/decode_${t}_g$g.mlir" > "$out/decode_${t}_g${g}_${tc%%:*}.mlir"
      compile "decode_${t}_g${g}_${tc%%:*}"
    done
  done
  for mask in causal none; do
    attr=""
    [ "$mask" = causal ] && attr="{causal}"
    cat > "$out/prefill_${t}_$mask.mlir" <<MLIR
!cache = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128,
                   dtype = $t, layout = nhd, storage = combined, table = csr>
!state = !kv.state<?x32x128x$t, base = 2>
func.func @prefill(%q: memref<?x32x128x$t>, %qo_indptr: memref<?xi32>,
                   %pool: memref<?x2x16x8x128x$t>,
                   %kv_indptr: memref<?xi32>, %kv_indices: memref<?xi32>,
                   %kv_last_page_len: memref<?xi32>,
                   %out: memref<?x32x128x$t>, %lse: memref<?x32xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128x$t>)
      tables(%kv_indptr, %kv_indices, %kv_last_page_len
             : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !cache
  %s = kv.prefill %q, %qo_indptr, %kv $attr
      : memref<?x32x128x$t>, memref<?xi32>, !cache -> !state
  kv.store_state %s, %out, %lse : !state, memref<?x32x128x$t>, memref<?x32xf32>
  return
}
MLIR
    compile "prefill_${t}_$mask"
  done
done
