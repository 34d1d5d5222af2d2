// RUN: not kvir-opt %s --kv-to-ptx="chip=sm_90a bogus=1" 2>&1 | FileCheck %s --check-prefix=BOGUS
// RUN: not kvir-opt %s --kv-to-nvvm="chip=sm_99" 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not kvir-opt %s --kv-to-ptx="chip=sm_90a graph-max-batch=-1" 2>&1 | FileCheck %s --check-prefix=GRAPH
// RUN: not kvir-opt %s --convert-kv-to-gpu="graph-max-batch=-2" 2>&1 | FileCheck %s --check-prefix=GRAPH-PASS
// RUN: kvir-opt %s --kv-to-nvvm="chip=sm_80" | FileCheck %s --check-prefix=OK

// The GPU pipelines' options are checked up front and reported as errors:
// an unknown option, an unknown chip (with the chips kvir knows), a
// negative fixed-grid batch.

// BOGUS: error: <Pass-Options-Parser>: no such option bogus
// CHIP: error: unknown chip 'sm_99', expected sm_80, sm_86, sm_89, sm_90 or sm_90a
// GRAPH: error: graph-max-batch must be >= 0 (0: grids sized per call), got -1
// GRAPH-PASS: error: convert-kv-to-gpu: graph-max-batch must be >= 0 (0: grids sized per call), got -2
// OK-LABEL: func.func @nothing
func.func @nothing() {
  return
}
