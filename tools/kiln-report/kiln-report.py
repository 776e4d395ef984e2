#!/usr/bin/python3
"""kiln-report: a training run's metrics and profile as PNG plots.

A thin main over kiln_report.py. Debian's python3-matplotlib draws: the
shebang names Debian's Python, whose packages those are.
"""

import argparse
import os
import sys

_here = os.path.dirname(os.path.realpath(__file__))
# Installed as build/bin/kiln-report with the module in build/lib/kiln-report;
# run from the source tree, the module is beside it.
sys.path[:0] = [os.path.join(_here, "..", "lib", "kiln-report"), _here]

USAGE_EPILOG = """\
Writes into OUT (default RUN/plots): loss.png (train and eval loss),
accuracy.png (eval top-1/top-5), lr.png, throughput.png (images/s; a
systolic run's simulated device images/s too), layers.png (the x86
--profile's time per layer, most first), device-layers.png (a systolic run's
device_report.json), overview.png (with --overview). A plot without data is
skipped with a note saying why. Exit status: 0 done, 1 bad or missing input,
2 bad command line.
"""


def main(argv):
    parser = argparse.ArgumentParser(
        prog="kiln-report",
        description="Render a Kiln run's metrics.jsonl (and --profile rows, "
        "and a systolic run's device_report.json) into PNG plots.",
        epilog=USAGE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", metavar="RUN",
                        help="the run's --model-dir, or its metrics.jsonl")
    parser.add_argument("-o", "--output", metavar="OUT",
                        help="directory of the PNGs (default: RUN/plots)")
    parser.add_argument("--top", type=int, default=20, metavar="N",
                        help="layers shown in the layer plots, the rest summed "
                        "in one bar (default 20)")
    parser.add_argument("--overview", action="store_true",
                        help="also overview.png: every plot in one image")
    parser.add_argument("--device-report", metavar="FILE",
                        help="a systolic run's device_report.json (default: "
                        "RUN/device_report.json when there is one)")
    parser.add_argument("--dump-data", action="store_true",
                        help="print every plotted point: SERIES step STEP "
                        "VALUE, and per layer bar LABEL and its parts")
    args = parser.parse_args(argv)
    if args.top < 1:
        parser.error(f"--top {args.top}: must be at least 1")

    import kiln_report as kr

    if os.path.isdir(args.run):
        runDir, metrics = args.run, os.path.join(args.run, "metrics.jsonl")
    else:
        runDir, metrics = os.path.dirname(args.run) or ".", args.run
    deviceReport = args.device_report
    if deviceReport is None and os.path.exists(os.path.join(runDir, "device_report.json")):
        deviceReport = os.path.join(runDir, "device_report.json")
    outDir = args.output or os.path.join(runDir, "plots")

    run = kr.Run()
    try:
        kr.readMetrics(metrics, run)
        if deviceReport:
            kr.readDeviceReport(deviceReport, run)
        for s in (run.loss, run.evalLoss, run.top1, run.top5, run.lr):
            if n := s.nonFinite():
                run.notes.append(f"{s.label}: {n} value{'s' if n > 1 else ''} not "
                                 f"finite (null in {metrics}), drawn as gaps")
        written, skipped = kr.render(run, outDir, args.top, args.overview)
    except kr.ReportError as e:
        print(f"kiln-report: error: {e}", file=sys.stderr)
        return 1
    for note in run.notes:
        print(f"kiln-report: note: {note}", file=sys.stderr)
    for note in skipped:
        print(f"kiln-report: skipped {note}", file=sys.stderr)
    if run.profiles > 1:
        print(f"kiln-report: note: {metrics} holds the profiles of "
              f"{run.profiles} runs; layers.png shows the last", file=sys.stderr)
    if args.dump_data:
        kr.dumpData(run, args.top, sys.stdout)
    print(f"kiln-report: wrote {len(written)} plots to {outDir}: "
          + " ".join(os.path.basename(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
