// RUN: kvir-opt %s | kvir-opt | FileCheck %s

// kvgpu attributes print and parse back unchanged: configurations, size
// expressions (precedence, calls, negative constants) and a whole launch
// plan.

// CHECK-LABEL: func.func private @config
// CHECK-SAME: c = #kvgpu.decode<vector = 8, threads_x = 16, threads_z = 2, tile_tokens = 32, stages = 3, max_partitions = 32>
func.func private @config() attributes {c = #kvgpu.decode<vector = 8, threads_x = 16, threads_z = 2, tile_tokens = 32, stages = 3, max_partitions = 32>}

// CHECK-LABEL: func.func private @prefill_config
// CHECK-SAME: c = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = true, max_partitions = 16>
// CHECK-SAME: d = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 2, stages = 4, q_in_registers = false, max_partitions = 1>
// CHECK-SAME: e = #kvgpu.prefill<q_tile = 128, kv_tile = 128, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma>
// CHECK-SAME: f = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 2, stages = 2, q_in_registers = false, max_partitions = 1>
// CHECK-SAME: g = #kvgpu.prefill<q_tile = 128, kv_tile = 128, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap>
// CHECK-SAME: h = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma>
// CHECK-SAME: i = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 3, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, roles = producer>
// CHECK-SAME: j = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap>
// CHECK-SAME: k = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 3, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, roles = producer, copy = tma>
// CHECK-SAME: l = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 3, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, roles = producer>
func.func private @prefill_config() attributes {
  c = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = true, max_partitions = 16>,
  d = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 2, stages = 4, q_in_registers = false, max_partitions = 1>,
  e = #kvgpu.prefill<q_tile = 128, kv_tile = 128, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma>,
  f = #kvgpu.prefill<q_tile = 64, kv_tile = 32, warps = 2, stages = 2, q_in_registers = false, max_partitions = 1, mma = mma_sync>,
  g = #kvgpu.prefill<q_tile = 128, kv_tile = 128, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap>,
  h = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = serial>,
  i = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 3, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, roles = producer>,
  j = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, roles = uniform>,
  k = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 3, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, roles = producer, copy = tma>,
  l = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 3, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, roles = producer, copy = cp_async>}

// CHECK-LABEL: func.func private @sizes
// CHECK-SAME: a = #kvgpu.size<min(32, ceildiv(264, max(1, batch * 8)))>
// CHECK-SAME: b = #kvgpu.size<(batch + 1) * heads>
// CHECK-SAME: c = #kvgpu.size<batch + heads * 2 + 7>
// CHECK-SAME: d = #kvgpu.size<-3>
// CHECK-SAME: e = #kvgpu.size<floordiv(n, 4) * (a * (b + c))>
// CHECK-SAME: f = #kvgpu.size<max(a, b, c)>
// CHECK-SAME: g = #kvgpu.size<qo_indptr_len - 1>
// CHECK-SAME: h = #kvgpu.size<a + -1 * b - 2>
// CHECK-SAME: i = #kvgpu.size<floordiv(nnz * 4, 128) + batch>
func.func private @sizes() attributes {
  a = #kvgpu.size<min(32, ceildiv(264, max(1, batch * 8)))>,
  b = #kvgpu.size<(batch + 1) * heads>,
  c = #kvgpu.size<batch + heads * 2 + 7>,
  d = #kvgpu.size<-3>,
  e = #kvgpu.size<floordiv(n, 4) * (a * (b + c))>,
  f = #kvgpu.size<max(a, b, c)>,
  g = #kvgpu.size<qo_indptr_len - 1>,
  h = #kvgpu.size<a - b - 2>,
  i = #kvgpu.size<floordiv(nnz * 4, 128) + batch>}

// CHECK: module attributes {kvgpu.launch_plans = [#kvgpu.plan<"kv.merge", "m", args = [<"in_out", input, memref<?x2x4xf32>, shape = [<rows>, <2>, <4>]>, <"in_lse", input, memref<?x2xf32>, shape = [<rows>, <2>]>, <"out", output, memref<?x2x4xf32>, shape = [<rows>, <2>, <4>]>, <"lse", output, memref<?x2xf32>, shape = [<rows>, <2>]>], sizes = [<"rows" from "out"[0]>], kernels = [<"merge", @kv_kernels::@m, always, grid = [<rows>, <2>, <1>], block = [4, 1, 1], shared = 16, dynamic_shared = 0, args = ["in_out", "in_lse", "out", "lse"]>]>,
// CHECK-SAME: #kvgpu.plan<"kv.decode", "d", args = [<"q", input, memref<?x4x8xf16>, shape = [<batch>, <4>, <8>]>, <"w", workspace, memref<?x?x4xf32>, shape = [<parts>, <batch>, <4>]>, <"n", size, index>], sizes = [<"batch" from "q"[0]>, <"parts" = <min(4, batch * 2)>>], partitions = "parts", kernels = [<"direct", @kv_kernels::@d, unsplit, grid = [<batch>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 65536, args = ["q", "n"]>, <"split", @kv_kernels::@s, split, grid = [<batch>, <1>, <parts>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q", "w", "parts"]>]>]}
module attributes {kvgpu.launch_plans = [
  #kvgpu.plan<"kv.merge", "m",
    args = [<"in_out", input, memref<?x2x4xf32>, shape = [<rows>, <2>, <4>]>,
            <"in_lse", input, memref<?x2xf32>, shape = [<rows>, <2>]>,
            <"out", output, memref<?x2x4xf32>, shape = [<rows>, <2>, <4>]>,
            <"lse", output, memref<?x2xf32>, shape = [<rows>, <2>]>],
    sizes = [<"rows" from "out"[0]>],
    kernels = [<"merge", @kv_kernels::@m, always, grid = [<rows>, <2>, <1>],
                block = [4, 1, 1], shared = 16, dynamic_shared = 0,
                args = ["in_out", "in_lse", "out", "lse"]>]>,
  #kvgpu.plan<"kv.decode", "d",
    args = [<"q", input, memref<?x4x8xf16>, shape = [<batch>, <4>, <8>]>,
            <"w", workspace, memref<?x?x4xf32>, shape = [<parts>, <batch>, <4>]>,
            <"n", size, index>],
    sizes = [<"batch" from "q"[0]>, <"parts" = <min(4, batch * 2)>>],
    partitions = "parts",
    kernels = [<"direct", @kv_kernels::@d, unsplit, grid = [<batch>, <1>, <1>],
                block = [32, 1, 1], shared = 0, dynamic_shared = 65536,
                args = ["q", "n"]>,
               <"split", @kv_kernels::@s, split, grid = [<batch>, <1>, <parts>],
                block = [32, 1, 1], shared = 0, dynamic_shared = 0,
                args = ["q", "w", "parts"]>]>]} {
}

// -----

// A plan whose split-KV choice is a host-side work schedule.
// CHECK: module attributes {kvgpu.launch_plans = [#kvgpu.plan<"kv.decode", "p", args = [<"q", input, memref<?xf32>, shape = [<b>]>, <"len", host, memref<?xi32>, shape = [<b>]>, <"items", schedule, memref<?x4xi32>, shape = [<8>, <4>]>, <"ip", schedule, memref<?xi32>, shape = [<b + 1>]>], sizes = [<"b" from "q"[0]>, <"u" = <2>>], schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", uniform_chunks = "u", target_items = 8, granule = 16, min_chunk = 128, window_left = -1>, kernels = [<"s", @m::@k, split, grid = [<n>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q", "items"]>]>]}
module attributes {kvgpu.launch_plans = [
  #kvgpu.plan<"kv.decode", "p", args = [<"q", input, memref<?xf32>, shape = [<b>]>, <"len", host, memref<?xi32>, shape = [<b>]>, <"items", schedule, memref<?x4xi32>, shape = [<8>, <4>]>, <"ip", schedule, memref<?xi32>, shape = [<b + 1>]>], sizes = [<"b" from "q"[0]>, <"u" = <2>>], schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", uniform_chunks = "u", target_items = 8, granule = 16, min_chunk = 128, window_left = -1>, kernels = [<"s", @m::@k, split, grid = [<n>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q", "items"]>]>]} {
}

// -----

// A fixed workspace bounds a prefill schedule's partial-state rows (CUDA
// graphs); the bound is a size of the plan.
// CHECK: tile_rows = 16, workspace_limit = "lim">, kernels
module attributes {kvgpu.launch_plans = [
  #kvgpu.plan<"kv.prefill", "p", args = [<"q", input, memref<?xf32>, shape = [<nnz>]>, <"len", host, memref<?xi32>, shape = [<b>]>, <"qo", host, memref<?xi32>, shape = [<b + 1>]>, <"items", schedule, memref<?x5xi32>, shape = [<nnz + b + 8>, <5>]>, <"ip", schedule, memref<?xi32>, shape = [<nnz + 1>]>, <"ws", workspace, memref<?xf32>, shape = [<lim>]>], sizes = [<"nnz" from "q"[0]>, <"b" = <2>>, <"lim" = <64>>], schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", target_items = 8, granule = 16, min_chunk = 128, window_left = -1, qo_indptr = "qo", tiles = "t", workspace_rows = "w", tile_rows = 16, workspace_limit = "lim">, kernels = [<"s", @m::@k, always, grid = [<nnz + b + 8>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q", "items", "ws"]>]>]} {
}

// -----

// A prefill's schedule: query tiles times chunks; the tile count and the
// partial-state rows it defines (read by a kernel's argument list).
// CHECK: schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", target_items = 8, granule = 16, min_chunk = 128, window_left = 64, qo_indptr = "qo", tiles = "t", workspace_rows = "w", tile_rows = 32, causal = true>, kernels
module attributes {kvgpu.launch_plans = [
  #kvgpu.plan<"kv.prefill", "p", args = [<"q", input, memref<?xf32>, shape = [<nnz>]>, <"qo_indptr", input, memref<?xi32>, shape = [<b + 1>]>, <"len", host, memref<?xi32>, shape = [<b>]>, <"qo", host, memref<?xi32>, shape = [<b + 1>]>, <"items", schedule, memref<?x5xi32>, shape = [<nnz + b + 8>, <5>]>, <"ip", schedule, memref<?xi32>, shape = [<nnz + 1>]>], sizes = [<"nnz" from "q"[0]>, <"b" = <2>>], schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", target_items = 8, granule = 16, min_chunk = 128, window_left = 64, qo_indptr = "qo", tiles = "t", workspace_rows = "w", tile_rows = 32, causal = true>, kernels = [<"s", @m::@k, always, grid = [<n>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q", "items", "t"]>]>]} {
}

// -----

// A fixed-grid schedule (CUDA graphs) and the plan's page tables.
// CHECK: schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", uniform_chunks = "u", target_items = 8, granule = 16, min_chunk = 128, window_left = -1, max_batch = "mb">, tables = <table = "csr", page_size = 16, pool_tokens = <np * 16>>, kernels
module attributes {kvgpu.launch_plans = [
  #kvgpu.plan<"kv.decode", "p", args = [<"q", input, memref<?xf32>, shape = [<b>]>, <"pool", input, memref<?x16xf32>, shape = [<np>, <16>]>, <"kv_indptr", input, memref<?xi32>, shape = [<b + 1>]>, <"kv_indices", input, memref<?xi32>, shape = [<ni>]>, <"kv_last_page_len", input, memref<?xi32>, shape = [<b>]>, <"len", host, memref<?xi32>, shape = [<b>]>, <"items", schedule, memref<?x4xi32>, shape = [<8>, <4>]>, <"ip", schedule, memref<?xi32>, shape = [<mb + 1>]>], sizes = [<"b" from "q"[0]>, <"np" from "pool"[0]>, <"ni" from "kv_indices"[0]>, <"mb" = <4>>, <"u" = <2>>], schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", uniform_chunks = "u", target_items = 8, granule = 16, min_chunk = 128, window_left = -1, max_batch = "mb">, tables = <table = "csr", page_size = 16, pool_tokens = <np * 16>>, kernels = [<"s", @m::@k, always, grid = [<8>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q", "items"]>]>]} {
}

// -----

// A tensor map over a plan's input buffer: a TMA kernel's argument.
// CHECK: <"k", input, memref<?x2x128xf16>, shape = [<n>, <2>, <128>]>, <"k_map", tensor_map, memref<16xi64>, shape = [<16>], map = <"k", box = [64, 1, 64], swizzle = 128>>]
// CHECK-SAME: args = ["k", "k_map"]
module attributes {kvgpu.launch_plans = [
  #kvgpu.plan<"kv.prefill", "t", args = [<"k", input, memref<?x2x128xf16>, shape = [<n>, <2>, <128>]>, <"k_map", tensor_map, memref<16xi64>, shape = [<16>], map = #kvgpu.tensor_map<"k", box = [64, 1, 64], swizzle = 128>>], sizes = [<"n" from "k"[0]>], kernels = [<"s", @m::@k, always, grid = [<n>, <1>, <1>], block = [384, 1, 1], shared = 0, dynamic_shared = 0, args = ["k", "k_map"]>]>]} {
}
