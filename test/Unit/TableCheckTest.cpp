//===- TableCheckTest.cpp - The runtime's page-table checks ---------------===//
//
// Each check of include/kvir/Runtime/TableCheck.h accepts valid tables
// (empty requests, partial last pages, exactly full pools) and rejects each
// kind of bad entry with a message naming the request and the entry.
//
//===----------------------------------------------------------------------===//
#include "kvir/Runtime/TableCheck.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

/// The message of a failed check ("" when it passed).
struct Outcome {
  int64_t status;
  std::string message;
};

template <typename F> Outcome run(F check) {
  char buffer[256] = "untouched";
  int64_t status = check(buffer, int64_t(sizeof(buffer)));
  return {status, status ? std::string(buffer) : std::string()};
}

// A pool of 4 pages of 16 tokens.
constexpr int64_t kPage = 16, kTokens = 64;

Outcome csr(std::vector<int32_t> indptr, std::vector<int32_t> indices,
            std::vector<int32_t> last, int64_t tokens = kTokens) {
  return run([&](char *m, int64_t n) {
    return kvir_check_csr(indptr.data(), indices.data(), indices.size(),
                          last.data(), int64_t(indptr.size()) - 1, kPage,
                          tokens, m, n);
  });
}

TEST(TableCheck, CsrValid) {
  // Request 0 empty (its last_page_len is not read), 1 two pages, the
  // last one full; page 3 is the pool's last.
  EXPECT_EQ(csr({0, 0, 2, 3}, {3, 0, 1}, {0, 16, 1}).status, 0);
  // No capacity known: anything non-negative passes.
  EXPECT_EQ(csr({0, 1}, {99}, {4}, -1).status, 0);
}

TEST(TableCheck, CsrInvalid) {
  Outcome past = csr({0, 1, 3}, {0, 1, 4}, {5, 3});
  EXPECT_EQ(past.status, KVIR_TABLE_INVALID);
  EXPECT_EQ(past.message, "request 1: kv_indices[2] = 4 names a page past "
                          "the pool (4 pages of 16 tokens)");
  EXPECT_NE(csr({0, 1}, {-1}, {5}).message.find("kv_indices[0] = -1 is a "
                                                  "negative page id"),
            std::string::npos);
  EXPECT_NE(csr({0, 1, 2}, {0, 1}, {16, 0}).message.find(
                "request 1: kv_last_page_len[1] = 0, expected 1 <="),
            std::string::npos);
  EXPECT_NE(csr({0, 1, 2}, {0, 1}, {17, 3}).message.find(
                "request 0: kv_last_page_len[0] = 17"),
            std::string::npos);
  EXPECT_NE(csr({0, 2, 1}, {0, 1}, {3, 3}).message.find(
                "request 1: kv_indptr[2] = 1 < kv_indptr[1] = 2"),
            std::string::npos);
  EXPECT_NE(csr({0, 1, 3}, {0, 1}, {3, 3}).message.find(
                "kv_indptr[2] = 3 exceeds the 2 entries of kv_indices"),
            std::string::npos);
  EXPECT_NE(csr({-1, 1}, {0, 1}, {3}).message.find("kv_indptr[0] = -1"),
            std::string::npos);
}

TEST(TableCheck, CsrPartialLastPageMayEndThePool) {
  // A token-axis pool of 40 tokens: page 2 holds tokens 32..47, so a last
  // page of 8 tokens fits and one of 9 does not.
  EXPECT_EQ(csr({0, 1}, {2}, {8}, 40).status, 0);
  EXPECT_EQ(csr({0, 1}, {2}, {9}, 40).status, KVIR_TABLE_INVALID);
}

TEST(TableCheck, BlockTable) {
  // [batch 2][max_pages 2]; entries past a request's pages are not read.
  std::vector<int32_t> table{1, -7, 3, 0}, lens{10, 32};
  auto check = [&](char *m, int64_t n) {
    return kvir_check_block_table(table.data(), 2, lens.data(), 2, kPage,
                                  kTokens, m, n);
  };
  EXPECT_EQ(run(check).status, 0);
  table[3] = 4;
  EXPECT_EQ(run(check).message, "request 1: block_table[1][1] = 4 names a "
                                "page past the pool (4 pages of 16 tokens)");
  table[3] = 0;
  lens[1] = 33;
  EXPECT_NE(run(check).message.find("request 1: seq_lens[1] = 33 needs 3 "
                                    "pages, but block_table rows hold 2"),
            std::string::npos);
  lens[1] = -1;
  EXPECT_NE(run(check).message.find("request 1: seq_lens[1] = -1 is negative"),
            std::string::npos);
}

