//===- fashion_mnist_check.cpp - kiln-data idx output equals the IDX files ===//
//
// Run by ctest after `kiln-data idx` converted Debian's Fashion-MNIST into
// $KILN_IDX_SHARDS. Reads every record back twice: through the record reader
// and Example parser (each IDX item exactly once, pixels and labels equal),
// and through the full pipeline with no augmentation or normalization
// (pixels reach the batch bit for bit, labels 0-based).
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "kiln/rt/idx.h"

#include <cstdlib>

namespace kiln::rt {
namespace {

std::string env(const char *name) {
  const char *v = std::getenv(name);
  return v ? v : "";
}

void checkSplit(const std::string &split, const std::string &prefix) {
  std::string shards = env("KILN_IDX_SHARDS"), source = env("KILN_IDX_SOURCE");
  ASSERT_FALSE(shards.empty()) << "set KILN_IDX_SHARDS and KILN_IDX_SOURCE";
  auto ds = readIdxPair(source + "/" + prefix + "-images-idx3-ubyte.gz",
                        source + "/" + prefix + "-labels-idx1-ubyte.gz");
  ASSERT_TRUE(ds.isOk()) << ds.status().toString();
  const size_t n = ds->images.count(), item = ds->images.itemBytes();
  const std::string namePrefix = prefix + "-images-idx3-ubyte.gz:";

  auto files = listShards(shards, split);
  ASSERT_TRUE(files.isOk()) << files.status().toString();
  std::vector<bool> seen(n, false);
  std::vector<size_t> order; // IDX index of each record in file order
  Example ex;
  std::string record;
  for (const auto &path : *files) {
    auto reader = RecordReader::openFile(path);
    ASSERT_TRUE(reader.isOk()) << reader.status().toString();
    Status s;
    while ((s = (*reader)->next(record)).isOk()) {
      ASSERT_TRUE(ex.parse(record).isOk());
      auto name = ex.getBytes(keys::kFilename);
      ASSERT_TRUE(name.isOk());
      ASSERT_EQ(name->substr(0, namePrefix.size()), namePrefix);
      size_t i = std::stoul(std::string(name->substr(namePrefix.size())));
      ASSERT_LT(i, n);
      ASSERT_FALSE(seen[i]) << "item " << i << " appears twice";
      seen[i] = true;
      order.push_back(i);
      auto pixels = ex.getBytes(keys::kEncoded);
      ASSERT_TRUE(pixels.isOk());
      ASSERT_EQ(*pixels,
                std::string_view(reinterpret_cast<const char *>(
                                     ds->images.data.data() + i * item),
                                 item))
          << path << " item " << i;
      ASSERT_EQ(*ex.getInt64(keys::kLabel), int64_t(ds->labels.data[i]) + 1);
      ASSERT_EQ(*ex.getBytes(keys::kFormat), kRawFormat);
      ASSERT_EQ(*ex.getInt64(keys::kHeight), int64_t(ds->images.dims[1]));
      ASSERT_EQ(*ex.getInt64(keys::kWidth), int64_t(ds->images.dims[2]));
      ASSERT_EQ(*ex.getInt64(keys::kChannels), 1);
    }
    ASSERT_EQ(s.code(), StatusCode::kOutOfRange) << s.toString();
  }
  ASSERT_EQ(order.size(), n);
  if (split == "train") { // shuffled before sharding: classes mixed per shard
    size_t sequential = 0;
    for (size_t k = 1; k < order.size(); ++k)
      sequential += order[k] == order[k - 1] + 1;
    EXPECT_LT(sequential, n / 100);
  }

  // The full pipeline, in file order, without augmentation or normalization.
  auto c = test::rawConfig(shards, static_cast<int>(ds->images.dims[1]), 1000);
  c.split = split.c_str();
  c.shuffle = 0;
  c.interleave = 1;
  c.drop_remainder = 0;
  c.num_workers = 2;
  kiln_rt_dataset_t *dataset = nullptr;
  test::CStatus st{kiln_rt_dataset_open(&c, &dataset)};
  ASSERT_TRUE(st.ok()) << st.message();
  size_t k = 0;
  while (true) {
    kiln_rt_batch_t b;
    test::CStatus s{kiln_rt_dataset_next_batch(dataset, &b)};
    ASSERT_TRUE(s.ok()) << s.message();
    if (b.size == 0)
      break;
    const float *px = static_cast<const float *>(b.images);
    for (uint32_t e = 0; e < b.size; ++e, ++k) {
      ASSERT_LT(k, n);
      size_t i = order[k];
      ASSERT_EQ(b.labels[e], int32_t(ds->labels.data[i]));
      for (size_t p = 0; p < item; ++p)
        ASSERT_EQ(px[e * item + p], float(ds->images.data[i * item + p]))
            << "record " << k << " pixel " << p;
    }
  }
  EXPECT_EQ(k, n);
  kiln_rt_dataset_close(dataset);
}

TEST(FashionMnist, TrainShardsEqualIdx) { checkSplit("train", "train"); }
TEST(FashionMnist, ValidationShardsEqualIdx) {
  checkSplit("validation", "t10k");
}

} // namespace
} // namespace kiln::rt
