// RUN: not kvir-opt %s --kv-tile=chip=sm_70 2>&1 | FileCheck %s
// RUN: not kvir-opt %s --convert-kv-to-gpu=chip=sm_70 2>&1 | FileCheck %s --check-prefix=GPU
// RUN: not kvir-opt %s --kv-to-ptx=chip=sm_70 2>&1 | FileCheck %s --check-prefix=PIPELINE

// Every stage that takes a chip resolves it through TargetInfo, with the
// same message; the kv-to-nvvm / kv-to-ptx pipelines check it before any
// pass runs.

// CHECK: kv-tile: unknown chip 'sm_70', expected sm_80, sm_86, sm_89, sm_90 or sm_90a
// PIPELINE: error: unknown chip 'sm_70', expected sm_80, sm_86, sm_89, sm_90 or sm_90a
// GPU: convert-kv-to-gpu: unknown chip 'sm_70', expected sm_80, sm_86, sm_89, sm_90 or sm_90a
module {
}
