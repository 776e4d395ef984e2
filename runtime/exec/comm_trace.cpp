//===- comm_trace.cpp - Recording and reading communication traces --------===//

#include "kiln/rt/exec/comm_trace.h"

#include "kiln/base/json.h"
#include "kiln/rt/exec/clock.h"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <optional>

namespace kiln::rt::exec {

double TraceStep::computeSeconds() const {
  double total = tail;
  for (const TraceEvent &e : events)
    total += e.computeBefore;
  return total;
}

double TraceStep::callSeconds() const {
  double total = 0;
  for (const TraceEvent &e : events)
    total += e.callSeconds;
  return total;
}

namespace {

using Clock = RunClock;

double secondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// Forwards every call to the real communicator; inside a traced step it
/// notes the compute before each call and the call's own time.
class TracingComm final : public Comm {
public:
  TracingComm(std::unique_ptr<Comm> inner, std::string path, std::FILE *file)
      : inner(std::move(inner)), path(std::move(path)), file(file) {}
  ~TracingComm() override {
    if (file)
      std::fclose(file);
  }

  int rank() const override { return inner->rank(); }
  int size() const override { return inner->size(); }
  const char *backend() const override { return inner->backend(); }

  Status setBuckets(const std::vector<Bucket> &buckets,
                    uint8_t *arena) override {
    KILN_RETURN_IF_ERROR(inner->setBuckets(buckets, arena));
    std::string line = fmt::format(
        "{{\"kiln_comm_trace\":1,\"rank\":{},\"ranks\":{},\"backend\":{},"
        "\"buckets\":[",
        rank(), size(), json::quote(backend()));
    std::vector<BucketPlan> plans = planBuckets(buckets);
    for (size_t i = 0; i < plans.size(); ++i)
      line += fmt::format("{}[{},\"{}\"]", i ? "," : "", plans[i].count,
                          dtypeInfo(plans[i].reduceType).name);
    line += "]}\n";
    return write(line);
  }

  void allreduceStart(int32_t bucket) override {
    traced('s', bucket, [&] { inner->allreduceStart(bucket); });
  }
  void allreduceWait(int32_t bucket) override {
    traced('w', bucket, [&] { inner->allreduceWait(bucket); });
  }
  void progress() override {
    traced('p', -1, [&] { inner->progress(); });
  }
  BucketWaits bucketWaits() const override { return inner->bucketWaits(); }
  int64_t bucketBytes() const override { return inner->bucketBytes(); }
  StatusOr<double> timeBucketsAlone(int repeats) override {
    return inner->timeBucketsAlone(repeats);
  }

  Status broadcast(void *data, size_t bytes, int root) override {
    return traced('c', int64_t(bytes),
                  [&] { return inner->broadcast(data, bytes, root); });
  }
  Status allreduceSum(double *values, int count) override {
    return traced('r', count,
                  [&] { return inner->allreduceSum(values, count); });
  }
  Status allreduceMin(int64_t *values, int count) override {
    return traced('m', count,
                  [&] { return inner->allreduceMin(values, count); });
  }
  StatusOr<std::vector<uint64_t>> allgather(uint64_t value) override {
    return traced('g', -1, [&] { return inner->allgather(value); });
  }
  StatusOr<std::vector<std::string>>
  allgatherText(const std::string &text) override {
    return traced('t', int64_t(text.size()),
                  [&] { return inner->allgatherText(text); });
  }
  Status barrier() override {
    return traced('b', -1, [&] { return inner->barrier(); });
  }

  void traceStepBegin(int64_t step) override {
    stepNumber = step;
    stepStart = lastReturn = Clock::now();
    events.clear();
    inStep = true;
  }

