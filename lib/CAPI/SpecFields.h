//===- SpecFields.h - Reading a spec's fields ------------------*- C++ -*-===//
//
// Private to lib/CAPI: the spec reader and the fields several ops' builders
// share (dtypes, attention options, RoPE, page tables, variants), so that
// Spec.cpp holds the ops' module builders only.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_CAPI_SPECFIELDS_H
#define KVIR_LIB_CAPI_SPECFIELDS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace kvir::capi::spec {
using llvm::ArrayRef;
using llvm::createStringError;
using llvm::Error;
using llvm::inconvertibleErrorCode;
using llvm::StringSet;
using llvm::Expected;
using llvm::SmallVector;
using llvm::StringRef;
using llvm::Twine;
namespace json = llvm::json;

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
    // (The first choice is the default, and may be listed again.)
    std::string expected;
    for (auto [i, c] : llvm::enumerate(choices))
      if (!llvm::is_contained(choices.take_front(i), c))
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

/// The common fields of every spec.
struct Common {
  std::string op, dtype, lseBase;
};
/// A paged cache's tables: the function arguments, the paged_view's
/// `tables(...)` clause and the paged type's table form.
struct Tables {
  std::string args, clause, form;
};

/// A spec's attention variants (docs/Frameworks.md): the function
/// arguments they add after the cache's, the op's mask clause (right after
/// its KV), its variant clauses and attributes.
struct Variants {
  std::string args, maskClause, clauses;
  SmallVector<std::string> attrs;
};

/// An attention op's heads: query heads, KV heads (the query heads unless
/// given: no GQA) and the query / key head dim.
struct Heads {
  int64_t q, kv, dim;
};
Expected<Heads> readHeads(SpecReader &r);

/// The MLIR element type of a dtype name (torch's and numpy's spellings
/// too).
std::optional<std::string> elementType(StringRef dtype);

/// Field `key`'s dtype as an MLIR element type (`fallback` when absent;
/// required without one).
Expected<std::string> readDtype(SpecReader &r, StringRef key,
                                std::optional<std::string> fallback);

/// `v` as an MLIR float attribute's literal.
std::string floatAttr(double v);

/// `memref<?x a [x b] x type>`: rows of heads (and their dim).
std::string tensorType(int64_t a, std::optional<int64_t> b, StringRef type);

/// The memref of a `layout` pool of `dim`-wide rows of `type`: K and V
/// pages together (`kv` "2x") or one of them (""). NHD and HND hold pages
/// ([pages, 2?, page, H, D], [pages, 2?, H, page, D]); Llama's split pools
/// are NHD's with its sequences as pages; OpenPPL's `ppl0`..`ppl3` hold K
/// and V of every layer over a token axis T ([T, L, 2, H, D], [L, T, 2, H,
/// D], [L, 2, T, H, D], [L, 2, H, T, D]).
std::string pagedPoolType(StringRef layout, StringRef kv, int64_t pageSize,
                          int64_t kvHeads, int64_t dim, StringRef type);

/// `func.func @kvir_main(<args>) ... {` for the C interface.
std::string entry(StringRef args);

/// The "rope" object ({"style", "theta", "scale", "rotary_dim"}: kvir's
/// RoPE, rotating pairs by position * scale * theta^(-2i / rotary_dim)) as
/// an attribute entry, or "" when absent.
Expected<std::string> readRope(SpecReader &r);

/// The attention options every attention op takes, and `extraAttrs`, as an
/// attribute dictionary (empty when none is set).
Expected<std::string> readOptions(SpecReader &r, bool causalAllowed,
                                  StringRef causalWhy, bool ropeAllowed,
                                  ArrayRef<std::string> extraAttrs = {});

/// The page tables a spec's "table" names (one of `forms`: csr,
/// block_table, OpenPPL's token_table or token_offset), of element type
/// `index`, their arguments' names ending in `suffix` (a cascade's levels).
Expected<Tables> readTables(SpecReader &r, StringRef index,
                            ArrayRef<StringRef> forms = {"csr", "block_table"},
                            StringRef suffix = "");

/// The element type of a spec's index buffers (tables, qo_indptr, a ragged
/// kv_indptr): i32, or OpenPPL's i64.
Expected<std::string> readIndexType(SpecReader &r);

/// The paged type's `table` of `t`.
std::string tableForm(const Tables &t);

/// The attention ops a spec builds variants for.
enum class AttentionKind { decode, prefill, cascade, mla };

/// The variants of an attention op of `qHeads` query heads: per-row
/// operands only where the op takes them (a prefill's custom mask and
/// positions, a decode's or an MLA decode's top-k).
Expected<Variants> readVariants(SpecReader &r, AttentionKind kind,
                                int64_t qHeads);

} // namespace kvir::capi::spec

#endif // KVIR_LIB_CAPI_SPECFIELDS_H
