//===- StateLowering.cpp - merge, partition reduction and rebase ----------===//
//
// merge((o_a, l_a), (o_b, l_b)) with m = max(l_a, l_b): the empty state if
// m == -inf, else o = sum w o / sum w and l = m + log_B(sum w), w = B^(l - m).
// The n-ary form is the same identity applied at once, which is what the
// associativity of merge promises (docs/Semantics.md).
//
//===----------------------------------------------------------------------===//
#include "LoweringUtils.h"

#include "kvir/Codegen/AttentionState.h"

#include <cmath>

using namespace mlir;
using namespace kvir::kv;
using namespace kvir::kv::loops;
using kvir::codegen::AttentionState;

namespace {
/// One input of a merge at a given (row, head): reads its LSE and outputs.
struct MergeInput {
  std::function<Value(ImplicitLocOpBuilder &)> lse;
  std::function<Value(ImplicitLocOpBuilder &, Value d)> output;
};

/// Accumulates inputs of one (row, head) in two passes: the max LSE, then
/// the weights. `forEach` calls its argument once per input with the input,
/// threading a list of f32 values through (so that a dynamic number of inputs
/// can be an scf.for).
using ForEachInput = std::function<SmallVector<Value>(
    ImplicitLocOpBuilder &, ValueRange,
    std::function<SmallVector<Value>(ImplicitLocOpBuilder &, const MergeInput &,
                                     ValueRange)>)>;
} // namespace

/// Merges the inputs of one (row, head) into out[row, head]: the max of the
/// LSEs, then the weights (AttentionState, in base e).
static void mergeOneRow(ImplicitLocOpBuilder &b, StateType type,
                        const ForEachInput &forEach, StateBuffers out,
                        Value row, Value head, Value acc) {
  Value zero = indexConst(b, 0);
  LseBase base = type.getBase();
  AttentionState state(b, AttentionState::Flavor::exactBaseE);
  auto lseE = [&](ImplicitLocOpBuilder &b, const MergeInput &in) {
    AttentionState s(b, AttentionState::Flavor::exactBaseE);
    return s.convertLse(in.lse(b), base, s.getWorkingBase());
  };
  Value m = forEach(b, ValueRange{f32Const(b, -INFINITY)},
                    [&](ImplicitLocOpBuilder &b, const MergeInput &in,
                        ValueRange carried) -> SmallVector<Value> {
                      return {arith::MaximumFOp::create(b, carried[0],
                                                        lseE(b, in))};
                    })[0];
  Value ref = state.reference(m);
  Value dimV = indexConst(b, type.getHeadDimV());
  forLoop(b, zero, dimV, [&](ImplicitLocOpBuilder &b, Value d) {
    memref::StoreOp::create(b, f32Const(b, 0.0), acc, d);
  });
  Value sumW = forEach(
      b, ValueRange{f32Const(b, 0.0)},
      [&](ImplicitLocOpBuilder &b, const MergeInput &in,
          ValueRange carried) -> SmallVector<Value> {
        AttentionState s(b, AttentionState::Flavor::exactBaseE);
        Value w = s.weightAt(lseE(b, in), ref);
        forLoop(b, zero, dimV, [&](ImplicitLocOpBuilder &b, Value d) {
          AttentionState inner(b, AttentionState::Flavor::exactBaseE);
          Value next = inner.accumulate(memref::LoadOp::create(b, acc, d),
                                        /*alpha=*/Value(), w,
                                        toF32(b, in.output(b, d)));
          memref::StoreOp::create(b, next, acc, d);
        });
        return {arith::AddFOp::create(b, carried[0], w)};
      })[0];
  Type outElt = type.getElementType();
  forLoop(b, zero, dimV, [&](ImplicitLocOpBuilder &b, Value d) {
    AttentionState inner(b, AttentionState::Flavor::exactBaseE);
    Value o = inner.normalize(memref::LoadOp::create(b, acc, d), sumW);
    memref::StoreOp::create(b, fromF32(b, o, outElt), out.output,
                            ValueRange{row, head, d});
  });
  memref::StoreOp::create(b, state.finalLse(m, sumW, base), out.lse,
                          ValueRange{row, head});
}

/// Runs `body(row, head)` over the rows and heads of a state with `rows`.
static void forEachRowHead(
    ImplicitLocOpBuilder &b, Value rows, int64_t heads,
    function_ref<void(ImplicitLocOpBuilder &, Value, Value)> body) {
  Value zero = indexConst(b, 0);
  forLoop(b, zero, rows, [&](ImplicitLocOpBuilder &b, Value row) {
    forLoop(b, zero, indexConst(b, heads),
            [&](ImplicitLocOpBuilder &b, Value head) { body(b, row, head); });
  });
}

/// The result of merging, for every (row, head) of `rows` rows, the inputs
/// `inputsAt(row, head)` enumerates.
static StateBuffers
mergeRows(ImplicitLocOpBuilder &b, StateType type, Value rows,
          function_ref<ForEachInput(Value row, Value head)> inputsAt) {
  StateBuffers out = allocState(b, type, rows);
  Value acc = memref::AllocOp::create(
      b, MemRefType::get({type.getHeadDimV()}, b.getF32Type()), ValueRange{});
  forEachRowHead(b, rows, type.getHeads(),
                 [&](ImplicitLocOpBuilder &b, Value row, Value head) {
                   mergeOneRow(b, type, inputsAt(row, head), out, row, head,
                               acc);
                 });
  memref::DeallocOp::create(b, acc);
  return out;
}

