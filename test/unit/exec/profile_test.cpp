//===- profile_test.cpp - Call sites of generated code (--profile) --------===//

#include "exec_test_util.h"

#include "kiln/rt/exec/profile.h"

namespace kiln::rt::exec::test {
namespace {

// Three sites: two loops of one batch norm (one line of the model) and a
// ReLU, plus an eval site that the train-step tables leave out.
const char *const kSites = R"({
  "sites": [
    {"op": "kiln.batch_norm_train", "loc": "m.mlir:12", "function": "train",
     "kernel": "kiln_kernel_0", "parallel": true},
    {"op": "kiln.batch_norm_train", "loc": "m.mlir:12", "function": "train",
     "kernel": "kiln_kernel_1", "parallel": false},
    {"op": "kiln.relu", "loc": "m.mlir:13", "function": "train",
     "kernel": "kiln_kernel_0", "parallel": true},
    {"op": "kiln.relu", "loc": "m.mlir:13", "function": "eval",
     "kernel": "kiln_kernel_0", "parallel": true}
  ],
  "call_sites": [{"op": "kiln.conv2d", "loc": "m.mlir:11"}, null]
})";

TEST(ProfileTest, ReadsTheSiteTables) {
  auto profile = SiteProfile::create(kSites);
  ASSERT_TRUE(profile.isOk()) << profile.status().toString();
  ASSERT_EQ((*profile)->numSites(), 4u);
  EXPECT_EQ((*profile)->site(2).op, "kiln.relu");
  EXPECT_EQ((*profile)->site(2).loc, "m.mlir:13");
  EXPECT_EQ((*profile)->site(3).function, "eval");
  EXPECT_EQ((*profile)->callSite(0).op, "kiln.conv2d");
  // No source for a null entry or an id past the table.
  EXPECT_EQ((*profile)->callSite(1).loc, "?");
  EXPECT_EQ((*profile)->callSite(7).op, "?");
}

TEST(ProfileTest, AManifestWithoutSitesGivesAnEmptyTable) {
  auto profile = SiteProfile::create(R"({"abi": 4})");
  ASSERT_TRUE(profile.isOk()) << profile.status().toString();
  EXPECT_EQ((*profile)->numSites(), 0u);
}

TEST(ProfileTest, GroupsTheTrainStepsSitesByOpAndLine) {
  auto profile = SiteProfile::create(kSites);
  ASSERT_TRUE(profile.isOk()) << profile.status().toString();
  SiteProfile &sites = **profile;
  sites.record(0, 0.5);
  sites.record(1, 0.25);
  sites.record(0, 0.5);
  sites.record(2, 0.5);
  sites.record(3, 9.0); // eval
  std::vector<ProfileRow> rows = generatedCodeByOp(sites);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].ops, "kiln.batch_norm_train");
  EXPECT_EQ(rows[0].loc, "m.mlir:12");
  EXPECT_EQ(rows[0].calls, 3u);
  EXPECT_DOUBLE_EQ(rows[0].generatedSeconds, 1.25);
  EXPECT_EQ(rows[1].ops, "kiln.relu");
  EXPECT_DOUBLE_EQ(rows[1].generatedSeconds, 0.5);
}

TEST(ProfileDeathTest, AnUnknownSiteIsACompilerBug) {
  auto profile = SiteProfile::create(kSites);
  ASSERT_TRUE(profile.isOk()) << profile.status().toString();
  EXPECT_DEATH((*profile)->record(4, 1.0), "site 4, but the manifest has 4");
}

TEST(ProfileTest, RejectsSitesThatAreNotAnArray) {
  auto profile = SiteProfile::create(R"({"sites": {}})");
  ASSERT_FALSE(profile.isOk());
  EXPECT_NE(profile.status().message().find("sites: expected an array"),
            std::string::npos);
}

} // namespace
} // namespace kiln::rt::exec::test
