"""The README's console examples match what the commands print today (tests/readme_examples.py;
`python -m tests.readme_examples --write` refreshes them after a deliberate change)."""

from __future__ import annotations

import pytest

from .readme_examples import README, examples, differences, run

EXAMPLES = examples()
# the README's illustrations: their inputs are a user's own files, not the repository's
ILLUSTRATIONS = {"sizer solve code.yaml"}


def test_the_readme_has_its_examples_and_only_the_declared_illustrations():
    commands = [e.command for e in EXAMPLES]
    assert any(c.startswith("sizer solve workloads/") for c in commands) and any(c.startswith("sizer validate") for c in commands)
    assert {e.command for e in EXAMPLES if e.missing_files()} == ILLUSTRATIONS


@pytest.mark.parametrize("example", [e for e in EXAMPLES if not e.missing_files()], ids=lambda e: f"README.md:{e.line}")
def test_readme_example_matches_a_re_run(example):
    proc = run(example)
    assert "Traceback" not in proc.stderr
    diff = differences(example, proc)
    assert diff == "", f"{README.name}:{example.line} `{example.command}` printed something else (python -m tests.readme_examples --write refreshes it):\n{diff}"


def test_the_elision_rule_fails_on_output_that_does_not_match():
    """The checker itself: a changed figure, a missing line, pieces out of order all differ."""
    import subprocess

    text = "```\n$ sizer x\na\n...\nc\n```\n"
    (ex,) = examples(text)
    ok = subprocess.CompletedProcess([], 0, "a\nb\nc\n", "")
    assert differences(ex, ok) == ""
    for bad in ("a\nb\n", "c\nb\na\n", "a2\nb\nc\n"):
        assert differences(ex, subprocess.CompletedProcess([], 0, bad, "")) != ""
    (plain,) = examples("```\n$ sizer y   # a comment\nwarning: w\nx\n```\n")
    assert plain.command == "sizer y" and plain.argv == ["y"]
    assert differences(plain, subprocess.CompletedProcess([], 0, "x\n", "warning: w\n")) == ""
    assert differences(plain, subprocess.CompletedProcess([], 0, "x\n", "")) != ""
