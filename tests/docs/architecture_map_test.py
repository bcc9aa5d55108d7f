#!/usr/bin/env python3
"""The link graph in docs/architecture.md (the table between the link-graph markers) against
the one CMake wrote at configure time (build/link_graph.txt: "TARGET LIBRARY" a line, "-" for
none). Exit status 1 with every difference named when they differ.

    architecture_map_test.py DOCS/architecture.md BUILD/link_graph.txt"""
import re
import sys


def doc_graph(path):
    text = open(path, encoding="utf-8").read()
    m = re.search(r"<!-- link-graph: begin -->(.*?)<!-- link-graph: end -->", text, re.S)
    if not m:
        sys.exit(f"{path}: no table between <!-- link-graph: begin --> and <!-- link-graph: end -->")
    graph = {}
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        graph[cells[0].strip("`")] = set(re.findall(r"`([^`]+)`", cells[1]))
    return graph


def cmake_graph(path):
    graph = {}
    for line in open(path, encoding="utf-8"):
        if not line.strip():
            continue
        target, library = line.split()
        graph.setdefault(target, set())
        if library != "-":
            graph[target].add(library)
    return graph


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    doc, cmake = doc_graph(sys.argv[1]), cmake_graph(sys.argv[2])
    problems = []
    for t in sorted(set(doc) | set(cmake)):
        if t not in doc:
            problems.append(f"{t}: in CMake, not in the map")
        elif t not in cmake:
            problems.append(f"{t}: in the map, not a target in CMake")
        else:
            for lib in sorted(cmake[t] - doc[t]):
                problems.append(f"{t} -> {lib}: linked in CMake, not shown in the map")
            for lib in sorted(doc[t] - cmake[t]):
                problems.append(f"{t} -> {lib}: shown in the map, not linked in CMake")
    if problems:
        print(f"{sys.argv[1]} differs from CMake's link graph ({sys.argv[2]}):")
        for p in problems:
            print("  " + p)
        return 1
    print(f"the map's {sum(len(v) for v in doc.values())} links over {len(doc)} targets are CMake's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
