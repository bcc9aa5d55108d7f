#!/usr/bin/env python3
"""Every command of the guides that is marked runnable runs, and every scenario the docs show
validates.

A page marks a shell block runnable with a line `<!-- runnable -->` before it, and a block whose
content a later command reads as a file with `<!-- file: NAME -->`. Each page's blocks run in
order, in a folder of their own (holding links to the checkout's scenarios/, examples/ and the
build), with the build's programs first on the PATH, under `bash -euo pipefail`, each within
BLOCK_TIMEOUT_S; whatever a block starts is killed with its process group when it ends. Blocks
that need root, podman or systemd are not marked. Every JSON block of a page under docs/ or the
README must parse, unless it is visibly partial (parse_json_block), and one that is a whole
scenario must pass `loadlab validate`.

    runnable_test.py SOURCE_DIR BIN_DIR
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from docs_test import is_scenario, markdown_files, validate  # noqa: E402

BLOCK_TIMEOUT_S = 180
MARK = re.compile(r"^<!-- (runnable|file: ([\w.-]+)) -->$")
FENCE = re.compile(r"^```(\w*)$")
ELLIPSES = ("...", "\u2026")
# A JSON string (kept), or a bare upper-case name outside one: a schematic's placeholder (N, C2).
PLACEHOLDER = re.compile(r'("(?:[^"\\]|\\.)*")|\b[A-Z][A-Z0-9_]*\b')


def blocks(path):
    """(line, language, marker, file name, text) of every fenced block of the page."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    found, i, mark = [], 0, None
    while i < len(lines):
        m, fence = MARK.match(lines[i]), FENCE.match(lines[i])
        if m:
            mark = m
        elif fence and fence.group(1):
            end = next((j for j in range(i + 1, len(lines)) if lines[j] == "```"), len(lines))
            kind = mark.group(1).split(":")[0] if mark else ""
            found.append((i + 1, fence.group(1), kind, mark.group(2) if mark else None, "\n".join(lines[i + 1:end])))
            i, mark = end, None
        elif lines[i].strip():
            mark = None  # a marker holds only for the block right after it
        i += 1
    return found


def run_block(text, cwd, env):
    """Runs one block in its own process group; (exit status or None on timeout, output)."""
    proc = subprocess.Popen(["bash", "-euo", "pipefail", "-c", text], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=BLOCK_TIMEOUT_S)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        status, out = None, ""
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # what the block left running
    except ProcessLookupError:
        pass
    if status is None:
        out, _ = proc.communicate()
    return status, out


def run_page(root, bin_dir, page, problems):
    runnable = [b for b in blocks(page) if b[2] in ("runnable", "file")]
    if not any(b[2] == "runnable" for b in runnable):
        return 0
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    name = os.path.relpath(page, root)
    with tempfile.TemporaryDirectory(prefix="loadlab-docs-") as cwd:
        for link in ("scenarios", "examples"):
            os.symlink(os.path.join(root, link), os.path.join(cwd, link))
        os.symlink(os.path.dirname(os.path.abspath(bin_dir)), os.path.join(cwd, "build"))
        for line, _, kind, file_name, text in runnable:
            if kind == "file":
                with open(os.path.join(cwd, file_name), "w", encoding="utf-8") as f:
                    f.write(text + "\n")
                continue
            status, out = run_block(text, cwd, env)
            if status != 0:
                why = "timed out" if status is None else f"exit status {status}"
                problems.append(f"{name}:{line}: the block {why}:\n{out[-1500:]}")
                return 1  # later blocks build on this one
    return sum(b[2] == "runnable" for b in runnable)


def parse_json_block(text):
    """The JSON value of a block, or None for a block that is visibly partial: one with an
    ellipsis (... or \u2026), a run of an object's members without its braces (`"key": value`), or a
    schematic whose values are upper-case placeholders (`{"requests": N}`). Any other block that
    does not parse raises json.JSONDecodeError."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        if any(e in text for e in ELLIPSES):
            return None
        for whole in ("{" + text + "}", PLACEHOLDER.sub(lambda m: m.group(1) or "0", text)):
            try:
                json.loads(whole)
                return None
            except json.JSONDecodeError:
                pass
        raise error


def check_scenarios(root, loadlab, problems):
    for page in markdown_files(root):
        name = os.path.relpath(page, root)
        if not (name.startswith("docs/") or name == "README.md"):
            continue
        for line, lang, _, _, text in blocks(page):
            try:
                value = parse_json_block(text) if lang == "json" else None
            except json.JSONDecodeError as e:
                problems.append(f"{name}:{line}: the JSON block does not parse ({e}), and nothing shows it partial")
                continue
            why = validate(loadlab, text) if is_scenario(value) else ""
            if why:
                problems.append(f"{name}:{line}: the scenario does not validate: {why}")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    root, bin_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    problems, ran = [], 0
    check_scenarios(root, os.path.join(bin_dir, "loadlab"), problems)
    for page in sorted(markdown_files(root)):
        ran += run_page(root, bin_dir, page, problems)
    for p in problems:
        print(p)
    print(f"docs_runnable: {ran} blocks ran, {len(problems)} problems")
    return 1 if problems or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
