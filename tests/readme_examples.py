"""The README's console examples, re-run: every fenced block whose first line is `$ sizer ...`.

A block is the command (`$ sizer ARGS`, a trailing `# comment` dropped) and what it prints: lines
starting `warning: ` or `error: ` are matched against stderr, the rest against stdout. A line that
is exactly `...` elides output: the pieces around it must appear in order, each as whole lines. A
block whose command names a file the repository does not hold is an illustration (its inputs
are the user's own) and is reported as such, never silently passed.

    python -m tests.readme_examples            # re-run every example, print the differences
    python -m tests.readme_examples --write    # rewrite the blocks with today's output
                                               # (elided blocks and illustrations untouched)

tests/test_readme.py runs the check on every commit.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
ELLIPSIS = "..."


@dataclass(frozen=True)
class Example:
    line: int  # 1-based line of the `$ sizer` command in the README
    command: str  # as written, without "$ " and the trailing comment
    expected: tuple[str, ...]  # the block's output lines
    end: int  # 1-based line of the closing fence

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.command)[1:]

    @property
    def elided(self) -> bool:
        return ELLIPSIS in self.expected

    def missing_files(self) -> list[str]:
        """Arguments that look like files (a path with a suffix) and are not in the repository."""
        out = []
        for a in self.argv:
            if not a.startswith("-") and re.search(r"\.(ya?ml|csv|json)$", a) and not (ROOT / a).exists():
                out.append(a)
        return out


def examples(text: str | None = None) -> list[Example]:
    lines = (README.read_text(encoding="utf-8") if text is None else text).splitlines()
    out: list[Example] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("```") and i + 1 < len(lines) and lines[i + 1].startswith("$ sizer "):
            cmd = re.sub(r"\s+#.*$", "", lines[i + 1][2:]).strip()
            j = i + 2
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append(Example(line=i + 2, command=cmd, expected=tuple(lines[i + 2 : j]), end=j + 1))
            i = j
        i += 1
    return out


def run(example: Example) -> subprocess.CompletedProcess[str]:
    """The command from the repository root; the root's absolute path, where the output prints
    one (`validate` names its catalog files), shown relative as the README does."""
    env = {k: v for k, v in os.environ.items() if k != "SIZER_CATALOG_DIR"}
    env["COLUMNS"] = "80"  # click wraps --help at the terminal's width
    proc = subprocess.run([sys.executable, "-m", "sizer", *example.argv], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    root = f"{ROOT}{os.sep}"
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.replace(root, ""), proc.stderr.replace(root, ""))


def _split(expected: tuple[str, ...]) -> tuple[list[str], list[str]]:
    err = [x for x in expected if x.startswith(("warning: ", "error: "))]
    out = [x for x in expected if not x.startswith(("warning: ", "error: "))]
    return out, err


def _in_order(pieces: list[list[str]], actual: list[str]) -> bool:
    at = 0
    for piece in pieces:
        n = len(piece)
        while at + n <= len(actual) and actual[at : at + n] != piece:
            at += 1
        if at + n > len(actual):
            return False
        at += n
    return True


def differences(example: Example, proc: subprocess.CompletedProcess[str]) -> str:
    """'' when the output matches the block, else a unified diff (or the elided pieces missing)."""
    want_out, want_err = _split(example.expected)
    got_out = proc.stdout.rstrip("\n").splitlines()
    got_err = [x for x in proc.stderr.splitlines() if x.startswith(("warning: ", "error: "))]
    problems = []
    for name, want, got in (("stdout", want_out, got_out), ("stderr", want_err, got_err)):
        if ELLIPSIS in want:
            pieces: list[list[str]] = [[]]
            for x in want:
                if x == ELLIPSIS:
                    pieces.append([])
                else:
                    pieces[-1].append(x)
            if not _in_order([p for p in pieces if p], got):
                problems.append(f"{name}: the pieces around '...' are not in the output, in order\n" + "\n".join(got))
        elif want != got:
            problems.append("\n".join(difflib.unified_diff(want, got, f"README.md:{example.line} {name}", f"re-run {name}", lineterm="")))
    return "\n".join(problems)


def rewrite(text: str, results: dict[int, subprocess.CompletedProcess[str]]) -> str:
    """The README with each re-run, unelided block's output replaced by what the command printed."""
    lines = text.splitlines()
    for ex in sorted(examples(text), key=lambda e: -e.line):
        proc = results.get(ex.line)
        if proc is None or ex.elided:
            continue
        _, want_err = _split(ex.expected)
        err = [x for x in proc.stderr.splitlines() if x.startswith(("warning: ", "error: "))] if want_err else []
        lines[ex.line : ex.end - 1] = err + proc.stdout.rstrip("\n").splitlines()
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    write = "--write" in argv
    text = README.read_text(encoding="utf-8")
    results, failed = {}, 0
    for ex in examples(text):
        missing = ex.missing_files()
        if missing:
            print(f"README.md:{ex.line}: illustration ({', '.join(missing)} not in the repository): {ex.command}")
            continue
        proc = run(ex)
        results[ex.line] = proc
        diff = differences(ex, proc)
        print(f"README.md:{ex.line}: {'ok' if not diff else 'DIFFERS'} (exit {proc.returncode}): {ex.command}")
        if diff:
            failed += 1
            print(diff)
    if write:
        README.write_text(rewrite(text, results), encoding="utf-8")
        print("README.md rewritten (elided blocks untouched: check them by hand)")
    return 1 if failed and not write else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
