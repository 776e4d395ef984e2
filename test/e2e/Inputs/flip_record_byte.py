"""Flips one data byte of record INDEX of a TFRecord file and prints the
record's byte offset (for tests of corrupt-record reports)."""
import struct
import sys

path, index = sys.argv[1], int(sys.argv[2])
data = bytearray(open(path, "rb").read())
offset = 0
for _ in range(index):
    (length,) = struct.unpack_from("<Q", data, offset)
    offset += 16 + length  # header (length, CRC) + data + footer (CRC)
data[offset + 12 + 5] ^= 0x20
open(path, "wb").write(data)
print(offset)
