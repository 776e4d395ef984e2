#!/usr/bin/env bash
# Runs the README's commands as a new user would, and fails naming the README
# line of the first one that fails.
#
#   scripts/readme-check.sh [--full-data] [--keep] [README]
#
# Every ```sh block runs, one command at a time (a command's lines joined at
# their trailing backslashes, comment lines left out), in one temporary
# directory laid out like the checkout (its top-level entries and build/ are
# links), in order, so each command sees what the ones before it made. The
# PATH is a fresh Debian machine's (python3 is Debian's, with its torch and
# matplotlib). A ```python block whose first line is "# NAME.py" is saved as
# NAME.py there, as the README tells the user. A ```text block right after a
# ```sh block (an "Output ..." line may come between) is the expected output
# of that block's last command: each of
# its lines but "..." must appear in that output, in order, any number (and
# any duration such as 1m02s) standing for any other.
#
# An HTML comment line before a block directs the check:
#   <!-- readme-check: skip: WHY -->    the block is not run (the set-up commands)
#   <!-- readme-check: serves: WHY -->  each command is a server: it must print
#                                       a URL and stay up; it is then stopped
#
# Small defaults: /usr/share/datasets/fashion-mnist in a command becomes a copy
# of its first 1000 training and 250 test images, so that the whole check takes
# a minute or two; --full-data keeps Debian's files (what the README's
# expected outputs show). --keep leaves the directory and each command's
# output (NNN.log) behind.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
full=0 keep=0 readme=$root/README.md
while (($#)); do
  case $1 in
  --full-data) full=1 ;;
  --keep) keep=1 ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
  -*)
    echo "readme-check: unknown option $1" >&2
    exit 2
    ;;
  *) readme=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") ;;
  esac
  shift
