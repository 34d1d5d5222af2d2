// RUN: kvir-opt %s -split-input-file -verify-diagnostics

// verifyAttentionVariants and MergeSinksOp::verify (KVVariants.cpp).

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @sinks_type(%q: memref<?x8x64xf16>, %kv: !csr, %sinks: memref<8xf16>) {
  // expected-error @below {{sinks must be a rank-1 memref of f32 (one per query head), got 'memref<8xf16>'}}
  %s = kv.decode %q, %kv sinks(%sinks : memref<8xf16>) : memref<?x8x64xf16>, !csr -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @sinks_heads(%q: memref<?x8x64xf16>, %kv: !csr, %sinks: memref<4xf32>) {
  // expected-error @below {{sinks has 4 entries, expected one per query head (8)}}
  %s = kv.decode %q, %kv sinks(%sinks : memref<4xf32>) : memref<?x8x64xf16>, !csr -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @alibi_both(%q: memref<?x8x64xf16>, %kv: !csr, %slopes: memref<8xf32>) {
  // expected-error @below {{takes either `alibi` (the standard slopes) or alibi_slopes, not both}}
  %s = kv.decode %q, %kv alibi_slopes(%slopes : memref<8xf32>) {alibi} : memref<?x8x64xf16>, !csr -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @alibi_slopes_rank(%q: memref<?x8x64xf16>, %kv: !csr, %slopes: memref<8x1xf32>) {
  // expected-error @below {{alibi_slopes must be a rank-1 memref of f32 (one per query head), got 'memref<8x1xf32>'}}
  %s = kv.decode %q, %kv alibi_slopes(%slopes : memref<8x1xf32>) : memref<?x8x64xf16>, !csr -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @score_mod_args(%q: memref<?x8x64xf16>, %kv: !csr) {
  // expected-error @below {{score_mod takes (f32 score, index request, index q_head, index q_pos, index kv_pos), got (f32, index, index, index)}}
  %s = kv.decode %q, %kv score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %p: index):
    kv.yield %x : f32
  } : memref<?x8x64xf16>, !csr -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @score_mod_result(%q: memref<?x8x64xf16>, %kv: !csr) {
  // expected-error @below {{score_mod must yield 'f32', got 'f16'}}
  %s = kv.decode %q, %kv score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %p: index, %j: index):
    %y = arith.truncf %x : f32 to f16
    kv.yield %y : f16
  } : memref<?x8x64xf16>, !csr -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @mask_mod_args(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %kv: !csr) {
  // expected-error @below {{mask_mod takes (index request, index q_head, index q_pos, index kv_pos), got (i32, index, index, index)}}
  %s = kv.prefill %q, %qo, %kv mask_mod {
  ^bb0(%b: i32, %h: index, %p: index, %j: index):
    %t = arith.constant true
    kv.yield %t : i1
  } : memref<?x8x64xf16>, memref<?xi32>, !csr -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @mask_mod_result(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %kv: !csr) {
  // expected-error @below {{mask_mod must yield 'i1', got 'index'}}
  %s = kv.prefill %q, %qo, %kv mask_mod {
  ^bb0(%b: index, %h: index, %p: index, %j: index):
    kv.yield %j : index
  } : memref<?x8x64xf16>, memref<?xi32>, !csr -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @mask_mod_terminator(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %kv: !csr) {
  // expected-error @below {{mask_mod must end with kv.yield}}
  %s = kv.prefill %q, %qo, %kv mask_mod {
  ^bb0(%b: index, %h: index, %p: index, %j: index):
    func.return
  } : memref<?x8x64xf16>, memref<?xi32>, !csr -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @score_mod_writes(%q: memref<?x8x64xf16>, %kv: !csr, %log: memref<8xf32>) {
  %s = kv.decode %q, %kv score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %p: index, %j: index):
    // expected-error @below {{writes or allocates memory; score_mod of 'kv.decode' may only compute and read memory}}
    memref.store %x, %log[%h] : memref<8xf32>
    kv.yield %x : f32
  } : memref<?x8x64xf16>, !csr -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @mask_mod_calls(%q: memref<?x8x64xf16>, %kv: !csr) {
  %s = kv.decode %q, %kv mask_mod {
  ^bb0(%b: index, %h: index, %p: index, %j: index):
    // expected-error @below {{has unknown side effects; mask_mod of 'kv.decode' may only compute and read memory}}
    %v = func.call @oracle(%j) : (index) -> i1
    kv.yield %v : i1
  } : memref<?x8x64xf16>, !csr -> !s
  return
}
func.func private @oracle(index) -> i1

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @captured_state(%q: memref<?x8x64xf16>, %kv: !csr, %t: tensor<8xf32>) {
  %s = kv.decode %q, %kv score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %p: index, %j: index):
    // expected-error @below {{uses a value of type 'tensor<8xf32>' defined outside score_mod of 'kv.decode'; kernels take only memrefs of integers or floats and f32 scalars as parameters (and clone constants): pass other values in a memref}}
    %y = tensor.extract %t[%h] : tensor<8xf32>
    %r = arith.addf %x, %y : f32
    kv.yield %r : f32
  } : memref<?x8x64xf16>, !csr -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @captured_index_memref(%q: memref<?x8x64xf16>, %kv: !csr, %t: memref<8xindex>) {
  %s = kv.decode %q, %kv mask_mod {
  ^bb0(%b: index, %h: index, %p: index, %j: index):
    // expected-error @below {{uses a value of type 'memref<8xindex>' defined outside mask_mod of 'kv.decode'}}
    %y = memref.load %t[%h] : memref<8xindex>
    %v = arith.cmpi ult, %j, %y : index
    kv.yield %v : i1
  } : memref<?x8x64xf16>, !csr -> !s
  return
}

// -----

func.func @yield_parent(%x: f32) {
  // expected-error @below {{'kv.yield' op expects parent op to be one of 'kv.decode, kv.prefill, kv.mla_decode, kv.cascade'}}
  kv.yield %x : f32
}

// -----

!s = !kv.state<?x8x64xf16, base = 2>
!p = !kv.state<?x8x64xf32, base = 2, partitions = ?>

func.func @merge_sinks_partitioned(%a: !p, %sinks: memref<8xf32>) {
  // expected-error @below {{applies to a whole state; reduce the partition axis with kv.merge_partitions first}}
  %r = kv.merge_sinks %a, %sinks : !p, memref<8xf32>
  return
}

// -----

!s = !kv.state<?x8x64xf16, base = 2>

func.func @merge_sinks_heads(%a: !s, %sinks: memref<16xf32>) {
  // expected-error @below {{sinks has 16 entries, expected one per query head (8)}}
  %r = kv.merge_sinks %a, %sinks : !s, memref<16xf32>
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @captured_index(%q: memref<?x8x64xf16>, %kv: !csr, %n: index) {
  %s = kv.decode %q, %kv mask_mod {
  ^bb0(%b: index, %h: index, %p: index, %j: index):
    // expected-error @below {{uses a value of type 'index' defined outside mask_mod of 'kv.decode'}}
    %v = arith.cmpi ult, %j, %n : index
    kv.yield %v : i1
  } : memref<?x8x64xf16>, !csr -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

// The generic form allows an empty block.
func.func @empty_block(%q: memref<?x8x64xf16>, %kv: !csr) {
  // expected-error @below {{mask_mod must end with kv.yield}}
  %s = "kv.decode"(%q, %kv) <{operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> ({}, {
  ^bb0(%b: index, %h: index, %p: index, %j: index):
  }) : (memref<?x8x64xf16>, !csr) -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @topk_type(%q: memref<?x8x64xf16>, %kv: !csr, %idx: memref<?x64xi64>) {
  // expected-error @below {{topk must have element type 'i32', got 'memref<?x64xi64>'}}
  %s = kv.decode %q, %kv topk(%idx : memref<?x64xi64>) : memref<?x8x64xf16>, !csr -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @topk_rank(%q: memref<?x8x64xf16>, %kv: !csr, %idx: memref<?xi32>) {
  // expected-error @below {{topk must have rank 2, got 'memref<?xi32>'}}
  %s = kv.decode %q, %kv topk(%idx : memref<?xi32>) : memref<?x8x64xf16>, !csr -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<4x8x64xf16, base = 2>

func.func @topk_rows(%q: memref<4x8x64xf16>, %kv: !csr, %idx: memref<3x64xi32>) {
  // expected-error @below {{topk has 3 rows, expected one per query row (4)}}
  %s = kv.decode %q, %kv topk(%idx : memref<3x64xi32>) : memref<4x8x64xf16>, !csr -> !s
  return
}

// -----

!mla = !kv.paged<page_size = 64, kv_heads = 1, head_dim = 512, head_dim_v = 512, dtype = bf16, layout = nhd, storage = mla, table = block_table, pe_dim = 64>
!sm = !kv.state<?x16x512xbf16, base = e>

func.func @topk_empty(%qn: memref<?x16x512xbf16>, %qp: memref<?x16x64xbf16>, %kv: !mla, %idx: memref<?x0xi32>) {
  // expected-error @below {{topk must list at least one key per row, got 'memref<?x0xi32>'}}
  %s = kv.mla_decode %qn, %qp, %kv topk(%idx : memref<?x0xi32>) : memref<?x16x512xbf16>, memref<?x16x64xbf16>, !mla -> !sm
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

func.func @frame_type(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %kv: !csr, %fi: memref<?xi64>, %fp: memref<?xi32>) {
  // expected-error @below {{frame indptr must have element type 'i32', got 'memref<?xi64>'}}
  %s = kv.prefill %q, %qo, %kv frame(%fi, %fp : memref<?xi64>, memref<?xi32>) : memref<?x8x64xf16>, memref<?xi32>, !csr -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<8x8x64xf16, base = 2>

func.func @frame_rows(%q: memref<8x8x64xf16>, %qo: memref<?xi32>, %kv: !csr, %fi: memref<?xi32>, %fp: memref<6xi32>) {
  // expected-error @below {{frame positions has 6 entries, expected one per query row (8)}}
  %s = kv.prefill %q, %qo, %kv frame(%fi, %fp : memref<?xi32>, memref<6xi32>) : memref<8x8x64xf16>, memref<?xi32>, !csr -> !s
  return
}

// -----

!csr = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
!s = !kv.state<?x8x64xf16, base = 2>

// The generic form can give half a frame.
func.func @frame_half(%q: memref<?x8x64xf16>, %qo: memref<?xi32>, %kv: !csr, %fi: memref<?xi32>) {
  // expected-error @below {{frame needs both its indptr and its positions}}
  %s = "kv.prefill"(%q, %qo, %kv, %fi) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1, 0, 0, 0>}> ({}, {}) : (memref<?x8x64xf16>, memref<?xi32>, !csr, memref<?xi32>) -> !s
  return
}
