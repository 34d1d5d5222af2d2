//===- InlinePtx.cpp - Statements and operands of inline PTX --------------===//
//
// The grammar is the part of PTX's that inline-asm templates of kernels use
// (PTX ISA 4, "Syntax"): statements end with `;`, `{` `}` open and close a
// scope, an instruction is an opcode then comma-separated operands, an
// operand a placeholder, an integer, a name or a `{}` vector of those.
//
//===----------------------------------------------------------------------===//
#include "InlinePtx.h"

#include "llvm/ADT/StringExtras.h"

using namespace kvir::emu;
using llvm::StringRef;

namespace {

/// `text` without `//` comments; `$$` stays (the caller sees a `$` with
/// no digits and refuses it, as no modeled statement has a literal `$`).
std::string stripComments(StringRef text) {
  std::string out;
  while (!text.empty()) {
    size_t comment = text.find("//");
    out += text.substr(0, comment).str();
    if (comment == StringRef::npos)
      break;
    text = text.substr(comment);
    size_t eol = text.find('\n');
    text = eol == StringRef::npos ? StringRef() : text.substr(eol);
  }
  return out;
}

/// Splits `text` at top-level commas (not inside `{}`).
std::vector<StringRef> splitTopLevel(StringRef text) {
  std::vector<StringRef> parts;
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '{')
      ++depth;
    else if (text[i] == '}')
      --depth;
    else if (text[i] == ',' && depth == 0) {
      parts.push_back(text.slice(begin, i).trim());
      begin = i + 1;
    }
  }
  StringRef last = text.substr(begin).trim();
  if (!last.empty() || !parts.empty())
    parts.push_back(last);
  return parts;
}

std::optional<PtxOperand> parseOperand(StringRef text, std::string &error) {
  PtxOperand op{PtxOperand::Immediate, 0, {}, {}};
  if (text.consume_front("{")) {
    if (!text.consume_back("}")) {
      error = "unbalanced '{' in operand '{" + text.str() + "'";
      return std::nullopt;
    }
    op.kind = PtxOperand::Vector;
    for (StringRef element : splitTopLevel(text)) {
      std::optional<PtxOperand> e = parseOperand(element, error);
      if (!e)
        return std::nullopt;
      if (e->kind == PtxOperand::Vector) {
        error = "nested vector operand '" + text.str() + "'";
        return std::nullopt;
      }
      op.elements.push_back(std::move(*e));
    }
    return op;
  }
  if (text.consume_front("$")) {
    op.kind = PtxOperand::Placeholder;
    if (text.getAsInteger(10, op.value) || op.value < 0) {
      error = "operand '$" + text.str() +
              "': only plain $N placeholders are modeled";
      return std::nullopt;
    }
    return op;
  }
  if (!text.getAsInteger(0, op.value))
    return op;
  bool isName = !text.empty() &&
                (llvm::isAlpha(text[0]) || text[0] == '_' || text[0] == '%');
  for (char c : text)
    isName &= llvm::isAlnum(c) || c == '_' || c == '%' || c == '.';
  if (!isName) {
    error = "operand '" + text.str() +
            "' is not a placeholder, an integer, a name or a vector";
    return std::nullopt;
  }
  op.kind = PtxOperand::Name;
  op.name = text.str();
  return op;
}

std::optional<PtxStatement> parseStatement(StringRef text, std::string &error) {
  PtxStatement s;
  s.text = text.str();
  if (text.starts_with("@")) {
    error = "guarded statement '" + s.text + "' (guards are not modeled)";
    return std::nullopt;
  }
  size_t space = text.find_first_of(" \t\n\r");
  s.opcode = text.substr(0, space).str();
  StringRef rest = space == StringRef::npos ? "" : text.substr(space).trim();
  if (s.opcode == ".reg") {
    // `.reg .pred p, q;`: the type is the first operand, as a name.
    size_t typeEnd = rest.find_first_of(" \t\n\r");
    PtxOperand type{PtxOperand::Name, 0, {}, {}};
    type.name = rest.substr(0, typeEnd).str();
    s.operands.push_back(type);
    rest = typeEnd == StringRef::npos ? "" : rest.substr(typeEnd).trim();
  }
  if (rest.contains('[')) {
    error = "statement '" + s.text + "' has a memory operand";
    return std::nullopt;
  }
  for (StringRef part : splitTopLevel(rest)) {
    std::optional<PtxOperand> op = parseOperand(part, error);
    if (!op)
      return std::nullopt;
    s.operands.push_back(std::move(*op));
  }
  return s;
}

} // namespace

std::optional<std::vector<PtxStatement>>
kvir::emu::parseInlinePtx(StringRef text, std::string &error) {
  std::string clean = stripComments(text);
  StringRef rest = clean;
  std::vector<PtxStatement> statements;
  int depth = 0;
  for (;;) {
    rest = rest.ltrim();
    if (rest.empty())
      break;
    if (rest.consume_front("{")) {
      ++depth;
      continue;
    }
    if (rest.consume_front("}")) {
      if (--depth < 0) {
        error = "unbalanced '}'";
        return std::nullopt;
      }
      continue;
    }
    size_t end = rest.find(';');
    if (end == StringRef::npos) {
      error = "statement '" + rest.trim().str() + "' does not end with ';'";
      return std::nullopt;
    }
    std::optional<PtxStatement> s =
        parseStatement(rest.substr(0, end).trim(), error);
    if (!s)
      return std::nullopt;
    statements.push_back(std::move(*s));
    rest = rest.substr(end + 1);
  }
  if (depth != 0) {
    error = "unbalanced '{'";
    return std::nullopt;
  }
  return statements;
}

std::optional<AsmConstraints> kvir::emu::parseConstraints(StringRef constraints,
                                                          std::string &error) {
  AsmConstraints result;
  llvm::SmallVector<StringRef> parts;
  if (!constraints.trim().empty())
    constraints.split(parts, ',');
  bool inputsStarted = false;
  for (StringRef part : parts) {
    part = part.trim();
    if (part.starts_with("~"))
      continue;
    if (part.starts_with("=")) {
      if (inputsStarted) {
        error = "output constraint '" + part.str() + "' after an input";
        return std::nullopt;
      }
      result.outputs++;
      continue;
    }
    inputsStarted = true;
    unsigned tied = 0;
    if (!part.getAsInteger(10, tied)) {
      if (tied >= result.outputs) {
        error = "input constraint '" + part.str() +
                "' ties to an output that does not exist";
        return std::nullopt;
      }
      result.tiedTo.push_back(int(tied));
    } else {
      result.tiedTo.push_back(-1);
    }
  }
  return result;
}
