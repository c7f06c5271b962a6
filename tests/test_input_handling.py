"""Input handling: what the user wrote is read as written, or refused in one line naming the
file, the field (and line) and what was expected, with the exit code of the table in README's
"Exit codes"; never reinterpreted silently, never an internal error."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sizer.cli import main
from sizer.schema import read_document

ROOT = Path(__file__).resolve().parent.parent
CONTROL = (ROOT / "tests" / "data" / "bad" / "control-valid.yaml").read_text(encoding="utf-8")


def run(capsys, *args: object) -> tuple[int, str, str]:
    """sizer's entry point in this process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def refused(code: int, out: str, err: str, expected: int, *needles: str) -> str:
    """A refusal: the documented exit code, one line on stderr, nothing on stdout, no traceback."""
    assert code == expected, err
    assert out == ""
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "internal error" not in err and "Traceback" not in err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------
# 1. YAML 1.2 numbers
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        pytest.param("0700", "0700", id="leading-zero-is-a-string"),
        pytest.param("012", "012", id="012"),
        pytest.param("-012", "-012", id="signed-leading-zero"),
        pytest.param("08", "08", id="08-stays-the-string-yaml-1-1-read"),
        pytest.param("0o17", 15, id="explicit-octal"),
        pytest.param("0x10", 16, id="explicit-hex"),
        pytest.param("1_000", 1000, id="underscores"),
        pytest.param("0", 0, id="zero"),
        pytest.param("1:30", "1:30", id="base-60-is-a-string"),
        pytest.param("1:30.5", "1:30.5", id="base-60-float-is-a-string"),
        pytest.param("'0700'", "0700", id="quoted-stays-a-string"),
        pytest.param("1e-3", 0.001, id="exponent-float"),
        pytest.param("1.5", 1.5, id="float"),
        pytest.param(".5", 0.5, id="float-no-integer-part"),
        pytest.param("-.inf", -math.inf, id="minus-inf"),
    ],
)
def test_yaml_numbers_are_read_as_yaml_1_2_reads_them(tmp_path, text, expected):
    # pyyaml's YAML 1.1 read 0700 as 448 (octal), 012 as 10 and 1:30 as 90 (base 60).
    doc = read_document(write(tmp_path / "d.yaml", f"a: {text}\n"))
    assert doc["a"] == expected and type(doc["a"]) is type(expected)


def test_a_leading_zero_rate_is_refused_and_a_leading_zero_name_kept(tmp_path, capsys):
    # 012 was 10 (YAML 1.1 octal): neither 10 nor 12 is read without a word, a number field refuses it
    path = write(tmp_path / "w.yaml", CONTROL.replace("requests_per_s: 1", "requests_per_s: 012"))
    refused(*run(capsys, "solve", path), 6, f"error: {path}: traffic.requests_per_s: expected a number, got a string ('012')")
    # a string field keeps it as written, as YAML 1.1 did for 08 (no octal digit), and now for 012 too
    prices = write(tmp_path / "p.yaml", "prices:\n  - {device: H100-SXM, provider: mine, kind: on_demand, instance: 08, usd_per_gpu_hour: 2.0}\n")
    code, out, err = run(capsys, "catalog", "prices", "--prices", prices, "--format", "json")
    assert code == 0, err
    assert '"instance": "08"' in out


def test_a_base_60_rate_is_refused_as_a_string(tmp_path, capsys):
    path = write(tmp_path / "w.yaml", CONTROL.replace("requests_per_s: 1", "requests_per_s: 1:30"))
    refused(*run(capsys, "solve", path), 6, f"error: {path}: traffic.requests_per_s: expected a number, got a string ('1:30')")


def test_pyyamls_own_loader_is_left_as_it_was():
    import yaml

    assert yaml.safe_load("a: 012") == {"a": 10}  # sizer's loader is a subclass with its own resolvers


# ------------------------------------------------------------------------------------------------
# 2. dates no calendar has
# ------------------------------------------------------------------------------------------------


def test_an_impossible_date_in_a_workload_is_one_line_naming_field_and_line(tmp_path, capsys):
    path = write(tmp_path / "w.yaml", CONTROL + "name: 2026-02-30\n")
    line = CONTROL.count("\n") + 1
    refused(*run(capsys, "solve", path), 7, f"error: {path}: name: 2026-02-30 at line {line} is no calendar date", "day is out of range")