  Status traceStepEnd() override {
    if (!inStep)
      return Status::ok();
    inStep = false;
    Clock::time_point now = Clock::now();
    std::string line = fmt::format(
        "{{\"step\":{},\"seconds\":{:.9g},\"tail\":{:.9g},\"events\":[",
        stepNumber, secondsBetween(stepStart, now),
        secondsBetween(lastReturn, now));
    for (size_t i = 0; i < events.size(); ++i) {
      const TraceEvent &e = events[i];
      line += fmt::format("{}[\"{}\",{:.9g},{:.9g},{}]", i ? "," : "", e.kind,
                          e.computeBefore, e.callSeconds, e.argument);
    }
    line += "]}\n";
    return write(line);
  }

  [[noreturn]] void abort(int code) override {
    if (file)
      std::fflush(file);
    inner->abort(code);
  }
  void finalize() override {
    if (file && std::fclose(file) != 0)
      std::fprintf(stderr, "kiln: warning: closing %s: %s\n", path.c_str(),
                   std::strerror(errno));
    file = nullptr;
    inner->finalize();
  }

private:
  std::unique_ptr<Comm> inner;
  std::string path;
  std::FILE *file;
  bool inStep = false;
  int64_t stepNumber = 0;
  Clock::time_point stepStart, lastReturn;
  std::vector<TraceEvent> events;

  template <typename Call>
  auto traced(char kind, int64_t argument, Call &&call) -> decltype(call()) {
    if (!inStep)
      return call();
    Clock::time_point before = Clock::now();
    struct Note {
      TracingComm &self;
      char kind;
      int64_t argument;
      Clock::time_point before;
      ~Note() {
        Clock::time_point after = Clock::now();
        self.events.push_back({kind, secondsBetween(self.lastReturn, before),
                               secondsBetween(before, after), argument});
        self.lastReturn = after;
      }
    } note{*this, kind, argument, before};
    return call();
  }

