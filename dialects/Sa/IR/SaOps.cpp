//===- SaOps.cpp - Operations of the sa dialect ---------------------------===//
//
// The verifiers check what can be checked on the IR: shapes of views,
// buffers' spaces and types, the target's unit limits, operand bounds. The
// same checks run again when kiln-sim loads the serialized program
// (kiln::sim::verifyProgram), which adds the on-chip overlap check that
// needs the whole program's live ranges.
//
//===----------------------------------------------------------------------===//

#include "dialects/Sa/IR/SaOps.h"

#include "kiln/sim/Isa.h"
#include "kiln/sim/View.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace kiln::sa;

namespace sim = kiln::sim;

std::unique_ptr<sim::fb::OperandT> kiln::sa::viewToOperand(ViewAttr view,
                                                           uint32_t buffer) {
  auto op = std::make_unique<sim::fb::OperandT>();
  op->buffer = buffer;
  op->base = view.getBase();
  op->row_counts.assign(view.getRows().begin(), view.getRows().end());
  op->col_counts.assign(view.getCols().begin(), view.getCols().end());
  size_t nr = view.getRows().size(), nc = view.getCols().size();
  for (size_t q = 0; q < view.getNumCoords(); ++q) {
    auto c = std::make_unique<sim::fb::CoordT>();
    c->stride = view.getStrides()[q];
    c->offset = view.getOffsets()[q];
    c->bound = view.getBounds()[q];
    ArrayRef<int64_t> coef = view.getCoefs().slice(q * (nr + nc), nr + nc);
    c->row_coef.assign(coef.begin(), coef.begin() + nr);
    c->col_coef.assign(coef.begin() + nr, coef.end());
    op->coords.push_back(std::move(c));
  }
  return op;
}

//===----------------------------------------------------------------------===//
// ProgramOp
//===----------------------------------------------------------------------===//

int64_t ProgramOp::getTargetInt(StringRef name) {
  if (auto v = dyn_cast_or_null<IntegerAttr>(getTarget().get(name)))
    return v.getInt();
  return 0;
}

