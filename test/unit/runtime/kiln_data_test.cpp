//===- kiln_data_test.cpp - kiln-data imagenet on a small raw folder ------===//
#include "test_util.h"

#include <map>
#include <set>
#include <sys/stat.h>

#ifndef KILN_DATA_EXE
#error "KILN_DATA_EXE must name the kiln-data binary"
#endif

namespace kiln::rt {
namespace {

struct ToolRun {
  int exitCode;
  std::string output;
};

ToolRun runKilnData(const std::string &args, const std::string &logPath) {
  std::string cmd = std::string("'") + KILN_DATA_EXE + "' " + args + " > '" +
                    logPath + "' 2>&1";
  int rc = std::system(cmd.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, test::readFileBytes(logPath)};
}

/// raw/train/<synset>/*.JPEG for 3 synsets x 6 images, raw/validation with
/// 4 images and synset_labels.txt.
void makeRawImagenet(const std::string &raw) {
  const char *synsets[] = {"n01440764", "n01443537", "n01484850"};
  ::mkdir((raw + "/train").c_str(), 0777);
  ::mkdir((raw + "/validation").c_str(), 0777);
  int n = 0;
  for (const char *s : synsets) {
    ::mkdir((raw + "/train/" + s).c_str(), 0777);
    for (int i = 0; i < 6; ++i, ++n) {
      int w = 40 + n, h = 30 + n;
      test::writeFile(
          raw + "/train/" + s + "/" + s + "_" + std::to_string(i) + ".JPEG",
          test::encodeJpeg(test::photoPattern(w, h, n), w, h, 3, 90));
    }
  }
  std::string labels;
  for (int i = 0; i < 4; ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "ILSVRC2012_val_%08d.JPEG", i + 1);
    test::writeFile(
        raw + "/validation/" + name,
        test::encodeJpeg(test::photoPattern(32, 32, 50 + i), 32, 32, 3, 90));
    labels += std::string(synsets[(i * 2) % 3]) + "\n";
  }
  test::writeFile(raw + "/synset_labels.txt", labels);
}

TEST(KilnData, ImagenetShardsHaveTheScriptsNamesKeysAndLabels) {
  test::TempDir dir;
  std::string raw = dir.path() + "/raw", out = dir.path() + "/out";
  ::mkdir(raw.c_str(), 0777);
  makeRawImagenet(raw);
  ToolRun r =
      runKilnData("imagenet --input '" + raw + "' --output '" + out +
                      "' --train-shards 3 --validation-shards 2 --quiet",
                  dir.path() + "/log");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("22 records in 5 shards"), std::string::npos)
      << r.output;

  auto train = listShards(out, "train");
  ASSERT_TRUE(train.isOk());
  ASSERT_EQ(train->size(), 3u);
  EXPECT_EQ(train->front(), out + "/train-00000-of-00003");
  auto val = listShards(out, "validation");
  ASSERT_TRUE(val.isOk());
  EXPECT_EQ(val->back(), out + "/validation-00001-of-00002");

  std::map<std::string, int64_t> labelOf;
  std::set<std::string> files;
  std::vector<std::set<int64_t>> classesPerShard;
  for (const auto &path : *train) {
    auto reader = RecordReader::openFile(path);
    ASSERT_TRUE(reader.isOk());
    std::string rec;
    classesPerShard.emplace_back();
    while ((*reader)->next(rec).isOk()) {
      Example ex;
      ASSERT_TRUE(ex.parse(rec).isOk());
      for (auto key : {keys::kEncoded, keys::kSynset, keys::kFormat,
                       keys::kFilename, keys::kColorspace})
        ASSERT_TRUE(ex.getBytes(key).isOk()) << key;
      for (auto key :
           {keys::kLabel, keys::kHeight, keys::kWidth, keys::kChannels})
        ASSERT_TRUE(ex.getInt64(key).isOk()) << key;
      std::string synset(*ex.getBytes(keys::kSynset));
      int64_t label = *ex.getInt64(keys::kLabel);
      EXPECT_TRUE(labelOf.emplace(synset, label).first->second == label);
      EXPECT_EQ(*ex.getBytes(keys::kFormat), "JPEG");
      EXPECT_EQ(*ex.getBytes(keys::kColorspace), "RGB");
      auto info = readJpegInfo(*ex.getBytes(keys::kEncoded));
      ASSERT_TRUE(info.isOk());
      EXPECT_EQ(*ex.getInt64(keys::kWidth), info->width);
      EXPECT_EQ(*ex.getInt64(keys::kHeight), info->height);
      files.insert(std::string(*ex.getBytes(keys::kFilename)));
      classesPerShard.back().insert(label);
    }
  }
  EXPECT_EQ(files.size(), 18u);
  // 1-based labels over the sorted synsets.
  EXPECT_EQ(labelOf["n01440764"], 1);
  EXPECT_EQ(labelOf["n01443537"], 2);
  EXPECT_EQ(labelOf["n01484850"], 3);
  // Shuffled before sharding: shards are not single-class.
  for (const auto &c : classesPerShard)
    EXPECT_GT(c.size(), 1u);