def test_an_impossible_price_date_is_one_line_naming_field_and_line(tmp_path, capsys):
    prices = write(
        tmp_path / "p.yaml",
        "prices:\n  - {device: H100-SXM, provider: me, kind: on_demand, usd_per_gpu_hour: 2.0, price_date: 2026-13-01}\n",
    )
    refused(*run(capsys, "catalog", "prices", "--prices", prices), 7, f"error: {prices}: prices[0].price_date: 2026-13-01 at line 2 is no calendar date")


def test_a_real_date_is_still_a_date(tmp_path):
    import datetime

    assert read_document(write(tmp_path / "d.yaml", "a: [2024-02-29]\n")) == {"a": [datetime.date(2024, 2, 29)]}


# ------------------------------------------------------------------------------------------------
# 3. NaN and infinity on float options
# ------------------------------------------------------------------------------------------------

EXPLAIN = ("explain", "--model", "llama-3.1-8b", "--device", "H100-SXM")


@pytest.mark.parametrize(
    "args, option",
    [
        pytest.param(("solve", "{w}", "--time-limit-s", "nan"), "--time-limit-s", id="solve-time-limit-nan"),
        pytest.param(("sweep", "{w}", "--scale", "1", "--time-limit-s", "nan"), "--time-limit-s", id="sweep-time-limit-nan"),
        pytest.param(("solve", "{w}", "--confidence", "nan"), "--confidence", id="solve-confidence-nan"),
        pytest.param(("compare", "{w}", "--confidence", "-inf"), "--confidence", id="compare-confidence-inf"),
        pytest.param(("simulate", "{w}", "--duration-s", "nan"), "--duration-s", id="simulate-duration-nan"),
        pytest.param(("simulate", "{w}", "--duration-s", "inf"), "--duration-s", id="simulate-duration-inf"),
        pytest.param((*EXPLAIN, "--gpu-memory-utilization", "nan"), "--gpu-memory-utilization", id="explain-memory-nan"),
        pytest.param((*EXPLAIN, "--engine", "trtllm", "--kv_cache_free_gpu_memory_fraction", "NaN"), "--kv_cache_free_gpu_memory_fraction", id="explain-trtllm-nan"),
        pytest.param(("sweep", "{w}", "--scale", "0.5,nan"), "--scale", id="sweep-list-nan"),
        pytest.param(("sweep", "{w}", "--ttft-p99-s", "1:inf:3"), "--ttft-p99-s", id="sweep-range-inf"),
    ],
)
def test_nan_and_infinity_are_usage_errors_on_every_float_option(tmp_path, capsys, args, option):
    # click's FloatRange let NaN through its comparisons: --time-limit-s nan was taken, and solve
    # then said infeasible (sweep planned nothing); type=float options took NaN and inf alike.
    w = write(tmp_path / "w.yaml", CONTROL)
    refused(*run(capsys, *(str(a).format(w=w) for a in args)), 2, f"'{option}'", "expected finite numbers" if args[0] == "sweep" and option != "--time-limit-s" else "expected a finite number")


def test_a_confidence_out_of_range_is_still_a_bad_value(tmp_path, capsys):
    # README: Q outside (0, 1) is exit 7; only NaN and infinity are usage errors.
    w = write(tmp_path / "w.yaml", CONTROL)
    refused(*run(capsys, "solve", w, "--confidence", "1.5"), 7, "--confidence: expected a number between 0 and 1")


def test_a_number_option_without_bounds_shows_no_range_in_its_help(capsys):
    code, out, _ = run(capsys, "solve", "--help")
    assert code == 0 and "--confidence FLOAT" in out and "None" not in out


# ------------------------------------------------------------------------------------------------
# 4. an output that would overwrite an input
# ------------------------------------------------------------------------------------------------

USER_PRICES = "prices:\n  - {device: H100-SXM, provider: me, kind: on_demand, usd_per_gpu_hour: 2.0, price_date: 2026-11-01}\n"


