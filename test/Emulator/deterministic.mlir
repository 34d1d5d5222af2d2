// RUN: kvir-runner %S/../../examples/decode.mlir -e main --entry-point-result=void --shared-libs=%mlir_runner_libs --emu-stats > %t.decode.a 2>&1
// RUN: kvir-runner %S/../../examples/decode.mlir -e main --entry-point-result=void --shared-libs=%mlir_runner_libs --emu-stats > %t.decode.b 2>&1
// RUN: sed -E 's/base@ = 0x[0-9a-f]+//; s/"seconds": [0-9.]+//' %t.decode.a > %t.decode.a.kept
// RUN: sed -E 's/base@ = 0x[0-9a-f]+//; s/"seconds": [0-9.]+//' %t.decode.b > %t.decode.b.kept
// RUN: diff %t.decode.a.kept %t.decode.b.kept
// RUN: kvir-runner %S/../../examples/prefill.mlir -e main --entry-point-result=void --shared-libs=%mlir_runner_libs --emu-stats > %t.prefill.a 2>&1
// RUN: kvir-runner %S/../../examples/prefill.mlir -e main --entry-point-result=void --shared-libs=%mlir_runner_libs --emu-stats > %t.prefill.b 2>&1
// RUN: sed -E 's/base@ = 0x[0-9a-f]+//; s/"seconds": [0-9.]+//' %t.prefill.a > %t.prefill.a.kept
// RUN: sed -E 's/base@ = 0x[0-9a-f]+//; s/"seconds": [0-9.]+//' %t.prefill.b > %t.prefill.b.kept
// RUN: diff %t.prefill.a.kept %t.prefill.b.kept
// RUN: FileCheck %s --input-file=%t.decode.a.kept
// RUN: FileCheck %s --input-file=%t.prefill.a.kept

// Emulated runs are deterministic: the same program prints the same outputs
// and the same counters (bytes, sectors, instructions, per-block work) run
// after run; only the printed buffer addresses and the wall time are left
// out. The decode example takes the split and merge kernels, the prefill
// example the append kernel and the tensor-core prefill. Sector counts used
// to follow malloc's placement of the host buffers (52048 and 52176 sectors
// for the same decode); the emulator now counts them as if each allocation
// started on a 256-byte boundary, as cudaMalloc's do.

// CHECK: data =
// CHECK: "kernel": {{.*}}"global_sectors": {{[1-9][0-9]*}}
