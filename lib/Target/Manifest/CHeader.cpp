//===- CHeader.cpp - The C header of a module's kernels -------------------===//
//
// kvir-translate's C header: the PTX as a string, each plan's size
// functions, its page-table validation and work schedule on the host, and
// its typed launcher (Launcher.cpp).
//
//===----------------------------------------------------------------------===//
#include "kvir/Target/Manifest/Manifest.h"
#include "Launcher.h"
#include "ManifestParts.h"
#include "kvir/Dialect/KV/IR/PoolLayout.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace kvir;
using namespace kvir::kvgpu;
using kvir::manifest::kernelsWhen;
using kvir::manifest::workspaceBytes;

static std::string cIdentifier(StringRef s) {
  std::string id;
  for (char c : s)
    id += llvm::isAlnum(c) ? c : '_';
  return id;
}

static std::string cString(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n')
      out += "\\n\"\n\"";
    else if (c == '"' || c == '\\')
      out += std::string("\\") + c;
    else if (c == '\t')
      out += "\\t";
    else
      out += c;
  }
  return out + "\"";
}

namespace {
/// C functions over a plan's sizes: each computed size and the workspace
/// bytes, taking the argument dims they read as int64_t parameters.
struct SizeFunctions {
  LaunchPlanAttr plan;

  /// The argument-dim sizes `expr` reads, directly or through computed
  /// sizes, in plan order; `computed` gets the computed sizes it needs.
  void inputsOf(SizeExprAttr expr, llvm::SetVector<StringRef> &inputs,
                llvm::SetVector<StringRef> &computed) const {
    expr.walkSymbols([&](StringRef s) {
      SizeDefAttr def = plan.lookupSize(s);
      if (!def || !def.getArg().empty()) {
        inputs.insert(s);
        return;
      }
      inputsOf(def.getValue(), inputs, computed);
      computed.insert(s);
    });
  }

  /// `static inline <ret> <name>(int64_t a, ...) { ... return <result>; }`.
  std::string function(StringRef ret, StringRef name,
                       ArrayRef<SizeExprAttr> results,
                       function_ref<std::string(ArrayRef<std::string>)>
                           body) const {
    llvm::SetVector<StringRef> inputs, computed;
    for (SizeExprAttr r : results)
      inputsOf(r, inputs, computed);
    // Parameters in plan order.
    SmallVector<StringRef> params;
    for (SizeDefAttr def : plan.getSizes())
      if (inputs.contains(def.getName()))
        params.push_back(def.getName());
    for (StringRef in : inputs)
      if (!llvm::is_contained(params, in))
        params.push_back(in);
    std::string s;
    llvm::raw_string_ostream os(s);
    os << "static inline " << ret << " " << name << "(";
    if (params.empty())
      os << "void";
    llvm::interleaveComma(params, os,
                          [&](StringRef p) { os << "int64_t " << p; });
    os << ") {\n";
    for (SizeDefAttr def : plan.getSizes())
      if (computed.contains(def.getName()))
        os << "  const int64_t " << def.getName() << " = "
           << def.getValue().toC(nullptr, "kvir_") << ";\n";
    SmallVector<std::string> texts;
    for (SizeExprAttr r : results)
      texts.push_back(r.toC(nullptr, "kvir_"));
    os << body(texts) << "}\n";
    return s;
  }
};
} // namespace

