"""Reads raw-image TFRecord shards (image/format "raw", as
kiln-exec-make-shards and kiln-data's idx mode write them) without
TensorFlow: the TFRecord framing and the tf.train.Example wire format, as
little of each as these shards use. Yields (pixels HxWxC uint8 bytes,
height, width, channels, stored label)."""

import glob
import struct


def varint(buf, at):
    value = shift = 0
    while True:
        byte = buf[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def fields(buf):
    """(field number, wire type, value) of a message: ints for varints,
    bytes for length-delimited fields."""
    at = 0
    while at < len(buf):
        key, at = varint(buf, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = varint(buf, at)
        elif wire == 2:
            length, at = varint(buf, at)
            value, at = buf[at:at + length], at + length
        else:
            raise ValueError(f"unexpected wire type {wire}")
        yield number, wire, value


def feature_map(example):
    features = {}
    for _, _, feats in fields(example):           # Example.features
        for _, _, entry in fields(feats):          # Features.feature (map entry)
            entry = dict((n, v) for n, _, v in fields(entry))
            key, feature = entry[1].decode(), entry[2]
            for kind, _, lst in fields(feature):   # bytes_list / int64_list
                if kind == 1:
                    features[key] = [v for _, _, v in fields(lst)]
                elif kind == 3:
                    values = []
                    for _, wire, v in fields(lst):
                        if wire == 2:  # packed
                            at = 0
                            while at < len(v):
                                x, at = varint(v, at)
                                values.append(x)
                        else:
                            values.append(v)
                    features[key] = values
    return features


def records(path):
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        yield data[at + 12:at + 12 + length]
        at += 12 + length + 4


def examples(directory, split):
    for path in sorted(glob.glob(f"{directory}/{split}-*")):
        for record in records(path):
            f = feature_map(record)
            assert f["image/format"][0] == b"raw", path
            yield (f["image/encoded"][0], f["image/height"][0], f["image/width"][0],
                   f["image/channels"][0], f["image/class/label"][0])