TEST(TableCheck, TokenTable) {
  std::vector<int32_t> starts{48, 0, 20, 0}, lens{16, 5};
  auto check = [&](char *m, int64_t n) {
    return kvir_check_token_table(starts.data(), 2, lens.data(), 2, kPage,
                                  kTokens, m, n);
  };
  EXPECT_EQ(run(check).status, 0);
  starts[2] = 60; // tokens 60..64: one past the pool
  EXPECT_NE(run(check).message.find("request 1: cachestarts[1][0] = 60 puts "
                                    "tokens [60, 65) outside the pool's 64"),
            std::string::npos);
}

TEST(TableCheck, TokenOffset) {
  std::vector<int32_t> starts{0, 60, -5}, lens{60, 4, 0};
  auto check = [&](char *m, int64_t n) {
    return kvir_check_token_offset(starts.data(), lens.data(), 3, kTokens, m,
                                   n);
  };
  // An empty request's start is not read.
  EXPECT_EQ(run(check).status, 0);
  lens[1] = 5;
  EXPECT_NE(run(check).message.find("request 1: cachestarts[1] = 60 puts "
                                    "tokens [60, 65)"),
            std::string::npos);
}

TEST(TableCheck, QueryRows) {
  std::vector<int32_t> indptr{0, 2, 5};
  auto check = [&] {
    return run([&](char *m, int64_t n) {
      return kvir_check_query_rows(indptr.data(), 5, 2, m, n);
    });
  };
  EXPECT_EQ(check().status, 0);
  indptr[2] = 6;
  EXPECT_NE(check().message.find("qo_indptr[2] = 6 exceeds the 5 entries of "
                                 "the query rows"),
            std::string::npos);
  indptr = {0, 3, 2};
  EXPECT_NE(check().status, 0);
}

TEST(TableCheck, Topk) {
  // Two requests of 3 and 5 keys; request 1 owns rows 1 and 2.
  std::vector<int32_t> kvLens{3, 5}, indptr{0, 1, 3};
  std::vector<int32_t> topk{2, -1, 0, -1, //
                            4, 1, -1, 3,  //
                            -1, -1, -1, -1};
  auto check = [&](const int32_t *qo, int64_t rows) {
    return run([&](char *m, int64_t n) {
      return kvir_check_topk(topk.data(), rows, 4, qo, kvLens.data(), 2, m, n);
    });
  };
  EXPECT_EQ(check(indptr.data(), 3).status, 0);
  // One row per request: rows must equal the batch.
  EXPECT_EQ(check(nullptr, 2).status, 0);
  EXPECT_EQ(check(nullptr, 3).message,
            "topk has 3 rows for 2 requests of one query row each");
  // Rows outside the lists, or a decreasing qo_indptr, are caught before
  // any list is read.
  std::vector<int32_t> past{0, 1, 4}, decreasing{0, 3, 2};
  EXPECT_EQ(check(past.data(), 3).message,
            "qo_indptr[2] = 4 exceeds the 3 entries of the topk rows");
  EXPECT_EQ(check(decreasing.data(), 3).message,
            "request 1: qo_indptr[2] = 2 < qo_indptr[1] = 3, expected a "
            "non-decreasing qo_indptr");
  topk[2] = 3; // request 0 has keys 0 .. 2
  EXPECT_EQ(check(indptr.data(), 3).message,
            "topk[0][2] = 3 is not a key of request 0 (kv_len 3) nor -1 "
            "(padding)");
  topk[2] = -2;
  EXPECT_EQ(check(indptr.data(), 3).message,
            "topk[0][2] = -2 is not a key of request 0 (kv_len 3) nor -1 "
            "(padding)");
  topk[2] = 0;
  topk[10] = 4;
  topk[8] = 4;
  EXPECT_EQ(check(indptr.data(), 3).message,
            "topk[2] lists key 4 twice (entries 0 and 2); a row selects each "
            "key at most once");
}

TEST(TableCheck, MessageIsTruncatedNotOverflowed) {
  std::vector<int32_t> indptr{0, 1}, indices{9}, last{1};
  char small[8];
  EXPECT_EQ(kvir_check_csr(indptr.data(), indices.data(), 1, last.data(), 1,
                           kPage, kTokens, small, sizeof(small)),
            KVIR_TABLE_INVALID);
  EXPECT_EQ(std::string(small), "request");
}

} // namespace
