//===- Builder.h - Building programs with automatic synchronization -*- C++
//-*-===//
//
// Part of Kiln. Compilers and tests emit instructions in a sequentially
// correct order; the builder adds the dependencies the parallel units need:
//
// - per buffer, the element ranges each unit read and wrote: a reader
//   waits for the writers of the elements it reads on every other unit, a
//   writer also for their readers (units run in order and their results
//   become ready in order, so a unit's last such instruction stands for its
//   earlier ones). DMA and MXU operands touch the range of their view, so a
//   consumer's tile waits for the producer's tiles it reads, not for the
//   whole buffer; vector regions count as the whole buffer. An MXU pass
//   whose operand an earlier pass of the same MXU wrote waits for that pass
//   too, since the unit streams on while a result drains (accumulating into
//   the same output needs no wait);
// - on-chip memory reuse: a buffer placed over bytes that earlier buffers
//   used waits, at its first use, for every access to those buffers.
//
// It also computes the live range of every on-chip buffer from its uses.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SIM_BUILDER_H
#define KILN_SIM_BUILDER_H

#include "kiln/sim/Program.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::sim {

/// One coordinate of an operand view (see fb::Coord).
struct CoordSpec {
  int64_t stride = 1, offset = 0, bound = 1;
  std::vector<int64_t> row, col;
};

/// An operand view under construction.
struct OperandSpec {
  uint32_t buffer = 0;
  int64_t base = 0;
  std::vector<int64_t> rows, cols;
  std::vector<CoordSpec> coords;

  std::unique_ptr<fb::OperandT> build() const;
  /// A contiguous rows x cols matrix at `offset` with leading dimension `ld`.
  static OperandSpec matrix(uint32_t buffer, int64_t offset, int64_t rows,
                            int64_t cols, int64_t ld);
  /// The transpose view of a contiguous matrix stored rows x cols.
  static OperandSpec transposed(uint32_t buffer, int64_t offset, int64_t rows,
                                int64_t cols, int64_t ld);
};

struct BufferSpec {
  std::string name;
  fb::DType dtype = fb::DType::F32;
  fb::Space space = fb::Space::HBM;
  fb::Role role = fb::Role::Temp;
  std::vector<int64_t> shape;
  std::string binding;
  /// On-chip byte offset.
  int64_t offset = 0;
  fb::Init init = fb::Init::None;
  float initStd = 0;
  std::vector<float> data;
  fb::HostLayout hostLayout = fb::HostLayout::Identity;
};

/// Receives the instructions and buffers a builder produces. The default
/// sink assembles an fb::ProgramT; the kiln-to-sa conversion has one that
/// creates `sa` ops.
class ProgramSink {
public:
  virtual ~ProgramSink() = default;
  virtual void addBuffer(const BufferSpec &spec) = 0;
  virtual void addSourceOp(const std::string &kind,
                           const std::string &layer) = 0;
  virtual void addInstruction(std::unique_ptr<fb::InstructionT> instr) = 0;
  /// Called once at the end with each on-chip buffer's live range.
  virtual void setLiveRange(uint32_t buffer, uint32_t begin, uint32_t end) = 0;
};

class ProgramBuilder {
public:
  explicit ProgramBuilder(ProgramSink &sink) : sink(sink) {}

  uint32_t addBuffer(BufferSpec spec);
  const BufferSpec &buffer(uint32_t id) const { return buffers[id].spec; }
  size_t numBuffers() const { return buffers.size(); }

  /// Starts a new source op; later instructions belong to it.
  uint32_t beginSourceOp(const std::string &kind, const std::string &layer);

  uint32_t dma(const OperandSpec &src, const OperandSpec &dst);
  uint32_t matmul(uint32_t mxu, const OperandSpec &lhs, const OperandSpec &rhs,
                  const OperandSpec &out, bool accumulate);
  uint32_t vector(fb::VectorOp op, std::vector<fb::Region> srcs,
                  std::vector<fb::Region> dsts, int64_t rows, int64_t channels,
                  std::vector<double> fattrs = {},
                  std::vector<int64_t> iattrs = {});
  uint32_t allReduce(std::vector<uint32_t> buffers);

  size_t numInstructions() const { return count; }

