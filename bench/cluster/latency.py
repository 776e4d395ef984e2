#!/usr/bin/env python3
"""Median round-trip time of an 8-byte TCP ping-pong, in microseconds:
`latency.py server ADDR` in one network namespace, `latency.py client ADDR`
in another (bench/cluster/validate.sh)."""
import socket
import statistics
import sys
import time

PORT = 5998


def main():
    mode, host = sys.argv[1], sys.argv[2]
    if mode == "server":
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, PORT))
        s.listen(1)
        c, _ = s.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while (b := c.recv(64)):
            c.sendall(b)
        return
    for attempt in range(50):
        try:
            c = socket.create_connection((host, PORT))
            break
        except ConnectionRefusedError:
            time.sleep(0.1)
    else:
        raise SystemExit(f"latency.py: no server at {host}:{PORT}")
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rtts = []
    for _ in range(2000):
        t = time.perf_counter()
        c.sendall(b"x" * 8)
        c.recv(64)
        rtts.append(time.perf_counter() - t)
    print(f"{statistics.median(rtts) * 1e6:.1f}")


if __name__ == "__main__":
    main()