LogicalResult ProgramOp::verify() {
  for (StringRef key : {"mxu_count", "array_rows", "array_cols", "onchip_bytes",
                        "vector_lanes"})
    if (getTargetInt(key) <= 0)
      return emitOpError("target lacks a positive integer '") << key << "'";
  for (StringRef key : {"clock_hz", "hbm_bytes_per_s", "ici_bytes_per_s"}) {
    auto v = dyn_cast_or_null<FloatAttr>(getTarget().get(key));
    if (!v || !(v.getValueAsDouble() > 0))
      return emitOpError("target lacks a positive float '") << key << "'";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// BufferOp
//===----------------------------------------------------------------------===//

int64_t BufferOp::getNumElements() {
  int64_t n = 1;
  for (int64_t d : getShape())
    n *= d;
  return n;
}

int64_t BufferOp::getElementBytes() {
  return getDtype() == DType::BF16 ? 2 : 4;
}

LogicalResult BufferOp::verify() {
  for (int64_t d : getShape())
    if (d <= 0)
      return emitOpError("shape dimensions must be positive");
  if (getSpace() == Space::OnChip) {
    if (!getOffset())
      return emitOpError("on-chip buffer needs an offset");
    auto program = (*this)->getParentOfType<ProgramOp>();
    int64_t end = int64_t(*getOffset()) + getNumElements() * getElementBytes();
    if (end > program.getTargetInt("onchip_bytes"))
      return emitOpError("ends at byte ")
             << end << ", beyond the target's "
             << program.getTargetInt("onchip_bytes")
             << " bytes of on-chip memory";
  } else if (getOffset()) {
    return emitOpError("HBM buffer cannot have an offset");
  }
  Role role = getRole();
  if (role != Role::Temp && role != Role::Constant && !getBinding())
    return emitOpError("role '") << stringifyRole(role) << "' needs a binding";
  bool needsValue = role == Role::Constant || getInit() == Init::Value;
  if (needsValue) {
    if (!getValue())
      return emitOpError("needs a value");
    if (getValue()->getNumElements() != getNumElements())
      return emitOpError("needs ") << getNumElements() << " values, has "
                                   << getValue()->getNumElements();
  }
  if (getInit() == Init::Normal && !getInitStd())
    return emitOpError("normal initializer needs a standard deviation");
  if (getHostLayout() == HostLayout::SpaceToDepth2 &&
      (role != Role::Input || getShape().size() != 4 || getShape()[3] % 4 != 0))
    return emitOpError("space-to-depth applies to NHWC inputs whose channels "
                       "are a multiple of 4");
  return success();
}

//===----------------------------------------------------------------------===//
// Instructions
//===----------------------------------------------------------------------===//

namespace {

FailureOr<BufferOp> lookupBuffer(Operation *op, SymbolTableCollection &tables,
                                 FlatSymbolRefAttr name) {
  auto program = op->getParentOfType<ProgramOp>();
  auto buffer = tables.lookupSymbolIn<BufferOp>(program, name.getAttr());
  if (!buffer)
    return op->emitOpError("'")
           << name.getValue() << "' does not name a buffer";
  return buffer;
}

LogicalResult checkViewInBuffer(Operation *op, BufferOp buffer, ViewAttr view,
                                StringRef what) {
  int64_t lo, hi;
  sim::operandAddressRange(*viewToOperand(view, 0), lo, hi);
  if (lo <= hi && (lo < 0 || hi >= buffer.getNumElements()))
    return op->emitOpError()
           << what << " view reaches elements [" << lo << ", " << hi << "] of '"
           << buffer.getSymName() << "', which has " << buffer.getNumElements();
  return success();
}

} // namespace

LogicalResult DmaOp::verify() {
  ViewAttr s = getSrcView(), d = getDstView();
  if (s.getNumRows() != d.getNumRows() || s.getNumCols() != d.getNumCols())
    return emitOpError("source view is ")
           << s.getNumRows() << "x" << s.getNumCols()
           << " but destination view is " << d.getNumRows() << "x"
           << d.getNumCols();
  return success();
}

LogicalResult DmaOp::verifySymbolUses(SymbolTableCollection &tables) {
  FailureOr<BufferOp> src = lookupBuffer(*this, tables, getSrcAttr());
  if (failed(src))
    return failure();
  FailureOr<BufferOp> dst = lookupBuffer(*this, tables, getDstAttr());
  if (failed(dst))
    return failure();
  if (src->getSpace() == dst->getSpace())
    return emitOpError("must copy between HBM and on-chip memory");
  if (src->getDtype() != dst->getDtype())
    return emitOpError("would convert ")
           << stringifyDType(src->getDtype()) << " to "
           << stringifyDType(dst->getDtype())
           << "; only the vector unit converts";
  if (failed(checkViewInBuffer(*this, *src, getSrcView(), "source")))
    return failure();
  return checkViewInBuffer(*this, *dst, getDstView(), "destination");
}

LogicalResult MatmulOp::verify() {
  ViewAttr l = getLhsView(), r = getRhsView(), o = getOutView();
  if (r.getNumRows() != l.getNumCols() || o.getNumRows() != l.getNumRows() ||
      o.getNumCols() != r.getNumCols())
    return emitOpError("shapes disagree: lhs ")
           << l.getNumRows() << "x" << l.getNumCols() << ", rhs "
           << r.getNumRows() << "x" << r.getNumCols() << ", out "
           << o.getNumRows() << "x" << o.getNumCols();
  auto program = (*this)->getParentOfType<ProgramOp>();
  if (int64_t(getMxu()) >= program.getTargetInt("mxu_count"))
    return emitOpError("uses MXU ")
           << getMxu() << " of " << program.getTargetInt("mxu_count");
  if (r.getNumRows() > program.getTargetInt("array_rows") ||
      r.getNumCols() > program.getTargetInt("array_cols"))
    return emitOpError("weight tile ")
           << r.getNumRows() << "x" << r.getNumCols() << " exceeds the "
           << program.getTargetInt("array_rows") << "x"
           << program.getTargetInt("array_cols") << " array";
  return success();
}

LogicalResult MatmulOp::verifySymbolUses(SymbolTableCollection &tables) {
  std::pair<FlatSymbolRefAttr, ViewAttr> operands[] = {
      {getLhsAttr(), getLhsView()},
      {getRhsAttr(), getRhsView()},
      {getOutAttr(), getOutView()}};
  const char *names[] = {"lhs", "rhs", "out"};
  for (int i = 0; i < 3; ++i) {
    FailureOr<BufferOp> b = lookupBuffer(*this, tables, operands[i].first);
    if (failed(b))
      return failure();
    if (b->getSpace() != Space::OnChip)
      return emitOpError() << names[i] << " '" << b->getSymName()
                           << "' is not on chip";
    if (i == 2 && b->getDtype() != DType::F32)
      return emitOpError("accumulates into '")
             << b->getSymName() << "', which is not f32";
    if (failed(checkViewInBuffer(*this, *b, operands[i].second, names[i])))
      return failure();
  }
  return success();
}

static sim::fb::VectorT toVector(VectorOp op) {
  sim::fb::VectorT v;
  v.op = sim::fb::VectorOp(op.getKind());
  for (int64_t o : op.getSrcOffsets())
    v.srcs.emplace_back(0, o);
  for (int64_t o : op.getDstOffsets())
    v.dsts.emplace_back(0, o);
  v.rows = int64_t(op.getRows());
  v.channels = int64_t(op.getChannels());
  v.fattrs.assign(op.getFattrs().begin(), op.getFattrs().end());
  v.iattrs.assign(op.getIattrs().begin(), op.getIattrs().end());
  return v;
}

LogicalResult VectorOp::verify() {
  if (getSrcs().size() != getSrcOffsets().size() ||
      getDsts().size() != getDstOffsets().size())
    return emitOpError("needs one offset per operand");
  std::vector<int64_t> srcExt, dstExt;
  kiln::Status s = sim::vectorExtents(toVector(*this), srcExt, dstExt);
  if (!s.isOk())
    return emitOpError(s.message());
  return success();
}

LogicalResult VectorOp::verifySymbolUses(SymbolTableCollection &tables) {
  std::vector<int64_t> srcExt, dstExt;
  if (!sim::vectorExtents(toVector(*this), srcExt, dstExt).isOk())
    return failure(); // reported by verify()
  auto check = [&](ArrayAttr names, ArrayRef<int64_t> offsets,
                   const std::vector<int64_t> &extents) -> LogicalResult {
    for (size_t i = 0; i < names.size(); ++i) {
      auto name = cast<FlatSymbolRefAttr>(names[i]);
      FailureOr<BufferOp> b = lookupBuffer(*this, tables, name);
      if (failed(b))
        return failure();
      if (b->getSpace() != Space::OnChip)
        return emitOpError("operand '")
               << b->getSymName() << "' is not on chip";
      if (offsets[i] < 0 || offsets[i] + extents[i] > b->getNumElements())
        return emitOpError("operand '")
               << b->getSymName() << "' spans [" << offsets[i] << ", "
               << offsets[i] + extents[i] << ") of " << b->getNumElements()
               << " elements";
    }
    return success();
  };
  if (failed(check(getSrcs(), getSrcOffsets(), srcExt)))
    return failure();
  return check(getDsts(), getDstOffsets(), dstExt);
}

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &tables) {
  for (Attribute a : getBuffers())
    if (failed(lookupBuffer(*this, tables, cast<FlatSymbolRefAttr>(a))))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// custom<Regions>: (@buf[offset], ...)
//===----------------------------------------------------------------------===//

static ParseResult parseRegions(OpAsmParser &p, ArrayAttr &names,
                                DenseI64ArrayAttr &offsets) {
  SmallVector<Attribute> syms;
  SmallVector<int64_t> offs;
  if (p.parseCommaSeparatedList(AsmParser::Delimiter::Paren, [&] {
        FlatSymbolRefAttr sym;
        int64_t off;
        if (p.parseAttribute(sym) || p.parseLSquare() || p.parseInteger(off) ||
            p.parseRSquare())
          return failure();
        syms.push_back(sym);
        offs.push_back(off);
        return success();
      }))
    return failure();
  names = p.getBuilder().getArrayAttr(syms);
  offsets = p.getBuilder().getDenseI64ArrayAttr(offs);
  return success();
}

static void printRegions(OpAsmPrinter &p, Operation *, ArrayAttr names,
                         DenseI64ArrayAttr offsets) {
  p << '(';
  for (size_t i = 0; i < names.size(); ++i) {
    if (i)
      p << ", ";
    p.printAttribute(names[i]);
    p << '[' << offsets[i] << ']';
  }
  p << ')';
}

#define GET_OP_CLASSES
#include "dialects/Sa/IR/SaOps.cpp.inc"