  Status write(const std::string &line) {
    if (std::fwrite(line.data(), 1, line.size(), file) != line.size())
      return errnoStatus(__FILE__, __LINE__, "writing " + path, errno);
    return Status::ok();
  }
};

Status lineError(const std::string &path, size_t line,
                 const std::string &message) {
  return invalidArgumentError(fmt::format("{}:{}: {}", path, line, message));
}

bool readNumber(const json::Value *v, double &out) {
  if (!v || v->kind != json::Value::Kind::Number)
    return false;
  char *end = nullptr;
  out = std::strtod(v->text.c_str(), &end);
  return *end == '\0';
}

bool readInteger(const json::Value *v, int64_t &out) {
  double x;
  if (!readNumber(v, x) || x != double(int64_t(x)))
    return false;
  out = int64_t(x);
  return true;
}

constexpr const char *kKinds = "swprmgtbc";

} // namespace

StatusOr<std::unique_ptr<Comm>>
createTracingComm(std::unique_ptr<Comm> &inner, const std::string &pathPattern) {
  std::string path = pathPattern;
  size_t at = path.find("{rank}");
  if (at == std::string::npos && inner->size() > 1)
    return invalidArgumentError(fmt::format(
        "--comm-trace {}: {} ranks would write one file; put {{rank}} in the "
        "name",
        pathPattern, inner->size()));
  if (at != std::string::npos)
    path.replace(at, 6, std::to_string(inner->rank()));
  std::FILE *file = std::fopen(path.c_str(), "w");
  KILN_CHECK_LIBC_PTR(file, "--comm-trace: opening " + path);
  return std::unique_ptr<Comm>(
      new TracingComm(std::move(inner), std::move(path), file));
}

StatusOr<CommTrace> readCommTrace(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return errnoStatus(__FILE__, __LINE__, "opening " + path, errno);
  CommTrace trace;
  std::string text;
  size_t lineNumber = 0;
  bool haveHeader = false;
  while (std::getline(in, text)) {
    ++lineNumber;
    if (text.empty())
      continue;
    json::Value line;
    Status parsed = json::parse(text, line);
    if (!parsed.isOk())
      return lineError(path, lineNumber, parsed.message());
    if (line.kind != json::Value::Kind::Object)
      return lineError(path, lineNumber, "expected a JSON object");
    if (!haveHeader) {
      int64_t version = 0, rank = 0, ranks = 0;
      if (!readInteger(line.member("kiln_comm_trace"), version) ||
          version != 1)
        return lineError(path, lineNumber,
                         "not a communication trace (the first line must "
                         "have \"kiln_comm_trace\":1)");
      const json::Value *buckets = line.member("buckets");
      const json::Value *backend = line.member("backend");
      if (!readInteger(line.member("rank"), rank) ||
          !readInteger(line.member("ranks"), ranks) || ranks < 1 ||
          rank < 0 || rank >= ranks || !buckets ||
          buckets->kind != json::Value::Kind::Array || !backend ||
          backend->kind != json::Value::Kind::String)
        return lineError(path, lineNumber,
                         "the header needs rank < ranks, backend and buckets");
      trace.rank = int(rank);
      trace.ranks = int(ranks);
      trace.backend = backend->text;
      for (const json::Value &b : buckets->elements) {
        TraceBucket bucket;
        std::optional<DType> type;
        if (b.kind != json::Value::Kind::Array || b.elements.size() != 2 ||
            !readInteger(&b.elements[0], bucket.count) || bucket.count < 0 ||
            b.elements[1].kind != json::Value::Kind::String ||
            !(type = dtypeFromName(b.elements[1].text)) ||
            (*type != DType::F32 && *type != DType::F64))
          return lineError(path, lineNumber,
                           fmt::format("bucket {} must be [count, \"f32\" or "
                                       "\"f64\"]",
                                       trace.buckets.size()));
        bucket.type = *type;
        trace.buckets.push_back(bucket);
      }
      haveHeader = true;
      continue;
    }
    TraceStep step;
    const json::Value *events = line.member("events");
    if (!readInteger(line.member("step"), step.step) ||
        !readNumber(line.member("seconds"), step.seconds) ||
        !readNumber(line.member("tail"), step.tail) || step.tail < 0 ||
        !events || events->kind != json::Value::Kind::Array)
      return lineError(path, lineNumber,
                       "a step needs step, seconds, tail and events");
    for (const json::Value &e : events->elements) {
      TraceEvent event;
      size_t index = step.events.size();
      if (e.kind != json::Value::Kind::Array || e.elements.size() != 4 ||
          e.elements[0].kind != json::Value::Kind::String ||
          e.elements[0].text.size() != 1 ||
          !std::strchr(kKinds, e.elements[0].text[0]) ||
          !readNumber(&e.elements[1], event.computeBefore) ||
          !readNumber(&e.elements[2], event.callSeconds) ||
          !readInteger(&e.elements[3], event.argument) ||
          event.computeBefore < 0 || event.callSeconds < 0)
        return lineError(path, lineNumber,
                         fmt::format("event {} must be [kind ({}), compute "
                                     "seconds, call seconds, argument]",
                                     index, kKinds));
      event.kind = e.elements[0].text[0];
      bool bucketCall = event.kind == 's' || event.kind == 'w';
      if (bucketCall && (event.argument < 0 ||
                         event.argument >= int64_t(trace.buckets.size())))
        return lineError(path, lineNumber,
                         fmt::format("event {} names bucket {}, but the "
                                     "trace has {} buckets",
                                     index, event.argument,
                                     trace.buckets.size()));
      if ((event.kind == 'r' || event.kind == 'm') &&
          (event.argument < 1 || event.argument > (1 << 20)))
        return lineError(path, lineNumber,
                         fmt::format("event {}: a reduction of {} values",
                                     index, event.argument));
      step.events.push_back(event);
    }
    trace.steps.push_back(std::move(step));
  }
  if (!haveHeader)
    return invalidArgumentError(
        fmt::format("{}: empty; not a communication trace", path));
  return trace;
}

} // namespace kiln::rt::exec
