// RUN: kvir-opt %s -split-input-file --convert-kv-to-gpu=chip=sm_90a -verify-diagnostics

// Every attention kernel runs the variants; a sink merge still needs
// buffers to write.

// A sink merge whose state is not stored has no buffers to write.
!s = !kv.state<?x8x64xf16, base = e>
func.func @merge_sinks_unstored(%o0: memref<?x8x64xf16>, %l0: memref<?x8xf32>, %sinks: memref<8xf32>) -> !s {
  %a = kv.load_state %o0, %l0 : memref<?x8x64xf16>, memref<?x8xf32> -> !s
  // expected-error @below {{'kv.merge_sinks' op has no GPU kernel: its state is not stored by a kv.store_state (its only user)}}
  %m = kv.merge_sinks %a, %sinks : !s, memref<8xf32>
  return %m : !s
}
