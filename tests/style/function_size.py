#!/usr/bin/env python3
"""No function of the project's code over 60 lines, counted from the line of its opening brace to
the line of its closing one (clang-tidy's readability-function-size LineThreshold counts the
same), main included; lambdas count with the function that holds them. No class (or struct) of
the controller over 200 lines, counted the same way: a class that long does several jobs. The
few exceptions are listed in function_size_exceptions.txt with their reason.

    function_size.py SOURCE_DIR [FILE...]     (no FILE: every .cpp/.hpp/.c of the checked folders)

The C++ is read as text: comments, string and character literals (raw strings too) are blanked,
then each brace is classed by what precedes it (namespace, class, function, or a block inside
one). Exit 1 naming every function over the limit, 0 otherwise.
"""
import os
import re
import sys

LIMIT = 60
CLASS_LIMIT = 200
CLASS_FOLDERS = ("controller",)
FOLDERS = ["agent", "programs", "controller", "shared", "proto"]
CONTROL = re.compile(r"^(if|for|while|switch|catch|do|else|try|return)\b")
TYPE_HEAD = re.compile(r"(^|[\s;])(class|struct|union|enum)\b[^()]*$")
NAMESPACE = re.compile(r"(^|\s)namespace\b|extern\s+\"C\"")


def blank(text):
    """The text with comments and literals replaced by spaces, newlines kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(name, first line, last line) of every function body in the text."""
    return bodies(text)[0]


def classes(text):
    """(name, first line, last line) of every class or struct body in the text."""
    return bodies(text)[1]


def bodies(text):
    """The functions' and the classes' (name, first line, last line) in the text."""
    code = blank(text)
    types = []
    stack = []  # (kind, line, name)
    found = []
    line = 1
    head_start = 0
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c in ";":
            head_start = i + 1
        elif c == "{":
            head = " ".join(code[head_start:i].split())
            # A preprocessor line before the head is not part of it.
            head = re.sub(r"^#.*$", "", head).strip()
            inside_function = any(kind == "function" for kind, _, _ in stack)
            kind, name = "block", ""
            if inside_function:
                kind = "block"
            elif NAMESPACE.search(head):
                kind = "namespace"
            elif TYPE_HEAD.search(head) and "(" not in head.split("class")[-1].split("struct")[-1]:
                m = re.search(r"\b(?:class|struct|union)\s+(\w+)", head)
                kind, name = "class", (m.group(1) if m else "")
            elif ")" in head and not CONTROL.match(head) and not head.endswith("=") and not head.startswith("="):
                m = re.search(r"([~\w:<>]+)\s*\(", head)
                kind, name = "function", (m.group(1) if m else head[:40])
            stack.append((kind, line, name))
            head_start = i + 1
        elif c == "}":
            if stack:
                kind, first, name = stack.pop()
                if kind == "function":
                    found.append((name, first, line))
                elif kind == "class" and name:
                    types.append((name, first, line))
            head_start = i + 1
    return found, types


def source_files(root):
    for folder in FOLDERS:
        for base, dirs, files in os.walk(os.path.join(root, folder)):
            dirs[:] = [d for d in dirs if d not in ("gen", "build")]
            for f in sorted(files):
                if f.endswith((".cpp", ".hpp", ".c", ".h")):
                    yield os.path.join(base, f)


def exceptions(root):
    """{(path, function name): reason} from function_size_exceptions.txt."""
    out = {}
    path = os.path.join(root, "tests", "style", "function_size_exceptions.txt")
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for raw in f:
            text = raw.split("#", 1)[0].strip()
            if not text:
                continue
            file, name, reason = (part.strip() for part in text.split("|", 2))
            out[(file, name)] = reason
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    files = sys.argv[2:] or list(source_files(root))
    allowed = exceptions(root)
    over = []
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        rel = os.path.relpath(path, root)
        found, types = bodies(text)
        for name, first, last in found:
            lines = last - first + 1
            if lines > LIMIT and (rel, name) not in allowed:
                over.append(f"{rel}:{first}: {name} is {lines} lines (at most {LIMIT})")
        if rel.split(os.sep)[0] in CLASS_FOLDERS:
            for name, first, last in types:
                lines = last - first + 1
                if lines > CLASS_LIMIT and (rel, name) not in allowed:
                    over.append(f"{rel}:{first}: class {name} is {lines} lines (at most {CLASS_LIMIT})")
    for o in over:
        print(o)
    print(f"function size: {len(over)} functions over {LIMIT} lines or classes over {CLASS_LIMIT} "
          f"in {len(files)} files")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
