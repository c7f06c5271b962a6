"""Tables: the one renderer every command's rows go through (solve, compare, sweep, simulate,
validate, catalog), as fixed-width text, GitHub Markdown or CSV. No pandas, no `tabulate`.

A table is a list of row dicts and a list of columns `(key, header, format)`; the format is a
`str.format` spec such as "{:.2f}" ("" = str()). The rules are the same everywhere:

    missing value (None or NaN)    "-"
    True / False                   "yes" / "no"
    numbers                        right-aligned (their header too)
    text                           left-aligned (its header too)

so that `-` never turns into `NaN` in one command and a blank in another.
"""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

Column = tuple[str, str, str]  # (key, header, format spec such as "{:.2f}"; "" = str(); RATE)

# A rate's format: two decimals, or two significant figures below 0.01 (a barely feasible option
# serving 0.0036 req/s a replica is not shown as 0.00)
RATE = "rate"

MISSING = "-"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def cell(value: Any, fmt: str = "") -> str:
    """One cell's text under the rules above."""
    if _missing(value):
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if fmt == RATE and _is_number(value):
        return f"{value:.2g}" if 0 < abs(value) < 0.01 else f"{value:.2f}"
    if fmt and _is_number(value):
        return fmt.format(value)
    return str(value)


def numeric_columns(rows: list[dict[str, Any]], columns: list[Column]) -> list[bool]:
    """A column is numeric when it has a number format or every value it holds is a number."""
    out = []
    for key, _, fmt in columns:
        values = [r.get(key) for r in rows if not _missing(r.get(key))]
        out.append(all(_is_number(v) for v in values) if values else bool(fmt))
    return out


def text_table(rows: list[dict[str, Any]], columns: list[Column], indent: str = "") -> str:
    """Fixed-width columns two spaces apart under a header line: numbers right-aligned, text
    left-aligned; trailing spaces stripped."""
    numeric = numeric_columns(rows, columns)
    cells = [[header for _, header, _ in columns]] + [[cell(r.get(k), fmt) for k, _, fmt in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = []
    for row in cells:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(row, widths, numeric)]
        lines.append((indent + "  ".join(parts)).rstrip())
    return "\n".join(lines) + "\n"


def markdown_table(rows: list[dict[str, Any]], columns: list[Column]) -> str:
    """A GitHub-flavoured Markdown table; numbers right-aligned, '|' in text escaped."""

    def esc(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    numeric = numeric_columns(rows, columns)
    lines = ["| " + " | ".join(esc(h) for _, h, _ in columns) + " |"]
    lines.append("|" + "|".join("---:" if n else ":---" for n in numeric) + "|")
    for r in rows:
        lines.append("| " + " | ".join(esc(cell(r.get(k), fmt)) for k, _, fmt in columns) + " |")
    return "\n".join(lines) + "\n"


def csv_table(rows: list[dict[str, Any]], keys: list[str]) -> str:
    """CSV with a header of `keys`; None or NaN as an empty field, lists joined with ';',
    dicts as JSON."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(keys)
    for r in rows:
        row = []
        for k in keys:
            v = r.get(k)
            if _missing(v):
                row.append("")
            elif isinstance(v, (list, tuple)):
                row.append(";".join(str(x) for x in v))
            elif isinstance(v, dict):
                row.append(json.dumps(v, sort_keys=True))
            else:
                row.append(v)
        writer.writerow(row)
    return out.getvalue()


def json_safe(data: Any) -> Any:
    """`data` with every float that is not finite (a latency that grows without bound at
    saturation, a ratio of nothing) as None: JSON has no NaN or infinity, and a reader's parser
    refuses them. numpy scalars become plain numbers."""
    if isinstance(data, dict):
        return {k: json_safe(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [json_safe(v) for v in data]
    if isinstance(data, bool) or data is None or isinstance(data, (str, int)):
        return data
    try:
        x = float(data)
    except (TypeError, ValueError):
        return data
    if not math.isfinite(x):
        return None
    return data if isinstance(data, float) else x


def to_json(data: Any, indent: int | None = 2) -> str:
    """Strict JSON text of `data` (json_safe first), ending in a newline."""
    return json.dumps(json_safe(data), indent=indent, ensure_ascii=False, allow_nan=False) + "\n"


def render_rows(rows: list[dict[str, Any]], columns: list[Column], fmt: str, *, title: str = "") -> str:
    """Rows in one of the table formats: table (text), markdown, csv (every key of `columns`)
    or json (the rows as given)."""
    if fmt == "json":
        return to_json(rows)
    if fmt == "csv":
        return csv_table(rows, [k for k, _, _ in columns])
    if fmt == "markdown":
        return (f"# {title}\n\n" if title else "") + markdown_table(rows, columns)
    return (f"{title}\n\n" if title else "") + text_table(rows, columns)