def _overwrite_cases(tmp_path: Path) -> dict[str, tuple[tuple[str, ...], Path, str]]:
    w = write(tmp_path / "w.yaml", CONTROL)
    prices = write(tmp_path / "p.yaml", USER_PRICES)
    measured = tmp_path / "m.csv"
    measured.write_bytes((ROOT / "tests" / "data" / "measured_small.csv").read_bytes())
    trace = write(tmp_path / "t.csv", "timestamp,ContextTokens,GeneratedTokens\n0,100,10\n1,100,10\n3,100,10\n")
    (tmp_path / "link.yaml").symlink_to(w)
    return {
        "solve-output-workload": (("solve", w, "-o", w), w, "--output"),
        "solve-output-link-to-workload": (("solve", w, "-o", tmp_path / "link.yaml"), w, "--output"),
        "solve-output-other-spelling": (("solve", w, "-o", tmp_path / "." / "w.yaml"), w, "--output"),
        "solve-write-lp-prices": (("solve", w, "--prices", prices, "--write-lp", prices), prices, "--write-lp"),
        "solve-plot-workload": (("solve", w, "--plot", w), w, "--plot"),
        "compare-output-prices": (("compare", w, "--prices", prices, "--output", prices), prices, "--output"),
        "sweep-output-workload": (("sweep", w, "--scale", "1,2", "-o", w), w, "--output"),
        "catalog-output-prices": (("catalog", "prices", "--prices", prices, "-o", prices), prices, "--output"),
        "validate-output-measurements": (("validate", "--measurements", measured, "-o", measured), measured, "--output"),
        "simulate-output-trace": (("simulate", w, "--trace", trace, "-o", trace), trace, "--output"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "solve-output-workload", "solve-output-link-to-workload", "solve-output-other-spelling", "solve-write-lp-prices", "solve-plot-workload",
        "compare-output-prices", "sweep-output-workload", "catalog-output-prices", "validate-output-measurements", "simulate-output-trace",
    ],
)
def test_an_output_naming_an_input_file_is_refused_and_the_input_kept(tmp_path, capsys, case):
    # -o (and --write-lp, --plot) named the workload, a --prices file or the measurements CSV and
    # overwrote it silently.
    args, victim, option = _overwrite_cases(tmp_path)[case]
    before = victim.read_bytes()
    err = refused(*run(capsys, *args), 2, f"error: {option} ", "would overwrite the input")
    assert victim.name in err
    assert victim.read_bytes() == before


def test_a_file_the_workload_reads_is_no_output_either(tmp_path, capsys):
    prices = write(tmp_path / "p.yaml", USER_PRICES)
    w = write(tmp_path / "w.yaml", CONTROL + "pricing: {files: [p.yaml]}\n")
    refused(*run(capsys, "solve", w, "-o", prices), 2, "error: --output ", "the workload's pricing.files entry")
    assert prices.read_text(encoding="utf-8") == USER_PRICES


def test_two_outputs_naming_one_file_are_refused(tmp_path, capsys):
    w = write(tmp_path / "w.yaml", CONTROL)
    refused(*run(capsys, "solve", w, "-o", tmp_path / "x.txt", "--write-lp", tmp_path / "x.txt"), 2, "error: --output and --write-lp both name")


def test_explain_output_naming_its_config_json_is_refused(tmp_path, capsys):
    config = tmp_path / "m" / "config.json"
    config.parent.mkdir()
    config.write_bytes((ROOT / "tests" / "data" / "model_configs" / "Qwen--Qwen3-8B_config.json").read_bytes())
    before = config.read_bytes()
    refused(*run(capsys, "explain", "--model", config.parent, "--device", "H100-SXM", "-o", config), 2, "error: --output ", "the --model file")
    assert config.read_bytes() == before


# ------------------------------------------------------------------------------------------------
# 5a. a folder or an unreadable file where a file goes: exit 3, as a missing one
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, prefix",
    [
        pytest.param(("solve", "{d}"), "error: {d}: is a directory", id="solve-workload"),
        pytest.param(("compare", "{d}"), "error: {d}: is a directory", id="compare-workload"),
        pytest.param(("sweep", "{d}", "--scale", "1"), "error: {d}: is a directory", id="sweep-workload"),
        pytest.param(("simulate", "{d}"), "error: {d}: is a directory", id="simulate-workload"),
        pytest.param(("solve", "{w}", "--prices", "{d}"), "error: {d}: is a directory", id="solve-prices"),
        pytest.param(("catalog", "prices", "--prices", "{d}"), "error: {d}: is a directory", id="catalog-prices"),
        pytest.param(("validate", "--measurements", "{d}"), "error: {d}: is a directory", id="validate-measurements"),
        pytest.param(("simulate", "{w}", "--trace", "{d}"), "error: {d}: is a directory", id="simulate-trace"),
        pytest.param((*EXPLAIN, "--engine", "trtllm", "--extra_llm_api_options", "{d}"), "error: --extra_llm_api_options {d}: is a directory", id="explain-trtllm-options"),
        pytest.param(("solve", "{w}", "--catalog", "{w}"), "error: {w}: is a file, expected a catalog directory", id="catalog-is-a-file"),
        pytest.param(("solve", "{w}", "-o", "{d}"), "error: --output: {d} is a directory", id="solve-output"),
        pytest.param(("solve", "{w}", "--write-lp", "{d}"), "error: --write-lp: {d} is a directory", id="solve-write-lp"),
        pytest.param(("validate", "-o", "{d}"), "error: --output: {d} is a directory", id="validate-output"),
    ],
)
def test_a_folder_where_a_file_goes_is_exit_3_as_a_missing_file(tmp_path, capsys, args, prefix):
    # click's Path check refused these as usage errors (exit 2) where a missing file is exit 3.
    d = tmp_path / "folder"
    d.mkdir()
    w = write(tmp_path / "w.yaml", CONTROL)
    refused(*run(capsys, *(a.format(d=d, w=w) for a in args)), 3, prefix.format(d=d, w=w))


