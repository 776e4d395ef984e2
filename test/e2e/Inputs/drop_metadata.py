"""Removes one key from a safetensors file's __metadata__, in place.

    drop_metadata.py FILE KEY

Makes a checkpoint look like one an older runtime wrote (without KEY).
"""
import json
import struct
import sys

path, key = sys.argv[1], sys.argv[2]
with open(path, "rb") as f:
    data = f.read()
(length,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + length])
del header["__metadata__"][key]
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)  # keep the data 8-byte aligned
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + data[8 + length:])
