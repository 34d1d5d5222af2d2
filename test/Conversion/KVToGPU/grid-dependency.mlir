// RUN: kvir-opt %s --convert-kv-to-gpu=chip=sm_90a | FileCheck %s --check-prefix=SM90
// RUN: kvir-opt %s --convert-kv-to-gpu=chip=sm_90 | FileCheck %s --check-prefix=SM90
// RUN: kvir-opt %s --convert-kv-to-gpu=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: rm -rf %t && mkdir -p %t
// RUN: kvir-opt %s --kv-to-ptx=chip=sm_90a | kvir-translate -o %t
// RUN: FileCheck %s --check-prefix=PTX < %t/kv_kernels.ptx

// On chips with griddepcontrol every kernel may be launched as a
// programmatic dependent of the grid before it (a plan's merge after its
// split kernel; any kernel after the caller's): its first instructions
// wait for that grid, then let the next one launch. Before sm_90, neither.

// SM90-LABEL: func.func @batch_decode
// SM90: gpu.func @decode_
// SM90-NEXT: nvvm.griddepcontrol wait
// SM90-NEXT: nvvm.griddepcontrol launch_dependents
// SM90: gpu.func @decode_{{.*}}_split_
// SM90-NEXT: nvvm.griddepcontrol wait
// SM90-NEXT: nvvm.griddepcontrol launch_dependents
// SM90: gpu.func @merge_rows_
// SM90-NEXT: nvvm.griddepcontrol wait
// SM90-NEXT: nvvm.griddepcontrol launch_dependents

// SM80-LABEL: func.func @batch_decode
// SM80-NOT: griddepcontrol

// LLVM sees griddepcontrol.wait as touching no memory: no global access
// (a global or generic load or store, cp.async, an atomic) may have been
// scheduled above it in the PTX.
// PTX-LABEL: .entry decode_
// PTX-NOT: {{(ld|st)\.(global|[ubsfv][0-9])|cp\.async|atom\.|red\.}}
// PTX: griddepcontrol.wait;
// PTX-LABEL: .entry decode_{{.*}}_split_
// PTX-NOT: {{(ld|st)\.(global|[ubsfv][0-9])|cp\.async|atom\.|red\.}}
// PTX: griddepcontrol.wait;
// PTX-LABEL: .entry merge_rows_
// PTX-NOT: {{(ld|st)\.(global|[ubsfv][0-9])|cp\.async|atom\.|red\.}}
// PTX: griddepcontrol.wait;

!cache = !kv.paged<page_size = 16, kv_heads = 8, head_dim = 128, head_dim_v = 128,
                   dtype = f16, layout = nhd, storage = combined, table = csr>
!state = !kv.state<?x32x128xf16, base = 2>
func.func @batch_decode(%q: memref<?x32x128xf16>, %pool: memref<?x2x16x8x128xf16>,
                        %indptr: memref<?xi32>, %indices: memref<?xi32>,
                        %last: memref<?xi32>,
                        %out: memref<?x32x128xf16>, %lse: memref<?x32xf32>) {
  %kv = kv.paged_view pools(%pool : memref<?x2x16x8x128xf16>)
      tables(%indptr, %indices, %last : memref<?xi32>, memref<?xi32>, memref<?xi32>) : !cache
  %s = kv.decode %q, %kv : memref<?x32x128xf16>, !cache -> !state
  kv.store_state %s, %out, %lse : !state, memref<?x32x128xf16>, memref<?x32xf32>
  return
}
