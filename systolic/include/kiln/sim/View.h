//===- View.h - Decoded operand views --------------------------*- C++ -*-===//
//
// Part of Kiln. An fb::Operand describes a rows x cols view of a buffer by an
// affine map onto tensor coordinates with bounds. The executors decode it
// once per instruction into per-row and per-column address parts, so an
// element costs one addition; only coordinates that depend on both the row
// and the column (a convolution tap folded into the contraction) are checked
// per element.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SIM_VIEW_H
#define KILN_SIM_VIEW_H

#include "program_generated.h"

#include <cstdint>
#include <vector>

namespace kiln::sim {

/// Rows and columns of an operand (products of its counts).
int64_t operandRows(const fb::OperandT &op);
int64_t operandCols(const fb::OperandT &op);

/// The smallest and largest address an in-bounds element can have.
void operandAddressRange(const fb::OperandT &op, int64_t &lo, int64_t &hi);

/// The smallest and largest address the operand's in-bounds elements can
/// have, from each coordinate's range over the view's counts (a bounding
/// interval: elements between two touched ones may be untouched). hi < lo
/// when no element is in bounds.
void operandTouchedRange(const fb::OperandT &op, int64_t &lo, int64_t &hi);

class View {
public:
  explicit View(const fb::OperandT &op);

  int64_t rows() const { return numRows; }
  int64_t cols() const { return numCols; }
  /// Whether any element of row i can be in bounds.
  bool rowInBounds(int64_t i) const { return rowOk[size_t(i)] != 0; }
  bool colInBounds(int64_t j) const { return colOk[size_t(j)] != 0; }
  bool hasJointCoords() const { return !joints.empty(); }
  bool inBounds(int64_t i, int64_t j) const {
    if (!rowOk[size_t(i)] || !colOk[size_t(j)])
      return false;
    for (const Joint &q : joints) {
      int64_t t = q.offset + q.rowPart[size_t(i)] + q.colPart[size_t(j)];
      if (t < 0 || t >= q.bound)
        return false;
    }
    return true;
  }
  int64_t address(int64_t i, int64_t j) const {
    return rowAddr[size_t(i)] + colAddr[size_t(j)];
  }

private:
  struct Joint {
    int64_t offset, bound;
    std::vector<int64_t> rowPart, colPart;
  };
  int64_t numRows = 0, numCols = 0;
  std::vector<int64_t> rowAddr, colAddr;
  std::vector<uint8_t> rowOk, colOk;
  std::vector<Joint> joints;
};

} // namespace kiln::sim

#endif // KILN_SIM_VIEW_H
