//===- predict_test.cpp - --predict's command line, ranking and labels ----===//

#include "exec_test_util.h"

#include "kiln/rt/exec/options.h"
#include "parse_args.h"
#include "kiln/rt/exec/predict.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <initializer_list>

namespace kiln::rt::exec {
namespace {

using test::parse;

TEST(PredictTest, FilesFollowTheFlagAndNeedWeights) {
  auto o = parse({"--predict", "a.jpg", "b.jpg", "--init-from", "w.st",
                  "c.jpg", "--predict=d.jpg", "--labels", "l.txt"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o->predict,
            (std::vector<std::string>{"a.jpg", "b.jpg", "c.jpg", "d.jpg"}));
  EXPECT_EQ(o->labels, "l.txt");

  o = parse({"--predict", "a.jpg"});
  ASSERT_FALSE(o.isOk());
  EXPECT_NE(o.status().message().find("--predict needs trained weights"),
            std::string::npos);
  o = parse({"--predict", "a.jpg", "--init-from", "w", "--model-dir", "m"});
  EXPECT_FALSE(o.isOk());
  o = parse({"--predict", "a.jpg", "--model-dir", "m", "--eval"});
  ASSERT_FALSE(o.isOk());
  EXPECT_NE(o.status().message().find("--eval is for training"),
            std::string::npos);
  o = parse({"a.jpg", "--synthetic", "--steps", "1"});
  ASSERT_FALSE(o.isOk());
  EXPECT_NE(o.status().message().find("unexpected argument 'a.jpg'"),
            std::string::npos);
  o = parse({"--synthetic", "--steps", "1", "--labels", "l.txt"});
  EXPECT_FALSE(o.isOk());
}

TEST(PredictTest, TopClassesAreTheSoftmaxInOrder) {
  std::vector<ClassScore> top = topClasses({1.0, 3.0, 2.0, 3.0, -1.0, 0.0, 0.5}, 5);
  ASSERT_EQ(top.size(), 5u);
  // Ties: the lower class first.
  EXPECT_EQ(top[0].index, 1);
  EXPECT_EQ(top[1].index, 3);
  EXPECT_EQ(top[2].index, 2);
  EXPECT_EQ(top[3].index, 0);
  EXPECT_EQ(top[4].index, 6);
  double sum = 0;
  for (double l : {1.0, 3.0, 2.0, 3.0, -1.0, 0.0, 0.5})
    sum += std::exp(l);
  EXPECT_NEAR(top[0].probability, std::exp(3.0) / sum, 1e-15);
  EXPECT_NEAR(top[4].probability, std::exp(0.5) / sum, 1e-15);
  // Fewer classes than 5; huge logits do not overflow.
  top = topClasses({1000.0, 999.0}, 5);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_NEAR(top[0].probability, 1 / (1 + std::exp(-1.0)), 1e-15);
}

TEST(PredictTest, LabelsMustNameEveryClass) {
  test::TempDir dir;
  std::string path = dir.path() + "/labels.txt";
  std::ofstream(path) << "cat\r\ndog\nbird";
  auto labels = readLabels(path, 3);
  ASSERT_TRUE(labels.isOk()) << labels.status().toString();
  EXPECT_EQ(*labels, (std::vector<std::string>{"cat", "dog", "bird"}));

  labels = readLabels(path, 4);
  ASSERT_FALSE(labels.isOk());
  EXPECT_NE(labels.status().message().find(
                "labels.txt names 3 classes, but the model has 4"),
            std::string::npos);
  std::ofstream(path) << "cat\n\ndog\n";
  labels = readLabels(path, 3);
  ASSERT_FALSE(labels.isOk());
  EXPECT_NE(labels.status().message().find("labels.txt:2: an empty line"),
            std::string::npos);
  labels = readLabels(dir.path() + "/missing.txt", 3);
  ASSERT_FALSE(labels.isOk());
  EXPECT_NE(labels.status().message().find("cannot open"), std::string::npos);
}

} // namespace
} // namespace kiln::rt::exec
