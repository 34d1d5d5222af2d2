//===- PrefillKernel.h - The tensor-core prefill kernel ---------*- C++ -*-===//
//
// What a prefill kernel is specialized on, its shared memory, and its body
// (PrefillKernel.cpp); Prefill.cpp decides when an op gets one and how it
// is launched.
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_LIB_CONVERSION_KVTOGPU_PREFILLKERNEL_H
#define KVIR_LIB_CONVERSION_KVTOGPU_PREFILLKERNEL_H

#include "kvir/Codegen/KernelFunc.h"
#include "kvir/Dialect/KV/IR/KVOps.h"
#include "kvir/Dialect/KVGPU/IR/KVGPUDialect.h"

#include <optional>

namespace kvir::gpu_lowering {

struct PrefillKernelSpec {
  /// Paged KV (its PagedOperands::flatten() types), or ragged K, V and
  /// kv_indptr when `paged` is null.
  kv::PagedType paged;
  llvm::SmallVector<mlir::Type> kvTypes;
  int64_t kvHeads = 0, headDim = 0, headDimV = 0;
  mlir::Type kvElementType;
  mlir::MemRefType qType, qoIndptrType, outType, lseType;
  /// The custom mask (i1 or bit-packed i8), or null.
  mlir::MemRefType maskType;
  int64_t qHeads = 0;
  bool causal = false;
  std::optional<int64_t> windowLeft;
  double smScale = 1.0;
  std::optional<double> softCap;
  kv::LseBase base = kv::LseBase::two;
  /// Partial states: f32 output and base-2 LSE per KV partition
  /// (blockIdx.z), into [P, nnz, Hq, Dv] and [P, nnz, Hq] workspaces.
  bool partitioned = false;
  kvgpu::PrefillConfigAttr config;

  int64_t group() const { return qHeads / kvHeads; }
  bool isRagged() const { return !paged; }
  /// Whether the output is staged through shared memory for 16-byte
  /// stores (16-bit outputs), and whether the query tile can hold it.
  bool stagesOutput() const;
  bool outputReusesQueryTile() const;
};

/// The kernel's shared buffers, in KernelFunc::getShared order.
codegen::SharedMemoryLayout prefillSharedLayout(const PrefillKernelSpec &spec);

/// The kernel's arguments: q, qo_indptr, the KV operands, [mask], out, lse,
/// [num_partitions].
llvm::SmallVector<mlir::Type> prefillArgumentTypes(const PrefillKernelSpec &spec);

/// Builds the body of a kernel created with the two above. Launched on
/// (QueryTiles slots, KV heads, partitions) blocks of 32 * warps threads.
void buildPrefillBody(const codegen::KernelFunc &kf,
                      const PrefillKernelSpec &spec);

} // namespace kvir::gpu_lowering

#endif // KVIR_LIB_CONVERSION_KVTOGPU_PREFILLKERNEL_H
