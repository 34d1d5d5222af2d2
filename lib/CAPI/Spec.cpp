//===- Spec.cpp - kv modules from JSON specs ------------------------------===//
#include "kvir/CAPI/Spec.h"

#include "SpecFields.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <optional>

using namespace llvm;
using namespace kvir::capi;
using namespace kvir::capi::spec;

namespace {
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

/// The elements of a spec's cache: the activation type, fp8 codes (with
/// per-tensor k_scale / v_scale, f32 arguments after the tables) or
/// OpenPPL's int8 groups (codes, and one scale of the activation type per
/// `quant_group` dims, in scale pools of the cache's form).
struct CacheElements {
  std::string kvDtype, poolType;
  bool fp8 = false, int8 = false;
  int64_t group = 1;
};

Expected<CacheElements> readCacheElements(SpecReader &r, const Common &c,
                                          int64_t headDim, int64_t headDimV,
                                          bool paged) {
  CacheElements e;
  Expected<std::string> kvDtype =
      r.choice("kv_dtype",
               {"same", "fp8_e4m3", "fp8_e5m2", "int8", "f16", "bf16", "f32"});
  if (!kvDtype)
    return kvDtype.takeError();
  e.kvDtype = *kvDtype;
  e.fp8 = StringRef(*kvDtype).starts_with("fp8");
  e.int8 = *kvDtype == "int8";
  Expected<std::optional<int64_t>> quantGroup = r.integer("quant_group");
  if (!quantGroup)
    return quantGroup.takeError();
  if (e.int8 != quantGroup->has_value())
    return r.error("'quant_group' (the dims per int8 scale) goes with "
                   "'kv_dtype': 'int8', and only with it");
  if (!e.fp8 && !e.int8 && *kvDtype != "same" && *kvDtype != c.dtype)
    return r.error("'kv_dtype' must be 'fp8_e4m3', 'fp8_e5m2', 'int8' or "
                   "the activation dtype '" +
                   c.dtype + "', got '" + *kvDtype + "'");
  if ((e.fp8 || e.int8) && !paged)
    return r.error("'kv_dtype' " + *kvDtype + " needs a paged cache");
  if (e.int8 &&
      (**quantGroup <= 0 || headDim % **quantGroup || headDimV % **quantGroup))
    return r.error("'quant_group' must be positive and divide the head dims "
                   "(" +
                   Twine(headDim) + ", " + Twine(headDimV) + "), got " +
                   Twine(**quantGroup));
  e.group = e.int8 ? **quantGroup : 1;
  e.poolType = e.int8                   ? "i8"
               : !e.fp8                 ? c.dtype
               : *kvDtype == "fp8_e4m3" ? "f8E4M3FN"
                                        : "f8E5M2";
  return e;
}

/// A spec's KV view: the paged or ragged type, the view's op and the
/// function arguments it reads.
struct KVView {
  std::string type, view, args;
};

/// `%a: A, %b: B`, or as a clause `%a, %b : A, B`.
std::string listed(ArrayRef<std::pair<std::string, std::string>> values,
                   bool clause) {
  SmallVector<std::string> names, types, args;
  for (const auto &[name, type] : values) {
    names.push_back(name);
    types.push_back(type);
    args.push_back(name + ": " + type);
  }
  return clause ? join(names, ", ") + " : " + join(types, ", ")
                : join(args, ", ");
}

/// The "layer" of an OpenPPL layout (`layout = pplN, layer = L` in the
/// paged type), or "" for the others, which take no layer.
Expected<std::string> readLayer(SpecReader &r, StringRef layout) {
  Expected<std::optional<int64_t>> layer = r.integer("layer");
  if (!layer)
    return layer.takeError();
  if (!layout.starts_with("ppl")) {
    if (*layer)
      return r.error("'layer' applies to OpenPPL's layouts (ppl0..ppl3)");
    return std::string();
  }
  if (layer->value_or(0) < 0)
    return r.error("'layer' must be >= 0, got " + Twine(**layer));
  return formatv(", layer = {0}", layer->value_or(0)).str();
}

/// A paged cache: FlashInfer's K and V pages in one pool, or K and V
/// pools (its (k_cache, v_cache) pair; vLLM's and Llama's layouts), or
/// OpenPPL's pool of every layer, with int8 groups' scale pools of the
/// same form, and its tables.
Expected<KVView> readPagedView(SpecReader &r, const Common &c, int64_t kvHeads,
                               int64_t headDim, int64_t headDimV,
                               StringRef index, const CacheElements &e) {
  Expected<int64_t> pageSize = r.positive("page_size", std::nullopt);
  if (!pageSize)
    return pageSize.takeError();
  Expected<std::string> layout =
      r.choice("kv_layout",
               {"nhd", "hnd", "vllm", "ppl0", "ppl1", "ppl2", "ppl3", "llama"});
  if (!layout)
    return layout.takeError();
  Expected<std::string> layer = readLayer(r, *layout);
  if (!layer)
    return layer.takeError();
  Expected<std::string> storage = r.choice("kv_storage", {"combined", "split"});
  if (!storage)
    return storage.takeError();
  Expected<Tables> tables = readTables(
      r, index, {"csr", "block_table", "token_table", "token_offset"});
  if (!tables)
    return tables.takeError();
  bool split = *storage == "split", vllm = *layout == "vllm";
  if (vllm && (!split || e.int8))
    return r.error("'kv_layout' vllm is vLLM's K and V pools: "
                   "'kv_storage': 'split', and no int8 groups");
  if (!layer->empty() && split)
    return r.error("'kv_layout' " + *layout +
                   " is OpenPPL's one pool of K and V: 'kv_storage': "
                   "'combined'");
  if (*layout == "llama" && !split)
    return r.error("'kv_layout' llama is Llama's K and V pools [max_batch, "
                   "max_seq, H, D]: 'kv_storage': 'split'");
  if (headDimV != headDim && !split)
    return r.error("'head_dim_v' must equal 'head_dim' for a paged cache "
                   "of K and V pages in one pool (FlashInfer's layout; "
                   "'kv_storage': 'split' gives K and V pools of their "
                   "own widths)");
  int64_t ps = *pageSize, hk = kvHeads;
  auto poolOf = [&](StringRef kv, int64_t dim, StringRef type) {
    return pagedPoolType(*layout, kv, ps, hk, dim, type);
  };
  // vLLM's: K [pages, Hk, D / x, page, x] with x the elements of 16
  // bytes, V [pages, Hk, Dv, page].
  int64_t x = 16 / (e.fp8 ? 1 : c.dtype == "f32" ? 4 : 2);
  if (vllm && headDim % x)
    return r.error("'kv_layout' vllm splits the head dim in chunks of " +
                   Twine(x) + " elements (16 bytes); head_dim " +
                   Twine(headDim) + " is not a multiple");
  std::string quant =
      e.fp8 ? ", quant = " + e.kvDtype
      : e.int8
          ? formatv(", quant = int8_group, quant_group = {0}", e.group).str()
          : std::string();
  KVView kv;
  kv.type = formatv("!kv.paged<page_size = {0}, kv_heads = {1}, head_dim = "
                    "{2}, head_dim_v = {3}, dtype = {4}, layout = {5}, "
                    "storage = {6}, table = {7}{8}{9}>",
                    ps, hk, headDim, headDimV, c.dtype, *layout, *storage,
                    tableForm(*tables), quant, *layer);
  SmallVector<std::pair<std::string, std::string>> pools, scales;
  if (vllm) {
    pools = {{"%k_cache", formatv("memref<?x{0}x{1}x{2}x{3}x{4}>", hk,
                                  headDim / x, ps, x, e.poolType)},
             {"%v_cache", formatv("memref<?x{0}x{1}x{2}x{3}>", hk, headDimV, ps,
                                  e.poolType)}};
  } else if (split) {
    pools = {{"%k_cache", poolOf("", headDim, e.poolType)},
             {"%v_cache", poolOf("", headDimV, e.poolType)}};
    scales = {{"%k_scales", poolOf("", headDim / e.group, c.dtype)},
              {"%v_scales", poolOf("", headDimV / e.group, c.dtype)}};
  } else {
    pools = {{"%paged_kv_cache", poolOf("2x", headDim, e.poolType)}};
    scales = {{"%kv_scales", poolOf("2x", headDim / e.group, c.dtype)}};
  }
  if (!e.int8)
    scales.clear();
  kv.args = listed(pools, false);
  if (!scales.empty())
    kv.args += ", " + listed(scales, false);
  kv.args +=
      ", " + tables->args + (e.fp8 ? ", %k_scale: f32, %v_scale: f32" : "");
  kv.view = "kv.paged_view pools(" + listed(pools, true) + ") " +
            tables->clause + (e.fp8 ? " fp8_scales(%k_scale, %v_scale)" : "") +
            (scales.empty() ? "" : " scales(" + listed(scales, true) + ")") +
            " : " + kv.type;
  return kv;
}

/// Ragged K and V with their kv_indptr (`indptr`'s memref type).
KVView raggedView(const Common &c, int64_t kvHeads, int64_t headDim,
                  int64_t headDimV, StringRef indptr) {
  std::string k = tensorType(kvHeads, headDim, c.dtype);
  std::string v = tensorType(kvHeads, headDimV, c.dtype);
  KVView kv;
  kv.type = formatv("!kv.ragged<kv_heads = {0}, head_dim = {1}, head_dim_v "
                    "= {2}, dtype = {3}>",
                    kvHeads, headDim, headDimV, c.dtype);
  kv.args = "%k: " + k + ", %v: " + v + ", %kv_indptr: " + indptr.str();
  kv.view = "kv.ragged_view %k, %v, %kv_indptr : " + k + ", " + v + ", " +
            indptr.str() + " -> " + kv.type;
  return kv;
}

/// decode and prefill over a paged (FlashInfer's K and V pages in one pool)
/// or a ragged cache.
Expected<std::string> buildAttention(SpecReader &r, const Common &c) {
  Expected<Heads> heads = readHeads(r);
  if (!heads)
    return heads.takeError();
  const int64_t qHeads = heads->q, headDim = heads->dim, kvHeads = heads->kv;
  Expected<int64_t> headDimV = r.positive("head_dim_v", headDim);
  if (!headDimV)
    return headDimV.takeError();
  Expected<std::string> outDtype = readDtype(r, "out_dtype", c.dtype);
  if (!outDtype)
    return outDtype.takeError();
  Expected<std::string> kvForm = r.choice("kv", {"paged", "ragged"});
  if (!kvForm)
    return kvForm.takeError();
  bool decode = c.op == "decode", paged = *kvForm == "paged";
  if (decode && !paged)
    return r.error("'kv' must be 'paged' for a decode (its keys are a paged "
                   "cache); a ragged decode is a prefill of one row each");
  Expected<Variants> variants = readVariants(
      r, decode ? AttentionKind::decode : AttentionKind::prefill, qHeads);
  if (!variants)
    return variants.takeError();
  Expected<std::string> attrs = readOptions(
      r, !decode,
      "applies to prefills (a decode row sees every key of its request)",
      /*ropeAllowed=*/true, variants->attrs);
  if (!attrs)
    return attrs.takeError();

  std::string q = tensorType(qHeads, headDim, c.dtype);
  std::string out = tensorType(qHeads, *headDimV, *outDtype);
  std::string lse = tensorType(qHeads, std::nullopt, "f32");
  Expected<std::string> index = readIndexType(r);
  if (!index)
    return index.takeError();
  std::string i32 = "memref<?x" + *index + ">";
  std::string state = formatv("!kv.state<?x{0}x{1}x{2}, base = {3}>", qHeads,
                              *headDimV, *outDtype, c.lseBase);
  Expected<CacheElements> elements =
      readCacheElements(r, c, headDim, *headDimV, paged);
  if (!elements)
    return elements.takeError();
  Expected<KVView> kv = paged ? readPagedView(r, c, kvHeads, headDim, *headDimV,
                                              *index, *elements)
                              : raggedView(c, kvHeads, headDim, *headDimV, i32);
  if (!kv)
    return kv.takeError();
  const std::string &kvType = kv->type, &view = kv->view, &kvArgs = kv->args;
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
  Expected<Variants> variants = readVariants(r, AttentionKind::mla, *heads);
  if (!variants)
    return variants.takeError();
  // MLA caches hold already rotated kpe rows: no RoPE.
  Expected<std::string> attrs =
      readOptions(r, *rows, "needs 'rows' (several query rows per request)",
                  /*ropeAllowed=*/false, variants->attrs);
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
              (*rows ? ", %qo_indptr: memref<?xi32>" : "") + ", %ckv_cache: " +
              ckvPool + ", %kpe_cache: " + kpePool + ", " + tables->args +
              variants->args + ", %out: " + out + ", %lse: " + lse)
     << "  %kv = kv.paged_view pools(%ckv_cache, %kpe_cache : " << ckvPool
     << ", " << kpePool << ") " << tables->clause << " : " << kvType << "\n"
     << "  %s = kv.mla_decode %q_nope, %q_pe, %kv"
     << (*rows ? " rows(%qo_indptr : memref<?xi32>)" : "")
     << variants->maskClause << variants->clauses << *attrs << " : " << qn
     << ", " << qp << ", " << kvType << " -> " << state << "\n"
     << "  kv.store_state %s, %out, %lse : " << state << ", " << out << ", "
     << lse << "\n  return\n}\n";
  return text;
}

