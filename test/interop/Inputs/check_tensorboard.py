"""Reads a Kiln run's TensorBoard event files with TensorBoard's own reader
(EventAccumulator, from the pinned PyPI tensorboard in build/interop-venv)
and checks every number against metrics.jsonl: each numeric field of each row
is the scalar "<kind>/<key>" (profile rows: "<kind>/<series>/<key>", the
series a layer row's "layer" and any other row's "loc") at the
row's step, equal to float32's precision (simple_value's type): within one
float32 step, since metrics.jsonl prints 9 digits of the double and the
event file rounds the double itself.

check_tensorboard.py RUN_DIR TAG...   (TAGs that must be present)
"""

import json
import os
import struct
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def same(got, want):
    """Equal steps, values within one float32 step of each other."""
    return len(got) == len(want) and all(
        gs == ws and abs(gv - wv) <= abs(wv) * 2.0 ** -23 for (gs, gv), (ws, wv) in zip(got, want))


def main():
    run, required = sys.argv[1], sys.argv[2:]
    files = [f for f in os.listdir(run) if "tfevents" in f]
    if len(files) != 1:
        raise SystemExit(f"expected one event file in {run}, found {files}")
    acc = EventAccumulator(run, size_guidance={"scalars": 0})
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    missing = [t for t in required if t not in tags]
    if missing:
        raise SystemExit(f"tags missing from the event file: {missing}; it has {sorted(tags)}")

    expected = {}
    step = 0
    for line in open(os.path.join(run, "metrics.jsonl")):
        row = json.loads(line)
        step = row.get("step", step)
        series = row.get("layer") if row["kind"] == "profile_layer" else None
        series = series or row.get("loc")
        prefix = row["kind"] + "/" + (series + "/" if series else "")
        for key, value in row.items():
            if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
                expected.setdefault(prefix + key, []).append((step, f32(value)))
    if set(expected) != tags:
        raise SystemExit(f"tags differ: metrics.jsonl only {sorted(set(expected) - tags)}, "
                         f"event file only {sorted(tags - set(expected))}")
    count = 0
    for tag, values in expected.items():
        got = [(e.step, e.value) for e in acc.Scalars(tag)]
        if not same(got, values):
            raise SystemExit(f"{tag}: event file {got[:5]} vs metrics.jsonl {values[:5]}")
        count += len(values)
    print(f"tensorboard: {len(tags)} tags, {count} scalars equal to metrics.jsonl")


if __name__ == "__main__":
    main()
