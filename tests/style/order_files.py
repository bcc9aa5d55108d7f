#!/usr/bin/env python3
"""A link order file (bench/symbol_order.sh writes one per measured program) still names the
program's functions: at most MAX_MISSING of its names may be missing from the built binary
(lld skips them silently: --no-warn-symbol-ordering), or the code layout it was made for is gone
and the program's resident code grows without a word. Run bench/symbol_order.sh again then.

    order_files.py ORDER_FILE BINARY [ORDER_FILE BINARY ...]
"""
import subprocess
import sys

MAX_MISSING = 0.05


def main():
    args = sys.argv[1:]
    if not args or len(args) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems = 0
    for order, binary in zip(args[::2], args[1::2]):
        nm = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True)
        defined = {line.split()[-1] for line in nm.stdout.splitlines() if line.strip()}
        with open(order, encoding="utf-8") as f:
            names = {line.strip() for line in f if line.strip() and not line.startswith("#")}
        missing = sorted(names - defined)
        share = len(missing) / len(names) if names else 0
        print(f"{order}: {len(missing)} of {len(names)} names not in {binary} ({share:.1%})")
        if share > MAX_MISSING:
            problems += 1
            print(f"  over {MAX_MISSING:.0%}: run bench/symbol_order.sh to lay the code out again; e.g. "
                  + ", ".join(missing[:5]))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
