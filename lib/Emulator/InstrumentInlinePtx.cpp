//===- InstrumentInlinePtx.cpp - The wgmma statements of inline PTX -------===//
//
// MLIR 22's nvvm.wgmma.mma_async reads A from shared memory only; the RS
// form (A from registers, how FlashAttention-3 feeds P to O += P V) exists
// only as PTX text. Kernels emit it as llvm.inline_asm, one statement per
// template with the accumulators tied ("=f" outputs, "N" inputs), as CUDA's
// "+f" operands become:
//
//   { .reg .pred p; setp.ne.b32 p, $70, 0;
//     wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
//       {$0, ..., $63}, {$64, $65, $66, $67}, $68, p, 1, 1, 1; }
//
// This file reads such templates back into the emulator's wgmma calls: the
// mma_async statement in both forms (PTX ISA 9.7.15.5.2), wgmma.fence,
// commit_group and wait_group, the predicate that carries scale-d, and
// empty templates whose outputs are tied to their inputs (they only keep
// the compiler from moving register reads across a wait). Anything else is
// refused with its text.
//
//===----------------------------------------------------------------------===//
#include "InlinePtx.h"
#include "Instrumenter.h"
#include "kvir/Emulator/RuntimeABI.h"

#include "llvm/ADT/StringExtras.h"

namespace kvir::emu {

/// What one template's statements see: its operands by placeholder, the
/// predicates it declared and what they were set to.
struct TemplateScope {
  mutable LLVM::InlineAsmOp op;
  AsmConstraints constraints;
  llvm::StringMap<Value> predicates; // null until set
  /// Per output: the wgmma result written to it.
  SmallVector<Value> outputs;

