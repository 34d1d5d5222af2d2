//===- Patterns.h - convert-kv-to-gpu's op families -------------*- C++ -*-===//
//
// One file per op family, each a pattern that reads the op's configuration
// and composes lib/Codegen into kernels, a launch plan and its launches:
// Decode.cpp (kv.decode; DecodeTensorCore.cpp for the decodes the tensor-core
// kernel runs), Prefill.cpp (kv.prefill), MlaDecode.cpp
// (kv.mla_decode, on the prefill kernel), CascadePositions.cpp
// (kv.cascade_positions), Append.cpp (kv.append), Merge.cpp
// (kv.merge, kv.merge_partitions of states in buffers). `whyNoKernel` is the
// reason an op of the family gets no kernel, reported under kv-to-nvvm /
// kv-to-ptx.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_CONVERSION_KVTOGPU_PATTERNS_H
#define KVIR_LIB_CONVERSION_KVTOGPU_PATTERNS_H

#include "LoweringContext.h"

#include <optional>
#include <string>

namespace kvir::gpu_lowering {

std::optional<std::string> whyNoDecodeKernel(kv::DecodeOp op,
                                             const target::TargetInfo &target);
void populateDecodePatterns(mlir::RewritePatternSet &patterns,
                            LoweringContext &context);

/// kv.decode on the tensor-core kernel (DecodeTensorCore.cpp): its
/// #kvgpu.prefill config (given, or chosen when the decode kernel cannot
/// run the op or is slower: decodePrefersTensorCores), why it gets no
/// kernel, and its lowering.
mlir::FailureOr<kvgpu::PrefillConfigAttr>
getTensorCoreDecodeConfig(kv::DecodeOp op, const target::TargetInfo &target,
                          std::string &whyNot);
std::optional<std::string>
whyNoTensorCoreDecode(kv::DecodeOp op, const target::TargetInfo &target,
                      kvgpu::PrefillConfigAttr config);
mlir::LogicalResult lowerDecodeOnTensorCores(kv::DecodeOp op,
                                             kvgpu::PrefillConfigAttr config,
                                             mlir::PatternRewriter &rewriter,
                                             LoweringContext &context);

std::optional<std::string> whyNoPrefillKernel(kv::PrefillOp op,
                                              const target::TargetInfo &target);
/// An f32 prefill's query rows on the decode kernel (PrefillQueryRows.cpp;
/// kvgpu::prefillTakesQueryRows): why it gets no kernel, and its lowering.
std::optional<std::string>
whyNoQueryRowsKernel(kv::PrefillOp op, const target::TargetInfo &target);
mlir::LogicalResult lowerPrefillQueryRows(kv::PrefillOp op,
                                          mlir::PatternRewriter &rewriter,
                                          LoweringContext &context);
void populatePrefillPatterns(mlir::RewritePatternSet &patterns,
                             LoweringContext &context);

std::optional<std::string> whyNoMlaKernel(kv::MlaDecodeOp op,
                                          const target::TargetInfo &target);
void populateMlaDecodePatterns(mlir::RewritePatternSet &patterns,
                               LoweringContext &context);

/// kv.cascade_positions (CascadePositions.cpp): one thread per query row.
std::optional<std::string>
whyNoCascadePositionsKernel(kv::CascadePositionsOp op);
void populateCascadePositionsPatterns(mlir::RewritePatternSet &patterns,
                                      LoweringContext &context);

std::optional<std::string> whyNoAppendKernel(kv::AppendOp op);
void populateAppendPatterns(mlir::RewritePatternSet &patterns,
                            LoweringContext &context);

/// The merge kernel (kv.merge of `numInputs` states, or a partition axis
/// reduced when numInputs == 0, or rows given by offsets when `ragged`) for
/// the given buffer types; shared by the split-KV paths.
struct MergeKernelSpec {
  unsigned numInputs = 0;
  /// Partial states in rows ([rows, heads, dv] and [rows, heads]), those
  /// of output row r being [indptr[r], indptr[r + 1]) of an extra i32
  /// argument: a work schedule's, instead of a partition axis.
  bool ragged = false;
  /// Ragged only: rows of requests with a single row are final states the
  /// producer wrote to the outputs itself; the merge leaves them alone.
  bool singleRowsFinal = false;
  mlir::MemRefType inOutputType, inLseType, outType, lseType;
  /// The sink logits per head merged into every result (a last argument),
  /// or null: none.
  mlir::MemRefType sinksType;
  kv::LseBase inBase = kv::LseBase::two, outBase = kv::LseBase::two;
  int64_t heads = 0, headDimV = 0;
};
mlir::gpu::GPUFuncOp getMergeKernel(LoweringContext &context,
                                    const MergeKernelSpec &spec);

std::optional<std::string> whyNoMergeKernel(mlir::Operation *op);
void populateMergePatterns(mlir::RewritePatternSet &patterns,
                           LoweringContext &context);

} // namespace kvir::gpu_lowering

#endif // KVIR_LIB_CONVERSION_KVTOGPU_PATTERNS_H
