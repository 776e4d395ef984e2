#!/usr/bin/env python3
"""Predicted data-parallel efficiency of ResNet-50 training (docs/scaling.md).

A ring allreduce of S bytes over N workers takes
    t = 2 (N-1) alpha + 2 (N-1)/N * S / B
(latency alpha per message, bandwidth B per link). Kiln reduces gradients in
buckets as soon as each is complete, so communication overlaps the rest of
the backward pass; only what is left when the last gradient is produced
(the last bucket, and whatever does not fit behind the backward pass)
extends the step:
    no overlap:   T = Tc + t(S)
    overlap:      T = Tc + max(t(S) - f * Tb, t(S_last))
with Tc the compute time of a step, Tb its backward part, f the share of
the backward pass after the first bucket is ready. Efficiency = Tc / T.

  model.py [--step-seconds T] [--bandwidth-gbit 100] [--alpha-us 5] ...
"""

import argparse


def ring(bytes_, n, alpha, bandwidth):
    if n == 1:
        return 0.0
    return 2 * (n - 1) * alpha + 2 * (n - 1) / n * bytes_ / bandwidth


def main():
    p = argparse.ArgumentParser()
    # The reference run: 16,400 images/s on 256 nodes x 2 workers, batch 48
    # per worker, i.e. 1.50 s per step per worker.
    p.add_argument("--step-seconds", type=float, default=48 / (16400 / 512))
    p.add_argument("--workers-per-node", type=int, default=2)
    p.add_argument("--parameters", type=int, default=25_557_032)
    p.add_argument("--bytes-per-gradient", type=int, default=4)
    p.add_argument("--bandwidth-gbit", type=float, default=100.0)
    p.add_argument("--alpha-us", type=float, default=5.0)
    p.add_argument("--backward-share", type=float, default=2 / 3,
                   help="backward part of a step's compute (2x the forward)")
    p.add_argument("--overlap-share", type=float, default=0.9,
                   help="share of the backward pass left once the first bucket is ready")
    p.add_argument("--bucket-bytes", type=int, default=25 << 20)
    args = p.parse_args()

    size = args.parameters * args.bytes_per_gradient
    # Workers on one node share its link.
    bandwidth = args.bandwidth_gbit * 1e9 / 8 / args.workers_per_node
    alpha = args.alpha_us * 1e-6
    tc = args.step_seconds
    tb = args.backward_share * tc
    print(f"step compute {tc * 1000:.0f} ms, gradients {size / 2**20:.1f} MiB, "
          f"{args.bandwidth_gbit:g} Gbit/s per node shared by {args.workers_per_node} workers, "
          f"alpha {args.alpha_us:g} us")
    print(f"{'nodes':>6} {'workers':>8} {'allreduce ms':>13} {'no overlap':>11} {'overlap':>8}")
    for nodes in (8, 16, 32, 64, 128, 256):
        n = nodes * args.workers_per_node
        t = ring(size, n, alpha, bandwidth)
        last = ring(min(args.bucket_bytes, size), n, alpha, bandwidth)
        plain = tc / (tc + t)
        hidden = tc / (tc + max(t - args.overlap_share * tb, last))
        print(f"{nodes:6d} {n:8d} {t * 1000:13.1f} {plain * 100:10.1f}% {hidden * 100:7.1f}%")


if __name__ == "__main__":
    main()
