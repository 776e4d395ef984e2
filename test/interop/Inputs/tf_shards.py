"""TensorFlow and Kiln's TFRecord shards, both ways (test/interop/tf-*.test).

Modes that import TensorFlow (one per test: the import takes seconds):
  read-kiln IDX_IN IDX_SHARDS JPEG_IN JPEG_SHARDS DUMP
      tf.data.TFRecordDataset + tf.io.parse_example read the shards
      `kiln-data idx` and `kiln-data imagenet` wrote from the inputs that
      make-inputs made: every record exactly once, every key as the
      converter documents it, raw pixels equal to the IDX files', JPEG bytes
      equal to the source files', and tf.io.decode_jpeg's pixels equal to
      those `kiln-data inspect --dump` decoded into DUMP/<split>.
  write-tf OUT
      tf.io.TFRecordWriter writes tf.train.Examples in the ImageNet key
      layout (JPEGs from tf.io.encode_jpeg, 1-based labels) to OUT/tf's
      train split, one shard uncompressed, one GZIP, one ZLIB, and raw images
      with 0-based labels to its validation split (GZIP and uncompressed);
      OUT/expected.npz holds each record's pixels as TensorFlow decodes
      them, OUT/expected.json its labels.
Modes without TensorFlow (numpy and Pillow):
  make-inputs IDX_IN JPEG_IN
      IDX files (train plain, t10k gzip) and an ImageNet-style folder of
      JPEGs: 4:2:0, 4:4:4, gray and CMYK, odd sizes.
  check-dump OUT SPLIT DUMP
      the records `kiln-data inspect --dump` decoded from TensorFlow's
      shards equal OUT/expected.*: pixels exactly, labels, sizes, count.
  corrupt-crc SHARD RECORD OUT / truncate SHARD OUT
      a copy of an uncompressed shard with one data byte of RECORD flipped
      (prints the record's byte offset), or of a shard cut in half.
"""

import glob
import gzip
import json
import os
import struct
import sys

import numpy as np
from PIL import Image

# The JPEG decode Kiln's pipeline uses (libjpeg-turbo's accurate integer
# IDCT); decode_jpeg's default is the fast IDCT (docs/runtime-data.md).
DCT = "INTEGER_ACCURATE"


def fail(message):
    sys.exit("tf_shards.py: " + message)