def _unreadable(monkeypatch, path: Path) -> None:
    """`path` as an unreadable file reads for a user without the right (the tests may run as
    root, who reads anything): os.access says no, and opening it raises PermissionError."""
    import builtins
    import os

    target = str(path)
    real_access, real_open, real_read_text, real_read_bytes = os.access, builtins.open, Path.read_text, Path.read_bytes

    def access(p, mode, *a, **k):
        return False if str(p) == target else real_access(p, mode, *a, **k)

    def refuse(p):
        if str(p) == target:
            raise PermissionError(13, "Permission denied", target)

    def open_(file, *a, **k):
        refuse(file)
        return real_open(file, *a, **k)

    def read_text(self, *a, **k):
        refuse(self)
        return real_read_text(self, *a, **k)

    monkeypatch.setattr(os, "access", access)
    monkeypatch.setattr(builtins, "open", open_)
    def read_bytes(self):
        refuse(self)
        return real_read_bytes(self)

    monkeypatch.setattr(Path, "read_text", read_text)
    monkeypatch.setattr(Path, "read_bytes", read_bytes)


def test_an_unreadable_workload_is_exit_3(tmp_path, capsys, monkeypatch):
    w = write(tmp_path / "w.yaml", CONTROL)
    _unreadable(monkeypatch, w)
    refused(*run(capsys, "solve", w), 3, f"error: {w}: cannot read", "Permission denied")


def test_an_unreadable_price_file_is_exit_3(tmp_path, capsys, monkeypatch):
    prices = write(tmp_path / "p.yaml", USER_PRICES)
    _unreadable(monkeypatch, prices)
    refused(*run(capsys, "catalog", "prices", "--prices", prices), 3, f"error: {prices}: cannot read", "Permission denied")


def test_an_unreadable_measurements_csv_is_exit_3(tmp_path, capsys, monkeypatch):
    measured = tmp_path / "m.csv"
    measured.write_bytes((ROOT / "tests" / "data" / "measured_small.csv").read_bytes())
    _unreadable(monkeypatch, measured)
    refused(*run(capsys, "validate", "--measurements", measured), 3, f"error: {measured}: cannot read", "Permission denied")


# ------------------------------------------------------------------------------------------------
# 5b. a CSV that does not parse: exit 4, as YAML or JSON that does not parse
# ------------------------------------------------------------------------------------------------

MEASURED = (ROOT / "tests" / "data" / "measured_small.csv").read_text(encoding="utf-8")
TRACE = "timestamp,ContextTokens,GeneratedTokens\n0,100,10\n1,100,10\n3,100,10\n"


def _unclosed(text: str) -> str:
    """`text` with a quote opened at the start of its second line and never closed."""
    head, rest = text.split("\n", 1)
    return f'{head}\n"{rest}'


