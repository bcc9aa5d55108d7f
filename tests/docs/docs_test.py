#!/usr/bin/env python3
"""The docs hold: every relative link of a Markdown page resolves, every JSON block of the
README and the lab guide parses, every whole scenario they show validates with `loadlab
validate`, the README's printed matrix has the columns and the row shape that `loadlab
run` prints today (its scenario, run as one short cell), the README is at most 120 lines, and
new commits' subjects are at most 72 characters.

    docs_test.py SOURCE_DIR LOADLAB_BINARY
"""
import json
import os
import re
import subprocess
import sys
import tempfile

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
JSON_BLOCK = re.compile(r"```json\n(.*?)\n```", re.S)
# Pages whose JSON blocks are whole files a user copies (scenarios, lab files, catalogs).
WHOLE_JSON_PAGES = ["README.md", "docs/operations.md"]


def markdown_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "*.md"], capture_output=True, text=True)
    if out.returncode == 0 and out.stdout.strip():
        return [os.path.join(root, f) for f in out.stdout.split()]
    found = []  # not a git checkout (a source tarball): every page below the root
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", "build")]
        found += [os.path.join(folder, f) for f in files if f.endswith(".md")]
    return found


def dead_links(root):
    dead = []
    for page in markdown_files(root):
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for link in LINK.findall(text):
            if re.match(r"^[a-z]+:", link) or link.startswith("#"):
                continue  # a URL or an anchor of the same page
            path = link.split("#")[0]
            if path and not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(page), path))):
                dead.append(f"{os.path.relpath(page, root)}: {link}")
    return dead


def json_blocks(root, page):
    with open(os.path.join(root, page), encoding="utf-8") as f:
        return JSON_BLOCK.findall(f.read())


def is_scenario(value):
    return isinstance(value, dict) and "name" in value and "targets" in value and ("matrix" in value or "load" in value)


def validate(loadlab, text):
    """`loadlab validate` of a scenario's text: "" when it is good, else its error."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(text)
    r = subprocess.run([loadlab, "validate", f.name], capture_output=True, text=True, timeout=60)
    os.unlink(f.name)
    return "" if r.returncode == 0 else r.stderr.strip()


def check_json(root, loadlab, problems):
    for page in WHOLE_JSON_PAGES:
        for i, block in enumerate(json_blocks(root, page)):
            try:
                value = json.loads(block)
            except json.JSONDecodeError as e:
                problems.append(f"{page}: JSON block {i + 1} does not parse: {e}")
                continue
            why = validate(loadlab, block) if is_scenario(value) else ""
            if why:
                problems.append(f"{page}: scenario block {i + 1} does not validate: {why}")


def columns(line):
    return re.split(r"\s{2,}", line.strip())


def readme_sample(root):
    """The README's scenario and the header and rows of its printed matrix."""
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        text = f.read()
    scenario = next(b for b in JSON_BLOCK.findall(text) if is_scenario(json.loads(b)))
    printed = text[text.index("## The printed matrix"):]
    block = printed[printed.index("```\n") + 4:]
    lines = block[: block.index("```")].splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("target "))
    rows = [line for line in lines[header + 1:] if line.strip()]
    return scenario, lines[header], rows


def check_sample(root, loadlab, problems):
    scenario, header, rows = readme_sample(root)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.json")
        with open(path, "w") as f:
            f.write(scenario)
        r = subprocess.run([loadlab, "run", path, "--set", "matrix.delay_ms=[5]", "--set", "matrix.threads=[1]",
                            "--set", "load.duration_s=0.2", "--set", "load.warmup_s=0", "--out",
                            os.path.join(d, "out")], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        problems.append(f"README's scenario does not run: {r.stderr.strip()[-500:]}")
        return
    printed = next((line for line in r.stdout.splitlines() if line.startswith("target ")), "")
    if columns(printed) != columns(header):
        problems.append(f"README's matrix header is stale:\n  README:  {header}\n  printed: {printed}")
    for row in rows:
        if len(columns(row)) != len(columns(header)):
            problems.append(f"README's matrix row has {len(columns(row))} columns, not {len(columns(header))}: {row}")


# The last commit before subjects were held to 72 characters (CONTRIBUTING.md); history before
# it is not rewritten.
README_MAX_LINES = 120
SUBJECTS_FROM = "3a314f3ee36a3b3c52f30ea4d8cd06abc7ea8619"
MAX_SUBJECT = 72


def check_commit_subjects(root, problems):
    """Every commit after SUBJECTS_FROM has a subject of at most MAX_SUBJECT characters."""
    known = subprocess.run(["git", "-C", root, "cat-file", "-e", SUBJECTS_FROM + "^{commit}"], capture_output=True)
    if known.returncode != 0:
        return  # not a git checkout, or a shallow one without that commit
    log = subprocess.run(["git", "-C", root, "log", "--format=%h %s", SUBJECTS_FROM + "..HEAD"],
                         capture_output=True, text=True)
    for line in log.stdout.splitlines():
        commit, _, subject = line.partition(" ")
        if len(subject) > MAX_SUBJECT:
            problems.append(f"commit {commit}: subject of {len(subject)} characters, over {MAX_SUBJECT}: {subject}")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    root, loadlab = sys.argv[1], sys.argv[2]
    problems = [f"dead link: {d}" for d in dead_links(root)]
    check_json(root, loadlab, problems)
    check_sample(root, loadlab, problems)
    check_commit_subjects(root, problems)
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        lines = len(f.read().splitlines())
    if lines > README_MAX_LINES:
        problems.append(f"README.md has {lines} lines, over {README_MAX_LINES}: the rest belongs in docs/")
    for p in problems:
        print(p)
    print(f"docs: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
