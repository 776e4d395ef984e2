//===- profile_test.cpp - Call sites of generated code (--profile) --------===//

#include "exec_test_util.h"
#include "manifest_test_util.h"

#include "kiln/rt/exec/profile.h"

namespace kiln::rt::exec::test {
namespace {

std::unique_ptr<fb::SiteT> site(const char *op, const char *loc,
                                const char *function = "",
                                const char *layer = "") {
  auto s = std::make_unique<fb::SiteT>();
  s->op = op;
  s->loc = loc;
  s->function = function;
  s->layer = layer;
  s->kernel = "kiln_kernel_0";
  s->parallel = true;
  return s;
}

// Three sites: two loops of one batch norm (one line of the model) and a
// ReLU of its layer, plus an eval site that the train-step tables leave out.
const std::string kSites = [] {
  fb::ManifestT m = unpackTestManifest();
  m.sites.push_back(
      site("kiln.batch_norm_train", "m.mlir:12", "train", "layer1.0.bn1"));
  m.sites.push_back(
      site("kiln.batch_norm_train", "m.mlir:12", "train", "layer1.0.bn1"));
  m.sites.back()->kernel = "kiln_kernel_1";
  m.sites.back()->parallel = false;
  m.sites.push_back(site("kiln.relu", "m.mlir:13", "train", "layer1.0.bn1"));
  m.sites.push_back(site("kiln.relu", "m.mlir:13", "eval", "layer1.0.bn1"));
  m.call_sites.push_back(site("kiln.conv2d", "m.mlir:11"));
  // A call no step makes with a constant id: no members.
  m.call_sites.push_back(std::make_unique<fb::SiteT>());
  return pack(m);
}();

TEST(ProfileTest, ReadsTheSiteTables) {
  auto profile = SiteProfile::create(kSites);
  ASSERT_TRUE(profile.isOk()) << profile.status().toString();
  ASSERT_EQ((*profile)->numSites(), 4u);
  EXPECT_EQ((*profile)->site(2).op, "kiln.relu");
  EXPECT_EQ((*profile)->site(2).loc, "m.mlir:13");
  EXPECT_EQ((*profile)->site(2).layer, "layer1.0.bn1");
  EXPECT_EQ((*profile)->site(2).layerKey(), "layer1.0.bn1");
  EXPECT_EQ((*profile)->site(3).function, "eval");
  EXPECT_EQ((*profile)->callSite(0).op, "kiln.conv2d");
  // No source for an entry without members or an id past the table.
  EXPECT_EQ((*profile)->callSite(1).loc, "?");
  // Without a layer (an older manifest) layers are keyed by line.
  EXPECT_EQ((*profile)->callSite(0).layer, "");
  EXPECT_EQ((*profile)->callSite(0).layerKey(), "m.mlir:11");
  EXPECT_EQ((*profile)->callSite(7).op, "?");
}

TEST(ProfileTest, AManifestWithoutSitesGivesAnEmptyTable) {
  auto profile = SiteProfile::create(testManifest());
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
  EXPECT_EQ(rows[0].layer, "layer1.0.bn1");
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

TEST(ProfileTest, RejectsWhatIsNotAManifest) {
  auto profile = SiteProfile::create(R"({"sites": {}})");
  ASSERT_FALSE(profile.isOk());
  EXPECT_NE(profile.status().message().find("not a valid manifest buffer"),
            std::string::npos);
}

} // namespace
} // namespace kiln::rt::exec::test
