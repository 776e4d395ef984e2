//===- cpu_check_test.cpp - The check of the model's target CPU -----------===//

#include "kiln/rt/exec/cpu_check.h"

#include <gtest/gtest.h>

#include <string>

namespace kiln::rt::exec {
namespace {

/// A CPU with AVX2 but no AVX-512.
bool avx2Only(std::string_view name) {
  return name == "sse2" || name == "avx" || name == "avx2" || name == "fma";
}

TEST(CpuCheckTest, AcceptsACpuWithEveryExtension) {
  EXPECT_TRUE(
      checkTargetCpu(R"({"cpu": "haswell", "features": ["avx2", "fma"]})",
                     avx2Only)
          .isOk());
  EXPECT_TRUE(
      checkTargetCpu(R"({"cpu": "x86-64", "features": []})", avx2Only).isOk());
}

TEST(CpuCheckTest, NamesTheCpuAndEveryMissingExtension) {
  Status s = checkTargetCpu(
      R"({"cpu": "skylake-avx512", "features": ["avx2", "avx512f", "fma", "avx512bw"]})",
      avx2Only);
  ASSERT_EQ(s.code(), StatusCode::kInvalidArgument);
  const std::string &m = s.message();
  EXPECT_NE(m.find("generated for CPU 'skylake-avx512'"), std::string::npos)
      << m;
  EXPECT_NE(m.find("this CPU lacks avx512f, avx512bw:"), std::string::npos)
      << m;
  EXPECT_EQ(m.find("avx2"), std::string::npos) << m;
}

TEST(CpuCheckTest, RejectsAMalformedDescription) {
  for (const char *json :
       {"", "{", R"({"cpu": "znver5"})", R"({"features": []})",
        R"({"cpu": 5, "features": []})",
        R"({"cpu": "znver5", "features": "avx2"})",
        R"({"cpu": "znver5", "features": ["avx2", 7]})"}) {
    Status s = checkTargetCpu(json, avx2Only);
    EXPECT_EQ(s.code(), StatusCode::kInternal) << json;
  }
}

TEST(CpuCheckTest, ThisHostHasTheBaselineAndNoUnknownNames) {
  EXPECT_TRUE(hostHasCpuFeature("sse2")); // every x86-64 CPU
  EXPECT_FALSE(hostHasCpuFeature("no-such-extension"));
  EXPECT_FALSE(hostHasCpuFeature(""));
}

} // namespace
} // namespace kiln::rt::exec
