// kvir-gpu-tests under ASan is slow, and these cases are the same there.
// UNSUPPORTED: sanitizers
// RUN: rm -rf %t && mkdir -p %t
// RUN: env KVIR_BUILD_DIR=%kvir_obj_root %kvir_bench_gpu/prepare_cases.sh %t/cases 'Matrix/GpuDecode.MatchesReference/NhdSplitCsrP5D64G2BF16:States/GpuMerge.MatchesReferenceMerge/Merge2F16BaseE:Matrix/GpuAppend.MatchesReference/Int8G8NhdCombinedCsrP16D128F16:Matrix/GpuPrefill.MatchesReference/WindowZeroRaggedD64G1F16' > %t/prepare.log
// RUN: %python %kvir_bench_gpu/replay_cases.py --dry-run --self-check %t/cases/*/ | FileCheck %s
// RUN: %python -c "import numpy, sys; p = sys.argv[1]; r = numpy.fromfile(p, numpy.float64); r[numpy.abs(r).argmax()] += 1.0; r.tofile(p)" %t/cases/States_GpuMerge.MatchesReferenceMerge_Merge2F16BaseE.0/ref0_o.f64
// RUN: not %python %kvir_bench_gpu/replay_cases.py --dry-run --self-check %t/cases/*/ | FileCheck %s --check-prefix=BROKEN

// Emulated test calls written out for a GPU (KVIR_DUMP_CASES: launches with
// their parameters, buffers at first use, final buffers, the float64
// reference) and their PTX, replayed by bench/gpu/replay_cases.py without a
// GPU: every launch's kernel and parameter count match the PTX, and the
// emulator's own results, compared the way a GPU's are, pass against the
// reference and agree with themselves bit for bit. A reference changed by
// 1.0 in its largest element fails the case.

// CHECK: # replaying 5 case(s) on dry run (no GPU)
// CHECK-DAG: ok Matrix_GpuAppend.MatchesReference_Int8G8NhdCombinedCsrP16D128F16.0: {{[0-9]+}} launch(es); {{.*}}vs emulator: bit-exact
// CHECK-DAG: ok Matrix_GpuDecode.MatchesReference_NhdSplitCsrP5D64G2BF16.1: {{[0-9]+}} launch(es); vs float64 ref: {{.*}}, 0 failing (row, head); vs emulator: bit-exact
// CHECK-DAG: ok Matrix_GpuDecode.MatchesReference_NhdSplitCsrP5D64G2BF16.0: 2 launch(es); vs float64 ref: {{.*}}, 0 failing (row, head); vs emulator: bit-exact
// CHECK-DAG: ok Matrix_GpuPrefill.MatchesReference_WindowZeroRaggedD64G1F16.0: {{[0-9]+}} launch(es); vs float64 ref: {{.*}}, 0 failing (row, head); vs emulator: bit-exact
// CHECK-DAG: ok States_GpuMerge.MatchesReferenceMerge_Merge2F16BaseE.0: 1 launch(es); vs float64 ref: {{.*}}, 0 failing (row, head); vs emulator: bit-exact
// CHECK: # 5 of 5 cases passed

// BROKEN: FAIL States_GpuMerge.MatchesReferenceMerge_Merge2F16BaseE.0: 1 launch(es); vs float64 ref: {{.*}}, 1 failing (row, head)
// BROKEN: # 4 of 5 cases passed
