"""Checks the runtime's communication line (docs/runtime.md, "Communicator").

    exposed_comm.py LOG [--hidden-at-most PERCENT] [--waited-at-most MS]

Reads "kiln: gradient allreduce: ... the steps spent A / B / C ms per step
on communication ... D / E / F% hidden (min / median / max over N ranks)"
from LOG and checks that every rank's hidden share (D..F) and time spent
(A..C) is at most the given bounds. Prints the figures and "OK", or what failed.
"""
import argparse
import re
import sys

LINE = re.compile(r"kiln: gradient allreduce: (\d+) buckets? of .* take "
                  r"([0-9.]+) ms alone; the steps spent ([0-9.]+) / ([0-9.]+) "
                  r"/ ([0-9.]+) ms per step .*: (\d+) / (\d+) / (\d+)% hidden "
                  r"\(min / median / max over (\d+) ranks?\)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("--hidden-at-most", type=float)
    parser.add_argument("--waited-at-most", type=float)
    args = parser.parse_args()
    matches = [LINE.search(line) for line in open(args.log, errors="replace")]
    matches = [m for m in matches if m]
    if len(matches) != 1:
        sys.exit(f"FAIL: {len(matches)} communication lines in {args.log}")
    m = matches[0]
    buckets, alone = int(m.group(1)), float(m.group(2))
    waited = [float(m.group(i)) for i in (3, 4, 5)]
    hidden = [int(m.group(i)) for i in (6, 7, 8)]
    print(f"{buckets} buckets, {alone} ms alone, spent {waited} ms, "
          f"hidden {hidden}% over {m.group(9)} ranks")
    if args.hidden_at_most is not None and max(hidden) > args.hidden_at_most:
        sys.exit(f"FAIL: {max(hidden)}% hidden, expected at most "
                 f"{args.hidden_at_most:g}%")
    if args.waited_at_most is not None and max(waited) > args.waited_at_most:
        sys.exit(f"FAIL: spent {max(waited)} ms per step, expected at most "
                 f"{args.waited_at_most:g}")
    print("OK")


if __name__ == "__main__":
    main()
