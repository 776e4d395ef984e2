//===- View.cpp - Decoded operand views -----------------------------------===//

#include "kiln/sim/View.h"

#include <algorithm>

namespace kiln::sim {

namespace {

int64_t product(const std::vector<int64_t> &counts) {
  int64_t n = 1;
  for (int64_t c : counts)
    n *= c;
  return n;
}

/// part[i] = sum_d coef[d] * index_d(i), for i decomposed over `counts`
/// (first dimension outermost). Missing coefficients are zero.
std::vector<int64_t> affinePart(const std::vector<int64_t> &counts,
                                const std::vector<int64_t> &coef) {
  int64_t n = product(counts);
  std::vector<int64_t> part(size_t(std::max<int64_t>(n, 0)), 0);
  size_t dims = counts.size();
  std::vector<int64_t> index(dims, 0);
  int64_t value = 0;
  for (int64_t i = 0; i < n; ++i) {
    part[size_t(i)] = value;
    // Odometer increment, innermost (last) dimension fastest.
    for (size_t d = dims; d-- > 0;) {
      int64_t c = d < coef.size() ? coef[d] : 0;
      if (++index[d] < counts[d]) {
        value += c;
        break;
      }
      value -= c * (counts[d] - 1);
      index[d] = 0;
    }
  }
  return part;
}

bool anyNonZero(const std::vector<int64_t> &v) {
  return std::any_of(v.begin(), v.end(), [](int64_t x) { return x != 0; });
}

} // namespace

int64_t operandRows(const fb::OperandT &op) { return product(op.row_counts); }
int64_t operandCols(const fb::OperandT &op) { return product(op.col_counts); }

void operandAddressRange(const fb::OperandT &op, int64_t &lo, int64_t &hi) {
  lo = hi = op.base;
  for (const auto &q : op.coords) {
    if (q->bound <= 0) {
      lo = 0;
      hi = -1;
      return;
    }
    int64_t extreme = q->stride * (q->bound - 1);
    lo += std::min<int64_t>(0, extreme);
    hi += std::max<int64_t>(0, extreme);
  }
}

void operandTouchedRange(const fb::OperandT &op, int64_t &lo, int64_t &hi) {
  lo = hi = op.base;
  for (const auto &q : op.coords) {
    // The coordinate's extremes over the index ranges, clipped to bounds.
    int64_t vlo = q->offset, vhi = q->offset;
    auto extend = [&](const std::vector<int64_t> &counts,
                      const std::vector<int64_t> &coef) {
      for (size_t d = 0; d < counts.size() && d < coef.size(); ++d) {
        int64_t span = coef[d] * (std::max<int64_t>(counts[d], 1) - 1);
        vlo += std::min<int64_t>(0, span);
        vhi += std::max<int64_t>(0, span);
      }
    };
    extend(op.row_counts, q->row_coef);
    extend(op.col_counts, q->col_coef);
    vlo = std::max<int64_t>(vlo, 0);
    vhi = std::min<int64_t>(vhi, q->bound - 1);
    if (vlo > vhi) {
      lo = 0;
      hi = -1;
      return;
    }
    lo += std::min(q->stride * vlo, q->stride * vhi);
    hi += std::max(q->stride * vlo, q->stride * vhi);
  }
}

View::View(const fb::OperandT &op) {
  numRows = product(op.row_counts);
  numCols = product(op.col_counts);
  rowAddr.assign(size_t(numRows), op.base);
  colAddr.assign(size_t(numCols), 0);
  rowOk.assign(size_t(numRows), 1);
  colOk.assign(size_t(numCols), 1);
  for (const auto &q : op.coords) {
    bool onRows = anyNonZero(q->row_coef), onCols = anyNonZero(q->col_coef);
    std::vector<int64_t> rowPart, colPart;
    if (onRows)
      rowPart = affinePart(op.row_counts, q->row_coef);
    if (onCols)
      colPart = affinePart(op.col_counts, q->col_coef);
    if (!onRows && !onCols) {
      bool ok = q->offset >= 0 && q->offset < q->bound;
      for (int64_t i = 0; i < numRows; ++i) {
        rowAddr[size_t(i)] += q->stride * q->offset;
        rowOk[size_t(i)] &= ok;
      }
    } else if (onRows && !onCols) {
      for (int64_t i = 0; i < numRows; ++i) {
        int64_t t = q->offset + rowPart[size_t(i)];
        rowAddr[size_t(i)] += q->stride * t;
        rowOk[size_t(i)] &= t >= 0 && t < q->bound;
      }
    } else if (!onRows && onCols) {
      for (int64_t j = 0; j < numCols; ++j) {
        int64_t t = q->offset + colPart[size_t(j)];
        colAddr[size_t(j)] += q->stride * t;
        colOk[size_t(j)] &= t >= 0 && t < q->bound;
      }
    } else {
      for (int64_t i = 0; i < numRows; ++i)
        rowAddr[size_t(i)] += q->stride * (q->offset + rowPart[size_t(i)]);
      for (int64_t j = 0; j < numCols; ++j)
        colAddr[size_t(j)] += q->stride * colPart[size_t(j)];
      joints.push_back(
          {q->offset, q->bound, std::move(rowPart), std::move(colPart)});
    }
  }
}

} // namespace kiln::sim