  // The pipeline reads them (eval path).
  kiln_rt_dataset_config_t c;
  kiln_rt_dataset_config_init(&c);
  c.path = out.c_str();
  c.split = "validation";
  c.batch_size = 4;
  c.height = c.width = 16;
  c.augment = KILN_RT_AUGMENT_CENTER_CROP;
  c.shuffle = 0;
  c.interleave = 1; // file order, so records come in synset_labels.txt order
  kiln_rt_dataset_t *ds = nullptr;
  test::CStatus st{kiln_rt_dataset_open(&c, &ds)};
  ASSERT_TRUE(st.ok()) << st.message();
  kiln_rt_batch_t b;
  test::CStatus nb{kiln_rt_dataset_next_batch(ds, &b)};
  ASSERT_TRUE(nb.ok()) << nb.message();
  ASSERT_EQ(b.size, 4u);
  // synset_labels.txt order: synsets 0, 2, 1, 0 -> labels 0, 2, 1, 0.
  EXPECT_EQ(std::vector<int32_t>(b.labels, b.labels + 4),
            (std::vector<int32_t>{0, 2, 1, 0}));
  kiln_rt_dataset_close(ds);
}

TEST(KilnData, BadInputsAreNamedOrSkipped) {
  test::TempDir dir;
  std::string raw = dir.path() + "/raw", out = dir.path() + "/out";
  ::mkdir(raw.c_str(), 0777);
  makeRawImagenet(raw);
  std::string png = raw + "/train/n01443537/n01443537_9.JPEG";
  test::writeFile(png, "\x89PNG\r\n\x1a\nnot really a png");
  ToolRun strict =
      runKilnData("imagenet --input '" + raw + "' --output '" + out +
                      "' --train-shards 2 --validation-shards 1 --quiet",
                  dir.path() + "/log1");
  EXPECT_EQ(strict.exitCode, 1);
  EXPECT_NE(strict.output.find(png + ": not a JPEG"), std::string::npos)
      << strict.output;
  ToolRun skip =
      runKilnData("imagenet --input '" + raw + "' --output '" + out +
                      "' --train-shards 2 --validation-shards 1 --quiet "
                      "--skip-bad",
                  dir.path() + "/log2");
  EXPECT_EQ(skip.exitCode, 0) << skip.output;
  EXPECT_NE(skip.output.find("22 records in 3 shards"), std::string::npos)
      << skip.output;
  EXPECT_NE(skip.output.find("1 skipped"), std::string::npos) << skip.output;

  // A missing directory and a usage error.
  ToolRun missing = runKilnData("imagenet --input '" + dir.path() +
                                    "/nope' --output '" + out + "'",
                                dir.path() + "/log3");
  EXPECT_EQ(missing.exitCode, 1);
  EXPECT_NE(missing.output.find(dir.path() + "/nope/train"), std::string::npos)
      << missing.output;
  ToolRun usage = runKilnData("idx --input x", dir.path() + "/log4");
  EXPECT_EQ(usage.exitCode, 2);
  EXPECT_NE(usage.output.find("--input and --output are required"),
            std::string::npos);
}

} // namespace
} // namespace kiln::rt
