// RUN: rm -rf %t && mkdir -p %t/a %t/b
// RUN: kvir-opt %S/Inputs/prefill-matrix.mlir --kv-to-ptx=chip=sm_90a | kvir-translate -o %t/a
// RUN: kvir-opt %S/Inputs/prefill-matrix.mlir --kv-to-ptx=chip=sm_90a | kvir-translate -o %t/b
// RUN: diff -r %t/a %t/b
// RUN: kvir-opt %S/Inputs/decode-matrix.mlir --kv-to-ptx=chip=sm_80 | kvir-translate -o %t/a
// RUN: kvir-opt %S/Inputs/decode-matrix.mlir --kv-to-ptx=chip=sm_80 | kvir-translate -o %t/b
// RUN: diff -r %t/a %t/b

// The same input gives byte-identical PTX, manifests and headers: kernel
// symbols hash their specialization, not pointers or time.
