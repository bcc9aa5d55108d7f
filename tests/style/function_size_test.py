#!/usr/bin/env python3
"""function_size.py counts what it says: a 60-line function passes and a 61-line one fails,
lambdas count with their function, comments and literals hold no braces, classes, namespaces
and initialisers are not functions; a controller class of 200 lines passes and one of 201 fails."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import function_size  # noqa: E402


def body(lines):
    return "\n".join(f"  x += {i};" for i in range(lines - 2))


def sizes(text):
    return {name: last - first + 1 for name, first, last in function_size.functions(text)}


def main():
    failures = []

    def expect(what, got, want):
        if got != want:
            failures.append(f"{what}: got {got!r}, want {want!r}")

    text = f"""namespace a {{
// a comment with a brace {{
const char* s = "{{";
struct S {{
  int f(int x) {{
{body(60)}
  }}
}};
int g(int x) {{
  auto l = [&] {{ return x; }};
{body(60)}
}}
const int table[] = {{1, 2}};
}}  // namespace a
"""
    got = sizes(text)
    expect("a member function of 60 lines", got.get("f"), 60)
    expect("a function with a lambda, 61 lines", got.get("g"), 61)
    expect("functions found", sorted(got), ["f", "g"])
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "controller"))
        path = os.path.join(root, "controller", "x.cpp")
        with open(path, "w") as f:
            f.write(text)
        r = subprocess.run([sys.executable, os.path.join(HERE, "function_size.py"), root], capture_output=True,
                           text=True)
        expect("exit status with a 61-line function", r.returncode, 1)
        g_line = text.splitlines().index("int g(int x) {") + 1
        expect("the report names g", f"controller/x.cpp:{g_line}: g is 61 lines (at most 60)" in r.stdout, True)
        os.makedirs(os.path.join(root, "tests", "style"))
        with open(os.path.join(root, "tests", "style", "function_size_exceptions.txt"), "w") as f:
            f.write("controller/x.cpp | g | a test\n")
        r = subprocess.run([sys.executable, os.path.join(HERE, "function_size.py"), root], capture_output=True,
                           text=True)
        expect("exit status with g excepted", r.returncode, 0)
        members = "\n".join(f"  int m{i} = {i};" for i in range(199))
        with open(path, "w") as f:
            f.write(f"class Big {{\n{members}\n}};\nstruct Small {{\n  int x;\n}};\n")
        expect("classes found", [(n, b - a + 1) for n, a, b in function_size.classes(open(path).read())],
               [("Big", 201), ("Small", 3)])
        r = subprocess.run([sys.executable, os.path.join(HERE, "function_size.py"), root], capture_output=True,
                           text=True)
        expect("exit status with a 201-line class", r.returncode, 1)
        expect("the report names Big", "controller/x.cpp:1: class Big is 201 lines (at most 200)" in r.stdout, True)
        with open(path, "w") as f:
            f.write(f"class Big {{\n{members[:members.rfind(chr(10))]}\n}};\n")
        r = subprocess.run([sys.executable, os.path.join(HERE, "function_size.py"), root], capture_output=True,
                           text=True)
        expect("exit status with a 200-line class", r.returncode, 0)
    for f in failures:
        print(f)
    print(f"function_size_test: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