@pytest.mark.parametrize(
    "content, needle",
    [
        pytest.param(b"", "no header line", id="empty"),
        pytest.param(_unclosed(MEASURED).encode(), "line 2: a quoted cell is never closed", id="unclosed-quote"),
        pytest.param(MEASURED.encode("utf-16-le"), "not a readable CSV: a NUL byte at byte 1: UTF-16 or UTF-32 without a byte-order mark?", id="utf-16-unmarked"),
        pytest.param(MEASURED.replace("\n", "\n# caf\u00e9\n", 1).encode("latin-1"), "not a readable CSV: not UTF-8 text (invalid continuation byte", id="latin-1"),
        pytest.param(MEASURED.replace(",", ";").encode(), "not comma-separated", id="semicolons"),
    ],
)
def test_a_measurements_csv_that_does_not_parse_is_exit_4(tmp_path, capsys, content, needle):
    # These exited 7 (a value out of range); an unclosed quote read the rest of the file into
    # one cell without a word.
    path = tmp_path / "m.csv"
    path.write_bytes(content)
    refused(*run(capsys, "validate", "--measurements", path), 4, f"error: {path}: ", needle)


def test_an_unclosed_quote_no_longer_swallows_the_rows_after_it(tmp_path):
    from sizer.errors import YamlSyntaxError
    from sizer.measurements import read_csv

    lines = MEASURED.splitlines(keepends=True)
    path = tmp_path / "m.csv"
    path.write_text(lines[0] + '"' + "".join(lines[1:]), encoding="utf-8")
    with pytest.raises(YamlSyntaxError, match="line 2: a quoted cell is never closed"):
        read_csv(path)
    # a harmless quote inside an unquoted cell earlier on (`"x"y`, read as written) does not stop
    # the check: the quote left open after it is still found (it was not, and the rows after it were one cell)
    harmless = lines[1].replace(lines[1].split(",", 1)[0], '"x"y', 1)
    path.write_text(lines[0] + harmless + '"' + "".join(lines[2:]), encoding="utf-8")
    with pytest.raises(YamlSyntaxError, match="line 3: a quoted cell is never closed"):
        read_csv(path)


def test_a_measurements_csv_with_quotes_closed_is_read(tmp_path):
    from sizer.measurements import read_csv

    path = write(tmp_path / "m.csv", MEASURED)
    assert len(read_csv(path)) == MEASURED.strip().count("\n")


@pytest.mark.parametrize(
    "content, needle",
    [
        pytest.param(b"", "No columns to parse", id="empty"),
        pytest.param(_unclosed(TRACE).encode(), "EOF inside string", id="unclosed-quote"),
        pytest.param(TRACE.encode("utf-16-be"), "a NUL byte at byte 0", id="utf-16-unmarked"),
        pytest.param(TRACE.replace("0,100", "0\u00e9,100", 1).encode("latin-1"), "not UTF-8 text", id="latin-1"),
    ],
)
def test_a_trace_csv_that_does_not_parse_is_exit_4(tmp_path, capsys, content, needle):
    w = write(tmp_path / "w.yaml", CONTROL)
    path = tmp_path / "t.csv"
    path.write_bytes(content)
    refused(*run(capsys, "simulate", w, "--trace", path, "-q"), 4, f"error: {path}: not a CSV or JSON Lines table of arrivals", needle)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_text_a_byte_order_mark_names_is_read_as_utf_8_is(tmp_path, capsys, encoding):
    """YAML 1.2 (5.2) and JSON (RFC 8259, 8.1) take UTF-16 and UTF-32 that a byte-order mark
    announces, and Windows PowerShell 5's `>` writes UTF-16 LE with one: such a workload, CSV or
    trace exited 3 ("cannot read") or 4. It is read, to the same answer as its UTF-8 copy."""
    bom = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}.get(encoding, b"")

    def written(name: str, text: str) -> Path:
        path = tmp_path / "marked" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(bom + text.encode(encoding))
        return path

    def simulated(folder: Path) -> str:
        code, out, err = run(capsys, "simulate", folder / "w.yaml", "--trace", folder / "t.csv", "-q", "--format", "json", "--seed", "1")
        assert code == 0, err
        return out.replace(str(folder), "<folder>")

    (tmp_path / "plain").mkdir()
    write(tmp_path / "plain" / "w.yaml", CONTROL)
    write(tmp_path / "plain" / "t.csv", TRACE)
    written("w.yaml", CONTROL)
    written("t.csv", TRACE)
    assert simulated(tmp_path / "marked") == simulated(tmp_path / "plain")

    from sizer.measurements import read_csv

    from dataclasses import replace

    marked, plain = read_csv(written("m.csv", MEASURED)), read_csv(write(tmp_path / "m.csv", MEASURED))
    assert len(marked) == MEASURED.strip().count("\n") and [replace(r, origin="") for r in marked] == [replace(r, origin="") for r in plain]


