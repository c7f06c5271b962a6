"""One table renderer for every command (sizer/tables.py): the same rules for a missing value,
a boolean, a number and a text column wherever a table is printed, and `validate --rows`'s
choices (issue 14, point 7)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import sizer
from sizer.measurements import read_csv
from sizer.tables import RATE, cell, csv_table, markdown_table, render_rows, text_table
from sizer.validate import render_table, validate_rows

PACKAGE = Path(sizer.__file__).parent


def test_the_rules_by_hand():
    rows = [{"name": "H100", "n": 3, "x": 1.25, "ok": True}, {"name": "L4", "n": None, "x": math.nan, "ok": False}]
    cols = [("name", "name", ""), ("n", "count", ""), ("x", "x", "{:.1f}"), ("ok", "ok", "")]
    # text left-aligned, numbers right-aligned (headers with them); None and NaN both "-"
    assert text_table(rows, cols) == "name  count    x  ok\nH100      3  1.2  yes\nL4        -    -  no\n"
    assert markdown_table(rows, cols).splitlines()[1] == "|:---|---:|---:|:---|"
    assert csv_table(rows, ["name", "n", "x", "ok"]) == "name,n,x,ok\nH100,3,1.25,True\nL4,,,False\n"
    assert render_rows(rows, cols, "table", title="T").startswith("T\n\nname")


def test_a_small_rate_keeps_two_significant_figures():
    """20 req/s over 5,573 one-card replicas (gpt-oss-120b on the PCIe A100, agents workload) is
    0.0036 req/s a replica, not '0.00'; rates from 0.01 up keep two decimals, zero stays 0.00."""
    assert cell(20 / 5573, RATE) == "0.0036"
    assert cell(3.1249, RATE) == "3.12" and cell(0.01, RATE) == "0.01" and cell(0.0, RATE) == "0.00"
    assert cell(None, RATE) == "-"


def test_no_module_draws_a_table_with_pandas():
    """pandas' to_string printed NaN and right-aligned text; every table now goes through
    sizer/tables.py."""
    for path in sorted(PACKAGE.glob("*.py")):
        text = path.read_text()
        assert ".to_string(" not in text, path.name
        assert "to_markdown(" not in text, path.name


def test_validate_rows_choices(root, catalog):
    report = validate_rows(read_csv(root / "tests" / "data" / "measured_small.csv"), catalog, label="small.csv")
    assert len(report.skipped) == 1 and len(report.results) == 4
    none = render_table(report, "none")
    # the summary and the skips counted by reason, no row listed one by one
    assert "PER ROW" not in none and "SKIPPED ROWS" not in none
    counts = none.split("SKIPPED (", 1)[1].splitlines()[2:]
    assert [int(line.split()[0]) for line in counts] == [1]
    assert "--rows skipped lists them" in none
    assert max(len(line) for line in none.splitlines()) <= 200
    skipped = render_table(report, "skipped")
    assert "SKIPPED ROWS" in skipped and "acme/Unknown-7B" in skipped.split("SKIPPED ROWS", 1)[1]
    assert "PER ROW" not in skipped
    every = render_table(report, "all")
    per_row = every.split("PER ROW", 1)[1].splitlines()[2:]
    assert len(per_row) == 4 and "SKIPPED ROWS" not in every
    assert not re.search(r"\bNaN\b", every + skipped)


def test_validate_header_breaks_do_not_depend_on_where_the_checkout_lives(root, catalog):
    """CI's clean checkout lives at another path than a developer's: the efficiency file's path was
    wrapped with the method, so the README's block (paths shown relative) broke at other words
    there (the CI run of 2026-12-01). The path now has a line of its own."""
    import dataclasses

    report = validate_rows(read_csv(root / "tests" / "data" / "measured_small.csv"), catalog, label="small.csv")
    method = "(a method long enough to be wrapped over more than one line of the table's header, " * 3 + "fitted 2026-12-01)"

    def header(path: str) -> list[str]:
        text = render_table(dataclasses.replace(report, efficiency_source=f"{path} {method}"), "none")
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("efficiency"))
        end = next(i for i, line in enumerate(lines) if line.startswith("error"))
        return lines[start:end]

    short, deep = header("catalogs/efficiency.json"), header("/" + "very/deep/" * 12 + "catalogs/efficiency.json")
    assert short[0] == "efficiency    catalogs/efficiency.json"
    assert short[1:] == deep[1:] and len(short) > 2
    assert all(len(line) <= 100 for line in short)
