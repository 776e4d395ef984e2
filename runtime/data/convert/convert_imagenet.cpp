//===- convert_imagenet.cpp - kiln-data imagenet --------------------------===//
//
// Reads the layout imagenet_to_gcs.py reads:
//   <input>/train/<synset>/*.JPEG
//   <input>/validation/*.JPEG  with  <input>/synset_labels.txt
//     (one synset per line, in sorted validation file order)
// and writes the same shard names and feature keys. Labels are 1..N over
// the sorted set of synsets. Training files are shuffled before sharding so
// that classes mix across shards (the SURFsara/Intel recipe loses 2-3% top-1
// otherwise). CMYK JPEGs are re-encoded as RGB at quality 100, as the script
// does; non-JPEG payloads (the script converts one PNG) are errors, or are
// skipped and counted with --skip-bad.
//
//===----------------------------------------------------------------------===//
#include "kiln/rt/convert.h"

#include "kiln/rt/example.h"
#include "kiln/rt/image.h"
#include "kiln/rt/transform.h"

#include <algorithm>
#include <cstdio>
#include <dirent.h>
#include <map>
#include <sys/stat.h>
#include <turbojpeg.h>

namespace kiln::data {
namespace {

namespace keys = rt::keys;

/// Sorted entries of `dir` passing `keep` (name, is-directory).
template <typename Keep>
StatusOr<std::vector<std::string>> listDir(const std::string &dir, Keep keep) {
  DIR *d = ::opendir(dir.c_str());
  KILN_CHECK_LIBC_PTR(d, "cannot open directory " + dir);
  std::vector<std::string> names;
  while (dirent *e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..")
      continue;
    struct stat st;
    bool isDir =
        ::stat((dir + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    if (keep(name, isDir))
      names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status readFile(const std::string &path, std::string &out) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  KILN_CHECK_LIBC_PTR(f, "cannot open " + path);
  out.clear();
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
    out.append(buf, n);
  bool bad = std::ferror(f);
  int err = errno;
  std::fclose(f);
  if (bad)
    return errnoStatus(__FILE__, __LINE__, "cannot read " + path, err);
  return Status::ok();
}

/// Decodes a CMYK JPEG to RGB and re-encodes it at quality 100.
Status cmykToRgbJpeg(const std::string &path, std::string &jpeg) {
  rt::ImageU8 rgb;
  Status s = rt::decodeJpeg(jpeg, nullptr, 3, rt::JpegDecodeMode::kFull, rgb);
  if (!s.isOk())
    return s.withContext(path);
  tjhandle tj = tjInitCompress();
  if (!tj)
    return KILN_STATUS(kInternal, "tjInitCompress failed");
  unsigned char *buf = nullptr;
  unsigned long size = 0;
  int rc =
      tjCompress2(tj, rgb.pixels.data(), rgb.width, 0, rgb.height, TJPF_RGB,
                  &buf, &size, TJSAMP_444, 100, TJFLAG_ACCURATEDCT);
  std::string message = rc ? tjGetErrorStr2(tj) : "";
  tjDestroy(tj);
  if (rc) {
    tjFree(buf);
    return KILN_STATUS(kInternal,
                       path + ": re-encoding as RGB failed: " + message);
  }
  jpeg.assign(reinterpret_cast<char *>(buf), size);
  tjFree(buf);
  return Status::ok();
}

struct Item {
  std::string path;
  std::string synset;
};

Status convertSplit(const ConvertOptions &options, const std::string &split,
                    const std::vector<Item> &items,
                    const std::map<std::string, int64_t> &labels,
                    std::vector<size_t> order, size_t shards,
                    ConvertSummary &summary) {
  auto make = [&](size_t i, std::string &out) -> Status {
    const Item &item = items[i];
    std::string jpeg;
    KILN_RETURN_IF_ERROR(readFile(item.path, jpeg));
    auto info = rt::readJpegInfo(jpeg);
    if (!info.isOk())
      return Status(info.status()).withContext(item.path);
    if (info->components == 4)
      KILN_RETURN_IF_ERROR(cmykToRgbJpeg(item.path, jpeg));
    std::string base = item.path.substr(item.path.rfind('/') + 1);
    out = rt::ExampleBuilder()
              .addInt64(keys::kHeight, info->height)
              .addInt64(keys::kWidth, info->width)
              .addBytes(keys::kColorspace, "RGB")
              .addInt64(keys::kChannels, 3)
              .addInt64(keys::kLabel, labels.at(item.synset))
              .addBytes(keys::kSynset, item.synset)
              .addBytes(keys::kFormat, "JPEG")
              .addBytes(keys::kFilename, base)
              .addBytes(keys::kEncoded, jpeg)
              .build();
    return Status::ok();
  };
  return writeShards(options, split, order, shards, make, summary);
}

} // namespace

Status convertImagenet(const ConvertOptions &options, ConvertSummary &summary) {
  bool wantTrain =
      std::count(options.splits.begin(), options.splits.end(), "train");
  bool wantVal =
      std::count(options.splits.begin(), options.splits.end(), "validation");
  for (const auto &s : options.splits)
    if (s != "train" && s != "validation")
      return KILN_STATUS(kInvalidArgument,
                         "unknown split '" + s + "' (train, validation)");

  std::vector<Item> train, validation;
  if (wantTrain) {
    std::string dir = options.input + "/train";
    KILN_ASSIGN_OR_RETURN(auto synsets, listDir(dir, [](const std::string &,
                                                        bool d) { return d; }));
    for (const auto &synset : synsets) {
      KILN_ASSIGN_OR_RETURN(
          auto files,
          listDir(dir + "/" + synset, [](const std::string &n, bool d) {
            return !d && endsWith(n, ".JPEG");
          }));
      for (const auto &f : files)
        train.push_back({dir + "/" + synset + "/" + f, synset});
    }
    if (train.empty())
      return KILN_STATUS(kNotFound, "no " + dir + "/<synset>/*.JPEG files");
  }
  if (wantVal) {
    std::string dir = options.input + "/validation";
    KILN_ASSIGN_OR_RETURN(auto files,
                          listDir(dir, [](const std::string &n, bool d) {
                            return !d && endsWith(n, ".JPEG");
                          }));
    std::string labelsPath = options.input + "/synset_labels.txt";
    std::string text;
    KILN_RETURN_IF_ERROR(readFile(labelsPath, text));
    std::vector<std::string> synsets;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string::npos)
        end = text.size();
      std::string line = text.substr(pos, end - pos);
      while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
        line.pop_back();
      if (!line.empty())
        synsets.push_back(line);
      pos = end + 1;
    }
    if (synsets.size() != files.size())
      return KILN_STATUS(kDataLoss,
                         labelsPath + " lists " +
                             std::to_string(synsets.size()) + " labels for " +
                             std::to_string(files.size()) + " files in " + dir);
    for (size_t i = 0; i < files.size(); ++i)
      validation.push_back({dir + "/" + files[i], synsets[i]});
  }

  // Labels over the sorted union of synsets, 1-based (0 is "background" in
  // the TF models that use 1001 classes).
  std::map<std::string, int64_t> labels;
  for (const auto *items : {&train, &validation})
    for (const auto &item : *items)
      labels.emplace(item.synset, 0);
  int64_t next = 1;
  for (auto &kv : labels)
    kv.second = next++;
  std::fprintf(
      stderr,
      "kiln-data: %zu training and %zu validation images, %zu classes\n",
      train.size(), validation.size(), labels.size());

  if (wantTrain)
    KILN_RETURN_IF_ERROR(convertSplit(
        options, "train", train, labels,
        shuffledOrder(train.size(), options.seed),
        options.trainShards ? options.trainShards : 1024, summary));
  if (wantVal) {
    std::vector<size_t> order(validation.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    KILN_RETURN_IF_ERROR(convertSplit(
        options, "validation", validation, labels, order,
        options.validationShards ? options.validationShards : 128, summary));
  }
  return Status::ok();
}

} // namespace kiln::data