def test_the_exit_code_table_says_csv(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "4   YAML, JSON or CSV that does not parse" in out


# ------------------------------------------------------------------------------------------------
# 6. sweep: an empty list item, a --price-device outside the search
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, needle",
    [
        pytest.param("0.5,,1", "item 2 of 3 in '0.5,,1', got nothing", id="middle"),
        pytest.param("1,2,", "item 3 of 3 in '1,2,', got nothing", id="trailing"),
        pytest.param("1,abc", "item 2 of 2 in '1,abc', got 'abc'", id="no-number"),
    ],
)
def test_a_sweep_list_item_that_is_empty_or_no_number_is_a_usage_error(tmp_path, capsys, text, needle):
    # `--scale 0.5,,1` swept 0.5 and 1 and dropped the empty item without a word.
    w = write(tmp_path / "w.yaml", CONTROL)
    refused(*run(capsys, "sweep", w, "--scale", text, "-q"), 2, "error: Invalid value for '--scale': expected a number at", needle)


def test_a_price_device_outside_the_search_is_a_usage_error(tmp_path, capsys):
    # The sweep scaled B300's prices, which no point of an H100-only search reads: every point alike.
    w = write(tmp_path / "w.yaml", CONTROL)
    refused(*run(capsys, "sweep", w, "--price-scale", "0.5,1", "--price-device", "B300", "-q"), 2, "error: --price-device B300: B300 is not in", "search.devices (H100-SXM)")


def test_a_price_device_in_the_search_sweeps(tmp_path, capsys):
    w = write(tmp_path / "w.yaml", CONTROL)
    code, out, err = run(capsys, "sweep", w, "--price-scale", "0.5,1", "--price-device", "H100-SXM", "-q", "--format", "json")
    assert code == 0, err
    assert '"price_device": "H100-SXM"' in out


# ------------------------------------------------------------------------------------------------
# 7. messages that say what to give
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key, value, shown", [("ttft_s", "'2s'", "a string ('2s')"), ("tpot_s", "[0.05]", "a list")])
def test_an_slo_bound_that_is_no_number_says_a_number_of_seconds_or_a_mapping(tmp_path, capsys, key, value, shown):
    # It said "expected a mapping of keys to values", which hides that a bare number works.
    w = write(tmp_path / "w.yaml", CONTROL + f"slo: {{{key}: {value}}}\n")
    refused(
        *run(capsys, "solve", w), 6,
        f"error: {w}: slo.{key}: expected a number of seconds (the p99 bound) or a mapping of percentiles to seconds such as {{p99: 2.0}}, got {shown}",
    )


def test_a_catalog_dir_from_the_environment_is_named_as_such(tmp_path, capsys, monkeypatch):
    # "/x: catalog directory not found" did not say where /x came from.
    w = write(tmp_path / "w.yaml", CONTROL)
    monkeypatch.setenv("SIZER_CATALOG_DIR", str(tmp_path / "nowhere"))
    refused(*run(capsys, "solve", w), 3, f"error: SIZER_CATALOG_DIR={tmp_path / 'nowhere'} (the environment variable", "catalog directory not found")
    monkeypatch.setenv("SIZER_CATALOG_DIR", str(tmp_path))  # a folder, but no catalog
    refused(*run(capsys, "solve", w), 3, f"error: SIZER_CATALOG_DIR={tmp_path} (the environment variable", "holds no gpus.yaml")


def test_a_catalog_option_is_not_blamed_on_the_environment(tmp_path, capsys, monkeypatch):
    w = write(tmp_path / "w.yaml", CONTROL)
    monkeypatch.setenv("SIZER_CATALOG_DIR", str(tmp_path / "nowhere"))
    refused(*run(capsys, "solve", w, "--catalog", tmp_path / "other"), 3, f"error: {tmp_path / 'other'}: catalog directory not found")


def test_a_price_device_priced_only_by_the_workloads_own_price_files_sweeps(tmp_path, capsys):
    # H20 has no price in the catalog; the workload's pricing.files gives one: the sweep scales it
    # (the check read the catalog and --prices only, and refused it, exit 2).
    (tmp_path / "mine.yaml").write_text("prices:\n  - {device: H20, provider: mycloud, kind: on_demand, usd_per_gpu_hour: 1.5, gpus_per_instance: 8}\n")
    body = "model: llama-3.1-8b\ntraffic: {requests_per_s: 5, prompt_tokens: 1000, output_tokens: 100}\nsearch: {devices: [H20], tp: [1], pp: [1]}\npricing: {files: [mine.yaml], min_source_kind: user}\n"
    w = write(tmp_path / "w.yaml", body)
    code, out, err = run(capsys, "sweep", w, "--price-scale", "0.5,1", "--price-device", "H20", "-q", "--format", "json")
    assert code == 0, err
    assert '"price_device": "H20"' in out


