"""The public API and the layering rules: sorted, complete __all__; only the CLI imports click;
the library never prints."""

from __future__ import annotations

import ast
from pathlib import Path

import sizer

PACKAGE = Path(sizer.__file__).parent


def test_all_is_sorted_and_resolves():
    assert sizer.__all__ == sorted(sizer.__all__)
    for name in sizer.__all__:
        assert hasattr(sizer, name), name


def _imports_and_calls(path: Path) -> tuple[set[str], set[str]]:
    tree = ast.parse(path.read_text())
    imports, calls = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imports.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            calls.add(node.func.id)
    return imports, calls


def test_only_cli_imports_click_and_the_library_never_prints():
    for path in sorted(PACKAGE.glob("*.py")):
        imports, calls = _imports_and_calls(path)
        if path.name == "cli.py":
            continue
        assert "click" not in imports, path.name
        assert "print" not in calls, path.name


def test_yaml_is_only_safe_loaded():
    for path in sorted(PACKAGE.glob("*.py")):
        text = path.read_text()
        assert "yaml.load(" not in text and "yaml.unsafe_load" not in text, path.name


def test_ci_runs_the_readme_test_command():
    readme = (PACKAGE.parent / "README.md").read_text()
    blocks = [b.split("```", 1)[0].strip() for b in readme.split("```bash\n")[1:3]]
    install_and_solve, test_command = blocks
    assert "sizer solve workloads/" in install_and_solve
    ci = (PACKAGE.parent / ".ci" / "run").read_text().splitlines()
    assert test_command in ci
