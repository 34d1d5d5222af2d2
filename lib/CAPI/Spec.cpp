//===- Spec.cpp - kv modules from JSON specs ------------------------------===//
#include "kvir/CAPI/Spec.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <limits>
#include <optional>

using namespace llvm;
using namespace kvir::capi;

namespace {
/// Reads a spec's fields, remembering which were read so that a misspelt
/// one is reported instead of ignored.
class SpecReader {
public:
  explicit SpecReader(const json::Object &object, std::string prefix = "")
      : fields(object), prefix(std::move(prefix)) {}

  Error error(const Twine &message) const {
    return createStringError(inconvertibleErrorCode(),
                             "spec: " + prefix + message);
  }

  Expected<std::optional<int64_t>> integer(StringRef key) {
    used.insert(key);
    const json::Value *v = fields.get(key);
    if (!v || v->kind() == json::Value::Null)
      return std::nullopt;
    if (std::optional<int64_t> i = v->getAsInteger())
      return *i;
    return error("'" + key + "' must be an integer");
  }
  Expected<int64_t> positive(StringRef key, std::optional<int64_t> fallback) {
    Expected<std::optional<int64_t>> v = integer(key);
    if (!v)
      return v.takeError();
    if (!*v && !fallback)
      return error("'" + key + "' is required (a positive integer)");
    int64_t value = v->value_or(fallback.value_or(0));
    if (value <= 0)
      return error("'" + key + "' must be positive, got " + Twine(value));
    // Products of two fields (a strided view's row stride) stay in int64.
    if (value > std::numeric_limits<int32_t>::max())
      return error("'" + key + "' must be at most " +
                   Twine(std::numeric_limits<int32_t>::max()) + ", got " +
                   Twine(value));
    return value;
  }
  Expected<std::optional<double>> number(StringRef key) {
    used.insert(key);
    const json::Value *v = fields.get(key);
    if (!v || v->kind() == json::Value::Null)
      return std::nullopt;
    if (std::optional<double> d = v->getAsNumber())
      return *d;
    return error("'" + key + "' must be a number");
  }
  Expected<bool> boolean(StringRef key) {
    used.insert(key);
    const json::Value *v = fields.get(key);
    if (!v || v->kind() == json::Value::Null)
      return false;
    if (std::optional<bool> b = v->getAsBoolean())
      return *b;
    return error("'" + key + "' must be true or false");
  }
  /// A string field, lowercased, one of `choices` (the first when absent
  /// and `fallback` is set).
  Expected<std::string> choice(StringRef key, ArrayRef<StringRef> choices,
                               bool required = false) {
    used.insert(key);
    const json::Value *v = fields.get(key);
    std::string expected;
    for (StringRef c : choices)
      expected += (expected.empty() ? "'" : ", '") + c.str() + "'";
    if (!v || v->kind() == json::Value::Null) {
      if (required)
        return error("'" + key + "' is required (one of " + expected + ")");
      return choices.front().str();
    }
    std::optional<StringRef> s = v->getAsString();
    if (s)
      for (StringRef c : choices)
        if (s->equals_insensitive(c))
          return c.str();
    return error("'" + key + "' must be one of " + expected + ", got " +
                 (s ? "'" + s->str() + "'" : std::string("a non-string")));
  }
  /// A nested object field, or null when absent.
  Expected<const json::Object *> object(StringRef key) {
    used.insert(key);
    const json::Value *v = fields.get(key);
    if (!v || v->kind() == json::Value::Null)
      return nullptr;
    if (const json::Object *o = v->getAsObject())
      return o;
    return error("'" + key + "' must be an object");
  }
  /// A string field kept as written (MLIR text), "" when absent.
  Expected<std::string> text(StringRef key) {
    used.insert(key);
    const json::Value *v = fields.get(key);
    if (!v || v->kind() == json::Value::Null)
      return std::string();
    if (std::optional<StringRef> s = v->getAsString())
      return s->str();
    return error("'" + key + "' must be a string");
  }
  /// An array of strings, empty when absent.
  Expected<SmallVector<std::string>> texts(StringRef key) {
    used.insert(key);
    const json::Value *v = fields.get(key);
    SmallVector<std::string> out;
    if (!v || v->kind() == json::Value::Null)
      return out;
    const json::Array *array = v->getAsArray();
    for (const json::Value &e : array ? *array : json::Array()) {
      std::optional<StringRef> s = e.getAsString();
      if (!s)
        return error("'" + key + "' must be an array of strings");
      out.push_back(s->str());
    }
    if (!array)
      return error("'" + key + "' must be an array of strings");
    return out;
  }
  /// Fails on a field no read asked for.
  Error checkUnused() const {
    for (const auto &[key, value] : fields)
      if (!used.contains(key))
        return error("unknown field '" + key.str() + "'");
    return Error::success();
  }

private:
  const json::Object &fields;
  /// "rope: " for a nested object's messages.
  std::string prefix;
  StringSet<> used;
};

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

/// The common fields of every spec.
struct Common {
  std::string op, dtype, lseBase;
};

/// `func.func @kvir_main(<args>) ... {` for the C interface.
std::string entry(StringRef args) {
  return ("func.func @kvir_main(" + args +
          ") attributes {llvm.emit_c_interface} {\n")
      .str();
}

/// merge_state (two states) or merge_states (FlashInfer's [rows, states,
/// heads, dim] layout, read as kvir's partition-major state through a
/// transposed view whose row stride the kernel takes as an extent).
Expected<std::string> buildMerge(SpecReader &r, const Common &c) {
  Expected<int64_t> heads = r.positive("num_heads", std::nullopt);
  if (!heads)
    return heads.takeError();
  Expected<int64_t> dim = r.positive("head_dim", std::nullopt);
  if (!dim)
    return dim.takeError();
  if (Error e = r.checkUnused())
    return std::move(e);
  std::string v = tensorType(*heads, *dim, c.dtype);
  std::string s = tensorType(*heads, std::nullopt, "f32");
  std::string state = formatv("!kv.state<?x{0}x{1}x{2}, base = {3}>", *heads,
                              *dim, c.dtype, c.lseBase);
  std::string text;
  raw_string_ostream os(text);
  if (c.op == "merge_state") {
    os << entry("%v_a: " + v + ", %s_a: " + s + ", %v_b: " + v + ", %s_b: " +
                s + ", %v_out: " + v + ", %s_out: " + s)
       << "  %a = kv.load_state %v_a, %s_a : " << v << ", " << s << " -> "
       << state << "\n"
       << "  %b = kv.load_state %v_b, %s_b : " << v << ", " << s << " -> "
       << state << "\n"
       << "  %m = kv.merge %a, %b : " << state << ", " << state << " -> "
       << state << "\n";
  } else {
    std::string vp =
        formatv("memref<?x?x{0}x{1}x{2}>", *heads, *dim, c.dtype).str();
    std::string sp = formatv("memref<?x?x{0}xf32>", *heads).str();
    std::string vt =
        formatv("memref<?x?x{0}x{1}x{2}, strided<[{3}, ?, {1}, 1]>>", *heads,
                *dim, c.dtype, *heads * *dim)
            .str();
    std::string st =
        formatv("memref<?x?x{0}xf32, strided<[{0}, ?, 1]>>", *heads).str();
    std::string parts =
        formatv("!kv.state<?x{0}x{1}x{2}, base = {3}, partitions = ?>",
                *heads, *dim, c.dtype, c.lseBase);
    os << entry("%v: " + vp + ", %s: " + sp + ", %v_out: " + v +
                ", %s_out: " + s)
       << "  %vt = memref.transpose %v (r, p, h, d) -> (p, r, h, d) : " << vp
       << " to " << vt << "\n"
       << "  %st = memref.transpose %s (r, p, h) -> (p, r, h) : " << sp
       << " to " << st << "\n"
       << "  %p = kv.load_state %vt, %st : " << vt << ", " << st << " -> "
       << parts << "\n"
       << "  %m = kv.merge_partitions %p : " << parts << " -> " << state
       << "\n";
  }
  os << "  kv.store_state %m, %v_out, %s_out : " << state << ", " << v << ", "
     << s << "\n  return\n}\n";
  return text;
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
                                  ArrayRef<std::string> extraAttrs = {}) {
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

/// A paged cache's tables: the function arguments and the paged_view's
/// `tables(...)` clause.
struct Tables {
  std::string args, clause;
};

Expected<Tables> readTables(SpecReader &r, StringRef index) {
  Expected<std::string> table = r.choice("table", {"csr", "block_table"});
  if (!table)
    return table.takeError();
  std::string list = ("memref<?x" + index + ">").str();
  if (*table == "csr")
    return Tables{"%kv_indptr: " + list + ", %kv_indices: " + list +
                      ", %kv_last_page_len: " + list,
                  "tables(%kv_indptr, %kv_indices, %kv_last_page_len : " +
                      list + ", " + list + ", " + list + ")"};
  std::string blocks = ("memref<?x?x" + index + ">").str();
  return Tables{"%block_tables: " + blocks + ", %seq_lens: " + list,
                "tables(%block_tables, %seq_lens : " + blocks + ", " + list +
                    ")"};
}

/// The element type of a spec's index buffers (tables, qo_indptr, a ragged
/// kv_indptr): i32, or OpenPPL's i64.
Expected<std::string> readIndexType(SpecReader &r) {
  return r.choice("index_dtype", {"i32", "i64"});
}

std::string tableForm(const Tables &t) {
  return StringRef(t.args).contains("block_tables") ? "block_table" : "csr";
}

/// A spec's attention variants (docs/Frameworks.md): the function
/// arguments they add after the cache's, the op's mask clause (right after
/// its KV), its variant clauses and attributes.
struct Variants {
  std::string args, maskClause, clauses;
  SmallVector<std::string> attrs;
};

Expected<Variants> readVariants(SpecReader &r, bool prefill, int64_t qHeads) {
  Variants v;
  Expected<std::string> mask =
      r.choice("custom_mask", {"none", "bool", "packed"});
  if (!mask)
    return mask.takeError();
  if (*mask != "none") {
    if (!prefill)
      return r.error("'custom_mask' applies to prefills (a decode row's "
                     "mask is a mask_mod)");
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
  // A decode's sparse selection: per row, `topk` indices into its keys.
  Expected<std::optional<int64_t>> topk = r.integer("topk");
  if (!topk)
    return topk.takeError();
  if (*topk) {
    if (prefill)
      return r.error("'topk' applies to decodes");
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

/// decode and prefill over a paged (FlashInfer's K and V pages in one pool)
/// or a ragged cache.
Expected<std::string> buildAttention(SpecReader &r, const Common &c) {
  Expected<int64_t> qHeads = r.positive("num_qo_heads", std::nullopt);
  if (!qHeads)
    return qHeads.takeError();
  Expected<int64_t> headDim = r.positive("head_dim", std::nullopt);
  if (!headDim)
    return headDim.takeError();
  Expected<int64_t> kvHeads = r.positive("num_kv_heads", *qHeads);
  if (!kvHeads)
    return kvHeads.takeError();
  Expected<int64_t> headDimV = r.positive("head_dim_v", *headDim);
  if (!headDimV)
    return headDimV.takeError();
  Expected<std::string> outDtype = readDtype(r, "out_dtype", c.dtype);
  if (!outDtype)
    return outDtype.takeError();
  Expected<std::string> kv = r.choice("kv", {"paged", "ragged"});
  if (!kv)
    return kv.takeError();
  bool decode = c.op == "decode", paged = *kv == "paged";
  if (decode && !paged)
    return r.error("'kv' must be 'paged' for a decode (its keys are a paged "
                   "cache); a ragged decode is a prefill of one row each");
  Expected<Variants> variants = readVariants(r, !decode, *qHeads);
  if (!variants)
    return variants.takeError();
  Expected<std::string> attrs = readOptions(
      r, !decode,
      "applies to prefills (a decode row sees every key of its request)",
      /*ropeAllowed=*/true, variants->attrs);
  if (!attrs)
    return attrs.takeError();

  std::string q = tensorType(*qHeads, *headDim, c.dtype);
  std::string out = tensorType(*qHeads, *headDimV, *outDtype);
  std::string lse = tensorType(*qHeads, std::nullopt, "f32");
  Expected<std::string> index = readIndexType(r);
  if (!index)
    return index.takeError();
  std::string i32 = "memref<?x" + *index + ">";
  std::string state = formatv("!kv.state<?x{0}x{1}x{2}, base = {3}>", *qHeads,
                              *headDimV, *outDtype, c.lseBase);
  // fp8 caches (per-tensor k_scale / v_scale, f32 arguments after the
  // tables); otherwise the cache holds the activation type.
  Expected<std::string> kvDtype =
      r.choice("kv_dtype",
               {"same", "fp8_e4m3", "fp8_e5m2", "int8", "f16", "bf16", "f32"});
  if (!kvDtype)
    return kvDtype.takeError();
  bool fp8 = StringRef(*kvDtype).starts_with("fp8");
  // OpenPPL's int8 groups: codes, and one scale of the activation type per
  // `quant_group` dims, in scale pools of the cache's form.
  bool int8 = *kvDtype == "int8";
  Expected<std::optional<int64_t>> quantGroup = r.integer("quant_group");
  if (!quantGroup)
    return quantGroup.takeError();
  if (int8 != quantGroup->has_value())
    return r.error("'quant_group' (the dims per int8 scale) goes with "
                   "'kv_dtype': 'int8', and only with it");
  if (!fp8 && !int8 && *kvDtype != "same" && *kvDtype != c.dtype)
    return r.error("'kv_dtype' must be 'fp8_e4m3', 'fp8_e5m2', 'int8' or "
                   "the activation dtype '" +
                   c.dtype + "', got '" + *kvDtype + "'");
  if ((fp8 || int8) && !paged)
    return r.error("'kv_dtype' " + *kvDtype + " needs a paged cache");
  if (int8 && (**quantGroup <= 0 || *headDim % **quantGroup ||
               *headDimV % **quantGroup))
    return r.error("'quant_group' must be positive and divide the head dims "
                   "(" +
                   Twine(*headDim) + ", " + Twine(*headDimV) + "), got " +
                   Twine(**quantGroup));
  std::string poolType = int8                     ? "i8"
                         : !fp8                   ? c.dtype
                         : *kvDtype == "fp8_e4m3" ? "f8E4M3FN"
                                                  : "f8E5M2";
  std::string kvType, view, kvArgs;
  if (paged) {
    Expected<int64_t> pageSize = r.positive("page_size", std::nullopt);
    if (!pageSize)
      return pageSize.takeError();
    Expected<std::string> layout =
        r.choice("kv_layout", {"nhd", "hnd", "vllm"});
    if (!layout)
      return layout.takeError();
    // K and V pages in one pool (FlashInfer's paged_kv_cache tensor) or in
    // two (its (k_cache, v_cache) tuple; vLLM's split pools).
    Expected<std::string> storage =
        r.choice("kv_storage", {"combined", "split"});
    if (!storage)
      return storage.takeError();
    Expected<Tables> tables = readTables(r, *index);
    if (!tables)
      return tables.takeError();
    bool split = *storage == "split", vllm = *layout == "vllm";
    if (vllm && (!split || int8))
      return r.error("'kv_layout' vllm is vLLM's K and V pools: "
                     "'kv_storage': 'split', and no int8 groups");
    if (*headDimV != *headDim && !split)
      return r.error("'head_dim_v' must equal 'head_dim' for a paged cache "
                     "of K and V pages in one pool (FlashInfer's layout; "
                     "'kv_storage': 'split' gives K and V pools of their "
                     "own widths)");
    int64_t ps = *pageSize, hk = *kvHeads;
    // A pool of `dim`-wide rows of `type`: K and V pages together ("2x")
    // or one of them.
    auto poolOf = [&](StringRef kv, int64_t dim, StringRef type) {
      return (*layout == "nhd" ? formatv("memref<?x{0}{1}x{2}x{3}x{4}>", kv, ps,
                                         hk, dim, type)
                               : formatv("memref<?x{0}{1}x{2}x{3}x{4}>", kv, hk,
                                         ps, dim, type))
          .str();
    };
    // vLLM's: K [pages, Hk, D / x, page, x] with x the elements of 16
    // bytes, V [pages, Hk, Dv, page].
    int64_t x = 16 / (fp8 ? 1 : c.dtype == "f32" ? 4 : 2);
    if (vllm && *headDim % x)
      return r.error("'kv_layout' vllm splits the head dim in chunks of " +
                     Twine(x) + " elements (16 bytes); head_dim " +
                     Twine(*headDim) + " is not a multiple");
    std::string vllmK = formatv("memref<?x{0}x{1}x{2}x{3}x{4}>", hk,
                                *headDim / x, ps, x, poolType)
                            .str();
    std::string vllmV =
        formatv("memref<?x{0}x{1}x{2}x{3}>", hk, *headDimV, ps, poolType).str();
    std::string quant =
        fp8 ? ", quant = " + *kvDtype
        : int8
            ? formatv(", quant = int8_group, quant_group = {0}", **quantGroup)
                  .str()
            : std::string();
    kvType = formatv("!kv.paged<page_size = {0}, kv_heads = {1}, head_dim = "
                     "{2}, head_dim_v = {3}, dtype = {4}, layout = {5}, "
                     "storage = {6}, table = {7}{8}>",
                     ps, hk, *headDim, *headDimV, c.dtype, *layout, *storage,
                     tableForm(*tables), quant);
    // The pools (int8 codes), then with int8 the scale pools of the same
    // form, one scale of the activation type per quant_group dims.
    int64_t group = int8 ? **quantGroup : 1;
    SmallVector<std::pair<std::string, std::string>> pools, scales;
    if (vllm) {
      pools = {{"%k_cache", vllmK}, {"%v_cache", vllmV}};
    } else if (split) {
      pools = {{"%k_cache", poolOf("", *headDim, poolType)},
               {"%v_cache", poolOf("", *headDimV, poolType)}};
      scales = {{"%k_scales", poolOf("", *headDim / group, c.dtype)},
                {"%v_scales", poolOf("", *headDimV / group, c.dtype)}};
    } else {
      pools = {{"%paged_kv_cache", poolOf("2x", *headDim, poolType)}};
      scales = {{"%kv_scales", poolOf("2x", *headDim / group, c.dtype)}};
    }
    if (!int8)
      scales.clear();
    // `%a: A, %b: B`, or `%a, %b : A, B` (a clause).
    auto listed = [](ArrayRef<std::pair<std::string, std::string>> values,
                     bool clause) {
      SmallVector<std::string> names, types, args;
      for (const auto &[name, type] : values) {
        names.push_back(name);
        types.push_back(type);
        args.push_back(name + ": " + type);
      }
      return clause ? join(names, ", ") + " : " + join(types, ", ")
                    : join(args, ", ");
    };
    kvArgs = listed(pools, false);
    if (!scales.empty())
      kvArgs += ", " + listed(scales, false);
    kvArgs +=
        ", " + tables->args + (fp8 ? ", %k_scale: f32, %v_scale: f32" : "");
    view = "kv.paged_view pools(" + listed(pools, true) + ") " +
           tables->clause + (fp8 ? " fp8_scales(%k_scale, %v_scale)" : "") +
           (scales.empty() ? "" : " scales(" + listed(scales, true) + ")") +
           " : " + kvType;
  } else {
    std::string k = tensorType(*kvHeads, *headDim, c.dtype);
    std::string v = tensorType(*kvHeads, *headDimV, c.dtype);
    kvType = formatv("!kv.ragged<kv_heads = {0}, head_dim = {1}, head_dim_v "
                     "= {2}, dtype = {3}>",
                     *kvHeads, *headDim, *headDimV, c.dtype);
    kvArgs = "%k: " + k + ", %v: " + v + ", %kv_indptr: " + i32;
    view = "kv.ragged_view %k, %v, %kv_indptr : " + k + ", " + v + ", " + i32 +
           " -> " + kvType;
  }
  if (Error e = r.checkUnused())
    return std::move(e);

  std::string text;
  raw_string_ostream os(text);
  os << entry("%q: " + q + (decode ? "" : ", %qo_indptr: " + i32) + ", " +
              kvArgs + variants->args + ", %out: " + out + ", %lse: " + lse)
     << "  %kv = " << view << "\n";
  if (decode)
    os << "  %s = kv.decode %q, %kv" << variants->maskClause
       << variants->clauses << *attrs << " : " << q << ", " << kvType << " -> "
       << state << "\n";
  else
    os << "  %s = kv.prefill %q, %qo_indptr, %kv" << variants->maskClause
       << variants->clauses << *attrs << " : " << q << ", " << i32 << ", "
       << kvType << " -> " << state << "\n";
  os << "  kv.store_state %s, %out, %lse : " << state << ", " << out << ", "
     << lse << "\n  return\n}\n";
  return text;
}

/// MLA decode over a latent cache (FlashInfer's ckv and kpe pools), one
/// row per request or, with "rows", several (qo_indptr).
Expected<std::string> buildMla(SpecReader &r, const Common &c) {
  Expected<int64_t> heads = r.positive("num_heads", std::nullopt);
  if (!heads)
    return heads.takeError();
  Expected<int64_t> ckv = r.positive("head_dim_ckv", std::nullopt);
  if (!ckv)
    return ckv.takeError();
  Expected<int64_t> kpe = r.positive("head_dim_kpe", std::nullopt);
  if (!kpe)
    return kpe.takeError();
  Expected<int64_t> pageSize = r.positive("page_size", std::nullopt);
  if (!pageSize)
    return pageSize.takeError();
  Expected<std::string> outDtype = readDtype(r, "out_dtype", c.dtype);
  if (!outDtype)
    return outDtype.takeError();
  Expected<bool> rows = r.boolean("rows");
  if (!rows)
    return rows.takeError();
  // MLA caches hold already rotated kpe rows: no RoPE.
  Expected<std::string> attrs = readOptions(
      r, *rows, "needs 'rows' (several query rows per request)",
      /*ropeAllowed=*/false);
  if (!attrs)
    return attrs.takeError();
  Expected<std::string> index = readIndexType(r);
  if (!index)
    return index.takeError();
  Expected<Tables> tables = readTables(r, *index);
  if (!tables)
    return tables.takeError();
  if (Error e = r.checkUnused())
    return std::move(e);

  std::string qn = tensorType(*heads, *ckv, c.dtype);
  std::string qp = tensorType(*heads, *kpe, c.dtype);
  std::string out = tensorType(*heads, *ckv, *outDtype);
  std::string lse = tensorType(*heads, std::nullopt, "f32");
  std::string ckvPool =
      formatv("memref<?x{0}x{1}x{2}>", *pageSize, *ckv, c.dtype).str();
  std::string kpePool =
      formatv("memref<?x{0}x{1}x{2}>", *pageSize, *kpe, c.dtype).str();
  std::string state = formatv("!kv.state<?x{0}x{1}x{2}, base = {3}>", *heads,
                              *ckv, *outDtype, c.lseBase);
  std::string kvType =
      formatv("!kv.paged<page_size = {0}, kv_heads = 1, head_dim = {1}, "
              "head_dim_v = {1}, dtype = {2}, layout = nhd, storage = mla, "
              "table = {3}, pe_dim = {4}>",
              *pageSize, *ckv, c.dtype, tableForm(*tables), *kpe);
  std::string text;
  raw_string_ostream os(text);
  os << entry("%q_nope: " + qn + ", %q_pe: " + qp +
              (*rows ? ", %qo_indptr: memref<?xi32>" : "") +
              ", %ckv_cache: " + ckvPool + ", %kpe_cache: " + kpePool + ", " +
              tables->args + ", %out: " + out + ", %lse: " + lse)
     << "  %kv = kv.paged_view pools(%ckv_cache, %kpe_cache : " << ckvPool
     << ", " << kpePool << ") " << tables->clause << " : " << kvType << "\n"
     << "  %s = kv.mla_decode %q_nope, %q_pe, %kv"
     << (*rows ? " rows(%qo_indptr : memref<?xi32>)" : "") << *attrs << " : "
     << qn << ", " << qp << ", " << kvType << " -> " << state << "\n"
     << "  kv.store_state %s, %out, %lse : " << state << ", " << out << ", "
     << lse << "\n  return\n}\n";
  return text;
}
} // namespace

Expected<std::string> kvir::capi::buildSpecModule(StringRef specJson) {
  Expected<json::Value> parsed = json::parse(specJson);
  if (!parsed)
    return createStringError(inconvertibleErrorCode(),
                             "spec: not JSON: " + toString(parsed.takeError()));
  const json::Object *object = parsed->getAsObject();
  if (!object)
    return createStringError(inconvertibleErrorCode(),
                             "spec: expected a JSON object");
  SpecReader r(*object);
  Common c;
  Expected<std::string> op =
      r.choice("op",
               {"decode", "prefill", "mla_decode", "merge_state",
                "merge_states"},
               true);
  if (!op)
    return op.takeError();
  c.op = *op;
  Expected<std::string> dtype = readDtype(r, "dtype", std::nullopt);
  if (!dtype)
    return dtype.takeError();
  c.dtype = *dtype;
  Expected<std::string> lseBase = r.choice("lse_base", {"2", "e"});
  if (!lseBase)
    return lseBase.takeError();
  c.lseBase = *lseBase;
  if (c.op == "merge_state" || c.op == "merge_states")
    return buildMerge(r, c);
  if (c.op == "mla_decode")
    return buildMla(r, c);
  return buildAttention(r, c);
}
