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

/// The work decomposition of a decode kernel. A block handles one request,
/// one KV head and one KV partition; its threads are (x: 16-byte vectors
/// along the head dim, y: query heads of the GQA group, z: tokens in flight).
/// K/V tiles of `tileTokens` tokens are staged in shared memory once for the
/// whole group.
struct DecodeTiling {
  int64_t vec = 8;          // Elements per vector (16 bytes of f16/bf16).
  int64_t threadsX = 16;    // next_pow2(head_dim / vec)
  int64_t threadsZ = 1;
  int64_t tileTokens = 32;
  int64_t smCount = 132;    // SMs of the target chip, for the split heuristic.
  int64_t maxPartitions = 32;

  int64_t threads(int64_t groupSize) const {
    return threadsX * groupSize * threadsZ;
  }
};

/// An f32 PTX approximation intrinsic (llvm.nvvm.ex2.approx.ftz.f, ...).
mlir::Value approx(mlir::ImplicitLocOpBuilder &b, llvm::StringRef intrinsic,
                   mlir::Value x);

/// Picks the tiling of a decode over `kv` with `qHeads` query heads.
DecodeTiling chooseDecodeTiling(PagedType kv, int64_t qHeads, int64_t smCount);

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
