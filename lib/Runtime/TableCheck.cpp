//===- TableCheck.cpp - Validating paged-KV page tables --------------------===//
//
// No LLVM or MLIR here: this file is the runtime library C callers link.
//
//===----------------------------------------------------------------------===//
#include "kvir/Runtime/TableCheck.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <utility>
#include <vector>

namespace {

/// Reports a violation: into `message` if given, else to stderr.
int64_t fail(char *message, int64_t size, const char *format, ...) {
  char text[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  if (message) {
    if (size > 0)
      std::snprintf(message, size_t(size), "%s", text);
  } else {
    std::fprintf(stderr, "kvir: invalid page table: %s\n", text);
  }
  return KVIR_TABLE_INVALID;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Tokens request `r` keeps in its logical page `j` of `pages`.
int64_t tokensInPage(int64_t kvLen, int64_t j, int64_t pageSize) {
  int64_t rest = kvLen - j * pageSize;
  return rest < pageSize ? rest : pageSize;
}

/// Checks a page id that holds `used` tokens; `entry` names it.
int64_t checkPage(int64_t page, int64_t used, int64_t pageSize,
                  int64_t numTokens, int64_t request, const char *entry,
                  char *message, int64_t size) {
  if (page < 0)
    return fail(message, size, "request %lld: %s = %lld is a negative page id",
                (long long)request, entry, (long long)page);
  if (numTokens >= 0 && page * pageSize + used > numTokens)
    return fail(message, size,
                "request %lld: %s = %lld names a page past the pool (%lld "
                "pages of %lld tokens)",
                (long long)request, entry, (long long)page,
                (long long)(numTokens / pageSize), (long long)pageSize);
  return 0;
}

int64_t checkIndptr(const int32_t *indptr, const char *name, int64_t batch,
                    int64_t limit, const char *limitName, char *message,
                    int64_t size) {
  if (indptr[0] < 0)
    return fail(message, size, "%s[0] = %d, expected >= 0", name, indptr[0]);
  for (int64_t r = 0; r < batch; ++r)
    if (indptr[r + 1] < indptr[r])
      return fail(message, size,
                  "request %lld: %s[%lld] = %d < %s[%lld] = %d, expected a "
                  "non-decreasing %s",
                  (long long)r, name, (long long)(r + 1), indptr[r + 1], name,
                  (long long)r, indptr[r], name);
  if (limit >= 0 && indptr[batch] > limit)
    return fail(message, size, "%s[%lld] = %d exceeds the %lld entries of %s",
                name, (long long)batch, indptr[batch], (long long)limit,
                limitName);
  return 0;
}

int64_t checkLength(const int32_t *lengths, const char *name, int64_t r,
                    char *message, int64_t size) {
  if (lengths[r] < 0)
    return fail(message, size, "request %lld: %s[%lld] = %d is negative",
                (long long)r, name, (long long)r, lengths[r]);
  return 0;
}

} // namespace

extern "C" int64_t kvir_check_csr(const int32_t *kv_indptr,
                                  const int32_t *kv_indices,
                                  int64_t num_indices,
                                  const int32_t *kv_last_page_len,
                                  int64_t batch, int64_t page_size,
                                  int64_t num_tokens, char *message,
                                  int64_t message_size) {
  if (int64_t e = checkIndptr(kv_indptr, "kv_indptr", batch, num_indices,
                              "kv_indices", message, message_size))
    return e;
  for (int64_t r = 0; r < batch; ++r) {
    int64_t pages = kv_indptr[r + 1] - kv_indptr[r];
    if (pages == 0)
      continue;
    int64_t last = kv_last_page_len[r];
    if (last < 1 || last > page_size)
      return fail(message, message_size,
                  "request %lld: kv_last_page_len[%lld] = %lld, expected 1 <= "
                  "last_page_len <= page_size (%lld) for a request with pages",
                  (long long)r, (long long)r, (long long)last,
                  (long long)page_size);
    for (int64_t j = 0; j < pages; ++j) {
      int64_t at = kv_indptr[r] + j;
      int64_t used = j + 1 == pages ? last : page_size;
      char entry[64];
      std::snprintf(entry, sizeof(entry), "kv_indices[%lld]", (long long)at);
      if (int64_t e = checkPage(kv_indices[at], used, page_size, num_tokens, r,
                                entry, message, message_size))
        return e;
    }
  }
  return 0;
}

namespace {

/// The per-request tables ([batch][max_pages] rows, kv_len in `lengths`):
/// lengths non-negative, a request's pages within its row, and each of its
/// entries checked by `entry(r, j, value, tokens in the page)`.
template <typename EntryCheck>
int64_t checkRows(const int32_t *rows, const char *rowsName, int64_t maxPages,
                  const int32_t *lengths, const char *lengthsName,
                  int64_t batch, int64_t pageSize, char *message,
                  int64_t size, EntryCheck entry) {
  for (int64_t r = 0; r < batch; ++r) {
    if (int64_t e = checkLength(lengths, lengthsName, r, message, size))
      return e;
    int64_t pages = ceilDiv(lengths[r], pageSize);
    if (pages > maxPages)
      return fail(message, size,
                  "request %lld: %s[%lld] = %d needs %lld pages, but %s rows "
                  "hold %lld",
                  (long long)r, lengthsName, (long long)r, lengths[r],
                  (long long)pages, rowsName, (long long)maxPages);
    for (int64_t j = 0; j < pages; ++j)
      if (int64_t e = entry(r, j, rows[r * maxPages + j],
                            tokensInPage(lengths[r], j, pageSize)))
        return e;
  }
  return 0;
}

} // namespace

extern "C" int64_t kvir_check_block_table(const int32_t *block_table,
                                          int64_t max_pages,
                                          const int32_t *seq_lens,
                                          int64_t batch, int64_t page_size,
                                          int64_t num_tokens, char *message,
                                          int64_t message_size) {
  return checkRows(
      block_table, "block_table", max_pages, seq_lens, "seq_lens", batch,
      page_size, message, message_size,
      [&](int64_t r, int64_t j, int64_t page, int64_t used) {
        char entry[64];
        std::snprintf(entry, sizeof(entry), "block_table[%lld][%lld]",
                      (long long)r, (long long)j);
        return checkPage(page, used, page_size, num_tokens, r, entry, message,
                         message_size);
      });
}

extern "C" int64_t kvir_check_token_table(const int32_t *cachestarts,
                                          int64_t max_pages,
                                          const int32_t *kv_lens,
                                          int64_t batch, int64_t page_size,
                                          int64_t num_tokens, char *message,
                                          int64_t message_size) {
  return checkRows(
      cachestarts, "cachestarts", max_pages, kv_lens, "kv_lens", batch,
      page_size, message, message_size,
      [&](int64_t r, int64_t j, int64_t start, int64_t used) -> int64_t {
        if (start >= 0 && (num_tokens < 0 || start + used <= num_tokens))
          return 0;
        return fail(message, message_size,
                    "request %lld: cachestarts[%lld][%lld] = %lld puts "
                    "tokens [%lld, %lld) outside the pool's %lld tokens",
                    (long long)r, (long long)r, (long long)j, (long long)start,
                    (long long)start, (long long)(start + used),
                    (long long)num_tokens);
      });
}

extern "C" int64_t kvir_check_token_offset(const int32_t *cachestarts,
                                           const int32_t *kv_lens,
                                           int64_t batch, int64_t num_tokens,
                                           char *message,
                                           int64_t message_size) {
  for (int64_t r = 0; r < batch; ++r) {
    if (int64_t e = checkLength(kv_lens, "kv_lens", r, message, message_size))
      return e;
    int64_t start = cachestarts[r], end = start + kv_lens[r];
    if (kv_lens[r] > 0 &&
        (start < 0 || (num_tokens >= 0 && end > num_tokens)))
      return fail(message, message_size,
                  "request %lld: cachestarts[%lld] = %lld puts tokens [%lld, "
                  "%lld) outside the pool's %lld tokens",
                  (long long)r, (long long)r, (long long)start,
                  (long long)start, (long long)end, (long long)num_tokens);
  }
  return 0;
}

extern "C" int64_t kvir_check_query_rows(const int32_t *qo_indptr,
                                         int64_t num_rows, int64_t batch,
                                         char *message, int64_t message_size) {
  return checkIndptr(qo_indptr, "qo_indptr", batch, num_rows, "the query rows",
                     message, message_size);
}

extern "C" int64_t kvir_check_topk(const int32_t *topk, int64_t rows,
                                   int64_t k, const int32_t *qo_indptr,
                                   const int32_t *kv_lengths, int64_t batch,
                                   char *message, int64_t message_size) {
  if (!qo_indptr && rows != batch)
    return fail(message, message_size,
                "topk has %lld rows for %lld requests of one query row each",
                (long long)rows, (long long)batch);
  if (qo_indptr)
    if (int64_t e = checkIndptr(qo_indptr, "qo_indptr", batch, rows,
                                "the topk rows", message, message_size))
      return e;
  std::vector<std::pair<int32_t, int64_t>> listed;
  for (int64_t r = 0; r < batch; ++r) {
    int64_t first = qo_indptr ? qo_indptr[r] : r;
    int64_t last = qo_indptr ? qo_indptr[r + 1] : r + 1;
    for (int64_t row = first; row < last; ++row) {
      listed.clear();
      for (int64_t i = 0; i < k; ++i) {
        int32_t key = topk[row * k + i];
        if (key == -1)
          continue;
        if (key < 0 || key >= kv_lengths[r])
          return fail(message, message_size,
                      "topk[%lld][%lld] = %d is not a key of request %lld "
                      "(kv_len %d) nor -1 (padding)",
                      (long long)row, (long long)i, key, (long long)r,
                      kv_lengths[r]);
        listed.push_back({key, i});
      }
      std::sort(listed.begin(), listed.end());
      for (size_t i = 1; i < listed.size(); ++i)
        if (listed[i].first == listed[i - 1].first)
          return fail(message, message_size,
                      "topk[%lld] lists key %d twice (entries %lld and %lld); "
                      "a row selects each key at most once",
                      (long long)row, listed[i].first,
                      (long long)listed[i - 1].second,
                      (long long)listed[i].second);
    }
  }
  return 0;
}
