//===- SpecFields.cpp - Reading a spec's fields ---------------------------===//
#include "SpecFields.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <iterator>

using namespace llvm;

namespace kvir::capi::spec {

Expected<Heads> readHeads(SpecReader &r) {
  Expected<int64_t> q = r.positive("num_qo_heads", std::nullopt);
  if (!q)
    return q.takeError();
  Expected<int64_t> dim = r.positive("head_dim", std::nullopt);
  if (!dim)
    return dim.takeError();
  Expected<int64_t> kv = r.positive("num_kv_heads", *q);
  if (!kv)
    return kv.takeError();
  return Heads{*q, *kv, *dim};
}

std::string pagedPoolType(StringRef layout, StringRef kv, int64_t pageSize,
                          int64_t kvHeads, int64_t dim, StringRef type) {
  auto shaped = [&](StringRef axes) {
    return formatv("memref<{0}x{1}x{2}>", axes, dim, type).str();
  };
  std::string h = std::to_string(kvHeads), p = std::to_string(pageSize);
  if (layout == "ppl0" || layout == "ppl1")
    return shaped("?x?x2x" + h);
  if (layout == "ppl2")
    return shaped("?x2x?x" + h);
  if (layout == "ppl3")
    return shaped("?x2x" + h + "x?");
  bool nhd = layout == "nhd" || layout == "llama";
  return shaped(("?x" + kv + (nhd ? p + "x" + h : h + "x" + p)).str());
}

/// The MLIR element type of a dtype name (torch's and numpy's spellings
/// too).
std::optional<std::string> elementType(StringRef dtype) {
  if (dtype == "f16" || dtype == "float16" || dtype == "half")
    return "f16";
  if (dtype == "bf16" || dtype == "bfloat16")
    return "bf16";
  if (dtype == "f32" || dtype == "float32" || dtype == "float")
    return "f32";
  return std::nullopt;
}

Expected<std::string> readDtype(SpecReader &r, StringRef key,
                                std::optional<std::string> fallback) {
  Expected<std::string> s = r.choice(
      key, {fallback ? StringRef(*fallback) : StringRef("f16"), "f16", "bf16",
            "f32", "float16", "bfloat16", "float32"},
      !fallback);
  if (!s)
    return s.takeError();
  return *elementType(*s);
}

std::string floatAttr(double v) { return formatv("{0:e}", v).str(); }

std::string tensorType(int64_t a, std::optional<int64_t> b, StringRef type) {
  return formatv("memref<?x{0}{1}x{2}>", a,
                 b ? formatv("x{0}", *b).str() : std::string(), type)
      .str();
}

/// `func.func @kvir_main(<args>) ... {` for the C interface.
std::string entry(StringRef args) {
  return ("func.func @kvir_main(" + args +
          ") attributes {llvm.emit_c_interface} {\n")
      .str();
}

/// The "rope" object ({"style", "theta", "scale", "rotary_dim"}: kvir's
/// RoPE, rotating pairs by position * scale * theta^(-2i / rotary_dim)) as
/// an attribute entry, or "" when absent.
Expected<std::string> readRope(SpecReader &r) {
  Expected<const json::Object *> object = r.object("rope");
  if (!object)
    return object.takeError();
  if (!*object)
    return std::string();
  SpecReader rope(**object, "rope: ");
  Expected<std::string> style =
      rope.choice("style", {"rotate_half", "interleave"});
  if (!style)
    return style.takeError();
  Expected<std::optional<double>> theta = rope.number("theta");
  if (!theta)
    return theta.takeError();
  Expected<std::optional<double>> scale = rope.number("scale");
  if (!scale)
    return scale.takeError();
  for (auto [name, v] : {std::pair{"theta", *theta}, {"scale", *scale}})
    if (v && !(*v > 0 && std::isfinite(*v)))
      return rope.error("'" + Twine(name) +
                        "' must be a positive finite number");
  Expected<std::optional<int64_t>> rotary = rope.integer("rotary_dim");
  if (!rotary)
    return rotary.takeError();
  // Llama 3.1's frequency scaling: all four fields or none.
  const char *llama31[] = {"factor", "low_freq_factor", "high_freq_factor",
                           "original_max_position"};
  SmallVector<std::string> scaling;
  for (const char *name : llama31) {
    Expected<std::optional<double>> v = rope.number(name);
    if (!v)
      return v.takeError();
    if (*v && !(**v > 0 && std::isfinite(**v)))
      return rope.error("'" + Twine(name) +
                        "' must be a positive finite number");
    if (*v)
      scaling.push_back(std::string(name) + " = " + floatAttr(**v));
  }
  if (!scaling.empty() && scaling.size() != std::size(llama31))
    return rope.error("Llama 3.1's scaling takes 'factor', "
                      "'low_freq_factor', 'high_freq_factor' and "
                      "'original_max_position' together");
  if (Error e = rope.checkUnused())
    return std::move(e);
  std::string text = "rope = #kv.rope<" + *style;
  if (*theta)
    text += ", theta = " + floatAttr(**theta);
  if (*scale)
    text += ", scale = " + floatAttr(**scale);
  if (*rotary)
    text += ", rotary_dim = " + std::to_string(**rotary);
  for (const std::string &entry : scaling)
    text += ", " + entry;
  return text + ">";
}

/// The attention options every attention op takes, as an attribute
/// dictionary (empty when none is set).
Expected<std::string> readOptions(SpecReader &r, bool causalAllowed,
                                  StringRef causalWhy, bool ropeAllowed,
                                  ArrayRef<std::string> extraAttrs) {
  Expected<bool> causal = r.boolean("causal");
  if (!causal)
    return causal.takeError();
  if (*causal && !causalAllowed)
    return r.error("'causal' " + causalWhy);
  Expected<std::optional<int64_t>> window = r.integer("window_left");
  if (!window)
    return window.takeError();
  if (*window && **window < -1)
    return r.error("'window_left' must be -1 (no window) or >= 0, got " +
                   Twine(**window));
  Expected<std::optional<double>> softCap = r.number("logits_soft_cap");
  if (!softCap)
    return softCap.takeError();
  if (*softCap && (**softCap < 0 || !std::isfinite(**softCap)))
    return r.error("'logits_soft_cap' must be >= 0 (0: none)");
  Expected<std::optional<double>> smScale = r.number("sm_scale");
  if (!smScale)
    return smScale.takeError();
  if (*smScale && !(**smScale > 0 && std::isfinite(**smScale)))
    return r.error("'sm_scale' must be a positive finite number");
  Expected<std::string> rope = ropeAllowed ? readRope(r) : std::string();
  if (!rope)
    return rope.takeError();
  SmallVector<std::string> attrs(extraAttrs);
  if (!rope->empty())
    attrs.push_back(*rope);
  if (*causal)
    attrs.push_back("causal");
  if (*window && **window >= 0)
    attrs.push_back(formatv("window_left = {0} : i64", **window));
  if (*softCap && **softCap > 0)
    attrs.push_back("logits_soft_cap = " + floatAttr(**softCap) + " : f32");
  if (*smScale)
    attrs.push_back("sm_scale = " + floatAttr(**smScale) + " : f32");
  return attrs.empty() ? std::string()
                       : " {" + llvm::join(attrs, ", ") + "}";
}

Expected<Tables> readTables(SpecReader &r, StringRef index,
                            ArrayRef<StringRef> forms, StringRef suffix) {
  Expected<std::string> table = r.choice("table", forms);
  if (!table)
    return table.takeError();
  std::string list = ("memref<?x" + index + ">").str();
  std::string s = suffix.str();
  // OpenPPL's: each request's token offsets per page (cache_mode 1) or its
  // first token (cache_mode 0, Llama's sequence rows), and kv_lens.
  if (*table == "token_table" || *table == "token_offset") {
    std::string starts =
        *table == "token_table" ? ("memref<?x?x" + index + ">").str() : list;
    return Tables{"%cachestarts" + s + ": " + starts + ", %kv_lens" + s + ": " +
                      list,
                  "tables(%cachestarts" + s + ", %kv_lens" + s + " : " +
                      starts + ", " + list + ")",
                  *table};
  }
  if (*table == "csr")
    return Tables{"%kv_indptr" + s + ": " + list + ", %kv_indices" + s + ": " +
                      list + ", %kv_last_page_len" + s + ": " + list,
                  "tables(%kv_indptr" + s + ", %kv_indices" + s +
                      ", %kv_last_page_len" + s + " : " + list + ", " + list +
                      ", " + list + ")",
                  "csr"};
  std::string blocks = ("memref<?x?x" + index + ">").str();
  return Tables{"%block_tables" + s + ": " + blocks + ", %seq_lens" + s + ": " +
                    list,
                "tables(%block_tables" + s + ", %seq_lens" + s + " : " +
                    blocks + ", " + list + ")",
                "block_table"};
}

/// The element type of a spec's index buffers (tables, qo_indptr, a ragged
/// kv_indptr): i32, or OpenPPL's i64.
Expected<std::string> readIndexType(SpecReader &r) {
  return r.choice("index_dtype", {"i32", "i64"});
}

std::string tableForm(const Tables &t) { return t.form; }

Expected<Variants> readVariants(SpecReader &r, AttentionKind kind,
                                int64_t qHeads) {
  bool prefill = kind == AttentionKind::prefill;
  Variants v;
  Expected<std::string> mask =
      r.choice("custom_mask", {"none", "bool", "packed"});
  if (!mask)
    return mask.takeError();
  if (*mask != "none") {
    if (!prefill)
      return r.error("'custom_mask' applies to prefills (a decode's or a "
                     "cascade's mask is a mask_mod)");
    std::string type = *mask == "bool" ? "memref<?xi1>" : "memref<?xi8>";
    v.args += ", %custom_mask: " + type;
    v.maskClause = " mask(%custom_mask : " + type + ")";
  }
  // A prefill's rows at positions of their own (a chunked prefill's, a
  // cascade's over concatenated levels).
  Expected<bool> positions = r.boolean("positions");
  if (!positions)
    return positions.takeError();
  if (*positions) {
    if (!prefill)
      return r.error("'positions' applies to prefills (a decode row sits "
                     "at kv_len - 1)");
    v.args += ", %positions: memref<?xi32>";
    v.maskClause += " positions(%positions : memref<?xi32>)";
  }
  // A decode's or an MLA decode's sparse selection (DeepSeek-V3.2's): per
  // row, `topk` indices into its keys.
  Expected<std::optional<int64_t>> topk = r.integer("topk");
  if (!topk)
    return topk.takeError();
  if (*topk) {
    if (kind != AttentionKind::decode && kind != AttentionKind::mla)
      return r.error("'topk' applies to decodes and MLA decodes");
    if (**topk <= 0)
      return r.error("'topk' must be positive, got " + Twine(**topk));
    std::string type = formatv("memref<?x{0}xi32>", **topk).str();
    v.args += ", %topk: " + type;
    v.maskClause += " topk(%topk : " + type + ")";
  }
  std::string perHead = formatv("memref<{0}xf32>", qHeads).str();
  Expected<bool> sinks = r.boolean("sinks");
  if (!sinks)
    return sinks.takeError();
  if (*sinks) {
    v.args += ", %sinks: " + perHead;
    v.clauses += " sinks(%sinks : " + perHead + ")";
  }
  Expected<std::string> alibi =
      r.choice("alibi", {"none", "standard", "slopes"});
  if (!alibi)
    return alibi.takeError();
  if (*alibi == "standard")
    v.attrs.push_back("alibi");
  if (*alibi == "slopes") {
    v.args += ", %alibi_slopes: " + perHead;
    v.clauses += " alibi_slopes(%alibi_slopes : " + perHead + ")";
  }
  Expected<SmallVector<std::string>> captures = r.texts("captures");
  if (!captures)
    return captures.takeError();
  for (auto [i, type] : llvm::enumerate(*captures))
    v.args += formatv(", %cap{0}: {1}", i, type).str();
  Expected<std::string> scoreMod = r.text("score_mod");
  if (!scoreMod)
    return scoreMod.takeError();
  if (!scoreMod->empty())
    v.clauses += " score_mod {\n^bb0(%score: f32, %b: index, %h: index, %p: "
                 "index, %j: index):\n" +
                 *scoreMod + "\n}";
  Expected<std::string> maskMod = r.text("mask_mod");
  if (!maskMod)
    return maskMod.takeError();
  if (!maskMod->empty())
    v.clauses += " mask_mod {\n^bb0(%b: index, %h: index, %p: index, %j: "
                 "index):\n" +
                 *maskMod + "\n}";
  return v;
}

} // namespace kvir::capi::spec