/// `<pid>_validate(<tables>, batch, <sizes>, message, message_size)`: the
/// runtime's check of the plan's page tables (kvir_check_<form> of
/// libKVIRRuntime), or "" for a plan without paged tables.
static std::string validateFunction(LaunchPlanAttr plan, StringRef pid) {
  PagedTablesAttr tables = plan.getTables();
  if (!tables)
    return "";
  kvir::kv::TableForm form = *kvir::kv::symbolizeTableForm(tables.getTable());
  ArrayRef<StringRef> names = kvir::kv::getTableNames(form);
  // The sizes the check needs besides the tables: the form's, and what the
  // pool's capacity reads.
  SmallVector<std::string> sizes{"batch"};
  if (form == kvir::kv::TableForm::csr)
    sizes.push_back("num_page_ids");
  else if (form != kvir::kv::TableForm::token_offset)
    sizes.push_back("max_pages");
  std::string capacity = "-1";
  if (SizeExprAttr tokens = tables.getPoolTokens()) {
    capacity = tokens.toC(nullptr, "kvir_");
    tokens.walkSymbols([&](StringRef s) {
      if (!llvm::is_contained(sizes, s.str()))
        sizes.push_back(s.str());
    });
  }
  std::string check = "kvir_check_" + tables.getTable().str();
  static const char *prototypes[] = {
      "kvir_check_csr(const int32_t *kv_indptr, const int32_t *kv_indices,\n"
      "    int64_t num_indices, const int32_t *kv_last_page_len, int64_t batch,\n"
      "    int64_t page_size, int64_t num_tokens, char *message,\n"
      "    int64_t message_size);",
      "kvir_check_block_table(const int32_t *block_table, int64_t max_pages,\n"
      "    const int32_t *seq_lens, int64_t batch, int64_t page_size,\n"
      "    int64_t num_tokens, char *message, int64_t message_size);",
      "kvir_check_token_table(const int32_t *cachestarts, int64_t max_pages,\n"
      "    const int32_t *kv_lens, int64_t batch, int64_t page_size,\n"
      "    int64_t num_tokens, char *message, int64_t message_size);",
      "kvir_check_token_offset(const int32_t *cachestarts,\n"
      "    const int32_t *kv_lens, int64_t batch, int64_t num_tokens,\n"
      "    char *message, int64_t message_size);"};
  // OpenPPL's int64 tables reach the runtime's int32 check as copies whose
  // entries saturate at the int32 range (no pool holds 2^31 tokens, so an
  // entry out of it is still reported out of bounds).
  SmallVector<bool> wide;
  for (StringRef n : names) {
    PlanArgAttr arg = plan.lookupArg(n);
    wide.push_back(arg && cast<MemRefType>(arg.getType())
                              .getElementType()
                              .isSignlessInteger(64));
  }
  // Entries of each table, for the copies.
  SmallVector<std::string> counts;
  switch (form) {
  case kvir::kv::TableForm::csr:
    counts = {"batch + 1", "num_page_ids", "batch"};
    break;
  case kvir::kv::TableForm::block_table:
  case kvir::kv::TableForm::token_table:
    counts = {"batch * max_pages", "batch"};
    break;
  case kvir::kv::TableForm::token_offset:
    counts = {"batch", "batch"};
    break;
  }
  bool anyWide = llvm::is_contained(wide, true);
  std::string text;
  llvm::raw_string_ostream os(text);
  if (anyWide)
    os << "#ifndef KVIR_NARROW_I32\n#define KVIR_NARROW_I32\n"
       << "#include <stdlib.h>\n"
       << "/* An int32 copy of n int64 table entries, saturating (NULL when "
          "out of memory). */\n"
       << "static inline int32_t *kvir_narrow_i32(const int64_t *v, int64_t "
          "n) {\n"
       << "  int32_t *c = (int32_t *)malloc((size_t)(n > 0 ? n : 1) * "
          "sizeof(int32_t));\n"
       << "  for (int64_t i = 0; c && i < n; ++i)\n"
       << "    c[i] = v[i] < INT32_MIN ? INT32_MIN : v[i] > INT32_MAX ? "
          "INT32_MAX : (int32_t)v[i];\n"
       << "  return c;\n}\n#endif\n";
  os << "/* The check of this plan's " << tables.getTable()
     << " page tables (kvir_check_" << tables.getTable()
     << " of\n   libKVIRRuntime): 0 when every entry is inside the pool and "
        "consistent,\n   else -1 with a message naming the request and the "
        "entry (printed to\n   stderr when message is NULL). */\n"
     << "#ifdef __cplusplus\nextern \"C\"\n#endif\nint64_t "
     << prototypes[int(form)] << "\n";
  os << "static inline int64_t " << pid << "_validate(";
  for (auto [n, w] : llvm::zip(names, wide))
    os << (w ? "const int64_t *" : "const int32_t *") << n << (w ? "64" : "")
       << ", ";
  for (const std::string &s : sizes)
    os << "int64_t " << s << ", ";
  os << "char *message, int64_t message_size) {\n";
  for (auto [n, w, count] : llvm::zip(names, wide, counts))
    if (w)
      os << "  int32_t *" << n << " = kvir_narrow_i32(" << n << "64, "
         << count << ");\n";
  if (anyWide) {
    os << "  int64_t result = -1;\n  if (";
    bool first = true;
    for (auto [n, w] : llvm::zip(names, wide))
      if (w) {
        os << (first ? "" : " && ") << n;
        first = false;
      }
    os << ")\n    result = ";
  } else {
    os << "  return ";
  }
  os << check << "(";
  switch (form) {
  case kvir::kv::TableForm::csr:
    os << "kv_indptr, kv_indices, num_page_ids, kv_last_page_len, batch, "
       << tables.getPageSize() << ", " << capacity;
    break;
  case kvir::kv::TableForm::block_table:
    os << "block_table, max_pages, seq_lens, batch, " << tables.getPageSize()
       << ", " << capacity;
    break;
  case kvir::kv::TableForm::token_table:
    os << "cachestarts, max_pages, kv_lens, batch, " << tables.getPageSize()
       << ", " << capacity;
    break;
  case kvir::kv::TableForm::token_offset:
    os << "cachestarts, kv_lens, batch, " << capacity;
    break;
  }
  os << ",\n      message, message_size);\n";
  if (anyWide) {
    for (auto [n, w] : llvm::zip(names, wide))
      if (w)
        os << "  free(" << n << ");\n";
    os << "  return result;\n";
  }
  os << "}\n";
  return text;
}