/// FlashInfer's multi-level cascade as one kv.cascade: `levels` levels of
/// one paged cache (FlashInfer's paged_kv_cache), each grouping the query
/// rows into requests by its qo_indptr and reading the pages of its own
/// tables; positions (causal on the last level, the window, RoPE, ALiBi)
/// are positions in the concatenation of a row's levels.
Expected<std::string> buildCascade(SpecReader &r, const Common &c) {
  Expected<int64_t> levels = r.positive("levels", std::nullopt);
  if (!levels)
    return levels.takeError();
  Expected<Heads> heads = readHeads(r);
  if (!heads)
    return heads.takeError();
  const int64_t qHeads = heads->q, headDim = heads->dim, kvHeads = heads->kv;
  Expected<int64_t> pageSize = r.positive("page_size", std::nullopt);
  if (!pageSize)
    return pageSize.takeError();
  Expected<std::string> layout = r.choice("kv_layout", {"nhd", "hnd"});
  if (!layout)
    return layout.takeError();
  Expected<std::string> index = readIndexType(r);
  if (!index)
    return index.takeError();
  Expected<Variants> variants = readVariants(r, AttentionKind::cascade, qHeads);
  if (!variants)
    return variants.takeError();
  Expected<std::string> attrs = readOptions(
      r, /*causalAllowed=*/true, "", /*ropeAllowed=*/true, variants->attrs);
  if (!attrs)
    return attrs.takeError();
  SmallVector<Tables> tables;
  for (int64_t l = 0; l < *levels; ++l) {
    Expected<Tables> t =
        readTables(r, *index, {"csr", "block_table"}, "_" + std::to_string(l));
    if (!t)
      return t.takeError();
    tables.push_back(*t);
  }
  if (Error e = r.checkUnused())
    return std::move(e);

  int64_t ps = *pageSize, hk = kvHeads, d = headDim;
  std::string pool = pagedPoolType(*layout, "2x", ps, hk, d, c.dtype);
  std::string kvType =
      formatv("!kv.paged<page_size = {0}, kv_heads = {1}, head_dim = {2}, "
              "head_dim_v = {2}, dtype = {3}, layout = {4}, storage = "
              "combined, table = {5}>",
              ps, hk, d, c.dtype, *layout, tables.front().form)
          .str();
  std::string q = tensorType(qHeads, d, c.dtype);
  std::string lse = tensorType(qHeads, std::nullopt, "f32");
  std::string rows = "memref<?x" + *index + ">";
  std::string state = formatv("!kv.state<?x{0}x{1}x{2}, base = {3}>", qHeads, d,
                              c.dtype, c.lseBase)
                          .str();
  SmallVector<std::string> args{"%q: " + q}, qoNames, qoTypes, kvNames, kvTypes;
  for (int64_t l = 0; l < *levels; ++l) {
    std::string name = "%qo_indptr_" + std::to_string(l);
    args.push_back(name + ": " + rows);
    qoNames.push_back(name);
    qoTypes.push_back(rows);
  }
  args.push_back("%paged_kv_cache: " + pool);
  for (const Tables &t : tables)
    args.push_back(t.args);
  std::string text;
  raw_string_ostream os(text);
  os << entry(join(args, ", ") + variants->args + ", %out: " + q +
              ", %lse: " + lse);
  for (auto [l, t] : llvm::enumerate(tables)) {
    std::string kv = "%kv" + std::to_string(l);
    os << "  " << kv << " = kv.paged_view pools(%paged_kv_cache : " << pool
       << ") " << t.clause << " : " << kvType << "\n";
    kvNames.push_back(kv);
    kvTypes.push_back(kvType);
  }
  os << "  %s = kv.cascade %q levels(" << join(qoNames, ", ") << " : "
     << join(qoTypes, ", ") << ") kvs(" << join(kvNames, ", ") << " : "
     << join(kvTypes, ", ") << ")" << variants->clauses << *attrs << " : " << q
     << " -> " << state << "\n"
     << "  kv.store_state %s, %out, %lse : " << state << ", " << q << ", "
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
               {"decode", "prefill", "mla_decode", "cascade", "merge_state",
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
  // Fixed grids for CUDA graphs: a module attribute the lowering reads.
  Expected<std::optional<int64_t>> graphMaxBatch =
      r.integer("graph_max_batch");
  if (!graphMaxBatch)
    return graphMaxBatch.takeError();
  if (*graphMaxBatch && **graphMaxBatch < 1)
    return r.error("'graph_max_batch' must be positive (the fixed grids' "
                   "most requests), got " +
                   Twine(**graphMaxBatch));
  Expected<std::string> text =
      c.op == "merge_state" || c.op == "merge_states" ? buildMerge(r, c)
      : c.op == "mla_decode"                          ? buildMla(r, c)
      : c.op == "cascade"                             ? buildCascade(r, c)
                                                      : buildAttention(r, c);
  if (!text || !*graphMaxBatch)
    return text;
  return formatv("module attributes {{kvgpu.graph_max_batch = {0} : i64} {{\n"
                 "{1}}\n",
                 **graphMaxBatch, *text)
      .str();
}