  /// Elements [lo, hi) of a buffer that an instruction reads or writes.
  struct Use {
    uint32_t buffer = 0;
    int64_t lo = 0, hi = INT64_MAX;
  };
  /// An instruction held back by a capture, with what emit() needs.
  struct Captured {
    std::unique_ptr<fb::InstructionT> instr;
    uint32_t unit = 0, op = 0;
    std::vector<Use> reads, writes, drainedReads;
  };
  using Capture = std::vector<Captured>;
  /// Until endCapture(), instructions are recorded instead of emitted
  /// (buffers and source ops are added as usual; the instruction methods
  /// return no index).
  void beginCapture() { capturing = true; }
  Capture endCapture() {
    capturing = false;
    return std::move(captured);
  }
  /// Emits captures (the ops of one step, in program order) merged into
  /// one order, so that the ops overlap on the units they use, with the
  /// results of running them one after the other: an instruction of a
  /// later capture that touches elements an instruction of an earlier one
  /// writes (or writes elements it reads) is held back until that one is
  /// out, so a consumer may take a producer's output tile by tile. The
  /// merge schedules all of them together on shared units with estimated
  /// durations (the DMA engines sharing the HBM channel) and takes, at
  /// each step, the next instruction of the capture whose next one would
  /// start first, so that an instruction which must wait is not queued on
  /// an in-order unit ahead of work that could run meanwhile. The caller
  /// guarantees that the captures do not share on-chip bytes through
  /// different buffers; dependencies follow from the merged order.
  void emitInterleaved(std::vector<Capture> captures,
                       const TargetConfig &target);
  /// The estimated cycles of `steps` run one after the other, each step's
  /// captures merged as emitInterleaved merges them: the schedule the merge
  /// makes, carried on from step to step on the same units, where an
  /// instruction touching an on-chip buffer also waits for the accesses to
  /// the buffers whose bytes that one reuses (as emit() makes it wait). A
  /// caller compares ways of lowering the same ops with it.
  uint64_t estimateCycles(const std::vector<std::vector<Capture>> &steps,
                          const TargetConfig &target) const;

  /// Until endTrial(), the buffers and source ops added are held back from
  /// the sink, and instructions must be captured: a caller lowers one way
  /// of running some ops, estimates it, and keeps it or drops it.
  void beginTrial();
  /// Passes what the trial added to the sink (`keep`), or forgets it: the
  /// builder is then as at beginTrial() (buffer ids are reused).
  void endTrial(bool keep);

  /// Reports live ranges to the sink. Buffers never used get [0, 0].
  void finish();

private:
  /// A range of a buffer one instruction read or wrote.
  struct Access {
    int64_t lo, hi;
    uint32_t unit, index;
    bool write;
  };
  struct BufferState {
    BufferSpec spec;
    /// Accesses later ones may have to wait for: a write drops those it
    /// covers (whoever waits for it then waits for them), a read the same
    /// unit's reads it covers.
    std::vector<Access> accesses;
    /// Earlier buffers whose bytes this one reuses.
    std::vector<uint32_t> predecessors;
    bool used = false;
    uint32_t first = 0, last = 0;
  };
  /// `drainedReads` are read as whole results of this unit's earlier
  /// instructions (an MXU's operands): they also wait for this unit's last
  /// writer.
  uint32_t emit(std::unique_ptr<fb::InstructionT> instr, uint32_t unit,
                const std::vector<Use> &reads, const std::vector<Use> &writes,
                const std::vector<Use> &drainedReads = {});
  uint32_t dmaUnit(uint32_t srcBuffer) const;
  /// An instruction's estimated time on its unit and result latency.
  void estimate(const fb::InstructionT &in, const TargetConfig &target,
                uint64_t &busy, uint64_t &latency) const;
  /// The order emitInterleaved emits.
  Capture merge(std::vector<Capture> captures,
                const TargetConfig &target) const;
  /// Unit and buffer times of an estimated schedule.
  struct Schedule;
  /// Schedules one step's captures after what `s` holds; appends the order
  /// (capture, instruction) to `order` if given.
  void schedule(const std::vector<Capture> &captures,
                const TargetConfig &target, Schedule &s,
                std::vector<std::pair<size_t, size_t>> *order) const;

  ProgramSink &sink;
  std::vector<BufferState> buffers;
  /// On-chip bytes -> the last buffer placed there: start -> (end, buffer).
  std::map<int64_t, std::pair<int64_t, uint32_t>> owners;
  uint32_t count = 0;
  uint32_t currentOp = 0;
  bool capturing = false;
  Capture captured;
  uint32_t numOps = 0;
  /// A trial's state at beginTrial() and what it held back from the sink,
  /// in order (a buffer, or a source op's kind and layer).
  struct Trial {
    bool active = false;
    size_t buffers = 0;
    std::map<int64_t, std::pair<int64_t, uint32_t>> owners;
    uint32_t numOps = 0, currentOp = 0;
    std::vector<std::pair<int64_t, std::pair<std::string, std::string>>>
        held;
  } trial;
};

/// A sink that assembles an fb::ProgramT.
class ProgramTSink : public ProgramSink {
public:
  ProgramTSink(const TargetConfig &target, std::string name, int64_t batch);
  void addBuffer(const BufferSpec &spec) override;
  void addSourceOp(const std::string &kind, const std::string &layer) override;
  void addInstruction(std::unique_ptr<fb::InstructionT> instr) override;
  void setLiveRange(uint32_t buffer, uint32_t begin, uint32_t end) override;
  std::unique_ptr<Program> take() { return std::move(program); }

private:
  std::unique_ptr<Program> program;
};

/// The fb::BufferT of a spec (live range left at 0).
std::unique_ptr<fb::BufferT> makeBuffer(const BufferSpec &spec);

} // namespace kiln::sim

#endif // KILN_SIM_BUILDER_H
