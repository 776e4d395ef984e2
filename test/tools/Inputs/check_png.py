"""Checks that each file is a whole, decodable PNG of the given size: the
signature, every chunk's CRC, IHDR first and IEND last, and the IDAT stream
inflating to exactly one filter byte plus one row of pixels per line.

check_png.py WIDTHxHEIGHT FILE...   prints "FILE: WIDTHxHEIGHT ok" per file
"""

import struct
import sys
import zlib

CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # colour type -> samples per pixel


def check(path, want):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG (signature)")
    pos, chunks = 8, []
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) != crc:
            raise SystemExit(f"{path}: bad CRC in chunk {kind!r} at byte {pos}")
        chunks.append((kind, body))
        pos += 12 + length
    if chunks[0][0] != b"IHDR" or chunks[-1][0] != b"IEND":
        raise SystemExit(f"{path}: IHDR not first or IEND not last")
    width, height, depth, colour = struct.unpack(">IIBB", chunks[0][1][:10])
    pixels = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    row = (width * CHANNELS[colour] * depth + 7) // 8
    if len(pixels) != height * (1 + row):
        raise SystemExit(f"{path}: image data of {len(pixels)} bytes, not {height * (1 + row)}")
    got = f"{width}x{height}"
    if got != want:
        raise SystemExit(f"{path}: {got}, not {want}")
    print(f"{path}: {got} ok")


for path in sys.argv[2:]:
    check(path, sys.argv[1])