def test_explain_output_named_like_a_catalog_model_is_no_overwrite(tmp_path, capsys, monkeypatch):
    # `--model llama-3.1-8b` names a catalog model, not a file: `-o llama-3.1-8b` writes a new file
    # (it was refused: "is the --model file llama-3.1-8b").
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "explain", "--model", "llama-3.1-8b", "--device", "H100-SXM", "-o", "llama-3.1-8b")
    assert code == 0, err
    assert (tmp_path / "llama-3.1-8b").read_text().startswith("llama-3.1-8b (meta-llama/Llama-3.1-8B-Instruct) on H100-SXM")


@pytest.mark.parametrize("text", ["1:nan:1", "1:inf:1", "nan:2:1"])
def test_a_sweep_range_of_one_point_with_a_non_finite_end_is_a_usage_error(tmp_path, capsys, text):
    # 1:nan:1 sweeps only its start, but a stop that is no number is a mistyped range (it was taken)
    w = write(tmp_path / "w.yaml", CONTROL)
    refused(*run(capsys, "sweep", w, "--scale", text, "-q"), 2, "error: Invalid value for '--scale': expected finite numbers", repr(text))


def test_an_impossible_fitted_date_is_a_usage_error_before_any_fit(tmp_path, capsys):
    """calibrate --fitted 2026-02-30 matched the YYYY-MM-DD pattern and was written into the
    table as its date; it is refused as --as-of refuses it, before the minutes of a fit."""
    code, out, err = run(capsys, "calibrate", "--fitted", "2026-02-30", "-o", tmp_path / "e.json")
    assert code == 2 and out == "" and "'--fitted'" in err and "2026-02-30" in err and "Traceback" not in err
    assert not (tmp_path / "e.json").exists()


def test_a_workloads_model_config_is_no_output(tmp_path, capsys):
    """A workload's `model:` given as a folder with config.json (and hf_quant_config.json beside
    it) is read by solve: -o naming either file replaced the checkpoint's own config."""
    folder = tmp_path / "m"
    folder.mkdir()
    config = folder / "config.json"
    config.write_bytes((ROOT / "tests" / "data" / "model_configs" / "Qwen--Qwen3-8B_config.json").read_bytes())
    quant = write(folder / "hf_quant_config.json", '{"quantization": {"quant_algo": "FP8"}}')
    before = config.read_bytes(), quant.read_bytes()
    w = write(tmp_path / "w.yaml", CONTROL.replace("model: llama-3.1-8b", "model: ./m"))
    assert "model: ./m" in w.read_text(encoding="utf-8")
    for victim in (config, quant):
        refused(*run(capsys, "solve", w, "-o", victim), 2, "error: --output ", "the workload's model:")
    assert (config.read_bytes(), quant.read_bytes()) == before


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("solve", "{w}", "-o", "{victim}"), id="solve"),
        pytest.param(("compare", "{w}", "-o", "{victim}"), id="compare"),
        pytest.param(("catalog", "gpus", "-o", "{victim}"), id="catalog"),
        pytest.param(("validate", "--rows", "none", "-o", "{victim}"), id="validate"),
        pytest.param(("explain", "--model", "llama-3.1-8b", "--device", "H100-SXM", "-o", "{victim}"), id="explain"),
        pytest.param(("calibrate", "--max-iterations", "1", "-o", "{victim}"), id="calibrate"),
    ],
)
def test_a_file_of_the_catalog_is_no_output(tmp_path, capsys, args):
    """Every command reads the catalog; -o naming one of its files (here prices.yaml of a
    --catalog copy) replaced the catalog's own data. calibrate replaces the catalog's fitted table
    with --in-place, which rewrites the residuals that go with it, never with -o."""
    import shutil

    catalog = tmp_path / "cat"
    shutil.copytree(ROOT / "catalogs", catalog)
    victim = catalog / "prices.yaml"
    before = victim.read_bytes()
    w = write(tmp_path / "w.yaml", CONTROL)
    argv = [a.format(w=w, victim=victim) for a in args] + ["--catalog", catalog]
    refused(*run(capsys, *argv), 2, "error: --output ", "a file of the catalog")
    assert victim.read_bytes() == before