/// Whether `plan`'s work schedule runs from the batch size alone: its
/// plan-free chunk count reads only the batch, and a fixed grid's max_batch
/// (set in `maxBatch`) is a constant of the plan. Only then does the header
/// have `<pid>_schedule` (and a typed launcher).
static bool scheduleReadsBatchOnly(LaunchPlanAttr plan,
                                   std::optional<int64_t> &maxBatch) {
  WorkScheduleAttr s = plan.getSchedule();
  if (s.isPrefill())
    return true; // the lengths and the plan's constants

  SizeDefAttr uniform = plan.lookupSize(s.getUniformChunks());
  bool batchOnly = uniform && uniform.getArg().empty();
  if (batchOnly)
    uniform.getValue().walkSymbols([&](StringRef sym) {
      SizeDefAttr def = plan.lookupSize(sym);
      batchOnly &= sym == s.getBatch() && def && !def.getArg().empty();
    });
  if (!s.getMaxBatch().empty()) {
    SizeDefAttr def = plan.lookupSize(s.getMaxBatch());
    if (def && def.getArg().empty() && def.getValue().isConstant())
      maxBatch = def.getValue().getValue();
    else
      batchOnly = false;
  }
  return batchOnly;
}

/// `<pid>_schedule(qo_indptr, kv_lengths, batch, num_rows, work_items,
/// max_items, merge_indptr, num_query_tiles[, workspace limit])`: a prefill's work
/// schedule.
static std::string prefillScheduleFunction(WorkScheduleAttr s, StringRef pid) {
  std::string text;
  llvm::raw_string_ostream os(text);
  StringRef limit = s.getWorkspaceLimit();
  os << "/* The split-KV work list of this plan (kvir_schedule_prefill_work of\n"
        "   libKVIRRuntime): fills " << s.getItems()
     << " ([max_items][5] int32, device\n   buffer) and "
     << s.getMergeIndptr()
     << " ([num_rows + 1] int32: the rows of the buffers,\n   at least qo_indptr[batch]) from the requests' query row offsets and\n   "
        "kv_len on the host; returns " << s.getCount()
     << ", the split kernels' grid.x,\n   and sets *" << s.getTiles()
     << " (query tiles of " << s.getTileRows()
     << " rows): the split kernels\n   launch when the count exceeds it, "
        "on the workspace of merge_indptr[nnz]\n   partial-state rows ("
     << pid << "_workspace_bytes)";
  if (!limit.empty())
    os << ", at most " << limit
       << " (the\n   workspace's fixed rows)";
  os << ". */\n"
     << "#ifdef __cplusplus\nextern \"C\"\n#endif\n"
        "int64_t kvir_schedule_prefill_work(const int32_t *qo_indptr,\n"
        "    const int32_t *kv_lengths, int64_t batch, int64_t num_rows,\n"
        "    int64_t tile_rows,"
        "    int64_t causal, int64_t window_left, int64_t slots,\n"
        "    int64_t granule, int64_t min_chunk, int64_t max_items,\n"
        "    int64_t max_partial_rows, int32_t *items, int32_t *merge_indptr,\n"
        "    int64_t *num_tiles);\n"
     << "static inline int64_t " << pid
     << "_schedule(const int32_t *qo_indptr,\n    const int32_t *kv_lengths, "
        "int64_t " << s.getBatch()
     << ", int64_t num_rows,\n    int32_t *work_items, int64_t max_items, "
        "int32_t *merge_indptr,\n    int64_t *" << s.getTiles();
  if (!limit.empty())
    os << ",\n    int64_t " << limit;
  os << ") {\n"
     << "  return kvir_schedule_prefill_work(qo_indptr, kv_lengths, "
     << s.getBatch() << ", num_rows, " << s.getTileRows() << ", "
     << (s.getCausal() ? 1 : 0) << ", " << s.getWindowLeft() << ",\n      "
     << s.getTargetItems() << ", " << s.getGranule() << ", "
     << s.getMinChunk() << ", max_items, " << (limit.empty() ? "-1" : limit)
     << ", work_items,\n      merge_indptr, " << s.getTiles() << ");\n}\n";
  return text;
}

