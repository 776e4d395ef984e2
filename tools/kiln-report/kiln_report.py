"""kiln-report's library: a run's metrics.jsonl (and a systolic run's
device_report.json) read into series, and those series drawn as PNG plots.

The records are the training executable's (docs/runtime.md, "Output"):
  train    step, epoch, loss, lr, images_per_sec, [device_images_per_sec]
  eval     step, epoch, top1, top5, loss, examples, seconds
  summary  one per run
  profile_layer, profile_op, profile   the --profile tables of one run
and device_report.json is the systolic target's timed step (docs/systolic.md),
whose "layers" list holds each layer's busy cycles per unit.
"""

import json
import math
import os


DPI = 100
# Pixel sizes of the PNGs (docs/runtime.md, "Plots of a run").
PLOT_SIZE = (1200, 700)
OVERVIEW_SIZE = (1800, 1000)
LAYER_PLOT_WIDTH = 1200
LAYER_BAR_HEIGHT = 28
LAYER_PLOT_MARGIN = 160


class ReportError(Exception):
    """A problem with the input, worded for the user (one line)."""


class Series:
    """(step, value) points of one plotted line, in step order."""

    def __init__(self, name, label):
        self.name = name
        self.label = label
        self.steps = []
        self.values = []

    def add(self, step, value):
        # A resumed run restarts from its checkpoint and logs again the steps
        # after it: those rows replace the killed run's, so every line is a
        # function of the step.
        while self.steps and self.steps[-1] >= step:
            self.steps.pop()
            self.values.pop()
        self.steps.append(step)
        self.values.append(value)

    def __len__(self):
        return len(self.steps)

    def nonFinite(self):
        return sum(1 for v in self.values if not math.isfinite(v))


class LayerTimes:
    """Per-layer time of one step, the bars of a layer plot."""

    def __init__(self, title, unit, parts):
        self.title = title
        self.unit = unit
        self.parts = parts  # names of the stacked parts of each bar
        self.rows = []  # (label, [value per part])

    def add(self, label, values):
        self.rows.append((label, values))

    def __len__(self):
        return len(self.rows)

    def ranked(self, top):
        """The `top` rows with most time, most first, and the rest summed
        into one row (None if there is no rest)."""
        rows = sorted(self.rows, key=lambda r: -sum(r[1]))
        shown, rest = rows[:top], rows[top:]
        if not rest:
            return shown, None
        summed = [sum(r[1][i] for r in rest) for i in range(len(self.parts))]
        return shown, (f"{len(rest)} other layer{'s' if len(rest) > 1 else ''}",
                       summed)


class Run:
    """Everything kiln-report plots, read from one run's files."""

    def __init__(self):
        self.loss = Series("loss.train", "train loss")
        self.evalLoss = Series("loss.eval", "eval loss")
        self.top1 = Series("accuracy.top1", "eval top-1 %")
        self.top5 = Series("accuracy.top5", "eval top-5 %")
        self.lr = Series("lr", "learning rate")
        self.images = Series("throughput.host", "images/s")
        self.deviceImages = Series("throughput.device", "simulated device images/s")
        self.layers = None  # LayerTimes of the x86 --profile
        self.deviceLayers = None  # LayerTimes of device_report.json
        self.profiles = 0  # runs in the file that wrote a profile
        self.notes = []


def _number(row, key, where):
    """A row's number; JSON null (the runtime's NaN or Inf) as NaN."""
    if key not in row:
        raise ReportError(f"{where}: a {row['kind']} row without \"{key}\"")
    value = row[key]
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ReportError(f"{where}: \"{key}\" is {json.dumps(value)}, not a number")
    return float(value)


def _step(row, where):
    step = row.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ReportError(
            f"{where}: a {row['kind']} row needs a \"step\" that is a whole "
            f"number >= 0, not {json.dumps(step)}")
    return step


