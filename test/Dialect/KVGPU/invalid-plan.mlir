// RUN: kvir-opt %s -split-input-file -verify-diagnostics

// Size expressions.

// expected-error @below {{expected an integer, a size name, '(' or one of min, max, ceildiv, floordiv}}
func.func private @bad_token() attributes {s = #kvgpu.size<batch + >}

// -----

// expected-error @below {{ceildiv takes 2 operands, got 3}}
func.func private @ceildiv_arity() attributes {s = #kvgpu.size<ceildiv(a, b, c)>}

// -----

// expected-error @below {{floordiv takes 2 operands, got 1}}
func.func private @floordiv_arity() attributes {s = #kvgpu.size<floordiv(a)>}

// -----

// Arguments.

// expected-error @below {{a launch-plan argument needs a name}}
func.func private @arg_name() attributes {a = #kvgpu.arg<"", input, memref<4xf32>, shape = [<4>]>}

// -----

// expected-error @below {{size argument 'n' must be an index with no shape}}
func.func private @size_arg() attributes {a = #kvgpu.arg<"n", size, i32>}

// -----

// expected-error @below {{scalar argument 'k_scale' must be a float with no shape, got 'i32'}}
func.func private @scalar_arg() attributes {a = #kvgpu.arg<"k_scale", scalar, i32>}

// -----

// expected-error @below {{buffer argument 'q' must be a memref, got 'f32'}}
func.func private @buffer_arg() attributes {a = #kvgpu.arg<"q", input, f32>}

// -----

// expected-error @below {{argument 'q' has 1 shape expressions for a rank-2 memref}}
func.func private @shape_rank() attributes {a = #kvgpu.arg<"q", input, memref<?x4xf32>, shape = [<n>]>}

// -----

// expected-error @below {{argument 'q' dim 1 is 4 in its type but n in its shape}}
func.func private @shape_static() attributes {a = #kvgpu.arg<"q", input, memref<?x4xf32>, shape = [<n>, <n>]>}

// -----

// Sizes.

// expected-error @below {{a launch-plan size needs a name}}
func.func private @size_name() attributes {s = #kvgpu.size_def<"" = <4>>}

// -----

// expected-error @below {{size 'n' must be either a dim of an argument or an expression}}
func.func private @size_both() attributes {s = #kvgpu.size_def<"n" from "q"[0] = <4>>}

// -----

// expected-error @below {{size 'n' must be either a dim of an argument or an expression}}
func.func private @size_neither() attributes {s = #kvgpu.size_def<"n">}

// -----

// expected-error @below {{size 'n' reads a negative axis -1 of 'q'}}
func.func private @size_axis() attributes {s = #kvgpu.size_def<"n" from "q"[-1]>}

// -----

// Kernels.

// expected-error @below {{a plan kernel needs a role}}
func.func private @role() attributes {k = #kvgpu.kernel<"", @m::@k, always, grid = [<1>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = []>}

// -----

// expected-error @below {{kernel @m::@k needs 3 grid and 3 block dims}}
func.func private @dims() attributes {k = #kvgpu.kernel<"r", @m::@k, always, grid = [<1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = []>}

// -----

// expected-error @below {{kernel @m::@k has a non-positive block dim}}
func.func private @block_zero() attributes {k = #kvgpu.kernel<"r", @m::@k, always, grid = [<1>, <1>, <1>], block = [32, 0, 1], shared = 0, dynamic_shared = 0, args = []>}

// -----

// expected-error @below {{kernel @m::@k has a block of 1024 x 2 x 1 threads, more than 1024}}
func.func private @block_big() attributes {k = #kvgpu.kernel<"r", @m::@k, always, grid = [<1>, <1>, <1>], block = [1024, 2, 1], shared = 0, dynamic_shared = 0, args = []>}

// -----

// Found by kvir-fuzz: the product of the dims overflowed int64 before the
// check (UBSan: signed integer overflow).
// expected-error @below {{kernel @m::@k has a block of 32 x 9223372036854775807 x 1 threads, more than 1024}}
func.func private @block_overflow() attributes {k = #kvgpu.kernel<"r", @m::@k, always, grid = [<1>, <1>, <1>], block = [32, 9223372036854775807, 1], shared = 0, dynamic_shared = 0, args = []>}

// -----

// expected-error @below {{kernel @m::@k has negative shared memory}}
func.func private @shared() attributes {k = #kvgpu.kernel<"r", @m::@k, always, grid = [<1>, <1>, <1>], block = [32, 1, 1], shared = -16, dynamic_shared = 0, args = []>}

// -----

// expected-error @below {{kernel @m::@k args must be argument or size names}}
func.func private @arg_names() attributes {k = #kvgpu.kernel<"r", @m::@k, always, grid = [<1>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = [3]>}

// -----

// Plans.

// expected-error @below {{a launch plan needs an op and a name}}
func.func private @plan_name() attributes {p = #kvgpu.plan<"kv.merge", "", args = [<"q", input, memref<4xf32>, shape = [<4>]>], kernels = [<"r", @m::@k, always, grid = [<1>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q"]>]>}

// -----

// expected-error @below {{plan 'p' has two arguments named 'q'}}
func.func private @dup_arg() attributes {p = #kvgpu.plan<"kv.merge", "p", args = [<"q", input, memref<4xf32>, shape = [<4>]>, <"q", output, memref<4xf32>, shape = [<4>]>], kernels = [<"r", @m::@k, always, grid = [<1>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q"]>]>}

// -----

// expected-error @below {{plan 'p' defines 'q' twice}}
func.func private @dup_size() attributes {p = #kvgpu.plan<"kv.merge", "p", args = [<"q", input, memref<?xf32>, shape = [<n>]>], sizes = [<"n" from "q"[0]>, <"q" = <4>>], kernels = [<"r", @m::@k, always, grid = [<1>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q"]>]>}

// -----

// expected-error @below {{plan 'p': size 'n' reads unknown argument 'x'}}
func.func private @size_unknown_arg() attributes {p = #kvgpu.plan<"kv.merge", "p", args = [<"q", input, memref<4xf32>, shape = [<4>]>], sizes = [<"n" from "x"[0]>], kernels = [<"r", @m::@k, always, grid = [<1>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q"]>]>}

// -----

// expected-error @below {{plan 'p': size 'n' reads axis 1 of 'q', which has no such axis}}
func.func private @size_axis_range() attributes {p = #kvgpu.plan<"kv.merge", "p", args = [<"q", input, memref<?xf32>, shape = [<4>]>], sizes = [<"n" from "q"[1]>], kernels = [<"r", @m::@k, always, grid = [<1>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q"]>]>}

// -----

// expected-error @below {{plan 'p': size 'm' reads size 'k' before it is defined}}
func.func private @size_order() attributes {p = #kvgpu.plan<"kv.merge", "p", args = [<"q", input, memref<4xf32>, shape = [<4>]>], sizes = [<"m" = <k + 1>>, <"k" = <2>>], kernels = [<"r", @m::@k, always, grid = [<1>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q"]>]>}

// -----

// expected-error @below {{plan 'p': argument 'q' reads size 'n' before it is defined}}
func.func private @shape_undefined() attributes {p = #kvgpu.plan<"kv.merge", "p", args = [<"q", input, memref<?xf32>, shape = [<n>]>], kernels = [<"r", @m::@k, always, grid = [<1>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q"]>]>}

// -----

// expected-error @below {{plan 'p': partitions names 'parts', which is not a size}}
func.func private @partitions() attributes {p = #kvgpu.plan<"kv.merge", "p", args = [<"q", input, memref<4xf32>, shape = [<4>]>], partitions = "parts", kernels = [<"r", @m::@k, always, grid = [<1>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q"]>]>}

// -----

// expected-error @below {{plan 'p': kernel @m::@k is conditional but the plan has no partition count or schedule}}
func.func private @conditional() attributes {p = #kvgpu.plan<"kv.merge", "p", args = [<"q", input, memref<4xf32>, shape = [<4>]>], kernels = [<"r", @m::@k, split, grid = [<1>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q"]>]>}

// -----

// expected-error @below {{plan 'p': the grid of a kernel reads size 'rows' before it is defined}}
func.func private @grid() attributes {p = #kvgpu.plan<"kv.merge", "p", args = [<"q", input, memref<4xf32>, shape = [<4>]>], kernels = [<"r", @m::@k, always, grid = [<rows>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q"]>]>}

// -----

// expected-error @below {{plan 'p': kernel @m::@k takes 'x', which is neither an argument nor a size}}
func.func private @kernel_arg() attributes {p = #kvgpu.plan<"kv.merge", "p", args = [<"q", input, memref<4xf32>, shape = [<4>]>], kernels = [<"r", @m::@k, always, grid = [<1>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["x"]>]>}

// -----

// The module attribute.

// expected-error @below {{'kvgpu.launch_plans' must be an array of #kvgpu.plan on a module}}
func.func private @not_module() attributes {kvgpu.launch_plans = []}

// -----

// expected-error @below {{'kvgpu.launch_plans' holds 3 : i64, not a #kvgpu.plan}}
module attributes {kvgpu.launch_plans = [3]} {
}

// -----

// expected-error @below {{has two launch plans named 'p'}}
module attributes {kvgpu.launch_plans = [
  #kvgpu.plan<"kv.merge", "p", args = [<"q", input, memref<4xf32>, shape = [<4>]>], kernels = [<"r", @m::@k, always, grid = [<1>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q"]>]>,
  #kvgpu.plan<"kv.merge", "p", args = [<"q", input, memref<4xf32>, shape = [<4>]>], kernels = [<"r", @m::@k, always, grid = [<1>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q"]>]>]} {
}

// -----

// expected-error @below {{plan 'p' config must be a kvgpu configuration, got 3 : i64}}
module attributes {kvgpu.launch_plans = [#kvgpu.plan<"kv.merge", "p", args = [<"n", size, index>], config = 3, kernels = [<"merge", @kv_kernels::@m, always, grid = [<n>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["n"]>]>]} {}

// -----

// Work schedules.

// expected-error @below {{work schedule needs target_items >= 0, granule >= 1, min_chunk >= 0 and window_left >= -1, got 8, 0, 128, -1}}
func.func private @schedule_granule() attributes {s = #kvgpu.work_schedule<lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", uniform_chunks = "u", target_items = 8, granule = 0, min_chunk = 128, window_left = -1>}

// -----

// expected-error @below {{a work schedule names every argument and size}}
func.func private @schedule_names() attributes {s = #kvgpu.work_schedule<lengths = "len", items = "items", merge_indptr = "ip", count = "", batch = "b", uniform_chunks = "u", target_items = 8, granule = 16, min_chunk = 128, window_left = -1>}

// -----

// expected-error @below {{a work schedule names every argument and size}}
func.func private @schedule_no_uniform() attributes {s = #kvgpu.work_schedule<lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", target_items = 8, granule = 16, min_chunk = 128, window_left = -1>}

// -----

// expected-error @below {{work schedule: tiles, workspace_rows, tile_rows, causal and workspace_limit are a prefill schedule's (one with qo_indptr)}}
func.func private @schedule_decode_causal() attributes {s = #kvgpu.work_schedule<lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", uniform_chunks = "u", target_items = 8, granule = 16, min_chunk = 128, window_left = -1, causal = true>}

// -----

// expected-error @below {{work schedule: tiles, workspace_rows, tile_rows, causal and workspace_limit are a prefill schedule's (one with qo_indptr)}}
func.func private @schedule_decode_workspace_limit() attributes {s = #kvgpu.work_schedule<lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", uniform_chunks = "u", target_items = 8, granule = 16, min_chunk = 128, window_left = -1, workspace_limit = "lim">}

// -----

// expected-error @below {{prefill work schedule needs tiles and workspace_rows (size names) and tile_rows >= 1, got 't', 'w' and 0}}
func.func private @schedule_prefill_rows() attributes {s = #kvgpu.work_schedule<lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", target_items = 8, granule = 16, min_chunk = 128, window_left = -1, qo_indptr = "qo", tiles = "t", workspace_rows = "w">}

// -----

// expected-error @below {{prefill work schedule takes no uniform_chunks or max_batch (it always has the lengths and sizes its grids per call)}}
func.func private @schedule_prefill_uniform() attributes {s = #kvgpu.work_schedule<lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", uniform_chunks = "u", target_items = 8, granule = 16, min_chunk = 128, window_left = -1, qo_indptr = "qo", tiles = "t", workspace_rows = "w", tile_rows = 16>}

// -----

// expected-error @below {{plan 'p': schedule argument 'items' must be a schedule argument of type memref<?x5xi32>}}
func.func private @schedule_prefill_items() attributes {p = #kvgpu.plan<"kv.prefill", "p", args = [<"q", input, memref<?xf32>, shape = [<b>]>, <"len", host, memref<?xi32>, shape = [<b>]>, <"qo", host, memref<?xi32>, shape = [<b + 1>]>, <"items", schedule, memref<?x4xi32>, shape = [<8>, <4>]>, <"ip", schedule, memref<?xi32>, shape = [<b + 1>]>], sizes = [<"b" from "q"[0]>], schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", target_items = 8, granule = 16, min_chunk = 128, window_left = -1, qo_indptr = "qo", tiles = "t", workspace_rows = "w", tile_rows = 16>, kernels = [<"s", @m::@k, split, grid = [<n>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q", "items"]>]>}

// -----

// expected-error @below {{plan 'p': schedule argument 'qo' must be a host argument of type memref<?xi32>}}
func.func private @schedule_prefill_qo() attributes {p = #kvgpu.plan<"kv.prefill", "p", args = [<"q", input, memref<?xf32>, shape = [<b>]>, <"len", host, memref<?xi32>, shape = [<b>]>, <"qo", input, memref<?xi32>, shape = [<b + 1>]>, <"items", schedule, memref<?x5xi32>, shape = [<8>, <5>]>, <"ip", schedule, memref<?xi32>, shape = [<b + 1>]>], sizes = [<"b" from "q"[0]>], schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", target_items = 8, granule = 16, min_chunk = 128, window_left = -1, qo_indptr = "qo", tiles = "t", workspace_rows = "w", tile_rows = 16>, kernels = [<"s", @m::@k, split, grid = [<n>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q", "items"]>]>}

// -----

// expected-error @below {{plan 'p' defines 'b' twice}}
func.func private @schedule_prefill_tiles_twice() attributes {p = #kvgpu.plan<"kv.prefill", "p", args = [<"q", input, memref<?xf32>, shape = [<b>]>, <"len", host, memref<?xi32>, shape = [<b>]>, <"qo", host, memref<?xi32>, shape = [<b + 1>]>, <"items", schedule, memref<?x5xi32>, shape = [<8>, <5>]>, <"ip", schedule, memref<?xi32>, shape = [<b + 1>]>], sizes = [<"b" from "q"[0]>], schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", target_items = 8, granule = 16, min_chunk = 128, window_left = -1, qo_indptr = "qo", tiles = "b", workspace_rows = "w", tile_rows = 16>, kernels = [<"s", @m::@k, split, grid = [<n>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q", "items"]>]>}

// -----

// expected-error @below {{plan 'p' defines 'n' twice}}
func.func private @schedule_prefill_rows_twice() attributes {p = #kvgpu.plan<"kv.prefill", "p", args = [<"q", input, memref<?xf32>, shape = [<b>]>, <"len", host, memref<?xi32>, shape = [<b>]>, <"qo", host, memref<?xi32>, shape = [<b + 1>]>, <"items", schedule, memref<?x5xi32>, shape = [<8>, <5>]>, <"ip", schedule, memref<?xi32>, shape = [<b + 1>]>], sizes = [<"b" from "q"[0]>], schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", target_items = 8, granule = 16, min_chunk = 128, window_left = -1, qo_indptr = "qo", tiles = "t", workspace_rows = "n", tile_rows = 16>, kernels = [<"s", @m::@k, split, grid = [<n>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q", "items"]>]>}

// -----

// expected-error @below {{plan 'p': its schedule reads 'u', which is not a size}}
func.func private @schedule_uniform() attributes {p = #kvgpu.plan<"kv.decode", "p", args = [<"q", input, memref<?xf32>, shape = [<b>]>, <"len", host, memref<?xi32>, shape = [<b>]>, <"items", schedule, memref<?x4xi32>, shape = [<8>, <4>]>, <"ip", schedule, memref<?xi32>, shape = [<b + 1>]>], sizes = [<"b" from "q"[0]>], schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", uniform_chunks = "u", target_items = 8, granule = 16, min_chunk = 128, window_left = -1>, kernels = [<"s", @m::@k, split, grid = [<n>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q", "items"]>]>}

// -----

// expected-error @below {{plan 'p': its schedule reads 'mb', which is not a size}}
func.func private @schedule_max_batch() attributes {p = #kvgpu.plan<"kv.decode", "p", args = [<"q", input, memref<?xf32>, shape = [<b>]>, <"len", host, memref<?xi32>, shape = [<b>]>, <"items", schedule, memref<?x4xi32>, shape = [<8>, <4>]>, <"ip", schedule, memref<?xi32>, shape = [<b + 1>]>], sizes = [<"b" from "q"[0]>, <"u" = <2>>], schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", uniform_chunks = "u", target_items = 8, granule = 16, min_chunk = 128, window_left = -1, max_batch = "mb">, kernels = [<"s", @m::@k, always, grid = [<8>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q", "items"]>]>}

// -----

// expected-error @below {{plan 'p': its schedule reads 'lim', which is not a size}}
func.func private @schedule_prefill_workspace_limit() attributes {p = #kvgpu.plan<"kv.prefill", "p", args = [<"q", input, memref<?xf32>, shape = [<b>]>, <"len", host, memref<?xi32>, shape = [<b>]>, <"qo", host, memref<?xi32>, shape = [<b + 1>]>, <"items", schedule, memref<?x5xi32>, shape = [<8>, <5>]>, <"ip", schedule, memref<?xi32>, shape = [<b + 1>]>], sizes = [<"b" from "q"[0]>], schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", target_items = 8, granule = 16, min_chunk = 128, window_left = -1, qo_indptr = "qo", tiles = "t", workspace_rows = "w", tile_rows = 16, workspace_limit = "lim">, kernels = [<"s", @m::@k, always, grid = [<8>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q", "items"]>]>}

// -----

// expected-error @below {{plan 'p': schedule argument 'len' must be a host argument of type memref<?xi32>}}
func.func private @schedule_lengths_role() attributes {p = #kvgpu.plan<"kv.decode", "p", args = [<"q", input, memref<?xf32>, shape = [<b>]>, <"len", input, memref<?xi32>, shape = [<b>]>, <"items", schedule, memref<?x4xi32>, shape = [<8>, <4>]>, <"ip", schedule, memref<?xi32>, shape = [<b + 1>]>], sizes = [<"b" from "q"[0]>, <"u" = <2>>], schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", uniform_chunks = "u", target_items = 8, granule = 16, min_chunk = 128, window_left = -1>, kernels = [<"s", @m::@k, split, grid = [<n>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q", "items"]>]>}

// -----

// expected-error @below {{plan 'p': schedule argument 'items' must be a schedule argument of type memref<?x4xi32>}}
func.func private @schedule_items_type() attributes {p = #kvgpu.plan<"kv.decode", "p", args = [<"q", input, memref<?xf32>, shape = [<b>]>, <"len", host, memref<?xi32>, shape = [<b>]>, <"items", schedule, memref<?x3xi32>, shape = [<8>, <3>]>, <"ip", schedule, memref<?xi32>, shape = [<b + 1>]>], sizes = [<"b" from "q"[0]>, <"u" = <2>>], schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "n", batch = "b", uniform_chunks = "u", target_items = 8, granule = 16, min_chunk = 128, window_left = -1>, kernels = [<"s", @m::@k, split, grid = [<n>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q", "items"]>]>}

// -----

// expected-error @below {{plan 'p' defines 'b' twice}}
func.func private @schedule_count_twice() attributes {p = #kvgpu.plan<"kv.decode", "p", args = [<"q", input, memref<?xf32>, shape = [<b>]>, <"len", host, memref<?xi32>, shape = [<b>]>, <"items", schedule, memref<?x4xi32>, shape = [<8>, <4>]>, <"ip", schedule, memref<?xi32>, shape = [<b + 1>]>], sizes = [<"b" from "q"[0]>, <"u" = <2>>], schedule = <lengths = "len", items = "items", merge_indptr = "ip", count = "b", batch = "b", uniform_chunks = "u", target_items = 8, granule = 16, min_chunk = 128, window_left = -1>, kernels = [<"s", @m::@k, split, grid = [<n>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q", "items"]>]>}

// -----

// Page tables.

// expected-error @below {{paged tables form must be csr, block_table, token_table or token_offset, got 'pages'}}
func.func private @tables_form() attributes {t = #kvgpu.paged_tables<table = "pages", page_size = 16>}

// -----

// expected-error @below {{paged tables page_size must be >= 1, got 0}}
func.func private @tables_page() attributes {t = #kvgpu.paged_tables<table = "csr", page_size = 0>}

// -----

// expected-error @below {{plan 'p': its block_table tables need an input argument 'seq_lens'}}
func.func private @tables_args() attributes {p = #kvgpu.plan<"kv.decode", "p", args = [<"q", input, memref<?xf32>, shape = [<b>]>, <"block_table", input, memref<?x?xi32>, shape = [<b>, <m>]>], sizes = [<"b" from "q"[0]>, <"m" from "block_table"[1]>], tables = <table = "block_table", page_size = 16>, kernels = [<"s", @m::@k, always, grid = [<b>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q"]>]>}

// -----

// expected-error @below {{plan 'p': its pool capacity reads size 'np' before it is defined}}
func.func private @tables_capacity() attributes {p = #kvgpu.plan<"kv.decode", "p", args = [<"q", input, memref<?xf32>, shape = [<b>]>, <"cachestarts", input, memref<?xi32>, shape = [<b>]>, <"kv_lens", input, memref<?xi32>, shape = [<b>]>], sizes = [<"b" from "q"[0]>], tables = <table = "token_offset", page_size = 16, pool_tokens = <np>>, kernels = [<"s", @m::@k, always, grid = [<b>, <1>, <1>], block = [32, 1, 1], shared = 0, dynamic_shared = 0, args = ["q"]>]>}

// -----

// Tensor maps.

// expected-error @below {{argument 'm' is a tensor_map argument without a map}}
func.func private @tensor_map_without_map() attributes {a = #kvgpu.arg<"m", tensor_map, memref<16xi64>, shape = [<16>]>}

// -----


// expected-error @below {{argument 'm' has a tensor map but is not a tensor_map argument}}
func.func private @map_on_an_input() attributes {a = #kvgpu.arg<"m", input, memref<16xi64>, shape = [<16>], map = <"k", box = [64, 1, 64], swizzle = 128>>}

// -----


// expected-error @below {{tensor_map argument 'm' must be a memref<16xi64> (a CUtensorMap's 128 bytes), got 'memref<32xi32>'}}
func.func private @map_type() attributes {a = #kvgpu.arg<"m", tensor_map, memref<32xi32>, shape = [<32>], map = <"k", box = [64, 1, 64], swizzle = 128>>}

// -----


// expected-error @below {{tensor map over 'k' box dims must be in [1, 256], got 300}}
func.func private @box_dims() attributes {a = #kvgpu.tensor_map<"k", box = [300, 1, 64], swizzle = 128>}

// -----


// expected-error @below {{tensor map over 'k' needs a box of 1 to 5 dims, got 6}}
func.func private @box_rank() attributes {a = #kvgpu.tensor_map<"k", box = [1, 1, 1, 1, 1, 8], swizzle = 128>}

// -----


// expected-error @below {{tensor map over 'k' swizzle must be 0, 32, 64 or 128 bytes, got 48}}
func.func private @swizzle() attributes {a = #kvgpu.tensor_map<"k", box = [64, 1, 64], swizzle = 48>}

// -----


// expected-error @below {{plan 'p': tensor map 'm' reads unknown argument 'x'}}
func.func private @unknown_source() attributes {p = #kvgpu.plan<"kv.prefill", "p", args = [<"k", input, memref<?x2x128xf16>, shape = [<n>, <2>, <128>]>, <"m", tensor_map, memref<16xi64>, shape = [<16>], map = <"x", box = [64, 1, 64], swizzle = 128>>], sizes = [<"n" from "k"[0]>], kernels = [<"s", @m::@k, always, grid = [<n>, <1>, <1>], block = [384, 1, 1], shared = 0, dynamic_shared = 0, args = ["k"]>]>}

// -----


// expected-error @below {{plan 'p': tensor map 'm' has a rank-2 box over rank-3 'k'}}
func.func private @rank_mismatch() attributes {p = #kvgpu.plan<"kv.prefill", "p", args = [<"k", input, memref<?x2x128xf16>, shape = [<n>, <2>, <128>]>, <"m", tensor_map, memref<16xi64>, shape = [<16>], map = <"k", box = [64, 64], swizzle = 128>>], sizes = [<"n" from "k"[0]>], kernels = [<"s", @m::@k, always, grid = [<n>, <1>, <1>], block = [384, 1, 1], shared = 0, dynamic_shared = 0, args = ["k"]>]>}

// -----


// expected-error @below {{plan 'p': tensor map 'm' has a box whose innermost dim is 256 bytes, more than its 128-byte swizzle}}
func.func private @wider_than_swizzle() attributes {p = #kvgpu.plan<"kv.prefill", "p", args = [<"k", input, memref<?x2x128xf16>, shape = [<n>, <2>, <128>]>, <"m", tensor_map, memref<16xi64>, shape = [<16>], map = <"k", box = [64, 1, 128], swizzle = 128>>], sizes = [<"n" from "k"[0]>], kernels = [<"s", @m::@k, always, grid = [<n>, <1>, <1>], block = [384, 1, 1], shared = 0, dynamic_shared = 0, args = ["k"]>]>}

// -----


// expected-error @below {{plan 'p': tensor map 'm' has a box whose innermost dim is 6 bytes; TMA needs a multiple of 16}}
func.func private @inner_16_bytes() attributes {p = #kvgpu.plan<"kv.prefill", "p", args = [<"k", input, memref<?x2x128xf16>, shape = [<n>, <2>, <128>]>, <"m", tensor_map, memref<16xi64>, shape = [<16>], map = <"k", box = [64, 1, 3], swizzle = 0>>], sizes = [<"n" from "k"[0]>], kernels = [<"s", @m::@k, always, grid = [<n>, <1>, <1>], block = [384, 1, 1], shared = 0, dynamic_shared = 0, args = ["k"]>]>}

// -----


// expected-error @below {{plan 'p': tensor map 'm' has a box dim 1 of 4, larger than 'k''s 2}}
func.func private @box_over_static_dim() attributes {p = #kvgpu.plan<"kv.prefill", "p", args = [<"k", input, memref<?x2x128xf16>, shape = [<n>, <2>, <128>]>, <"m", tensor_map, memref<16xi64>, shape = [<16>], map = <"k", box = [64, 4, 64], swizzle = 128>>], sizes = [<"n" from "k"[0]>], kernels = [<"s", @m::@k, always, grid = [<n>, <1>, <1>], block = [384, 1, 1], shared = 0, dynamic_shared = 0, args = ["k"]>]>}

// -----

// expected-error @below {{plan 'p': tensor map 'm' must read an input buffer, not 'o'}}
func.func private @map_source_0() attributes {p = #kvgpu.plan<"kv.prefill", "p", args = [<"o", output, memref<?x2x128xf16>, shape = [<n>, <2>, <128>]>, <"m", tensor_map, memref<16xi64>, shape = [<16>], map = <"o", box = [64, 1, 64], swizzle = 128>>], sizes = [<"n" from "o"[0]>], kernels = [<"s", @m::@k, always, grid = [<n>, <1>, <1>], block = [384, 1, 1], shared = 0, dynamic_shared = 0, args = ["o"]>]>}

// -----

// expected-error @below {{plan 'p': tensor map 'm' reads 'k', whose inner dims must be static}}
func.func private @map_source_1() attributes {p = #kvgpu.plan<"kv.prefill", "p", args = [<"k", input, memref<?x?x128xf16>, shape = [<n>, <h>, <128>]>, <"m", tensor_map, memref<16xi64>, shape = [<16>], map = <"k", box = [64, 1, 64], swizzle = 128>>], sizes = [<"n" from "k"[0]>, <"h" from "k"[1]>], kernels = [<"s", @m::@k, always, grid = [<n>, <1>, <1>], block = [384, 1, 1], shared = 0, dynamic_shared = 0, args = ["k"]>]>}

// -----

// expected-error @below {{plan 'p': tensor map 'm' reads 'k', whose dim 0 stride (24 bytes) is not a multiple of 16}}
func.func private @map_source_2() attributes {p = #kvgpu.plan<"kv.prefill", "p", args = [<"k", input, memref<?x12xf16>, shape = [<n>, <12>]>, <"m", tensor_map, memref<16xi64>, shape = [<16>], map = <"k", box = [8, 8], swizzle = 0>>], sizes = [<"n" from "k"[0]>], kernels = [<"s", @m::@k, always, grid = [<n>, <1>, <1>], block = [384, 1, 1], shared = 0, dynamic_shared = 0, args = ["k"]>]>}

// -----

// expected-error @below {{plan 'p': tensor map 'm' reads 'index' elements, which TMA does not move}}
func.func private @map_source_3() attributes {p = #kvgpu.plan<"kv.prefill", "p", args = [<"k", input, memref<?x2xindex>, shape = [<n>, <2>]>, <"m", tensor_map, memref<16xi64>, shape = [<16>], map = <"k", box = [8, 2], swizzle = 0>>], sizes = [<"n" from "k"[0]>], kernels = [<"s", @m::@k, always, grid = [<n>, <1>, <1>], block = [384, 1, 1], shared = 0, dynamic_shared = 0, args = ["k"]>]>}