/// `<pid>_schedule(kv_lengths, batch, work_items, max_items, merge_indptr)`:
/// the plan's work schedule with its parameters, or a comment when its
/// plan-free chunk count reads more than the batch size.
static std::string scheduleFunction(LaunchPlanAttr plan, StringRef pid) {
  WorkScheduleAttr s = plan.getSchedule();
  std::optional<int64_t> maxBatch;
  bool batchOnly = scheduleReadsBatchOnly(plan, maxBatch);
  if (s.isPrefill())
    return prefillScheduleFunction(s, pid);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "/* The split-KV work list of this plan (kvir_schedule_work of\n"
        "   libKVIRRuntime): fills " << s.getItems() << " ([max_items][4] int32,\n"
        "   device buffer) and " << s.getMergeIndptr()
     << " ([batch + 1] int32) from the\n   requests' kv_len on the host;"
        " returns " << s.getCount() << ", the split kernels' grid.x;\n"
        "   they launch when it exceeds batch. Pass kv_lengths NULL without\n"
        "   lengths (every request cut alike). */\n";
  if (!batchOnly) {
    os << "/* (no " << pid << "_schedule: its chunk count or max_batch reads "
       << "more than " << s.getBatch() << ") */\n";
    return text;
  }
  os << "#ifdef __cplusplus\nextern \"C\"\n#endif\n"
        "int64_t kvir_schedule_work(const int32_t *kv_lengths, int64_t batch,\n"
        "                           int64_t window_left, int64_t target_items,\n"
        "                           int64_t granule, int64_t min_chunk,\n"
        "                           int64_t uniform_chunks, int64_t max_items,\n"
        "                           int32_t *items, int32_t *merge_indptr);\n"
     << (maxBatch ? "#ifdef __cplusplus\nextern \"C\"\n#endif\n"
                    "int64_t kvir_schedule_pad_batch(int64_t batch, int64_t "
                    "max_batch,\n                                int32_t "
                    "*merge_indptr);\n"
                  : "")
     << "static inline int64_t " << pid
     << "_schedule(const int32_t *kv_lengths, int64_t " << s.getBatch()
     << ",\n    int32_t *work_items, int64_t max_items, int32_t *merge_indptr) {\n"
     << "  int64_t count = kvir_schedule_work(kv_lengths, " << s.getBatch()
     << ", " << s.getWindowLeft() << ", " << s.getTargetItems() << ", "
     << s.getGranule() << ", " << s.getMinChunk() << ", " << pid << "_"
     << s.getUniformChunks() << "(" << s.getBatch()
     << "), max_items,\n                            work_items, merge_indptr);\n";
  if (maxBatch)
    os << "  /* A fixed grid for " << *maxBatch
       << " requests: merge_indptr holds " << *maxBatch + 1
       << " entries. */\n  if (count >= 0 && kvir_schedule_pad_batch("
       << s.getBatch() << ", " << *maxBatch << ", merge_indptr) < 0)\n"
       << "    return -1;\n";
  os << "  return count;\n}\n";
  return text;
}

