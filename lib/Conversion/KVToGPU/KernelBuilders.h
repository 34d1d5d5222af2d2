//===- KernelBuilders.h - gpu.func builders of convert-kv-to-gpu -*- C++ -*-===//
#ifndef KVIR_LIB_CONVERSION_KVTOGPU_KERNELBUILDERS_H
#define KVIR_LIB_CONVERSION_KVTOGPU_KERNELBUILDERS_H

#include "kvir/Dialect/KV/IR/KVOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <optional>
#include <string>

namespace kvir::kv::gpu_lowering {

/// The work decomposition of a decode kernel (see #kv.decode_tiling).
struct DecodeTiling {
  int64_t vec = 8, threadsX = 16, threadsZ = 1, tileTokens = 32;
  int64_t smCount = 132, maxPartitions = 32;

  static DecodeTiling fromAttr(DecodeTilingAttr attr) {
    return {attr.getVector(),     attr.getThreadsX(), attr.getThreadsZ(),
            attr.getTileTokens(), attr.getSmCount(),  attr.getMaxPartitions()};
  }
};

/// An f32 PTX approximation intrinsic (llvm.nvvm.ex2.approx.ftz.f, ...).
mlir::Value approx(mlir::ImplicitLocOpBuilder &b, llvm::StringRef intrinsic,
                   mlir::Value x);

struct DecodeKernelSpec {
  std::string name;
  PagedType kv;
  mlir::SmallVector<mlir::Type> kvTypes; // PagedOperands::flatten() types
  mlir::MemRefType qType, outType, lseType;
  int64_t qHeads = 0;
  /// Partial states: f32 output and base-2 LSE, per KV partition
  /// (blockIdx.z), into [P, B, Hq, Dv] and [P, B, Hq] workspaces.
  bool partitioned = false;
  LseBase base = LseBase::two;
  double smScale = 1.0;
  std::optional<double> softCap;
  std::optional<int64_t> windowLeft;
  DecodeTiling tiling;
};

/// Static shared memory of the decode kernel over `kv` with `tiling` for a
/// GQA group of `group` query heads.
int64_t decodeSharedBytes(PagedType kv, const DecodeTiling &tiling,
                          int64_t group);

/// Why the decode kernel cannot be built (or would not run) with `tiling`,
/// or nullopt: rows wider than a warp's vectors, partial warps, blocks over
/// 1024 threads, over 48 KB of static shared memory.
std::optional<std::string>
whyNotDecodeKernel(PagedType kv, const DecodeTiling &tiling, int64_t group);

/// Adds the decode kernel to `module`. Arguments: q, the paged operands (as
/// PagedOperands::flatten()), out, lse, and (partitioned) the partition count.
mlir::gpu::GPUFuncOp buildDecodeKernel(mlir::gpu::GPUModuleOp module,
                                       const DecodeKernelSpec &spec);

struct MergeKernelSpec {
  std::string name;
  /// Input state buffers: `numInputs` (o, lse) pairs, or one partitioned
  /// pair when numInputs == 0 (reduced over its leading axis).
  unsigned numInputs = 0;
  mlir::MemRefType inOutputType, inLseType, outType, lseType;
  LseBase inBase = LseBase::two, outBase = LseBase::two;
  int64_t heads = 0, headDimV = 0;
};

/// Adds a merge kernel: grid (rows, heads), one thread per output dim.
/// Arguments: the input (o, lse) pairs, out, lse.
mlir::gpu::GPUFuncOp buildMergeKernel(mlir::gpu::GPUModuleOp module,
                                      const MergeKernelSpec &spec);

} // namespace kvir::kv::gpu_lowering

#endif // KVIR_LIB_CONVERSION_KVTOGPU_KERNELBUILDERS_H
