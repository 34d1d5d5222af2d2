// RUN: sed 's/f16/bf16/g' %S/../../examples/decode.mlir | kvir-opt --kv-lower-to-llvm | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | %python %S/../../examples/decode_reference.py --dtype bf16 | FileCheck %s

// The README's CPU example with bf16 KV, queries and output. Converting
// f32 to bf16 is a compiler-rt call (__truncsfbf2, which Debian 12's libgcc
// lacks) on x86 CPUs without AVX512-BF16 unless --kv-lower-to-llvm expands
// it (llvm-host-independent-float): this runs on any host CPU, and on the
// baseline x86-64 CPU in scripts/test.sh's KVIR_JIT_CPU=x86-64 run.

// CHECK: max relative error of out vs float64 numpy: {{.*}} (tolerance 1.6e-2)
// CHECK: max absolute error of lse vs float64 numpy: {{.*}} (tolerance 1e-3)