done
[[ -f $readme ]] || { echo "readme-check: no file $readme" >&2; exit 2; }
name=$(basename "$readme")
build=${KILN_BUILD_DIR:-build}
[[ $build == /* ]] || build=$root/$build
[[ -x $build/bin/kilnc ]] || {
  echo "readme-check: $build/bin/kilnc is missing: build first (bash scripts/build.sh)" >&2
  exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-readme.XXXXXX")
cleanup() {
  # A server a failed check left running.
  [[ -n ${server:-} ]] && kill -- -"$server" 2>/dev/null || true
  if ((keep)); then echo "readme-check: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
for entry in "$root"/*; do
  [[ $(basename "$entry") == build ]] || ln -s "$entry" "$work/"
done
ln -s "$build" "$work/build"
meta=$work/.readme-check
mkdir -p "$meta"

fmnist=/usr/share/datasets/fashion-mnist
data=$fmnist
((full)) || data=$meta/fashion-mnist-small
# Made when a command first names the data set.
small_data() {
  [[ $data == "$fmnist" || -d $data ]] && return
  mkdir -p "$data"
  # The first images of each split, in the same IDX files: a header with the
  # new count, then the data. 1000 does not divide into batches of 64, so the
  # output shows the remainder line it does with the whole set.
  python3 - "$fmnist" "$data" <<'PY'
import gzip, struct, sys
src, dst = sys.argv[1:]
for split, n in (("train", 1000), ("t10k", 250)):
    for kind, header, item in (("images-idx3", ">IIII", 28 * 28), ("labels-idx1", ">II", 1)):
        with gzip.open(f"{src}/{split}-{kind}-ubyte.gz") as f:
            fields = list(struct.unpack(header, f.read(struct.calcsize(header))))
            body = f.read(n * item)
        fields[1] = n
        with gzip.open(f"{dst}/{split}-{kind}-ubyte.gz", "wb") as f:
            f.write(struct.pack(header, *fields) + body)
PY
}

# The README as numbered items, one file each: NNN.kind (sh, serves, file or
# expect), NNN.line (its first README line), NNN.text.
awk -v dir="$meta" '
  function emit(kind, line, text) {
    n++
    f = sprintf("%s/%03d", dir, n)
    printf "%s\n", kind > (f ".kind"); close(f ".kind")
    printf "%s\n", line > (f ".line"); close(f ".line")
    printf "%s", text > (f ".text"); close(f ".text")
  }
  /^<!-- readme-check: / {
    directive = $3; sub(/:$/, "", directive)
    if (directive != "skip" && directive != "serves") {
      printf "%s:%d: unknown readme-check directive \"%s\"\n", FILENAME, NR, directive > "/dev/stderr"
      bad = 1
    }
    next
  }
  /^```/ && !fence {
    fence = 1; lang = substr($0, 4); start = NR; nlines = 0
    # A text block right after a block that ran is its expected output.
    expect = lang == "text" && lastRun && !gap
    blockDirective = directive; directive = ""
    next
  }
  /^```/ && fence {
    fence = 0
    ran = 0
    if (lang == "sh" && blockDirective != "skip") {
      cmd = ""
      for (i = 1; i <= nlines; i++) {
        l = body[i]
        if (cmd == "" && (l ~ /^[ \t]*#/ || l ~ /^[ \t]*$/)) continue
        if (cmd == "") cmdLine = start + i
        if (l ~ /\\$/) { cmd = cmd substr(l, 1, length(l) - 1) " "; continue }
        cmd = cmd l
        emit(blockDirective == "serves" ? "serves" : "sh", cmdLine, cmd "\n")
        cmd = ""
        ran = 1
      }
    } else if (lang == "python" && blockDirective != "skip" && body[1] ~ /^# [A-Za-z0-9_.-]+\.py$/) {
      text = ""
      for (i = 1; i <= nlines; i++) text = text body[i] "\n"
      emit("file", start + 1, substr(body[1], 3) "\n" text)
    } else if (expect) {
      text = ""
      for (i = 1; i <= nlines; i++) text = text body[i] "\n"
      emit("expect", start + 1, text)
    }
    lastRun = ran; gap = 0
    next
  }
  fence { body[++nlines] = $0; next }
  # An "Output ..." line may introduce the expected output.
  !/^[ \t]*$/ && !/^Output/ { gap = 1 }
  END { exit bad }
' "$readme"

# The expected output must appear in order in the actual one; numbers and
# durations stand for any others.
match_output() {
  python3 - "$1" "$2" <<'PY'
import re, sys
expected = [l for l in open(sys.argv[1]).read().splitlines() if l.strip() not in ("", "...")]
actual = open(sys.argv[2], errors="replace").read().splitlines()
number = r"[0-9]+(?:[.,][0-9]+)*(?:e[-+]?[0-9]+)?"
duration = r"(?:[0-9]+h)?(?:[0-9]+m)?[0-9]+s\b"
token = re.compile(f"({duration}|{number})")
i = 0
for n, line in enumerate(expected):
    parts = token.split(line)
    pattern = "".join(
        f"(?:{duration}|{number})" if k % 2 else re.escape(p) for k, p in enumerate(parts))
    rx = re.compile(pattern)
    while i < len(actual) and not rx.search(actual[i]):
        i += 1
    if i == len(actual):
        print(f"expected output line {n + 1} not found (in order): {line}")
        sys.exit(1)
    i += 1
PY
}

fail() {
  echo "readme-check: $name:$1: $2" >&2
  [[ -f ${3:-} ]] && tail -n 25 "$3" | sed 's/^/  | /' >&2
  exit 1
}

# A command on the small data takes seconds; on the whole data set, training
# takes as long as it takes.
limit=$((full ? 0 : 600))
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
start=$SECONDS
commands=0
lastLog=""
for kindFile in "$meta"/*.kind; do
  item=${kindFile%.kind}
  kind=$(<"$kindFile")
  line=$(<"$item.line")
  text=$(<"$item.text")
  log=$item.log
  case $kind in
  file)
    file=${text%%$'\n'*}
    printf '%s\n' "${text#*$'\n'}" >"$work/$file"
    echo "readme-check: $name:$line: saved $file"
    ;;
  sh)
    [[ $text != *"$fmnist"* ]] || small_data
    cmd=${text//$fmnist/$data}
    t0=$SECONDS
    status=0
    (cd "$work" && timeout "$limit" bash -c "set -o pipefail; $cmd") >"$log" 2>&1 </dev/null || status=$?
    # `| head` closes the pipe early: a writer killed by SIGPIPE is what a
    # user's shell shows as success.
    if ((status == 141)) && [[ $cmd == *"|"* ]]; then status=0; fi
    ((status == 0)) || fail "$line" "exit status $status: $text" "$log"
    echo "readme-check: $name:$line: ok ($((SECONDS - t0)) s): ${text:0:90}"
    lastLog=$log
    commands=$((commands + 1))
    ;;
  serves)
    [[ $text != *"$fmnist"* ]] || small_data
    cmd=${text//$fmnist/$data}
    (cd "$work" && exec setsid bash -c "$cmd") >"$log" 2>&1 </dev/null &
    server=$!
    up=0
    for _ in $(seq 180); do
      if grep -q 'http://' "$log"; then up=1; break; fi
      kill -0 "$server" 2>/dev/null || break
      sleep 0.5
    done
    if ((up)) && kill -0 "$server" 2>/dev/null; then
      kill -- -"$server" 2>/dev/null || true
      wait "$server" 2>/dev/null || true
      server=""
      echo "readme-check: $name:$line: ok (came up): ${text:0:90}"
    else
      fail "$line" "the server did not come up (no URL within 90 s, or it exited): $text" "$log"
    fi
    lastLog=""
    commands=$((commands + 1))
    ;;
  expect)
    [[ -n $lastLog ]] || fail "$line" "expected output after a command that shows none"
    if ! why=$(match_output "$item.text" "$lastLog"); then
      fail "$line" "$why" "$lastLog"
    fi
    echo "readme-check: $name:$line: output as shown"
    ;;
  esac
done
((commands > 0)) || fail 1 "no commands found (\`\`\`sh blocks)"
echo "readme-check: all $commands commands of $name passed in $((SECONDS - start)) s"
