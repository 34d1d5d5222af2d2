// RUN: kvir-opt %s -split-input-file -verify-diagnostics

!c = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @not_covering(%q: memref<?x32x128xf16>, %kv: !c) {
  // expected-error @below {{config with vector 8 x threads_x 8 does not cover head_dim 128 in whole vectors}}
  %s = kv.decode %q, %kv {kvgpu.config = #kvgpu.decode<vector = 8, threads_x = 8, threads_z = 2, tile_tokens = 32, stages = 3, max_partitions = 32>} : memref<?x32x128xf16>, !c -> !kv.state<?x32x128xf16, base = 2>
  return
}

// -----

!c = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @too_wide(%q: memref<?x32x128xf16>, %kv: !c) {
  // expected-error @below {{config vector of 16 elements exceeds a 16-byte load (only f32 KV takes wider lane vectors)}}
  %s = kv.decode %q, %kv {kvgpu.config = #kvgpu.decode<vector = 16, threads_x = 8, threads_z = 2, tile_tokens = 32, stages = 3, max_partitions = 32>} : memref<?x32x128xf16>, !c -> !kv.state<?x32x128xf16, base = 2>
  return
}

// -----

// expected-error @below {{has a #kvgpu.decode config, which only kv.decode and kv.prefill over f32 paged KV take}}
func.func private @wrong_op() attributes {kvgpu.config = #kvgpu.decode<vector = 8, threads_x = 16, threads_z = 2, tile_tokens = 32, stages = 3, max_partitions = 32>}

// -----

// A prefill over f16 KV runs on tensor cores: a #kvgpu.decode is not its
// configuration.
!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f16, layout = nhd, storage = combined, table = csr>
func.func @prefill_f16_decode_config(%q: memref<?x4x64xf16>, %qo: memref<?xi32>, %kv: !c) {
  // expected-error @below {{has a #kvgpu.decode config, which only kv.decode and kv.prefill over f32 paged KV take}}
  %s = kv.prefill %q, %qo, %kv {kvgpu.config = #kvgpu.decode<vector = 8, threads_x = 8, threads_z = 4, tile_tokens = 16, stages = 3, max_partitions = 32>} : memref<?x4x64xf16>, memref<?xi32>, !c -> !kv.state<?x4x64xf16, base = 2>
  return
}

// -----

// The query rows of an f32 prefill take the decode config's rules.
!c = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 64, head_dim_v = 64, dtype = f32, layout = nhd, storage = combined, table = csr>
func.func @prefill_f32_not_covering(%q: memref<?x4x64xf32>, %qo: memref<?xi32>, %kv: !c) {
  // expected-error @below {{config with vector 4 x threads_x 8 does not cover head_dim 64 in whole vectors}}
  %s = kv.prefill %q, %qo, %kv {kvgpu.config = #kvgpu.decode<vector = 4, threads_x = 8, threads_z = 4, tile_tokens = 16, stages = 3, max_partitions = 32>} : memref<?x4x64xf32>, memref<?xi32>, !c -> !kv.state<?x4x64xf32, base = 2>
  return
}

// -----

// expected-error @below {{'kvgpu.config' must be a kvgpu configuration attribute, got 3 : i64}}
func.func private @not_a_config() attributes {kvgpu.config = 3}

// -----

// expected-error @below {{has unknown kvgpu attribute 'kvgpu.tiling'}}
func.func private @unknown() attributes {kvgpu.tiling = 3}

// -----

// expected-error @below {{'kvgpu.dynamic_shared_bytes' must be a non-negative integer}}
func.func private @negative_shared() attributes {kvgpu.dynamic_shared_bytes = -1}

// -----

// expected-error @below {{'kvgpu.graph_max_batch' must be a positive integer on a module (the fixed grids' most requests), got 0 : i64}}
module attributes {kvgpu.graph_max_batch = 0 : i64} {
}

// -----

// expected-error @below {{'kvgpu.graph_max_batch' must be a positive integer on a module (the fixed grids' most requests), got 4 : i64}}
func.func private @graph_on_function() attributes {kvgpu.graph_max_batch = 4 : i64}

// -----

// expected-error @below {{'kvgpu.dynamic_shared_alignment' must be a power of two over 16 (bytes)}}
func.func private @small_alignment() attributes {kvgpu.dynamic_shared_alignment = 16}

// -----

// expected-error @below {{'kvgpu.dynamic_shared_alignment' must be a power of two over 16 (bytes)}}
func.func private @odd_alignment() attributes {kvgpu.dynamic_shared_alignment = 1000}

// -----

// expected-error @below {{decode config vector must be a power of two in [1, 16], got 3}}
func.func private @bad_vector() attributes {t = #kvgpu.decode<vector = 3, threads_x = 16, threads_z = 2, tile_tokens = 32, stages = 3, max_partitions = 32>}

// -----

// expected-error @below {{decode config threads_x must be a power of two in [1, 32] (its lanes reduce with xor-shuffles), got 64}}
func.func private @bad_lanes() attributes {t = #kvgpu.decode<vector = 8, threads_x = 64, threads_z = 2, tile_tokens = 32, stages = 3, max_partitions = 32>}

// -----

// expected-error @below {{decode config threads_z must be positive with threads_x x threads_z <= 1024 (one block), got 0 with threads_x 16}}
func.func private @bad_z() attributes {t = #kvgpu.decode<vector = 8, threads_x = 16, threads_z = 0, tile_tokens = 32, stages = 3, max_partitions = 32>}

// -----

// expected-error @below {{decode config threads_z must be positive with threads_x x threads_z <= 1024 (one block), got 128 with threads_x 16}}
func.func private @big_z() attributes {t = #kvgpu.decode<vector = 8, threads_x = 16, threads_z = 128, tile_tokens = 128, stages = 3, max_partitions = 32>}

// -----

// expected-error @below {{decode config tile_tokens must be a positive multiple of threads_z (4) of at most 1024, got 30}}
func.func private @bad_tile() attributes {t = #kvgpu.decode<vector = 8, threads_x = 16, threads_z = 4, tile_tokens = 30, stages = 3, max_partitions = 32>}

// -----

// expected-error @below {{decode config tile_tokens must be a positive multiple of threads_z (4) of at most 1024, got 4611686018427387904}}
func.func private @huge_tile() attributes {t = #kvgpu.decode<vector = 8, threads_x = 16, threads_z = 4, tile_tokens = 4611686018427387904, stages = 3, max_partitions = 32>}

// -----

// expected-error @below {{decode config stages must be in [2, 8] (tile i + 1 loads while tile i is scored), got 1}}
func.func private @bad_stages() attributes {t = #kvgpu.decode<vector = 8, threads_x = 16, threads_z = 4, tile_tokens = 32, stages = 1, max_partitions = 32>}

// -----

// expected-error @below {{decode config max_partitions must be in [1, 65535] (a grid dim), got 0}}
func.func private @bad_partitions() attributes {t = #kvgpu.decode<vector = 8, threads_x = 16, threads_z = 4, tile_tokens = 32, stages = 3, max_partitions = 0>}

// -----

// expected-error @below {{decode config max_partitions must be in [1, 65535] (a grid dim), got 65536}}
func.func private @many_partitions() attributes {t = #kvgpu.decode<vector = 8, threads_x = 16, threads_z = 4, tile_tokens = 32, stages = 3, max_partitions = 65536>}

// -----

// expected-error @below {{prefill config q_tile must be a multiple of 16 in [16, 256] (whole m16 mma tiles), got 100}}
func.func private @q_tile() attributes {c = #kvgpu.prefill<q_tile = 100, kv_tile = 64, warps = 4, stages = 2, q_in_registers = true, max_partitions = 16>}

// -----

// expected-error @below {{prefill config kv_tile must be a multiple of 16 in [16, 128] (the k of the P V mma), got 24}}
func.func private @kv_tile() attributes {c = #kvgpu.prefill<q_tile = 64, kv_tile = 24, warps = 4, stages = 2, q_in_registers = true, max_partitions = 16>}

// -----

// expected-error @below {{prefill config warps must be in [1, 16], got 0}}
func.func private @no_warps() attributes {c = #kvgpu.prefill<q_tile = 64, kv_tile = 64, warps = 0, stages = 2, q_in_registers = true, max_partitions = 16>}

// -----

// expected-error @below {{prefill config warps must each own one or two 16-row mma tiles of the 128-row query tile, got 2 warps}}
func.func private @warp_rows() attributes {c = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 2, stages = 2, q_in_registers = true, max_partitions = 16>}

// -----

// expected-error @below {{prefill config stages must be in [1, 4] (K/V tiles i + 1 ... i + stages - 1 load while tile i is computed; 1: one K and one V buffer), got 5}}
func.func private @stages() attributes {c = #kvgpu.prefill<q_tile = 64, kv_tile = 64, warps = 4, stages = 5, q_in_registers = true, max_partitions = 16>}

// -----

// expected-error @below {{prefill config stages must be in [1, 4] (K/V tiles i + 1 ... i + stages - 1 load while tile i is computed; 1: one K and one V buffer), got 0}}
func.func private @no_stage() attributes {c = #kvgpu.prefill<q_tile = 64, kv_tile = 64, warps = 4, stages = 0, q_in_registers = true, max_partitions = 16>}

// -----

// expected-error @below {{prefill config stages = 1 (one K and one V buffer) needs mma = mma_sync, schedule = serial, roles = uniform, copy = cp_async and value_warps = 1}}
func.func private @one_stage_wgmma() attributes {c = #kvgpu.prefill<q_tile = 64, kv_tile = 64, warps = 4, stages = 1, q_in_registers = false, max_partitions = 16, mma = wgmma>}

// -----

// expected-error @below {{prefill config stages = 1 (one K and one V buffer) needs mma = mma_sync, schedule = serial, roles = uniform, copy = cp_async and value_warps = 1}}
func.func private @one_stage_value_warps() attributes {c = #kvgpu.prefill<q_tile = 32, kv_tile = 16, warps = 4, stages = 1, q_in_registers = false, max_partitions = 16, value_warps = 2>}

// -----

// expected-error @below {{prefill config max_partitions must be in [1, 65535] (a grid dim), got 0}}
func.func private @partitions() attributes {c = #kvgpu.prefill<q_tile = 64, kv_tile = 64, warps = 4, stages = 2, q_in_registers = true, max_partitions = 0>}

// -----

// expected-error @below {{prefill config with mma = wgmma needs whole warpgroups along the rows (warps / value_warps a multiple of 4) owning 64 rows each (q_tile = 16 * warps / value_warps), got q_tile 32, warps 2, value_warps 1}}
func.func private @wgmma_warps() attributes {c = #kvgpu.prefill<q_tile = 32, kv_tile = 64, warps = 2, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma>}

// -----

// expected-error @below {{prefill config with mma = wgmma needs whole warpgroups along the rows (warps / value_warps a multiple of 4) owning 64 rows each (q_tile = 16 * warps / value_warps), got q_tile 128, warps 4, value_warps 1}}
func.func private @wgmma_rows() attributes {c = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 4, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma>}

// -----

// Two value slices of 4 warps: each slice has 2 warps along the rows, half
// a warpgroup.
// expected-error @below {{prefill config with mma = wgmma needs whole warpgroups along the rows (warps / value_warps a multiple of 4) owning 64 rows each (q_tile = 16 * warps / value_warps), got q_tile 32, warps 4, value_warps 2}}
func.func private @wgmma_value_warps() attributes {c = #kvgpu.prefill<q_tile = 32, kv_tile = 64, warps = 4, stages = 2, q_in_registers = false, max_partitions = 16, value_warps = 2, mma = wgmma>}

// -----

// expected-error @below {{prefill config with mma = wgmma reads Q from shared memory: q_in_registers must be false}}
func.func private @wgmma_q_registers() attributes {c = #kvgpu.prefill<q_tile = 64, kv_tile = 64, warps = 4, stages = 2, q_in_registers = true, max_partitions = 16, mma = wgmma>}

// -----

// expected-error @below {{expected one of [mma_sync, wgmma] for the tensor-core instruction a kernel multiplies with, got: mfma}}
// expected-error @below {{failed to parse KVGPU_PrefillConfigAttr parameter 'mma' which is to be a `::kvir::kvgpu::MmaAtomKind`}}
func.func private @wgmma_unknown() attributes {c = #kvgpu.prefill<q_tile = 64, kv_tile = 64, warps = 4, stages = 2, q_in_registers = false, max_partitions = 16, mma = mfma>}

// -----

// expected-error @below {{prefill config schedule = overlap needs mma = wgmma (mma.sync waits for every product)}}
func.func private @overlap_mma_sync() attributes {c = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, schedule = overlap>}

// -----

// expected-error @below {{expected one of [serial, overlap] for how a prefill's products and softmax follow one another, got: pingpong}}
// expected-error @below {{failed to parse KVGPU_PrefillConfigAttr parameter 'schedule' which is to be a `::kvir::kvgpu::TileSchedule`}}
func.func private @schedule_unknown() attributes {c = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = pingpong>}

// -----

// expected-error @below {{prefill config roles = producer needs mma = wgmma and schedule = overlap (the consumers' mainloop)}}
func.func private @producer_serial() attributes {c = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma, roles = producer>}

// -----

// expected-error @below {{prefill config roles = producer needs mma = wgmma and schedule = overlap (the consumers' mainloop)}}
func.func private @producer_mma_sync() attributes {c = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = true, max_partitions = 16, roles = producer>}

// -----

// expected-error @below {{expected one of [uniform, producer] for which warps of a prefill copy and which compute, got: consumer}}
// expected-error @below {{failed to parse KVGPU_PrefillConfigAttr parameter 'roles' which is to be a `::kvir::kvgpu::PrefillRoles`}}
func.func private @roles_unknown() attributes {c = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, roles = consumer>}

// -----

// expected-error @below {{prefill config max_partitions must be in [1, 65535] (a grid dim), got 70000}}
func.func private @many_partitions() attributes {c = #kvgpu.prefill<q_tile = 64, kv_tile = 64, warps = 4, stages = 2, q_in_registers = true, max_partitions = 70000>}

// -----

// expected-error @below {{has a #kvgpu.prefill config, which only kv.prefill, kv.mla_decode and kv.decode (on tensor cores) take}}
func.func private @prefill_config_on_wrong_op() attributes {kvgpu.config = #kvgpu.prefill<q_tile = 64, kv_tile = 64, warps = 4, stages = 2, q_in_registers = true, max_partitions = 16>}

// -----

// expected-error @below {{prefill config value_warps must be in [1, 8] and divide warps (4), got 3}}
func.func private @value_warps_divide() attributes {c = #kvgpu.prefill<q_tile = 64, kv_tile = 64, warps = 4, stages = 2, q_in_registers = true, max_partitions = 16, value_warps = 3>}

// -----

// expected-error @below {{prefill config value_warps must be in [1, 8] and divide warps (16), got 16}}
func.func private @value_warps_range() attributes {c = #kvgpu.prefill<q_tile = 16, kv_tile = 64, warps = 16, stages = 2, q_in_registers = false, max_partitions = 16, value_warps = 16>}

// -----

// 4 warps of which 2 split the value columns leave 2 row warps: 64 rows
// would be two 16-row tiles each, 128 rows four.
// expected-error @below {{prefill config warps must each own one or two 16-row mma tiles of the 128-row query tile, got 2 warps along the rows}}
func.func private @value_warps_rows() attributes {c = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 4, stages = 2, q_in_registers = true, max_partitions = 16, value_warps = 2>}

// -----

// A value slice must be whole groups of 64 columns: 128 / 4 is 32.
!p = !kv.paged<page_size = 16, kv_heads = 2, head_dim = 128, head_dim_v = 128, dtype = f16, layout = nhd, storage = split, table = csr>
!s = !kv.state<?x8x128xf16, base = 2>
func.func @value_slice(%q: memref<?x8x128xf16>, %qo: memref<?xi32>, %kv: !p) {
  // expected-error @below {{#kvgpu.prefill value_warps = 4 must split head_dim_v 128 into multiples of 64 columns}}
  %s = kv.prefill %q, %qo, %kv {kvgpu.config = #kvgpu.prefill<q_tile = 64, kv_tile = 64, warps = 8, stages = 2, q_in_registers = true, max_partitions = 16, value_warps = 4>} : memref<?x8x128xf16>, memref<?xi32>, !p -> !s
  return
}

// -----

// expected-error @below {{prefill config copy = tma needs roles = producer (one producer thread issues the copies)}}
func.func private @tma_uniform() attributes {c = #kvgpu.prefill<q_tile = 128, kv_tile = 64, warps = 8, stages = 2, q_in_registers = false, max_partitions = 16, mma = wgmma, schedule = overlap, copy = tma>}

// -----

// The launches of a lowered op name their plan and its run.

// expected-error @below {{'kvgpu.plan' must be a string (a launch plan's name) on a gpu.launch_func}}
func.func private @plan_on_function() attributes {kvgpu.plan = "p"}

// -----

gpu.module @m {
  gpu.func @k() kernel { gpu.return }
}
func.func @plan_unknown() {
  %c1 = arith.constant 1 : index
  // expected-error @below {{'kvgpu.plan' names no launch plan of the module: "p"}}
  gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) {kvgpu.plan = "p"}
  return
}

// -----

// expected-error @below {{'kvgpu.call' must be a non-negative integer on a gpu.launch_func (the run of its plan)}}
func.func private @call_on_function() attributes {kvgpu.call = 0 : i64}

// -----

gpu.module @m {
  gpu.func @k() kernel { gpu.return }
}
func.func @call_negative() {
  %c1 = arith.constant 1 : index
  // expected-error @below {{'kvgpu.call' must be a non-negative integer on a gpu.launch_func (the run of its plan)}}
  gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) {kvgpu.call = -1 : i64}
  return
}