  bool isOutput(const PtxOperand &o) const {
    return o.kind == PtxOperand::Placeholder &&
           uint64_t(o.value) < constraints.outputs;
  }
  /// The input operand a placeholder names, or null.
  Value input(const PtxOperand &o) const {
    if (o.kind != PtxOperand::Placeholder || isOutput(o))
      return {};
    uint64_t i = o.value - constraints.outputs;
    return i < op.getOperands().size() ? op.getOperands()[i] : Value();
  }
  Type outputType(unsigned output) const {
    Type t = op.getRes().getType();
    if (auto structType = dyn_cast<LLVM::LLVMStructType>(t))
      return structType.getBody()[output];
    return t;
  }
  /// The input tied to output `o`, or null.
  Value tiedInput(unsigned output) const {
    for (auto [i, tied] : llvm::enumerate(constraints.tiedTo))
      if (tied == int(output))
        return op.getOperands()[i];
    return {};
  }
};

namespace {

/// An immediate operand, or a placeholder whose input is a constant (an
/// "n" constraint).
std::optional<int64_t> immediate(const TemplateScope &scope,
                                 const PtxOperand &o) {
  if (o.kind == PtxOperand::Immediate)
    return o.value;
  if (Value v = scope.input(o))
    if (auto c = v.getDefiningOp<LLVM::ConstantOp>())
      if (auto attr = dyn_cast<IntegerAttr>(c.getValue()))
        return attr.getInt();
  return std::nullopt;
}

std::optional<uint32_t> wgmmaTypeName(StringRef name) {
  return llvm::StringSwitch<std::optional<uint32_t>>(name)
      .Case("f16", kabi::WF16)
      .Case("bf16", kabi::WBF16)
      .Case("e4m3", kabi::WE4M3)
      .Case("e5m2", kabi::WE5M2)
      .Case("f32", kabi::WF32)
      .Default(std::nullopt);
}

/// The parts of `wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype`.
struct MmaOpcode {
  uint32_t n = 0, k = 0, typeA = 0, typeB = 0;
};

std::optional<MmaOpcode> parseMmaOpcode(StringRef opcode, std::string &error) {
  SmallVector<StringRef> parts;
  opcode.split(parts, '.');
  MmaOpcode m;
  StringRef shape = parts.size() == 8 ? parts[4] : "";
  if (parts.size() != 8 || parts[2] != "sync" || parts[3] != "aligned" ||
      !shape.consume_front("m64n")) {
    error = "expected wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype";
    return std::nullopt;
  }
  auto [nText, kText] = shape.split('k');
  if (nText.getAsInteger(10, m.n) || kText.getAsInteger(10, m.k)) {
    error = "malformed shape '" + parts[4].str() + "'";
    return std::nullopt;
  }
  std::optional<uint32_t> d = wgmmaTypeName(parts[5]),
                          a = wgmmaTypeName(parts[6]),
                          b = wgmmaTypeName(parts[7]);
  if (d != kabi::WF32 || !a || !b || *a == kabi::WF32 || *b == kabi::WF32) {
    error = "the emulator models f32 accumulators with f16, bf16, e4m3 or "
            "e5m2 inputs";
    return std::nullopt;
  }
  bool fp8A = *a == kabi::WE4M3 || *a == kabi::WE5M2;
  bool fp8B = *b == kabi::WE4M3 || *b == kabi::WE5M2;
  if (fp8A != fp8B || (!fp8A && *a != *b)) {
    error = "A and B must both be f16, both bf16, or both fp8";
    return std::nullopt;
  }
  if (m.n < 8 || m.n > 256 || m.n % 8 || m.k != (fp8A ? 32u : 16u)) {
    error = "shape m64n" + std::to_string(m.n) + "k" + std::to_string(m.k) +
            " is not one of the ISA's (N 8-256 in steps of 8; K " +
            (fp8A ? "32" : "16") + " for " + parts[6].str() + ")";
    return std::nullopt;
  }
  m.typeA = *a;
  m.typeB = *b;
  return m;
}

} // namespace

LogicalResult Instrumenter::rewriteInlineAsm(LLVM::InlineAsmOp op) {
  auto refuse = [&](const std::string &why) {
    return op.emitError("the emulator cannot execute this inline PTX: ") << why;
  };
  std::string error;
  std::optional<AsmConstraints> constraints =
      parseConstraints(op.getConstraints(), error);
  if (!constraints)
    return refuse(error);
  TemplateScope scope{op, *constraints, {}, {}};
  scope.outputs.assign(constraints->outputs, Value());
  builder.setInsertionPoint(op);
  Location loc = op.getLoc();
  std::optional<std::vector<PtxStatement>> statements =
      parseInlinePtx(op.getAsmString(), error);
  if (!statements)
    return refuse(error);
  bool empty = statements->empty();
  for (const PtxStatement &s : *statements) {
    StringRef opcode = s.opcode;
    if (opcode == ".reg" && s.operands.front().name == ".pred") {
      for (const PtxOperand &p : ArrayRef(s.operands).drop_front())
        scope.predicates[p.name] = Value();
    } else if ((opcode == "setp.ne.b32" || opcode == "setp.ne.u32" ||
                opcode == "setp.ne.s32") &&
               s.operands.size() == 3 &&
               s.operands[0].kind == PtxOperand::Name &&
               scope.predicates.count(s.operands[0].name) &&
               scope.input(s.operands[1]) &&
               scope.input(s.operands[1]).getType().isInteger(32) &&
               immediate(scope, s.operands[2]) == 0) {
      scope.predicates[s.operands[0].name] =
          LLVM::ICmpOp::create(builder, loc, LLVM::ICmpPredicate::ne,
                               scope.input(s.operands[1]), i32(loc, 0));
    } else if (opcode == "wgmma.fence.sync.aligned" && s.operands.empty()) {
      call(loc, kabi::kWgmmaFence, Type(), {i32(loc, site(op))});
    } else if (opcode == "wgmma.commit_group.sync.aligned" &&
               s.operands.empty()) {
      call(loc, kabi::kWgmmaCommit, Type(), {i32(loc, site(op))});
    } else if (opcode == "wgmma.wait_group.sync.aligned" &&
               s.operands.size() == 1 && immediate(scope, s.operands[0])) {
      call(loc, kabi::kWgmmaWait, Type(),
           {i32(loc, *immediate(scope, s.operands[0])), i32(loc, site(op))});
    } else if (opcode.starts_with("wgmma.mma_async.")) {
      if (failed(rewriteInlineMma(scope, s)))
        return failure();
    } else {
      return refuse("statement '" + s.text + "' is not modeled");
    }
  }
  // The results: what the statements wrote, or (an empty template) the
  // inputs tied to the outputs.
  SmallVector<Value> results;
  for (unsigned i = 0; i < constraints->outputs; ++i) {
    Value v = empty ? scope.tiedInput(i) : scope.outputs[i];
    if (!v)
      return refuse("output $" + std::to_string(i) +
                    (empty ? " of an empty template is not tied to an input"
                           : " is not written by the template"));
    results.push_back(v);
  }
  if (Value res = op.getRes()) {
    Value replacement = results.front();
    if (auto structType = dyn_cast<LLVM::LLVMStructType>(res.getType())) {
      replacement = LLVM::PoisonOp::create(builder, loc, structType);
      for (auto [i, v] : llvm::enumerate(results))
        replacement =
            LLVM::InsertValueOp::create(builder, loc, replacement, v, i);
    }
    if (replacement.getType() != res.getType())
      return refuse("the result type does not match the outputs' values");
    res.replaceAllUsesWith(replacement);
  }
  op.erase();
  return success();
}

LogicalResult Instrumenter::rewriteInlineMma(TemplateScope &scope,
                                             const PtxStatement &s) {
  auto refuse = [&](const std::string &why) {
    return scope.op.emitError("the emulator cannot execute '")
           << s.text << "': " << why;
  };
  std::string error;
  std::optional<MmaOpcode> m = parseMmaOpcode(s.opcode, error);
  if (!m)
    return refuse(error);
  const std::vector<PtxOperand> &ops = s.operands;
  bool fp8 = m->typeA == kabi::WE4M3 || m->typeA == kabi::WE5M2;
  bool registersA = ops.size() > 1 && ops[1].kind == PtxOperand::Vector;
  size_t expected = fp8 ? 6 : registersA ? 7 : 8;
  if (ops.size() != expected)
    return refuse("expected " + std::to_string(expected) + " operands (d, " +
                  (registersA ? "{a0..a3}" : "a-desc") +
                  ", b-desc, scale-d, imm-scale-a, imm-scale-b" +
                  (fp8          ? ""
                   : registersA ? ", imm-trans-b"
                                : ", imm-trans-a, imm-trans-b") +
                  ")");
  Location loc = scope.op.getLoc();
  // d: N/2 outputs, each tied to the input holding its old value.
  SmallVector<unsigned> outputs;
  SmallVector<Value> acc;
  std::optional<int64_t> scaleImm = immediate(scope, ops[3]);
  if (ops[0].kind != PtxOperand::Vector || ops[0].elements.size() != m->n / 2)
    return refuse("d must be a vector of " + std::to_string(m->n / 2) +
                  " f32 registers");
  for (const PtxOperand &d : ops[0].elements) {
    if (!scope.isOutput(d) || llvm::is_contained(outputs, unsigned(d.value)) ||
        !scope.outputType(d.value).isF32())
      return refuse("each element of d must be a distinct f32 output");
    outputs.push_back(d.value);
    Value in = scope.tiedInput(d.value);
    if (!in && scaleImm != 0)
      return refuse("output $" + std::to_string(d.value) +
                    " accumulates but is tied to no input");
    acc.push_back(
        in ? in : LLVM::PoisonOp::create(builder, loc, builder.getF32Type()));
  }
  // A: four b32 registers, or a descriptor; B: a descriptor.
  SmallVector<Value> aRegs;
  Value descA, descB = scope.input(ops[2]);
  if (registersA) {
    for (const PtxOperand &a : ops[1].elements)
      if (Value v = scope.input(a); v && v.getType().isInteger(32))
        aRegs.push_back(v);
    if (aRegs.size() != 4)
      return refuse("A in registers must be four b32 input registers");
  } else {
    descA = scope.input(ops[1]);
    if (!descA || !descA.getType().isInteger(64))
      return refuse("a-desc must be a 64-bit input");
  }
  if (!descB || !descB.getType().isInteger(64))
    return refuse("b-desc must be a 64-bit input");
  // scale-d: a predicate the template set, an i1 input, or 0 / 1.
  Value scaleD;
  if (ops[3].kind == PtxOperand::Name)
    scaleD = scope.predicates.lookup(ops[3].name);
  else if (Value v = scope.input(ops[3]); v && v.getType().isInteger(1))
    scaleD = v;
  else if (scaleImm == 0 || scaleImm == 1)
    scaleD = LLVM::ConstantOp::create(builder, loc, builder.getI1Type(),
                                      builder.getBoolAttr(*scaleImm));
  if (!scaleD)
    return refuse("scale-d must be a predicate set in the template or 0/1");
  std::optional<int64_t> negA = immediate(scope, ops[4]),
                         negB = immediate(scope, ops[5]);
  if (!negA || !negB || (*negA != 1 && *negA != -1) ||
      (*negB != 1 && *negB != -1))
    return refuse("imm-scale-a and imm-scale-b must be 1 or -1");
  uint32_t flags =
      (*negA == -1 ? kabi::NegateA : 0) | (*negB == -1 ? kabi::NegateB : 0);
  for (size_t i = 6; i < ops.size(); ++i) {
    std::optional<int64_t> t = immediate(scope, ops[i]);
    if (t != 0 && t != 1)
      return refuse("imm-trans operands must be 0 or 1");
    bool isTransA = !registersA && i == 6;
    if (*t)
      flags |= isTransA ? kabi::TransposeA : kabi::TransposeB;
  }
  Value flagValue = LLVM::OrOp::create(
      builder, loc, i32(loc, flags),
      LLVM::SelectOp::create(builder, loc, scaleD, i32(loc, kabi::ScaleD),
                             i32(loc, 0)));

  WgmmaSite record;
  record.accumulators.assign(acc.begin(), acc.end());
  record.aRegisters = aRegs;
  SmallVector<Value> bits = emitWgmmaCall(
      scope.op, acc, aRegs, descA, descB, m->n | m->k << 16,
      m->typeA | m->typeB << 8 | kabi::WF32 << 16, flagValue, record);
  // The results as one struct, the ticket's carrier; each output an
  // element of it.
  SmallVector<Type> f32s(outputs.size(), builder.getF32Type());
  auto structType = LLVM::LLVMStructType::getLiteral(module.getContext(), f32s);
  Value result = LLVM::PoisonOp::create(builder, loc, structType);
  for (auto [i, b] : llvm::enumerate(bits))
    result = LLVM::InsertValueOp::create(
        builder, loc, result, fromI32Bits(loc, b, builder.getF32Type()), i);
  for (auto [i, out] : llvm::enumerate(outputs))
    scope.outputs[out] = LLVM::ExtractValueOp::create(
        builder, loc, result, ArrayRef<int64_t>{int64_t(i)});
  record.results = result;
  wgmmaSites.push_back(std::move(record));
  return success();
}
} // namespace kvir::emu
