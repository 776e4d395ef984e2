//===- TargetTest.cpp - Target profiles and options -----------------------===//

#include "kiln/sim/Target.h"

#include <gtest/gtest.h>

using namespace kiln::sim;

TEST(Target, ProfilesMatchTheReferenceTable) {
  TargetConfig c;
  ASSERT_TRUE(getTargetProfile("tpuv3", c).isOk());
  // 2 MXUs x 128 x 128 x 2 flop x 940 MHz: REFERENCE.md's 61.5 TFLOP/s.
  EXPECT_NEAR(2 * c.peakMacsPerCycle() * c.clockHz / 1e12, 61.5, 0.2);
  EXPECT_EQ(c.onChipBytes, 16 << 20);
  EXPECT_DOUBLE_EQ(c.hbmBytesPerSecond, 450e9);
  ASSERT_TRUE(getTargetProfile("tpuv2", c).isOk());
  EXPECT_NEAR(2 * c.peakMacsPerCycle() * c.clockHz / 1e12, 23.0, 0.2);
  ASSERT_TRUE(getTargetProfile("tpuv1", c).isOk());
  // 256 x 256 MACs at 700 MHz: 92 T (int8) operations per second.
  EXPECT_NEAR(2 * c.peakMacsPerCycle() * c.clockHz / 1e12, 92.0, 0.3);
  EXPECT_EQ(c.onChipBytes, 24 << 20);
  EXPECT_FALSE(getTargetProfile("tpuv9", c).isOk());
}

TEST(Target, EveryFieldIsSettableAndDocumented) {
  TargetConfig c;
  for (const TargetField &f : targetFields()) {
    EXPECT_TRUE(setTargetField(c, f.name, "7").isOk()) << f.name;
    EXPECT_NE(std::string(f.source), "") << f.name;
  }
  EXPECT_EQ(c.mxuCount, 7u);
  EXPECT_EQ(c.dmaLatency, 7u);
}

TEST(Target, BadOptionsAreRejectedWithTheirName) {
  TargetConfig c;
  kiln::Status s = setTargetField(c, "mxu_count", "0");
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("mxu_count"), std::string::npos);
  EXPECT_FALSE(setTargetField(c, "clock_hz", "fast").isOk());
  EXPECT_FALSE(setTargetField(c, "clock_hz", "-1").isOk());
  EXPECT_FALSE(setTargetField(c, "array_rows", "12x").isOk());
  s = setTargetField(c, "warp_drive", "1");
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("unknown target field 'warp_drive'"),
            std::string::npos);
}
