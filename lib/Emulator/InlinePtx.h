//===- InlinePtx.h - The inline PTX the emulator understands --*- C++ -*-===//
//
// Private to lib/Emulator. Kernels emit PTX that MLIR 22's NVVM dialect has
// no op for (wgmma with A in registers) as `llvm.inline_asm`; the emulator
// reads that text back. The parser splits an inline-asm template into
// statements and operands; InstrumentInlinePtx.cpp gives the statements it
// models their meaning and refuses every other one by name.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_EMULATOR_INLINEPTX_H
#define KVIR_LIB_EMULATOR_INLINEPTX_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvir::emu {

/// An operand of a PTX statement in an inline-asm template.
struct PtxOperand {
  enum Kind { Placeholder, Immediate, Name, Vector } kind;
  int64_t value = 0;                // Placeholder: its $ number; Immediate
  std::string name;                 // Name
  std::vector<PtxOperand> elements; // Vector: `{a, b, ...}`
};

struct PtxStatement {
  std::string opcode; // "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"
  std::vector<PtxOperand> operands;
  std::string text; // the statement as written, for diagnostics
};

/// Splits `text` (an LLVM inline-asm template: `$N` placeholders, `$$` a
/// dollar) into statements. Scope braces and `//` comments are dropped.
/// Returns std::nullopt and sets `error` on text outside the grammar:
/// guarded statements (`@p`), memory operands, `${N:modifier}`.
std::optional<std::vector<PtxStatement>> parseInlinePtx(llvm::StringRef text,
                                                        std::string &error);

/// An inline-asm constraint string ("=f,=f,0,1,r,l,~{memory}"): outputs
/// are placeholders 0..outputs-1, then the inputs in order; clobbers have
/// none.
struct AsmConstraints {
  unsigned outputs = 0;
  /// Per input: the output it is tied to (a digit constraint), or -1.
  std::vector<int> tiedTo;
};
std::optional<AsmConstraints> parseConstraints(llvm::StringRef constraints,
                                               std::string &error);

} // namespace kvir::emu

#endif // KVIR_LIB_EMULATOR_INLINEPTX_H
