// RUN: kvir-opt %s --llvm-host-independent-float --split-input-file --verify-diagnostics

// Integers wider than 64 bits have no exact conversion here.
llvm.func @from_i128(%x: i128) -> bf16 {
  // expected-error @+1 {{'llvm.sitofp' on f16/bf16 values would compile to code that depends on the host CPU}}
  %r = llvm.sitofp %x : i128 to bf16
  llvm.return %r : bf16
}

// -----

// An f16 operation the pass has no exact rewrite for.
llvm.func @powi(%x: f16, %n: i32) -> f16 {
  // expected-error @+1 {{'llvm.intr.powi' on f16/bf16 values would compile to code that depends on the host CPU}}
  %r = llvm.intr.powi(%x, %n) : (f16, i32) -> f16
  llvm.return %r : f16
}

// -----

// An aggregate holding bf16 cannot be cast to bits at a call.
llvm.func @take(!llvm.struct<(bf16, i32)>)
llvm.func @aggregate(%p: !llvm.ptr) {
  %s = llvm.load %p : !llvm.ptr -> !llvm.struct<(bf16, i32)>
  // expected-error @+1 {{crosses a function boundary}}
  llvm.call @take(%s) : (!llvm.struct<(bf16, i32)>) -> ()
  llvm.return
}

// -----

// An identified struct holding bf16 cannot be rewritten to bits.
llvm.func @identified(%p: !llvm.ptr) {
  // expected-error @+1 {{f16/bf16 inside an identified struct is not supported}}
  %s = llvm.load %p : !llvm.ptr -> !llvm.struct<"pair", (bf16, i32)>
  llvm.store %s, %p : !llvm.struct<"pair", (bf16, i32)>, !llvm.ptr
  llvm.return
}

// -----

// A reduction over a scalable vector of bf16 cannot be unrolled.
llvm.func @scalable(%v: vector<[4]xbf16>, %s: bf16) -> bf16 {
  // expected-error @+1 {{'llvm.intr.vector.reduce.fadd' on f16/bf16 values would compile to code that depends on the host CPU}}
  %r = "llvm.intr.vector.reduce.fadd"(%s, %v) : (bf16, vector<[4]xbf16>) -> bf16
  llvm.return %r : bf16
}
