"""Writes DIR/train-00000-of-00001 as a TFRecord file of 232 bytes holding
COUNT records: 2 of 100 bytes, or 1 of 216 (the same size, so the file's
name and size cannot tell them apart). With "bad-length" a byte of record
1's length is flipped, which breaks its length CRC but keeps the size."""
import os
import struct
import sys


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(payload):
    length = struct.pack("<Q", len(payload))
    return (length + struct.pack("<I", masked(length)) + payload +
            struct.pack("<I", masked(payload)))


directory, kind = sys.argv[1], sys.argv[2]
os.makedirs(directory, exist_ok=True)
if kind == "1":
    data = bytearray(record(b"x" * 216))
else:
    data = bytearray(record(b"a" * 100) + record(b"b" * 100))
    if kind == "bad-length":
        data[116] ^= 0x01
assert len(data) == 232
with open(os.path.join(directory, "train-00000-of-00001"), "wb") as f:
    f.write(data)
