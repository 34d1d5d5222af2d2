// Two states of 3 rows merged (kv.merge's kernel).
!s = !kv.state<?x4x64xf32, base = e>
func.func @merge(%oa: memref<?x4x64xf32>, %la: memref<?x4xf32>,
                 %ob: memref<?x4x64xf32>, %lb: memref<?x4xf32>,
                 %o: memref<?x4x64xf32>, %l: memref<?x4xf32>) {
  %a = kv.load_state %oa, %la : memref<?x4x64xf32>, memref<?x4xf32> -> !s
  %b = kv.load_state %ob, %lb : memref<?x4x64xf32>, memref<?x4xf32> -> !s
  %m = kv.merge %a, %b : !s, !s -> !s
  kv.store_state %m, %o, %l : !s, memref<?x4x64xf32>, memref<?x4xf32>
  return
}
