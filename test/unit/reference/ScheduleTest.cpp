//===- ScheduleTest.cpp - Learning-rate schedules --------------------------===//
//
// Part of Kiln. Expected values are literals with their arithmetic in the
// comments.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/schedule.h"

#include "gtest/gtest.h"

#include <cmath>

namespace kiln::ref {
namespace {

TEST(ScheduleTest, GradualWarmupThenDecSurfsaraIntel) {
  // gradual_warmup_then_dec(0.1, 260, 4.8, step, 4680)
  Schedule s = Schedule::linearWarmupLinearDecay({0.1, 260, 4.8, 4680});
  ASSERT_TRUE(checkSchedule(s).isOk());
  // step 0: init LR.
  EXPECT_NEAR(learningRate(s, 0), 0.1, 1e-12);
  // step 130: 0.1 + (4.8-0.1)*130/260 = 0.1 + 2.35 = 2.45
  EXPECT_NEAR(learningRate(s, 130), 2.45, 1e-12);
  // step 259: 0.1 + 4.7*259/260 = 4.781923076923077
  EXPECT_NEAR(learningRate(s, 259), 4.781923076923077, 1e-12);
  // step 260: decay branch, 4.8*(1 - 0/4420) = 4.8
  EXPECT_NEAR(learningRate(s, 260), 4.8, 1e-12);
  // step 2000: 4.8*(1 - (2000-260)/(4680-260)) = 4.8*2680/4420
  //          = 12864/4420 = 2.9104072398190045
  EXPECT_NEAR(learningRate(s, 2000), 2.9104072398190045, 1e-12);
  // step 4680: 4.8*(1 - 4420/4420) = 0
  EXPECT_NEAR(learningRate(s, 4680), 0.0, 1e-12);
  // Past the end the decay is clamped (cycle=False).
  EXPECT_NEAR(learningRate(s, 9000), 0.0, 1e-12);
}

TEST(ScheduleTest, MlperfLarsPolynomial) {
  // base 31.2, 10 warmup steps, 100 train steps, end 1e-4, power 2;
  // decay steps D = 100 - 10 + 1 = 91.
  Schedule s = Schedule::warmupPolynomialDecay({31.2, 10, 100, 1e-4, 2.0});
  ASSERT_TRUE(checkSchedule(s).isOk());
  EXPECT_NEAR(learningRate(s, 0), 0.0, 1e-12);   // 31.2*0/10
  EXPECT_NEAR(learningRate(s, 5), 15.6, 1e-12);  // 31.2*5/10
  EXPECT_NEAR(learningRate(s, 10), 31.2, 1e-12); // step <= warmup: 31.2*10/10
  // step 11: (31.2-1e-4)*(1-1/91)^2 + 1e-4 = 31.1999*8100/8281 + 1e-4
  EXPECT_NEAR(learningRate(s, 11), 30.518055560922594, 1e-9);
  // step 55: (31.1999)*(1-45/91)^2 + 1e-4 = 31.1999*2116/8281 + 1e-4
  EXPECT_NEAR(learningRate(s, 55), 7.972444934186692, 1e-9);
  // step 101: s = 91 = D -> end LR
  EXPECT_NEAR(learningRate(s, 101), 1e-4, 1e-12);
  EXPECT_NEAR(learningRate(s, 500), 1e-4, 1e-12);
}

TEST(ScheduleTest, PolynomialWithoutWarmup) {
  // warmup 0: lr(0) = (1-0.5)*(1-0/11)^1 + 0.5 = 1 (no 0/0).
  Schedule s = Schedule::warmupPolynomialDecay({1.0, 0, 10, 0.5, 1.0});
  EXPECT_NEAR(learningRate(s, 0), 1.0, 1e-12);
  // step 11: D = 11, lr = end = 0.5
  EXPECT_NEAR(learningRate(s, 11), 0.5, 1e-12);
}

TEST(ScheduleTest, GoyalStepDecay) {
  // Batch 1024: base 0.1*1024/256 = 0.4; warmup from 0.1 over 500 steps
  // (5 epochs of 100 steps); /10 at epochs 30, 60, 80.
  StepDecayParams p;
  p.baseLr = 0.4;
  p.warmupInitLr = 0.1;
  p.warmupSteps = 500;
  p.boundaries = {3000, 6000, 8000};
  p.factor = 0.1;
  Schedule s = Schedule::stepDecay(p);
  ASSERT_TRUE(checkSchedule(s).isOk());
  EXPECT_NEAR(learningRate(s, 0), 0.1, 1e-12);
  EXPECT_NEAR(learningRate(s, 250), 0.25, 1e-12); // 0.1 + 0.3*250/500
  EXPECT_NEAR(learningRate(s, 500), 0.4, 1e-12);
  EXPECT_NEAR(learningRate(s, 2999), 0.4, 1e-12);
  EXPECT_NEAR(learningRate(s, 3000), 0.04, 1e-12);
  EXPECT_NEAR(learningRate(s, 6000), 0.004, 1e-12);
  EXPECT_NEAR(learningRate(s, 8000), 0.0004, 1e-12);
  p.boundaries = {10, 5};
  EXPECT_FALSE(checkSchedule(Schedule::stepDecay(p)).isOk());
}

TEST(ScheduleTest, CosineWithWarmup) {
  // base 1, warmup from 0 over 10 steps, total 110, end 0: D = 100.
  Schedule s = Schedule::cosineDecay({1.0, 0.0, 10, 110, 0.0});
  ASSERT_TRUE(checkSchedule(s).isOk());
  EXPECT_NEAR(learningRate(s, 0), 0.0, 1e-12);
  EXPECT_NEAR(learningRate(s, 5), 0.5, 1e-12);
  EXPECT_NEAR(learningRate(s, 10), 1.0, 1e-12);
  // step 35: 0.5*(1 + cos(pi*25/100)) = 0.5*(1 + sqrt(2)/2)
  EXPECT_NEAR(learningRate(s, 35), 0.8535533905932737, 1e-12);
  EXPECT_NEAR(learningRate(s, 60), 0.5, 1e-12); // 0.5*(1 + cos(pi/2))
  EXPECT_NEAR(learningRate(s, 110), 0.0, 1e-12);
  EXPECT_NEAR(learningRate(s, 200), 0.0, 1e-12);
}

TEST(ScheduleTest, FractionalWarmupMlperfV06) {
  // MLPerf v0.6 at batch 32768: 25 warmup epochs of 1281167 images are
  // W = 25*1281167/32768 = 32029175/32768 = 977.452850341796875 steps (exact
  // in binary); lars_util.py warms up while step/(N/B) <= 25 and decays from
  // w_steps = 25*1281167 // 32768 = 977 over train_steps - 977 + 1.
  Schedule s = Schedule::warmupPolynomialDecay(
      {31.2, 977.452850341796875, 2815, 1e-4, 2.0});
  ASSERT_TRUE(checkSchedule(s).isOk());
  // step 977 <= W: 31.2*977/977.452850341796875 (a whole warmup of 977
  // steps would give 31.2: 4.6e-4 too high)
  EXPECT_NEAR(learningRate(s, 977), 31.185545153754347, 1e-12);
  // step 978 > W: s = 978 - 977 = 1, D = 2815 - 977 + 1 = 1839:
  // 31.1999*(1838/1839)^2 + 1e-4
  EXPECT_NEAR(learningRate(s, 978), 31.166077849748707, 1e-9);
  // The decay is that of the whole warmup floor(W) = 977.
  Schedule whole = Schedule::warmupPolynomialDecay({31.2, 977, 2815, 1e-4, 2.0});
  EXPECT_EQ(learningRate(s, 1500), learningRate(whole, 1500));
  EXPECT_EQ(learningRate(whole, 977), 31.2);
}

TEST(ScheduleTest, FractionalWarmupLinear) {
  // 5 epochs of 1281167 / 24576 steps: W = 260.6540934244792.
  Schedule s = Schedule::linearWarmupLinearDecay(
      {0.1, 260.6540934244792, 4.8, 4680});
  ASSERT_TRUE(checkSchedule(s).isOk());
  // step 259: 0.1 + 4.7*259/W
  EXPECT_NEAR(learningRate(s, 259), 4.770174114693868, 1e-12);
  // step 260 < W is still warmup: 0.1 + 4.7*260/W
  EXPECT_NEAR(learningRate(s, 260), 4.788205674982262, 1e-12);
  // step 261: decay from floor(W) = 260: 4.8*(1 - 1/4420)
  EXPECT_NEAR(learningRate(s, 261), 4.798914027149321, 1e-12);
}

TEST(ScheduleTest, ConstantAndInvalid) {
  EXPECT_EQ(learningRate(Schedule::constant(0.25), 12345), 0.25);
  EXPECT_FALSE(
      checkSchedule(Schedule::linearWarmupLinearDecay({0.1, 100, 1.0, 50}))
          .isOk());
  EXPECT_FALSE(
      checkSchedule(Schedule::cosineDecay({1.0, 0.0, 5, 5, 0.0})).isOk());
  // A warmup must be a finite non-negative number of steps.
  Status nan = checkSchedule(
      Schedule::warmupPolynomialDecay({1.0, std::nan(""), 10, 0.0, 2.0}));
  EXPECT_FALSE(nan.isOk());
  EXPECT_NE(nan.message().find("need 0 <= warmupSteps <= trainSteps, got nan"),
            std::string::npos)
      << nan.message();
  EXPECT_FALSE(
      checkSchedule(Schedule::cosineDecay({1.0, 0.0, -0.5, 5, 0.0})).isOk());
}

} // namespace
} // namespace kiln::ref
