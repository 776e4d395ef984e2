//===- BaseTest.cpp - Tests of kiln_base ----------------------------------===//
#include "kiln/base/flags.h"
#include "kiln/base/json.h"
#include "kiln/base/status.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace kiln {
namespace {

enum class Mode { Fast, Slow };

struct Parsed {
  int64_t count = 0;
  double rate = 0;
  bool on = false;
  Mode mode = Mode::Fast;
  std::string name;
  std::vector<std::string> rest;
};

/// Parses `args` with a table of one flag of each kind.
Status parse(std::vector<std::string> args, Parsed &p) {
  flags::Parser parser;
  parser.add("--count", flags::intFlag(p.count, 1, 10));
  parser.add("--rate",
             flags::valueFlag([&](const std::string &f, const std::string &v) {
               return flags::parseDouble(f, v, 0, HUGE_VAL, p.rate);
             }));
  parser.add("--on", flags::switchFlag(p.on));
  parser.add("--mode", flags::enumFlag(p.mode, {{"fast", Mode::Fast},
                                                {"slow", Mode::Slow}}));
  flags::Flag name = flags::stringFlag(p.name);
  name.valueMayLookLikeAFlag = false;
  name.missingValueMessage = "--name needs a name";
  parser.add("--name", std::move(name));
  parser.add("--old", flags::rejectedFlag("--old is gone"));
  parser.setPositional([&](const std::string &arg) {
    p.rest.push_back(arg);
    return Status::ok();
  });
  std::vector<char *> argv = {const_cast<char *>("tool")};
  for (std::string &a : args)
    argv.push_back(a.data());
  return parser.parse(int(argv.size()), argv.data());
}

TEST(FlagsTest, ReadsBothValueForms) {
  Parsed p;
  ASSERT_TRUE(parse({"--count", "3", "--rate=0.5", "--on", "--mode=slow",
                     "--name", "x", "file"},
                    p)
                  .isOk());
  EXPECT_EQ(p.count, 3);
  EXPECT_EQ(p.rate, 0.5);
  EXPECT_TRUE(p.on);
  EXPECT_EQ(p.mode, Mode::Slow);
  EXPECT_EQ(p.name, "x");
  EXPECT_EQ(p.rest, std::vector<std::string>{"file"});
}

TEST(FlagsTest, ErrorsNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Case &c : std::vector<Case>{
           {{"--bogus"}, "unknown flag '--bogus' (--help lists the flags)"},
           {{"--count"}, "--count needs a value"},
           {{"--count", "x"}, "--count expects an integer, got 'x'"},
           {{"--count=11"}, "--count must be between 1 and 10, got 11"},
           {{"--rate=-1"}, "--rate must be at least 0, got -1"},
           {{"--rate=nan"}, "--rate expects a number, got 'nan'"},
           {{"--on=1"}, "--on takes no value"},
           {{"--mode", "medium"}, "--mode expects fast or slow, got 'medium'"},
           {{"--name", "--on"}, "--name needs a name"},
           {{"--old=1"}, "--old is gone"},
       }) {
    Parsed p;
    Status s = parse(c.args, p);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.message;
    EXPECT_EQ(s.message(), c.message);
  }
}

TEST(FlagsTest, BoundsReadAsWritten) {
  double x;
  EXPECT_EQ(flags::parseDouble("--t", "2e6", 0, 1e6, x).message(),
            "--t must be between 0 and 1000000, got 2e6");
  EXPECT_EQ(flags::parseDouble("--e", "1e30", 0, 9999999999.0, x).message(),
            "--e must be between 0 and 9999999999, got 1e30");
}

TEST(JsonTest, QuoteEscapes) {
  EXPECT_EQ(json::quote("a\"b\\c\n\t\x01"), "\"a\\\"b\\\\c\\n\\t\\u0001\"");
  EXPECT_EQ(json::quote("\xc3\xbc"), "\"\xc3\xbc\"");
}

TEST(JsonTest, ParseErrorsSayWhere) {
  json::Value v;
  Status s = json::parse("{\"a\": }", v);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(" at byte 6 "), std::string::npos) << s.message();
  ASSERT_TRUE(json::parse(" {\"a\": [1, true]} ", v).isOk());
  uint64_t n = 0;
  EXPECT_TRUE(v.member("a")->elements[0].asUnsigned(n));
  EXPECT_EQ(n, 1u);
}

TEST(StatusTest, MakeStatusAppendsWhere) {
  Status s = KILN_STATUS(kDataLoss, "bad record");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message().rfind("bad record [BaseTest.cpp:", 0), 0u)
      << s.message();
  EXPECT_EQ(Status(StatusCode::kNotFound, "x").toString(), "NOT_FOUND: x");
  EXPECT_EQ(invalidArgumentError("y").message(), "y");
}

} // namespace
} // namespace kiln
