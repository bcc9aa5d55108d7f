#!/usr/bin/env python3
"""The spacing of a client's sends, from packet timestamps in seconds (one a line, on stdin):
the gaps' mean and percentiles in µs, their coefficient of variation (0 for an even pace, 1
for Poisson arrivals, above 1 for bursts), and the most sends in any 1 ms (an even pace at R
req/s sends R / 1000 in each). The first and last half second are left out (start, stop).
Usage: send_gaps.py CONNS RATE CLIENT (printed as the row's first columns)."""
import statistics
import sys

times = [float(line) for line in sys.stdin if line.strip()]
conns, rate, client = sys.argv[1:4]
if len(times) < 10:
    print(f"{conns:6s} {rate:>8s} {client:14s} (too few packets: {len(times)})")
    sys.exit(0)
times = [t for t in times if times[0] + 0.5 <= t <= times[-1] - 0.5]
gaps = sorted((b - a) * 1e6 for a, b in zip(times, times[1:]))


def pct(p):
    return gaps[min(len(gaps) - 1, int(p / 100 * len(gaps)))]


mean = statistics.fmean(gaps)
cv = statistics.pstdev(gaps) / mean
most, j = 0, 0
for i, t in enumerate(times):
    while times[j] <= t - 0.001:
        j += 1
    most = max(most, i - j + 1)
print(f"{conns:6s} {rate:>8s} {client:14s} {mean:8.1f} {pct(10):8.1f} {pct(50):8.1f} {pct(90):8.1f} "
      f"{pct(99):8.1f} {cv:6.2f} {most} (even: {float(rate) / 1000:g})")