def photo(rng, height, width, channels):
    """A smooth image with an edge and some noise: JPEG's usual input."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    planes = []
    for c in range(channels):
        fx, fy = rng.uniform(0.05, 0.3, 2)
        plane = 128 + 80 * np.sin(fx * x + c) * np.cos(fy * y - c)
        plane += np.where(x > width * rng.uniform(0.3, 0.7), 40.0, -40.0)
        plane += rng.normal(0, 8, (height, width))
        planes.append(plane)
    return np.clip(np.stack(planes, -1), 0, 255).astype(np.uint8)


# ---------------------------------------------------------------------------
# make-inputs
# ---------------------------------------------------------------------------

IDX_ROWS, IDX_COLS = 6, 5  # not square: a transposition would show


def write_idx(path, images, labels):
    opener = gzip.open if path.endswith(".gz") else open
    n = len(labels)
    with opener(path.replace("@", "images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, IDX_ROWS, IDX_COLS))
        f.write(images.tobytes())
    with opener(path.replace("@", "labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x801, n))
        f.write(labels.tobytes())


# (synset, size (w, h), kind): kind is how Pillow writes the file.
JPEGS = {
    "train": [("n01", (37, 23), "420"), ("n01", (16, 16), "444"),
              ("n01", (40, 31), "gray"), ("n02", (33, 45), "cmyk"),
              ("n02", (64, 48), "420"), ("n03", (17, 29), "444"),
              ("n03", (50, 21), "420")],
    "validation": [("n02", (29, 19), "420"), ("n03", (24, 24), "gray"),
                   ("n01", (41, 27), "444")],
}


def save_jpeg(rng, path, size, kind):
    w, h = size
    if kind == "gray":
        Image.fromarray(photo(rng, h, w, 1)[:, :, 0], "L").save(path, quality=90)
    elif kind == "cmyk":
        Image.fromarray(photo(rng, h, w, 4), "CMYK").save(path, quality=90)
    else:
        Image.fromarray(photo(rng, h, w, 3), "RGB").save(
            path, quality=90, subsampling=2 if kind == "420" else 0)


def make_inputs(idx_dir, jpeg_dir):
    rng = np.random.default_rng(29)
    os.makedirs(idx_dir, exist_ok=True)
    for prefix, n, suffix in [("train", 30, ""), ("t10k", 12, ".gz")]:
        images = rng.integers(0, 256, (n, IDX_ROWS, IDX_COLS), dtype=np.uint8)
        labels = rng.integers(0, 10, n, dtype=np.uint8)
        write_idx(f"{idx_dir}/{prefix}-@{suffix}", images, labels)
    for split, items in JPEGS.items():
        synsets = []
        for i, (synset, size, kind) in enumerate(items):
            folder = f"{jpeg_dir}/train/{synset}" if split == "train" else \
                f"{jpeg_dir}/validation"
            os.makedirs(folder, exist_ok=True)
            save_jpeg(rng, f"{folder}/{split}_{i:02d}.JPEG", size, kind)
            synsets.append(synset)
        if split == "validation":  # in sorted file order, as written
            with open(f"{jpeg_dir}/synset_labels.txt", "w") as f:
                f.write("".join(s + "\n" for s in synsets))


# ---------------------------------------------------------------------------
# Reading records
# ---------------------------------------------------------------------------


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, n = struct.unpack(">II", data[:8])
    if magic == 0x803:
        rows, cols = struct.unpack(">II", data[8:16])
        return np.frombuffer(data[16:], np.uint8).reshape(n, rows, cols)
    return np.frombuffer(data[8:], np.uint8)


def read_dump(dump):
    """records.tsv of `kiln-data inspect --dump`: rows keyed by (file,
    record), each with its decoded image."""
    rows = {}
    with open(f"{dump}/records.tsv") as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            row["pixels"] = np.asarray(Image.open(f"{dump}/{row['image']}"))
            rows[(row["file"], int(row["record"]))] = row
    return rows


def tf_records(tf, files, spec):
    """(file name, record index, parsed features as numpy) of every record,
    read by tf.data and parsed by tf.io.parse_example, batch by batch."""
    out = []
    for path in files:
        ds = tf.data.TFRecordDataset([path]).batch(64)
        index = 0
        for batch in ds:
            parsed = tf.io.parse_example(batch, spec)
            parsed = {k: v.numpy() for k, v in parsed.items()}
            for i in range(len(batch)):
                out.append((os.path.basename(path), index,
                            {k: v[i] for k, v in parsed.items()}))
                index += 1
    return out


def read_kiln(idx_in, idx_shards, jpeg_in, jpeg_shards, dump):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    def fixed(dtype):
        return tf.io.FixedLenFeature([], dtype)

    common = {"image/encoded": fixed(tf.string), "image/format": fixed(tf.string),
              "image/class/label": fixed(tf.int64), "image/height": fixed(tf.int64),
              "image/width": fixed(tf.int64), "image/channels": fixed(tf.int64),
              "image/colorspace": fixed(tf.string), "image/filename": fixed(tf.string)}

    # kiln-data idx: raw pixels, IDX label + 1, every item exactly once.
    idx_count = 0
    for split, prefix in [("train", "train"), ("validation", "t10k")]:
        images = read_idx(glob.glob(f"{idx_in}/{prefix}-images-idx3-ubyte*")[0])
        labels = read_idx(glob.glob(f"{idx_in}/{prefix}-labels-idx1-ubyte*")[0])
        records = tf_records(tf, sorted(glob.glob(f"{idx_shards}/{split}-*-of-*")),
                             common)
        seen = set()
        for file, index, r in records:
            where = f"{file} record {index}"
            source, item = r["image/filename"].decode().rsplit(":", 1)
            item = int(item)
            if not source.startswith(f"{prefix}-images-idx3-ubyte") or item in seen:
                fail(f"{where}: image/filename {source}:{item} is not a new {prefix} item")
            seen.add(item)
            pixels = tf.io.decode_raw(r["image/encoded"], tf.uint8).numpy()
            shape = (r["image/height"], r["image/width"], r["image/channels"])
            if shape != (IDX_ROWS, IDX_COLS, 1) or r["image/format"] != b"raw" or \
                    r["image/colorspace"] != b"grayscale":
                fail(f"{where}: shape {shape}, format {r['image/format']}")
            if not np.array_equal(pixels.reshape(IDX_ROWS, IDX_COLS), images[item]):
                fail(f"{where}: pixels differ from IDX item {item}")
            if r["image/class/label"] != int(labels[item]) + 1:
                fail(f"{where}: label {r['image/class/label']}, IDX label {labels[item]}")
        if len(records) != len(labels) or len(seen) != len(labels):
            fail(f"{split}: {len(records)} records for {len(labels)} IDX items")
        idx_count += len(records)

    # kiln-data imagenet: the source JPEG bytes (CMYK re-encoded as RGB), the
    # sorted synsets' 1-based labels, and pixels as Kiln decodes them.
    spec = dict(common, **{"image/class/synset": fixed(tf.string)})
    synsets = sorted({s for items in JPEGS.values() for s, _, _ in items})
    jpeg_count = 0
    for split, items in JPEGS.items():
        decoded = read_dump(f"{dump}/{split}")
        records = tf_records(tf, sorted(glob.glob(f"{jpeg_shards}/{split}-*-of-*")), spec)
        if len(records) != len(items):
            fail(f"{split}: {len(records)} records for {len(items)} JPEG files")
        names = set()
        for file, index, r in records:
            where = f"{file} record {index}"
            name = r["image/filename"].decode()
            names.add(name)
            synset, (w, h), kind = items[int(name[len(split) + 1:-5])]
            folder = f"train/{synset}" if split == "train" else "validation"
            with open(f"{jpeg_in}/{folder}/{name}", "rb") as f:
                source = f.read()
            if kind != "cmyk" and r["image/encoded"] != source:
                fail(f"{where}: image/encoded is not {name}'s bytes")
            want = {"image/class/label": synsets.index(synset) + 1,
                    "image/class/synset": synset.encode(), "image/height": h,
                    "image/width": w, "image/channels": 3, "image/format": b"JPEG",
                    "image/colorspace": b"RGB"}
            for key, value in want.items():
                if r[key] != value:
                    fail(f"{where}: {key} is {r[key]!r}, not {value!r}")
            pixels = tf.io.decode_jpeg(r["image/encoded"], dct_method=DCT).numpy()
            if pixels.shape != (h, w, 1 if kind == "gray" else 3):
                fail(f"{where}: TensorFlow decodes {pixels.shape}")
            kiln = decoded.get((file, index))
            if kiln is None:
                fail(f"{where}: not in Kiln's dump")
            if int(kiln["label"]) != want["image/class/label"] or kiln["filename"] != name:
                fail(f"{where}: Kiln's dump says label {kiln['label']}, {kiln['filename']}")
            kiln_pixels = kiln["pixels"].reshape(pixels.shape)
            if not np.array_equal(kiln_pixels, pixels):
                diff = np.abs(kiln_pixels.astype(int) - pixels.astype(int))
                fail(f"{where} ({kind}): Kiln's pixels differ from decode_jpeg's: "
                     f"{np.count_nonzero(diff)} values, by up to {diff.max()}")
        if len(names) != len(items):
            fail(f"{split}: a JPEG is missing or repeated: {sorted(names)}")
        jpeg_count += len(records)
    print(f"tf.data read {idx_count} idx records (pixels and labels exact) and "
          f"{jpeg_count} JPEG records (bytes, labels and decoded pixels equal to Kiln's)")


# ---------------------------------------------------------------------------
# write-tf / check-dump
# ---------------------------------------------------------------------------


def write_tf(out):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    def feature(value):
        if isinstance(value, bytes):
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

    def example(features):
        return tf.train.Example(features=tf.train.Features(
            feature={k: feature(v) for k, v in features.items()})).SerializeToString()

    rng = np.random.default_rng(1729)
    expected, labels = {}, {}
    os.makedirs(f"{out}/tf", exist_ok=True)
    synsets = ["n01440764", "n01443537", "n01484850"]
    # train: the ImageNet layout, JPEGs as TensorFlow encodes them.
    for shard, compression in enumerate(["", "GZIP", "ZLIB"]):
        name = f"train-{shard:05d}-of-00003"
        options = tf.io.TFRecordOptions(compression_type=compression)
        with tf.io.TFRecordWriter(f"{out}/tf/{name}", options) as writer:
            for i in range(5):
                h, w = rng.integers(9, 60, 2)
                channels = 1 if i == 3 else 3
                jpeg = tf.io.encode_jpeg(
                    photo(rng, h, w, channels), quality=int(rng.integers(50, 100)),
                    chroma_downsampling=bool(i % 2)).numpy()
                label = int(rng.integers(0, 3))
                writer.write(example({
                    "image/encoded": jpeg, "image/format": b"JPEG",
                    "image/class/label": label + 1,
                    "image/class/synset": synsets[label].encode(),
                    "image/height": int(h), "image/width": int(w),
                    "image/colorspace": b"RGB" if channels == 3 else b"grayscale",
                    "image/channels": channels,
                    "image/filename": f"{synsets[label]}_{shard}_{i}.JPEG".encode()}))
                expected[f"train/{name}/{i}"] = tf.io.decode_jpeg(
                    jpeg, dct_method=DCT).numpy()
                labels[f"train/{name}/{i}"] = label + 1
    # validation: raw pixels (Kiln's "raw" format) with 0-based labels, one
    # of them larger than the reader's 1 MiB buffer, GZIP and uncompressed.
    for shard, compression in enumerate(["GZIP", ""]):
        name = f"validation-{shard:05d}-of-00002"
        options = tf.io.TFRecordOptions(compression_type=compression)
        with tf.io.TFRecordWriter(f"{out}/tf/{name}", options) as writer:
            for i in range(3):
                h, w = (700, 600) if shard == 0 and i == 1 else rng.integers(5, 40, 2)
                channels = 1 if i == 2 else 3
                pixels = rng.integers(0, 256, (h, w, channels), dtype=np.uint8)
                label = int(rng.integers(0, 10))
                writer.write(example({
                    "image/encoded": pixels.tobytes(), "image/format": b"raw",
                    "image/class/label": label, "image/height": int(h),
                    "image/width": int(w), "image/channels": channels}))
                expected[f"validation/{name}/{i}"] = pixels
                labels[f"validation/{name}/{i}"] = label
    np.savez(f"{out}/expected.npz", **expected)
    with open(f"{out}/expected.json", "w") as f:
        json.dump(labels, f)


def check_dump(out, split, dump, label_offset):
    expected = np.load(f"{out}/expected.npz")
    with open(f"{out}/expected.json") as f:
        labels = json.load(f)
    decoded = read_dump(dump)
    keys = [k for k in labels if k.startswith(split + "/")]
    if len(decoded) != len(keys):
        fail(f"Kiln dumped {len(decoded)} {split} records, TensorFlow wrote {len(keys)}")
    pixels = 0
    for key in keys:
        _, file, index = key.split("/")
        row = decoded.get((file, int(index)))
        if row is None:
            fail(f"{file} record {index}: not in Kiln's dump")
        want = expected[key]
        got = row["pixels"].reshape(row["pixels"].shape[:2] + (-1,))
        stated = (int(row["height"]), int(row["width"]), int(row["channels"]))
        if got.shape != want.shape or stated != want.shape:
            fail(f"{file} record {index}: Kiln decodes {got.shape}, TensorFlow {want.shape}")
        if not np.array_equal(got, want):
            diff = np.abs(got.astype(int) - want.astype(int))
            fail(f"{file} record {index}: pixels differ in {np.count_nonzero(diff)} "
                 f"values, by up to {diff.max()}")
        if int(row["label"]) != labels[key] or \
                int(row["class"]) != labels[key] - label_offset:
            fail(f"{file} record {index}: Kiln reads label {row['label']} "
                 f"(class {row['class']}), TensorFlow wrote {labels[key]}")
        pixels += want.size
    print(f"kiln read {len(keys)} {split} records of TensorFlow's: "
          f"{pixels} pixel values and every label equal")


# ---------------------------------------------------------------------------
# Damaged copies
# ---------------------------------------------------------------------------


def corrupt_crc(shard, record, out):
    data = bytearray(open(shard, "rb").read())
    offset = 0
    for _ in range(record):
        (length,) = struct.unpack("<Q", data[offset:offset + 8])
        offset += 16 + length
    (length,) = struct.unpack("<Q", data[offset:offset + 8])
    data[offset + 12 + length // 2] ^= 0x20
    with open(out, "wb") as f:
        f.write(data)
    print(f"flipped a bit of record {record} at byte offset {offset}")


def truncate(shard, out):
    data = open(shard, "rb").read()
    with open(out, "wb") as f:
        f.write(data[:len(data) // 2])
    print(f"cut to {len(data) // 2} bytes")


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "make-inputs":
        make_inputs(*args)
    elif mode == "read-kiln":
        read_kiln(*args)
    elif mode == "write-tf":
        write_tf(*args)
    elif mode == "check-dump":
        check_dump(args[0], args[1], args[2], int(args[3]))
    elif mode == "corrupt-crc":
        corrupt_crc(args[0], int(args[1]), args[2])
    elif mode == "truncate":
        truncate(*args)
    else:
        fail(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
