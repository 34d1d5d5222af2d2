/*===- TableCheck.h - Validating paged-KV page tables -------------*- C -*-===*
 *
 * Checks a batch's page tables against the cache they index before kernels
 * or loops read them, so that a bad table is reported -- naming the request
 * and the entry -- instead of being read out of bounds. One function per
 * table form of !kv.paged (docs/Semantics.md, "Paged KV"), one for the
 * query rows of a prefill, and one for a sparse selection's key lists.
 * Plain C ABI, no LLVM: engines link libKVIRRuntime and call these on the
 * host; kvir's `kv-validate-tables` pass emits the same calls into host
 * code.
 *
 * Every function returns 0 when the tables are valid, else
 * KVIR_TABLE_INVALID; then, with `message` non-null, it writes a
 * NUL-terminated description (truncated to `message_size` bytes), and with
 * `message` null it prints the description to stderr. `num_tokens` is the
 * pool's capacity in tokens (pages x page_size for pools with a page axis,
 * the token axis for OpenPPL's layouts), or -1 when it is not known (then
 * entries are checked against nothing but 0). Tables are dense int32
 * arrays; `block_table` and `cachestarts` of the per-request forms are
 * [batch][max_pages], row-major.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KVIR_RUNTIME_TABLECHECK_H
#define KVIR_RUNTIME_TABLECHECK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { KVIR_TABLE_INVALID = -1 };

/* csr: kv_indptr[batch + 1] monotone from >= 0 to at most num_indices;
 * every page id of a request in [0, pages); 1 <= kv_last_page_len[r] <=
 * page_size for every non-empty request. */
int64_t kvir_check_csr(const int32_t *kv_indptr, const int32_t *kv_indices,
                       int64_t num_indices, const int32_t *kv_last_page_len,
                       int64_t batch, int64_t page_size, int64_t num_tokens,
                       char *message, int64_t message_size);

/* block_table: seq_lens[r] >= 0, its ceil(seq_lens[r] / page_size) pages
 * within the row's max_pages entries, each a page id in [0, pages). */
int64_t kvir_check_block_table(const int32_t *block_table, int64_t max_pages,
                               const int32_t *seq_lens, int64_t batch,
                               int64_t page_size, int64_t num_tokens,
                               char *message, int64_t message_size);

/* token_table: kv_lens[r] >= 0, its pages within max_pages, each page's
 * first token index >= 0 and the tokens it holds inside the pool. */
int64_t kvir_check_token_table(const int32_t *cachestarts, int64_t max_pages,
                               const int32_t *kv_lens, int64_t batch,
                               int64_t page_size, int64_t num_tokens,
                               char *message, int64_t message_size);

/* token_offset: kv_lens[r] >= 0, cachestarts[r] >= 0 and
 * cachestarts[r] + kv_lens[r] <= num_tokens. */
int64_t kvir_check_token_offset(const int32_t *cachestarts,
                                const int32_t *kv_lens, int64_t batch,
                                int64_t num_tokens, char *message,
                                int64_t message_size);

/* A prefill's query rows: qo_indptr[batch + 1] monotone from >= 0 to at
 * most num_rows (-1: unknown). Any qo_len goes with any kv_len: causal rows
 * placed before the first key see none. */
int64_t kvir_check_query_rows(const int32_t *qo_indptr, int64_t num_rows,
                              int64_t batch, char *message,
                              int64_t message_size);

/* A sparse selection topk[rows][k] (kv.decode / kv.mla_decode topk(...)):
 * request r owns rows qo_indptr[r] .. qo_indptr[r + 1] (qo_indptr null: row
 * r alone, rows == batch); every entry of its rows is -1 (padding) or a key
 * index in [0, kv_lengths[r]), and no row lists a key twice. */
int64_t kvir_check_topk(const int32_t *topk, int64_t rows, int64_t k,
                        const int32_t *qo_indptr, const int32_t *kv_lengths,
                        int64_t batch, char *message, int64_t message_size);

#ifdef __cplusplus
}
#endif

#endif /* KVIR_RUNTIME_TABLECHECK_H */
