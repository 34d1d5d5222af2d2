//===- FragmentLayout.cpp - Tile elements a lane's registers hold -------===//
#include "kvir/Codegen/FragmentLayout.h"
#include "kvir/Codegen/IRBuilder.h"

using namespace mlir;
using namespace kvir::codegen;

FragmentLayout FragmentLayout::mmaM16N8() {
  FragmentLayout l;
  l.atomRows = 16;
  l.atomCols = 8;
  l.rowsPerLane = 2;
  l.rowStep = 8;
  l.colsPerLane = 2;
  l.lanesPerRow = 4;
  return l;
}

int64_t FragmentLayout::row(int64_t lane, int64_t t, int64_t h) const {
  return rowOffset(t, h) + lane / lanesPerRow;
}

int64_t FragmentLayout::col(int64_t lane, int64_t n, int64_t j) const {
  return n * atomCols + (lane % lanesPerRow) * colsPerLane + j;
}

LaneFragment::LaneFragment(ImplicitLocOpBuilder &b,
                           const FragmentLayout &layout, Value lane)
    : layout(layout) {
  IRBuilder ir{b};
  rowInAtom = ir.divU(lane, ir.idx(layout.lanesPerRow));
  laneInRow = ir.remU(lane, ir.idx(layout.lanesPerRow));
}

Value LaneFragment::atomRow(ImplicitLocOpBuilder &b, int64_t h) const {
  IRBuilder ir{b};
  return ir.add(rowInAtom, ir.idx(layout.rowStep * h));
}

Value LaneFragment::row(ImplicitLocOpBuilder &b, int64_t t, int64_t h) const {
  IRBuilder ir{b};
  return ir.add(rowInAtom, ir.idx(layout.rowOffset(t, h)));
}

Value LaneFragment::firstCol(ImplicitLocOpBuilder &b) const {
  IRBuilder ir{b};
  return ir.mul(laneInRow, ir.idx(layout.colsPerLane));
}

Value LaneFragment::atomCol(ImplicitLocOpBuilder &b, int64_t j) const {
  IRBuilder ir{b};
  return ir.add(firstCol(b), ir.idx(j));
}

Value LaneFragment::col(ImplicitLocOpBuilder &b, int64_t n, int64_t j) const {
  IRBuilder ir{b};
  return ir.add(atomCol(b, j), ir.idx(layout.atomCols * n));
}

Value LaneFragment::isRowLeader(ImplicitLocOpBuilder &b) const {
  IRBuilder ir{b};
  return ir.eq(laneInRow, ir.idx(0));
}