def readRows(path):
    """The rows of a metrics.jsonl as (line number, dict); a torn last line
    (no newline: a run killed while writing it) is left out with a note."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ReportError(f"{path}: {e.strerror}") from None
    lines = data.split(b"\n")
    torn = lines.pop()  # what follows the last newline
    rows, notes = [], []
    if torn:
        notes.append(f"{path}:{len(lines) + 1}: a last line without a newline "
                     f"({len(torn)} bytes, a run killed while writing it) is "
                     f"left out")
    for number, raw in enumerate(lines, start=1):
        where = f"{path}:{number}"
        if not raw.strip():
            continue
        try:
            row = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise ReportError(f"{where}: not UTF-8 text (byte {e.start})") from None
        except json.JSONDecodeError as e:
            raise ReportError(f"{where}: not a JSON object: {e.msg} at column {e.colno}") from None
        if not isinstance(row, dict):
            raise ReportError(f"{where}: not a JSON object but {type(row).__name__}")
        if not isinstance(row.get("kind"), str):
            raise ReportError(f"{where}: a row without a \"kind\" string")
        rows.append((where, row))
    return rows, notes


def _layerLabel(row, where):
    """A layer's name where the runtime knows it, else its model line; then
    its forward ops (a line's backward ops are the same layer's)."""
    label = next((row[key] for key in ("name", "layer", "loc")
                  if isinstance(row.get(key), str) and row[key]), None)
    if label is None:
        raise ReportError(f"{where}: a profile_layer row without \"loc\"")
    ops = str(row.get("ops", "")).split()
    forward = [op for op in dict.fromkeys(ops) if "backward" not in op]
    return f"{label} ({' '.join(forward or ops)})" if ops else label


def readMetrics(path, run):
    rows, notes = readRows(path)
    run.notes += notes
    if not rows:
        raise ReportError(f"{path}: no rows")
    # A run with --profile writes its profile_layer rows, then one profile
    # row with the steps they cover; a file appended to by several runs may
    # hold several profiles, and the last is the one plotted.
    pending, lastProfile = [], None
    for where, row in rows:
        kind = row["kind"]
        if kind == "train":
            step = _step(row, where)
            run.loss.add(step, _number(row, "loss", where))
            run.lr.add(step, _number(row, "lr", where))
            run.images.add(step, _number(row, "images_per_sec", where))
            if "device_images_per_sec" in row:
                run.deviceImages.add(step, _number(row, "device_images_per_sec", where))
        elif kind == "eval":
            step = _step(row, where)
            run.top1.add(step, 100 * _number(row, "top1", where))
            run.top5.add(step, 100 * _number(row, "top5", where))
            run.evalLoss.add(step, _number(row, "loss", where))
        elif kind == "profile_layer":
            pending.append((where, row))
        elif kind == "profile":
            steps = _number(row, "steps", where)
            if not steps > 0:
                raise ReportError(f"{where}: a profile of {row['steps']} steps")
            lastProfile = (steps, pending)
            pending = []
            run.profiles += 1
    if pending:
        raise ReportError(f"{pending[-1][0]}: profile_layer rows without the "
                          f"profile row that follows them (the steps they cover)")
    if lastProfile:
        steps, layerRows = lastProfile
        times = LayerTimes("Train step by layer (x86 --profile)", "ms per step",
                           ["library calls", "generated code"])
        for where, row in layerRows:
            times.add(_layerLabel(row, where),
                      [1e3 * _number(row, "library_sec", where) / steps,
                       1e3 * _number(row, "generated_sec", where) / steps])
        run.layers = times


def readDeviceReport(path, run):
    """The systolic target's timed step: per layer the MXU and vector units'
    busy cycles (as kiln-sim ranks them), in microseconds at its clock."""
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except OSError as e:
        raise ReportError(f"{path}: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: not a device report: {e}") from None
    try:
        clock = float(report["step"]["clock_hz"])
        layers = report["layers"]
        if not clock > 0 or not isinstance(layers, list):
            raise TypeError
        times = LayerTimes(
            f"Simulated step by layer ({report.get('program', '?')} on "
            f"{report.get('target', '?')})", "\u00b5s per step",
            ["MXU busy (summed over the MXUs)", "vector unit busy"])
        for layer in layers:
            times.add(str(layer["layer"]) or "(no layer)",
                      [1e6 * float(layer["mxu_busy_cycles"]) / clock,
                       1e6 * float(layer["vector_busy_cycles"]) / clock])
    except (KeyError, TypeError, ValueError):
        raise ReportError(f"{path}: not a device report (expected step.clock_hz "
                          f"and layers[] with mxu_busy_cycles and "
                          f"vector_busy_cycles)") from None
    run.deviceLayers = times


#===------------------------------------------------------------------------===#
# Plots
#===------------------------------------------------------------------------===#

def _pyplot():
    # Imported when drawing starts: reading and its errors need no plotting
    # library, and importing it takes most of a second. Plots are written
    # to files only: the Agg backend needs no display.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _figure(size, fitted=True):
    """A figure of `size` pixels. A plot of one curve panel has margins known
    in advance; fitting them to the labels (layer names, several panels)
    costs as much as drawing."""
    fig = _pyplot().figure(figsize=(size[0] / DPI, size[1] / DPI), dpi=DPI,
                           layout="constrained" if fitted else None)
    if not fitted:
        fig.subplots_adjust(left=0.08, right=0.97, bottom=0.09, top=0.93)
    return fig


def _lines(ax, title, ylabel, series, log=False):
    for s in series:
        if len(s):
            marker = "o" if len(s) < 30 else None
            ax.plot(s.steps, s.values, label=s.label, marker=marker, markersize=4)
    ax.set_title(title)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    if sum(1 for s in series if len(s)) > 1:
        ax.legend()


def _drawLoss(ax, run):
    _lines(ax, "Loss", "loss", [run.loss, run.evalLoss])


def _drawAccuracy(ax, run):
    _lines(ax, "Evaluation accuracy", "%", [run.top1, run.top5])
    ax.set_ylim(0, 100)


def _drawLr(ax, run):
    _lines(ax, "Learning rate", "learning rate", [run.lr])


def _drawThroughput(ax, run):
    # A simulated device is orders of magnitude faster or slower than the
    # host that simulates it: one logarithmic axis shows both.
    both = len(run.deviceImages) > 0
    run.images.label = "host images/s" if both else "images/s"
    _lines(ax, "Throughput", "images/s", [run.images, run.deviceImages], log=both)


def _drawLayers(ax, times, top):
    shown, rest = times.ranked(top)
    if rest:
        shown = shown + [rest]
    labels = [label for label, _ in shown]
    y = list(range(len(shown)))
    left = [0.0] * len(shown)
    for i, part in enumerate(times.parts):
        widths = [values[i] for _, values in shown]
        if any(widths):
            ax.barh(y, widths, left=left, label=part)
        left = [a + b for a, b in zip(left, widths)]
    for i, total in enumerate(left):
        ax.annotate(f"{total:.3g}", (total, i), xytext=(3, 0),
                    textcoords="offset points", va="center", fontsize="small")
    # Room for the figures at the bars' ends.
    ax.set_xlim(0, 1.12 * max(left) if max(left) > 0 else 1)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()  # most time at the top
    ax.set_xlabel(times.unit)
    ax.set_title(times.title)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="lower right")


def layerPlotSize(times, top):
    bars = min(len(times), top) + (len(times) > top)
    return (LAYER_PLOT_WIDTH,
            max(PLOT_SIZE[1], LAYER_PLOT_MARGIN + LAYER_BAR_HEIGHT * bars))


def _curves(run):
    """The curve plots with data: (file stem, draw function), and notes on
    those skipped."""
    plots, skipped = [], []
    if len(run.loss) or len(run.evalLoss):
        plots.append(("loss", _drawLoss))
    else:
        skipped.append("loss.png: no train or eval rows")
    if len(run.top1):
        plots.append(("accuracy", _drawAccuracy))
    else:
        skipped.append("accuracy.png: no eval rows (train with --eval or --eval-every-epoch)")
    if len(run.lr):
        plots.append(("lr", _drawLr))
    else:
        skipped.append("lr.png: no train rows (--log-every 0 writes none)")
    if len(run.images):
        plots.append(("throughput", _drawThroughput))
    else:
        skipped.append("throughput.png: no train rows (--log-every 0 writes none)")
    return plots, skipped


def render(run, outDir, top, overview):
    """Writes the PNGs; returns (written paths, notes on skipped plots)."""
    plots, skipped = _curves(run)
    layerPlots = []
    if run.layers is not None and len(run.layers):
        layerPlots.append(("layers", run.layers))
    elif run.deviceLayers is None:
        skipped.append("layers.png: no profile rows (train with --profile and "
                       "--model-dir) and no device_report.json")
    if run.deviceLayers is not None and len(run.deviceLayers):
        layerPlots.append(("device-layers", run.deviceLayers))
    if not plots and not layerPlots:
        raise ReportError("nothing to plot: " + "; ".join(skipped))
    try:
        os.makedirs(outDir, exist_ok=True)
    except OSError as e:
        raise ReportError(f"{outDir}: {e.strerror}") from None
    written = []

    def save(fig, stem):
        path = os.path.join(outDir, stem + ".png")
        try:
            fig.savefig(path, dpi=DPI)
        except OSError as e:
            raise ReportError(f"{path}: {e.strerror}") from None
        finally:
            _pyplot().close(fig)
        written.append(path)

    for stem, draw in plots:
        fig = _figure(PLOT_SIZE, fitted=False)
        draw(fig.add_subplot(), run)
        save(fig, stem)
    for stem, times in layerPlots:
        fig = _figure(layerPlotSize(times, top))
        _drawLayers(fig.add_subplot(), times, top)
        save(fig, stem)
    if overview:
        fig = _figure(OVERVIEW_SIZE)
        # Curves in a 2x2 block on the left, the layers (when there are
        # any) down the right.
        grid = fig.add_gridspec(2, 3 if layerPlots else 2)
        for i, (_, draw) in enumerate(plots):
            draw(fig.add_subplot(grid[i // 2, i % 2]), run)
        if layerPlots:
            _drawLayers(fig.add_subplot(grid[:, 2]), layerPlots[0][1], min(top, 15))
        save(fig, "overview")
    return written, skipped


def dumpData(run, top, out):
    """The plotted numbers, one point a line, in the order drawn: for tests
    and for users who want the figures behind a plot."""
    for s in (run.loss, run.evalLoss, run.top1, run.top5, run.lr, run.images,
              run.deviceImages):
        for step, value in zip(s.steps, s.values):
            out.write(f"{s.name} step {step} {value!r}\n")
    for name, times in (("layers", run.layers), ("device-layers", run.deviceLayers)):
        if times is None:
            continue
        shown, rest = times.ranked(top)
        for label, values in shown + ([rest] if rest else []):
            parts = " ".join(f"{v!r}" for v in values)
            out.write(f"{name} {label} {parts}\n")