std::string manifest::cHeader(StringRef binary, StringRef ptx, StringRef chip,
                              ArrayRef<LaunchPlanAttr> plans) {
  std::string id = cIdentifier(binary);
  std::string header;
  llvm::raw_string_ostream h(header);
  h << "/* Generated by kvir-translate: PTX for " << chip
    << ", and how to launch its kernels. */\n#ifndef KVIR_" << id
    << "_H\n#define KVIR_" << id
    << "_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
    << "/* Kernel parameters: each buffer a bare device pointer (16-byte\n"
    << "   aligned), each size an int64, in the manifest's order; then the\n"
    << "   buffers' dynamic extents (sizes, strides, offset) as int64.\n"
    << "   A kernel launches when its plan's condition holds:\n"
    << "   always, or by the partition count (unsplit: 1, split: more). */\n"
    << "#ifndef KVIR_LAUNCH_TYPES\n#define KVIR_LAUNCH_TYPES\n"
    << "typedef enum { KVIR_ALWAYS = 0, KVIR_UNSPLIT = 1, KVIR_SPLIT = 2 } "
       "kvir_launch_when_t;\n"
    << "typedef struct {\n  const char *name;\n  const char *role;\n"
    << "  kvir_launch_when_t when;\n  uint32_t block[3];\n"
    << "  uint32_t static_shared_bytes;\n  uint32_t dynamic_shared_bytes;\n"
    << "  uint32_t num_params;\n} kvir_kernel_t;\n"
    << "static inline int64_t kvir_min(int64_t a, int64_t b) "
       "{ return a < b ? a : b; }\n"
    << "static inline int64_t kvir_max(int64_t a, int64_t b) "
       "{ return a > b ? a : b; }\n"
    << "static inline int64_t kvir_floordiv(int64_t a, int64_t b) "
       "{ return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }\n"
    << "static inline int64_t kvir_ceildiv(int64_t a, int64_t b) "
       "{ return a / b + ((a % b != 0) && ((a < 0) == (b < 0))); }\n"
    << "#endif\n\n" << cudaDriverTable();
  h << "static const char kvir_" << id << "_ptx[] =\n"
    << cString(ptx) << ";\n\n";

  for (auto [index, plan] : llvm::enumerate(plans)) {
    std::string pid = "kvir_" + id + "_plan" + std::to_string(index);
    SizeFunctions sizes{plan};
    h << "/* Plan " << index << ": " << plan.getOp() << " '" << plan.getName()
      << "' */\nstatic const char " << pid << "_name[] = \""
      << plan.getName() << "\";\n";
    h << "static const kvir_kernel_t " << pid << "_kernels["
      << plan.getKernels().size() << "] = {\n";
    for (KernelLaunchAttr k : plan.getKernels()) {
      size_t params = getKernelParams(plan, k).size();
      static const char *when[] = {"KVIR_ALWAYS", "KVIR_UNSPLIT", "KVIR_SPLIT"};
      h << "  {\"" << k.getKernel().getLeafReference().getValue() << "\", \""
        << k.getRole() << "\", " << when[int(k.getWhen())] << ", {"
        << k.getBlock()[0] << ", " << k.getBlock()[1] << ", "
        << k.getBlock()[2] << "}, " << k.getStaticSharedBytes() << ", "
        << k.getDynamicSharedBytes() << ", " << params << "}, /* grid (";
      llvm::interleaveComma(k.getGrid(), h,
                            [&](SizeExprAttr d) { h << d.str(); });
      h << ") */\n";
    }
    h << "};\n";
    for (SizeDefAttr def : plan.getSizes()) {
      if (!def.getArg().empty())
        continue;
      h << sizes.function("int64_t", pid + "_" + def.getName().str(),
                          {def.getValue()}, [](ArrayRef<std::string> r) {
                            return "  return " + r[0] + ";\n";
                          });
    }
    h << validateFunction(plan, pid);
    // Workspace bytes: by the partition count when the plan has one; under
    // a work schedule, what the split kernels need (the schedule decides
    // after the caller allocates, and a fixed-grid caller always splits).
    if (plan.getSchedule()) {
      h << sizes.function(
          "size_t", pid + "_workspace_bytes",
          {workspaceBytes(plan, kernelsWhen(plan, LaunchCondition::split))},
          [](ArrayRef<std::string> r) {
            return "  return (size_t)(" + r[0] + ");\n";
          });
      h << scheduleFunction(plan, pid);
    } else if (plan.getPartitions().empty()) {
      h << sizes.function("size_t", pid + "_workspace_bytes",
                          {workspaceBytes(plan, plan.getKernels())},
                          [](ArrayRef<std::string> r) {
                            return "  return (size_t)(" + r[0] + ");\n";
                          });
    } else {
      SizeExprAttr parts = SizeExprAttr::symbolRef(plan.getContext(),
                                                   plan.getPartitions());
      h << sizes.function(
          "size_t", pid + "_workspace_bytes",
          {parts, workspaceBytes(plan, kernelsWhen(plan, LaunchCondition::split)),
           workspaceBytes(plan, kernelsWhen(plan, LaunchCondition::unsplit))},
          [](ArrayRef<std::string> r) {
            return "  return (size_t)(" + r[0] + " > 1 ? " + r[1] + " : " +
                   r[2] + ");\n";
          });
    }
    StringRef op = plan.getOp();
    op.consume_front("kv.");
    std::string launcher =
        "kvir_" + id + "_" + cIdentifier(op) + std::to_string(index);
    std::optional<int64_t> maxBatch;
    bool hasSchedule =
        plan.getSchedule() && scheduleReadsBatchOnly(plan, maxBatch);
    h << typedLauncher(plan, launcher, pid, "kvir_" + id + "_ptx", chip,
                       hasSchedule)
      << "\n";
  }
  h << "#endif\n";
  return header;
}

