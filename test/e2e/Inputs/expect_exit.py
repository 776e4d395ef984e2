"""Runs a command that must end with a given exit status within a deadline.

    expect_exit.py STATUS SECONDS -- COMMAND...

Prints the command's output (stdout and stderr together), then one line
"exit STATUS within SECONDS s". Fails (status 1, saying why) if the command
ran past SECONDS (it is killed then, with its process group: a hang is a
failure, never a pass) or ended with another status. Used by the tests of
failures that must be quick, such as ranks that disagree under mpirun.
"""
import os
import signal
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.exit("usage: expect_exit.py STATUS SECONDS -- COMMAND...")
    expected, seconds, command = int(sys.argv[1]), float(sys.argv[2]), sys.argv[4:]
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        sys.stdout.write(output.decode(errors="replace"))
        print(f"FAIL: still running after {seconds:g} s; killed")
        sys.exit(1)
    elapsed = time.monotonic() - start
    sys.stdout.write(output.decode(errors="replace"))
    if process.returncode != expected:
        print(f"FAIL: exit status {process.returncode} after {elapsed:.1f} s, "
              f"expected {expected}")
        sys.exit(1)
    print(f"exit {expected} within {seconds:g} s")


if __name__ == "__main__":
    main()
