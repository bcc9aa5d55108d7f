#!/usr/bin/env python3
"""The link graph in docs/architecture.md (the table between the link-graph markers) against
the one CMake wrote at configure time (build/link_graph.txt: "TARGET LIBRARY" a line, "-" for
none), no cycle in it, and the controller's rooms in their layers (the list in the
`controller-layers` comment of architecture.md): every link from one room's library to
another's, and every `#include "ROOM/..."` in a room's files, goes to a room earlier in the
list. Exit status 1 with every problem named.

    architecture_map_test.py DOCS/architecture.md BUILD/link_graph.txt CONTROLLER_DIR"""
import glob
import os
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


def layers_of(path):
    m = re.search(r"<!-- controller-layers: ([a-z_ ]+) -->", open(path, encoding="utf-8").read())
    if not m:
        sys.exit(f"{path}: no <!-- controller-layers: ... --> comment")
    return m.group(1).split()


def cycles(graph):
    """Each target that reaches itself through its links."""
    found = []
    for start in graph:
        seen, todo = set(), list(graph[start])
        while todo:
            t = todo.pop()
            if t == start:
                found.append(start)
                break
            if t not in seen:
                seen.add(t)
                todo.extend(graph.get(t, ()))
    return found


def layer_problems(layers, graph, controller_dir):
    """Links and includes of the controller's rooms that go down the list (or to a room the
    list does not name)."""
    problems = []
    rank = {room: i for i, room in enumerate(layers)}
    folders = sorted(d for d in os.listdir(controller_dir) if os.path.isfile(os.path.join(controller_dir, d, "CMakeLists.txt")))
    for room in sorted(set(folders) ^ set(layers)):
        problems.append(f"controller/{room}: {'a room folder not in the layers' if room in folders else 'in the layers, no folder'}")
    prefix = "loadlab_controller_"
    for t, libs in graph.items():
        for lib in libs:
            a, b = t[len(prefix):], lib[len(prefix):]
            if t.startswith(prefix) and lib.startswith(prefix) and rank.get(b, 1e9) >= rank.get(a, -1):
                problems.append(f"{t} -> {lib}: a link down the layers ({' < '.join(layers)})")
    for room in folders:
        for f in sorted(glob.glob(os.path.join(controller_dir, room, "*.[ch]pp"))):
            for n, line in enumerate(open(f, encoding="utf-8"), 1):
                m = re.match(r'#include "(\w+)/', line)
                if m and m.group(1) in rank and rank[m.group(1)] > rank.get(room, -1):
                    problems.append(f"controller/{room}/{os.path.basename(f)}:{n}: includes {m.group(1)}/, a room below {room}")
    return problems


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    doc, cmake = doc_graph(sys.argv[1]), cmake_graph(sys.argv[2])
    problems = layer_problems(layers_of(sys.argv[1]), cmake, sys.argv[3])
    problems += [f"{t}: in a cycle of links" for t in cycles(cmake)]
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
        print(f"{sys.argv[1]} against CMake's link graph ({sys.argv[2]}) and the sources: {len(problems)} problems")
        for p in problems:
            print("  " + p)
        return 1
    print(f"the map's {sum(len(v) for v in doc.values())} links over {len(doc)} targets are CMake's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
