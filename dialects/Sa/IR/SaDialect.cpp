//===- SaDialect.cpp - The sa dialect, its type and attribute -------------===//

#include "dialects/Sa/IR/SaDialect.h"
#include "dialects/Sa/IR/SaOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln::sa;

#include "dialects/Sa/IR/SaDialect.cpp.inc"
#include "dialects/Sa/IR/SaEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "dialects/Sa/IR/SaAttrs.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "dialects/Sa/IR/SaTypes.cpp.inc"

void SaDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Sa/IR/SaOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Sa/IR/SaAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/Sa/IR/SaTypes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// #sa.view
//===----------------------------------------------------------------------===//

static int64_t product(ArrayRef<int64_t> v) {
  int64_t n = 1;
  for (int64_t x : v)
    n *= x;
  return n;
}

int64_t ViewAttr::getNumRows() const { return product(getRows()); }
int64_t ViewAttr::getNumCols() const { return product(getCols()); }

LogicalResult ViewAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> rows, ArrayRef<int64_t> cols,
                               int64_t base, ArrayRef<int64_t> strides,
                               ArrayRef<int64_t> offsets,
                               ArrayRef<int64_t> bounds,
                               ArrayRef<int64_t> coefs) {
  for (int64_t c : llvm::concat<const int64_t>(rows, cols))
    if (c <= 0)
      return emitError() << "view dimensions must be positive";
  if (offsets.size() != strides.size() || bounds.size() != strides.size() ||
      coefs.size() != strides.size() * (rows.size() + cols.size()))
    return emitError() << "view coordinates are inconsistent";
  return success();
}

static ParseResult parseIntList(AsmParser &p, SmallVectorImpl<int64_t> &out) {
  return p.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
    int64_t v;
    if (p.parseInteger(v))
      return failure();
    out.push_back(v);
    return success();
  });
}

static void printIntList(AsmPrinter &p, ArrayRef<int64_t> values) {
  p << '[';
  llvm::interleaveComma(values, p);
  p << ']';
}

// #sa.view<[rows] x [cols], base B, (stride S, offset O, bound N,
//          row [..], col [..]), ...>
Attribute ViewAttr::parse(AsmParser &p, Type) {
  SmallVector<int64_t> rows, cols, strides, offsets, bounds, coefs;
  int64_t base;
  if (p.parseLess() || parseIntList(p, rows) || p.parseKeyword("x") ||
      parseIntList(p, cols) || p.parseComma() || p.parseKeyword("base") ||
      p.parseInteger(base))
    return {};
  while (succeeded(p.parseOptionalComma())) {
    int64_t stride, offset, bound;
    SmallVector<int64_t> row, col;
    if (p.parseLParen() || p.parseKeyword("stride") || p.parseInteger(stride) ||
        p.parseComma() || p.parseKeyword("offset") || p.parseInteger(offset) ||
        p.parseComma() || p.parseKeyword("bound") || p.parseInteger(bound) ||
        p.parseComma() || p.parseKeyword("row") || parseIntList(p, row) ||
        p.parseComma() || p.parseKeyword("col") || parseIntList(p, col) ||
        p.parseRParen())
      return {};
    if (row.size() != rows.size() || col.size() != cols.size()) {
      p.emitError(p.getCurrentLocation(),
                  "a coordinate needs one coefficient per row and column "
                  "dimension");
      return {};
    }
    strides.push_back(stride);
    offsets.push_back(offset);
    bounds.push_back(bound);
    coefs.append(row);
    coefs.append(col);
  }
  if (p.parseGreater())
    return {};
  return p.getChecked<ViewAttr>(p.getContext(), rows, cols, base, strides,
                                offsets, bounds, coefs);
}

void ViewAttr::print(AsmPrinter &p) const {
  p << '<';
  printIntList(p, getRows());
  p << " x ";
  printIntList(p, getCols());
  p << ", base " << getBase();
  size_t nr = getRows().size(), nc = getCols().size();
  for (size_t q = 0; q < getNumCoords(); ++q) {
    ArrayRef<int64_t> c = getCoefs().slice(q * (nr + nc), nr + nc);
    p << ", (stride " << getStrides()[q] << ", offset " << getOffsets()[q]
      << ", bound " << getBounds()[q] << ", row ";
    printIntList(p, c.take_front(nr));
    p << ", col ";
    printIntList(p, c.drop_front(nr));
    p << ')';
  }
  p << '>';
}
