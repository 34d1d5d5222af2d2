//===- MmaAtom.h - One tensor-core instruction as a component ---*- C++ -*-===//
//
// An MMA atom is what a kernel needs to know of a tensor-core instruction:
// the operand fragments it takes (and which shared-memory tile layouts
// they can be read from), where its accumulator elements lie (a
// FragmentLayout, the only source of fragment coordinates for softmax,
// masks, variants and epilogues), how one is issued, how an accumulator
// becomes the A operand of the next product (P of P V), and, for
// asynchronous atoms, the fence / commit / wait that bracket their issue.
// A synchronous atom's fence, commit and wait are no-ops, so a mainloop
// written against this interface is correct for both.
//
// Components take the builder per call; an atom holds only data and the
// values it computes once (the lane's place in the accumulator).
//
//===----------------------------------------------------------------------===//
#ifndef KVIR_CODEGEN_MMAATOM_H
#define KVIR_CODEGEN_MMAATOM_H

#include "kvir/Codegen/FragmentLayout.h"
#include "kvir/Codegen/SharedTile.h"

#include "mlir/IR/BuiltinTypes.h"

#include <optional>
#include <string>

namespace kvir::codegen {

class MmaAtom {
public:
  virtual ~MmaAtom() = default;

  /// M x N x K of one issue.
  virtual int64_t getM() const = 0;
  virtual int64_t getN() const = 0;
  virtual int64_t getK() const = 0;
  /// The register fragments: A (M x K), B (K x N), accumulator (M x N).
  virtual mlir::VectorType getAType() const = 0;
  virtual mlir::VectorType getBType() const = 0;
  virtual mlir::VectorType getAccType() const = 0;

  /// The accumulator's fragment layout, and the lane's view of it.
  const FragmentLayout &accLayout() const { return acc.getLayout(); }
  const LaneFragment &getAccFragment() const { return acc; }

  /// Why an operand cannot be read from `tile` (its layout, chunking,
  /// alignment), or nullopt.
  virtual std::optional<std::string>
  whyNotOperand(const SharedTile &tile) const = 0;

  /// The A fragment of rows [row0, row0 + M), cols [k0, k0 + K).
  virtual mlir::Value loadA(mlir::ImplicitLocOpBuilder &b,
                            const SharedTile &tile, mlir::Value stage,
                            mlir::Value row0, int64_t k0) const = 0;
  /// The B fragments of n [n0, n0 + 2N), k [k0, k0 + K) of a tile stored
  /// [n][k] (K^T of attention: a key tile with the head dim contiguous).
  virtual std::pair<mlir::Value, mlir::Value>
  loadBRows(mlir::ImplicitLocOpBuilder &b, const SharedTile &tile,
            mlir::Value stage, mlir::Value n0, int64_t k0) const = 0;
  /// The B fragments of k [k0, k0 + K), n [n0, n0 + 2N) of a tile stored
  /// [k][n] (the value tile of P V), n counted from `nBase` (null: 0).
  virtual std::pair<mlir::Value, mlir::Value>
  loadBCols(mlir::ImplicitLocOpBuilder &b, const SharedTile &tile,
            mlir::Value stage, mlir::Value k0, int64_t n0,
            mlir::Value nBase = {}) const = 0;

  /// Issues acc + a * b.
  virtual mlir::Value mma(mlir::ImplicitLocOpBuilder &b, mlir::Value a,
                          mlir::Value bFragment, mlir::Value acc) const = 0;
  mlir::Value zeroAcc(mlir::ImplicitLocOpBuilder &b) const;
  /// The A fragment whose k [0, K/2) is `acc0` and [K/2, K) is `acc1`
  /// (two accumulators side by side), rounded to the element type.
  virtual mlir::Value accumulatorsToA(mlir::ImplicitLocOpBuilder &b,
                                      mlir::Value acc0,
                                      mlir::Value acc1) const = 0;

  /// Asynchronous atoms: orders register writes before the next issue
  /// (fence), closes the issued products into a group (commit), waits
  /// until at most `pending` groups are in flight (wait). Synchronous
  /// atoms: nothing to do.
  virtual bool isAsync() const { return false; }
  virtual void fence(mlir::ImplicitLocOpBuilder &) const {}
  virtual void commit(mlir::ImplicitLocOpBuilder &) const {}
  virtual void wait(mlir::ImplicitLocOpBuilder &, int64_t) const {}

protected:
  explicit MmaAtom(LaneFragment acc) : acc(std::move(acc)) {}

private:
  LaneFragment acc;
};

} // namespace kvir::codegen

#endif // KVIR_CODEGEN_MMAATOM_H