@pytest.mark.parametrize("suffix", [".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip"])
def test_a_compressed_trace_is_read_as_its_plain_copy(tmp_path, capsys, suffix):
    """The trace reader takes compressed CSV (.gz, .bz2, .zip, .xz, .zst: traces.py), which pandas
    decompresses by the name. The byte-order-mark check read the compressed bytes as text and
    refused them for the NUL a gzip or zip header holds ("a NUL byte at byte 3: UTF-16 or UTF-32
    without a byte-order mark?"), exit 4 for a file read before."""
    import bz2
    import gzip
    import lzma
    import zipfile

    w = write(tmp_path / "w.yaml", CONTROL)
    plain = write(tmp_path / "t.csv", TRACE)
    packed = tmp_path / f"t{suffix}"
    if suffix == ".csv.zip":
        with zipfile.ZipFile(packed, "w") as z:
            z.writestr("t.csv", TRACE)
    else:
        packed.write_bytes({".csv.gz": lambda b: gzip.compress(b, mtime=0), ".csv.bz2": bz2.compress, ".csv.xz": lzma.compress}[suffix](TRACE.encode()))
    assert b"\x00" in packed.read_bytes()[:4096]

    def simulated(path: Path) -> str:
        code, out, err = run(capsys, "simulate", w, "--trace", path, "-q", "--format", "json", "--seed", "1")
        assert code == 0, err
        return out.replace(path.name, "<trace>")

    assert simulated(packed) == simulated(plain)


@pytest.mark.parametrize("name", ["t.jsonl", "t.json"])
def test_a_json_trace_with_utf_8s_byte_order_mark_is_read(tmp_path, capsys, name):
    """One rule for every text file: UTF-8, with or without its byte-order mark. A JSON Lines or
    JSON trace that opens with the UTF-8 mark (Notepad's "UTF-8 with BOM") went to pandas's JSON
    reader, which refused it ("Expected object or value", exit 4), where the same trace in UTF-16
    with its mark was read."""
    rows = [{"timestamp": t, "ContextTokens": 100, "GeneratedTokens": 10} for t in (0, 1, 3)]
    text = "".join(json.dumps(r) + "\n" for r in rows) if name.endswith(".jsonl") else json.dumps(rows)
    w = write(tmp_path / "w.yaml", CONTROL)
    plain = write(tmp_path / name, text)
    marked = tmp_path / "marked" / name
    marked.parent.mkdir()
    marked.write_bytes(b"\xef\xbb\xbf" + text.encode())

    def simulated(path: Path) -> str:
        code, out, err = run(capsys, "simulate", w, "--trace", path, "-q", "--format", "json", "--seed", "1")
        assert code == 0, err
        return out.replace(str(path), "<trace>")

    assert simulated(marked) == simulated(plain)


def test_a_prefixed_configs_hf_quant_config_is_no_output(tmp_path, capsys):
    """A config saved as `<prefix>_config.json` reads `<prefix>_hf_quant_config.json` beside it
    (model.load_config_json), not hf_quant_config.json: -o naming the file actually read was let
    through (solve and explain replaced the FP8 quant config with their report, and the next run
    sized the model in bf16), while an hf_quant_config.json no one reads was refused."""
    config = tmp_path / "org--M_config.json"
    config.write_bytes((ROOT / "tests" / "data" / "model_configs" / "Qwen--Qwen3-8B_config.json").read_bytes())
    quant = write(tmp_path / "org--M_hf_quant_config.json", '{"quantization": {"quant_algo": "FP8"}}')
    before = quant.read_bytes()
    w = write(tmp_path / "w.yaml", CONTROL.replace("model: llama-3.1-8b", f"model: {config}"))
    refused(*run(capsys, "solve", w, "-o", quant), 2, "error: --output ", "the workload's model:")
    refused(*run(capsys, "explain", "--model", config, "--device", "H100-SXM", "-o", quant), 2, "error: --output ", "the --model file")
    assert quant.read_bytes() == before
    unread = tmp_path / "hf_quant_config.json"  # no file this config reads: an output like any other
    code, _, err = run(capsys, "explain", "--model", config, "--device", "H100-SXM", "-o", unread)
    assert code == 0, err
