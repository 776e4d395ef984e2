//===- events_test.cpp - TensorBoard event files, byte for byte -----------===//

#include "exec_test_util.h"

#include "kiln/rt/exec/events.h"
#include "kiln/rt/exec/metrics.h"
#include "kiln/rt/tfrecord.h"

#include <dirent.h>

#include <fstream>
#include <sstream>

namespace kiln::rt::exec::test {
namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string s;
  for (int v : values)
    s.push_back(static_cast<char>(v));
  return s;
}

TEST(EventsTest, FileVersionEventIsTensorFlowsEncoding) {
  // Event{wall_time: 1.5, file_version: "brain.Event:2"}, as
  // tensorflow/core/util/event.proto encodes it.
  std::string expected = bytes({0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0x1a, 13}) +
                         "brain.Event:2";
  EXPECT_EQ(encodeFileVersionEvent(1.5), expected);
}

TEST(EventsTest, ScalarEventIsTensorFlowsEncoding) {
  // Event{wall_time: 1.5, step: 300, summary: {value: [{tag: "train/loss",
  // simple_value: 0.25}]}}: step 300 is the varint ac 02, 0.25f is 3e800000.
  std::string value = bytes({0x0a, 10}) + "train/loss" +
                      bytes({0x15, 0x00, 0x00, 0x80, 0x3e});
  std::string summary = bytes({0x0a, int(value.size())}) + value;
  std::string expected = bytes({0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f}) +
                         bytes({0x10, 0xac, 0x02}) +
                         bytes({0x2a, int(summary.size())}) + summary;
  EXPECT_EQ(encodeScalarsEvent(1.5, 300, {{"train/loss", 0.25}}), expected);
}

std::vector<std::string> eventFiles(const std::string &dir) {
  std::vector<std::string> names;
  DIR *d = ::opendir(dir.c_str());
  while (dirent *e = ::readdir(d))
    if (std::string(e->d_name).find("tfevents") != std::string::npos)
      names.push_back(dir + "/" + e->d_name);
  ::closedir(d);
  return names;
}

std::vector<std::string> records(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  std::string data = s.str(), record;
  std::vector<std::string> out;
  // Unframe by hand: length, its CRC, data, the data's CRC (checked by
  // re-framing the data and comparing).
  for (size_t at = 0; at < data.size();) {
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i)
      length = length << 8 | uint8_t(data[at + i]);
    record = data.substr(at + kTfRecordHeaderBytes, length);
    std::string framed;
    appendTfRecord(framed, record);
    EXPECT_EQ(framed, data.substr(at, framed.size()));
    out.push_back(record);
    at += framed.size();
  }
  return out;
}

TEST(EventsTest, MetricsRowsBecomeScalarsAtTheirStep) {
  TempDir dir;
  {
    MetricsLog log;
    ASSERT_TRUE(log.open(dir.path()).isOk());
    ASSERT_TRUE(log.write({JsonField::text("kind", "train"),
                           JsonField::integer("step", 300),
                           JsonField::number("loss", 0.25)})
                    .isOk());
    // No step: the last one seen; the layer's name is in the tag.
    ASSERT_TRUE(log.write({JsonField::text("kind", "profile_layer"),
                           JsonField::text("layer", "layer1.0.conv1"),
                           JsonField::text("loc", "m.mlir:12"),
                           JsonField::number("library_sec", 0.5)})
                    .isOk());
    // An op row: its line (the ops of a layer share the layer's name).
    ASSERT_TRUE(log.write({JsonField::text("kind", "profile_op"),
                           JsonField::text("op", "kiln.relu"),
                           JsonField::text("layer", "layer1.0.bn1"),
                           JsonField::text("loc", "m.mlir:14"),
                           JsonField::number("seconds", 0.25)})
                    .isOk());
  }
  std::vector<std::string> files = eventFiles(dir.path());
  ASSERT_EQ(files.size(), 1u);
  std::vector<std::string> events = records(files[0]);
  ASSERT_EQ(events.size(), 4u);
  // Wall times differ run to run: compare what follows them.
  EXPECT_EQ(events[0].substr(9), bytes({0x1a, 13}) + "brain.Event:2");
  EXPECT_EQ(events[1].substr(9), encodeScalarsEvent(0, 300, {{"train/loss", 0.25}}).substr(9));
  EXPECT_EQ(events[2].substr(9),
            encodeScalarsEvent(
                0, 300, {{"profile_layer/layer1.0.conv1/library_sec", 0.5}})
                .substr(9));
  EXPECT_EQ(events[3].substr(9),
            encodeScalarsEvent(0, 300,
                               {{"profile_op/m.mlir:14/seconds", 0.25}})
                .substr(9));
}

TEST(EventsTest, TensorboardOffWritesNoEventFile) {
  TempDir dir;
  MetricsLog log;
  ASSERT_TRUE(log.open(dir.path(), /*tensorboard=*/false).isOk());
  ASSERT_TRUE(log.write({JsonField::text("kind", "train"),
                         JsonField::integer("step", 1)})
                  .isOk());
  EXPECT_TRUE(eventFiles(dir.path()).empty());
}

} // namespace
} // namespace kiln::rt::exec::test
