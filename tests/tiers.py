#!/usr/bin/env python3
"""Each test tier's count of passed, skipped and failed tests, and why each skipped.

    tests/tiers.py BUILD_DIR JUNIT_XML

JUNIT_XML is what `ctest --output-junit` wrote; the tiers are the tests' ctest labels (fast,
process, timing, and the cross-cutting root and tools), read from `ctest --show-only=json-v1`
in BUILD_DIR. A test counts in each tier it is labelled with. Prints a table and, per skipped
test, its reason: the line GoogleTest printed after "Skipped", or a script's last line.
Exit status 0 (the counts are a report; ctest's own status says whether the run passed).
"""
import collections
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

TIERS = ("fast", "process", "timing", "root", "tools")


def labels_of(build_dir):
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build_dir, capture_output=True, text=True, check=True)
    labels = {}
    for test in json.loads(out.stdout)["tests"]:
        for prop in test.get("properties", []):
            if prop["name"] == "LABELS":
                labels[test["name"]] = [l for l in prop["value"] if l in TIERS]
    return labels


def skip_reason(output):
    """The reason a skipped test gave: GoogleTest's line after "file:line: Skipped", or, for a
    script that exits 77, its last line of output."""
    lines = [l.strip() for l in output.splitlines()]
    for i, line in enumerate(lines):
        if line.endswith(": Skipped"):
            said = [r for r in lines[i + 1:i + 4] if r and not r.startswith("[")]
            if said:
                # A reason that ends with a colon goes on on its next line.
                return said[0] + (" " + said[1] if said[0].endswith(":") and len(said) > 1 else "")
    said = [l for l in lines if l and not l.startswith("[")]
    return said[-1] if said else "(no reason printed)"


def main():
    build_dir, junit = sys.argv[1], sys.argv[2]
    labels = labels_of(build_dir)
    counts = collections.defaultdict(collections.Counter)
    skips = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name")
        status = case.get("status")
        if case.find("failure") is not None or status == "fail":
            outcome = "failed"
        elif status == "notrun" or case.find("skipped") is not None:
            outcome = "skipped"
        else:
            outcome = "passed"
        tiers = labels.get(name) or ["(no tier)"]
        for tier in tiers:
            counts[tier][outcome] += 1
        if outcome == "skipped":
            out = case.find("system-out")
            skips.append((name, ",".join(tiers), skip_reason(out.text if out is not None and out.text else "")))
    print(f"{'tier':10s} {'passed':>7s} {'skipped':>8s} {'failed':>7s}")
    for tier in list(TIERS) + sorted(t for t in counts if t not in TIERS):
        c = counts.get(tier)
        if c:
            print(f"{tier:10s} {c['passed']:7d} {c['skipped']:8d} {c['failed']:7d}")
    for name, tiers, reason in skips:
        short = re.sub(r"\s+#\s+GetParam\(\).*", "", name)
        print(f"skipped [{tiers}] {short}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