StateBuffers loops::lowerMerge(ImplicitLocOpBuilder &b, StateType type,
                               ArrayRef<StateBuffers> inputs) {
  Value rows = memref::DimOp::create(b, inputs.front().lse, 0);
  return mergeRows(b, type, rows, [&](Value row, Value head) -> ForEachInput {
    return [&, row, head](ImplicitLocOpBuilder &b, ValueRange init, auto fn) {
      SmallVector<Value> carried(init);
      for (StateBuffers in : inputs) {
        MergeInput input{
            [&, in](ImplicitLocOpBuilder &b) -> Value {
              return memref::LoadOp::create(b, in.lse, ValueRange{row, head});
            },
            [&, in](ImplicitLocOpBuilder &b, Value d) -> Value {
              return memref::LoadOp::create(b, in.output,
                                            ValueRange{row, head, d});
            }};
        carried = fn(b, input, carried);
      }
      return carried;
    };
  });
}

StateBuffers loops::lowerMergeSinks(ImplicitLocOpBuilder &b, StateType type,
                                    StateBuffers input, Value sinks) {
  Value rows = memref::DimOp::create(b, input.lse, 0);
  StateBuffers out = allocState(b, type, rows);
  Value zero = indexConst(b, 0);
  Type outElt = type.getElementType();
  forEachRowHead(
      b, rows, type.getHeads(),
      [&](ImplicitLocOpBuilder &b, Value row, Value head) {
        AttentionState state(b, AttentionState::Flavor::exactBaseE);
        Value lse = state.convertLse(
            memref::LoadOp::create(b, input.lse, ValueRange{row, head}),
            type.getBase(), state.getWorkingBase());
        // The normalized state is the partial state (lse, 1, o).
        codegen::PartialState merged =
            state.mergeSink(lse, f32Const(b, 1.0),
                            memref::LoadOp::create(b, sinks, ValueRange{head}));
        forLoop(b, zero, indexConst(b, type.getHeadDimV()),
                [&](ImplicitLocOpBuilder &b, Value d) {
                  AttentionState inner(b, AttentionState::Flavor::exactBaseE);
                  Value o =
                      toF32(b, memref::LoadOp::create(
                                   b, input.output, ValueRange{row, head, d}));
                  o = inner.normalize(arith::MulFOp::create(b, o, merged.acc),
                                      merged.l);
                  memref::StoreOp::create(b, fromF32(b, o, outElt), out.output,
                                          ValueRange{row, head, d});
                });
        memref::StoreOp::create(
            b, state.finalLse(merged.m, merged.l, type.getBase()), out.lse,
            ValueRange{row, head});
      });
  return out;
}

StateBuffers loops::lowerMergePartitions(ImplicitLocOpBuilder &b,
                                         StateType type, StateBuffers input) {
  Value parts = memref::DimOp::create(b, input.lse, 0);
  Value rows = memref::DimOp::create(b, input.lse, 1);
  return mergeRows(b, type, rows, [&](Value row, Value head) -> ForEachInput {
    return [&, row, head](ImplicitLocOpBuilder &b, ValueRange init, auto fn) {
      ValueRange results = forLoop(
          b, indexConst(b, 0), parts, init,
          [&](ImplicitLocOpBuilder &b, Value part, ValueRange carried) {
            MergeInput in{
                [&](ImplicitLocOpBuilder &b) -> Value {
                  return memref::LoadOp::create(b, input.lse,
                                                ValueRange{part, row, head});
                },
                [&](ImplicitLocOpBuilder &b, Value d) -> Value {
                  return memref::LoadOp::create(
                      b, input.output, ValueRange{part, row, head, d});
                }};
            return fn(b, in, carried);
          });
      return SmallVector<Value>(results);
    };
  });
}

StateBuffers loops::lowerRebase(ImplicitLocOpBuilder &b, StateType from,
                                StateType to, StateBuffers input) {
  bool partitioned = from.isPartitioned();
  Value parts = partitioned ? memref::DimOp::create(b, input.lse, 0) : Value();
  Value rows = memref::DimOp::create(b, input.lse, partitioned ? 1 : 0);
  StateBuffers out = allocState(b, to, rows, parts);
  Value zero = indexConst(b, 0);
  Value numParts = partitioned ? parts : indexConst(b, 1);
  Type outElt = to.getElementType();
  forLoop(b, zero, numParts, [&](ImplicitLocOpBuilder &b, Value part) {
    forEachRowHead(b, rows, to.getHeads(), [&](ImplicitLocOpBuilder &b,
                                                Value row, Value head) {
      SmallVector<Value> lseIdx{row, head};
      if (partitioned)
        lseIdx.insert(lseIdx.begin(), part);
      Value lse = memref::LoadOp::create(b, input.lse, lseIdx);
      // +inf marks an empty set in FlashMLA's convention: normalize it.
      Value posInf = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, lse,
                                           f32Const(b, INFINITY));
      AttentionState state(b, AttentionState::Flavor::exactBaseE);
      Value scaled = state.convertLse(lse, from.getBase(), to.getBase());
      scaled = arith::SelectOp::create(b, posInf, f32Const(b, -INFINITY),
                                       scaled);
      memref::StoreOp::create(b, scaled, out.lse, lseIdx);
      forLoop(b, zero, indexConst(b, to.getHeadDimV()),
              [&](ImplicitLocOpBuilder &b, Value d) {
                SmallVector<Value> idx(lseIdx);
                idx.push_back(d);
                Value o = memref::LoadOp::create(b, input.output, idx);
                Value zeroO = arith::ConstantOp::create(
                    b, b.getFloatAttr(outElt, 0.0));
                o = arith::SelectOp::create(b, posInf, zeroO, o);
                memref::StoreOp::create(b, o, out.output, idx);
              });
    });
  });
  return out;
}
