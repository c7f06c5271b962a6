"""Traces as published (sizer/traces.py, issue 14 point 1): the Azure LLM inference traces'
columns and seven-digit timestamps, the usual aliases of other public traces (BurstGPT,
Mooncake's JSON Lines), epoch and unit-named numbers; a trace shorter than a day is a sample
(its rate, lengths and burstiness), a day or more the hourly profile; `sizer simulate --trace`
scales to the plan's load or says what it replays. Each figure worked by hand."""

from __future__ import annotations

import ast
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sizer.errors import FieldValueError, InputFileError
from sizer.simulate import trace_arrivals
from sizer.traces import hourly_exposure_s, read_trace_file, summarise
from sizer.workload import LengthDist, load_workload

AZURE = """\
TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:16:46.6805900,2000,500
2023-11-16 18:17:00.0000000,0,7
"""

FIXED = LengthDist(percentiles=((50.0, 100.0),))


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_azure_columns_and_seven_digit_fractions(tmp_path):
    """The Azure 2023/2024 format as published: seconds to the 100 ns tick, read by pandas on any
    Python (3.10's datetime.fromisoformat refuses seven digits)."""
    t = read_trace_file(_write(tmp_path, "AzureLLMInferenceTrace_code.csv", AZURE))
    assert dict(t.columns) == {"time": "TIMESTAMP", "prompt": "ContextTokens", "output": "GeneratedTokens"}
    gaps = np.diff(t.time_s)
    # 50.9951690 - 46.6805900 = 4.3145790 s; 46.6805900 - 50.9951690 + 60 = 55.6854210 s; 13.3194100 s
    assert gaps == pytest.approx([4.314579, 55.685421, 13.31941], abs=1e-6)
    # the hour of day as written: 18:15:46.68 is 65,746.68 s after midnight
    assert t.time_s[0] % 86400 == pytest.approx(18 * 3600 + 15 * 60 + 46.68059, abs=1e-6)
    assert t.prompt_tokens.tolist() == [374, 396, 2000, 0] and t.time_format == "ISO 8601"


def test_the_reader_never_parses_dates_with_fromisoformat():
    """Python 3.10's fromisoformat takes 0, 3 or 6 fractional digits only: the reader must not use it."""
    source = (Path(__file__).parent.parent / "sizer" / "traces.py").read_text()
    calls = {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute)}
    assert "fromisoformat" not in calls and "strptime" not in calls


@pytest.mark.parametrize(
    "header, roles, ignored",
    [
        ("timestamp,prompt_tokens,output_tokens", ("timestamp", "prompt_tokens", "output_tokens"), ()),
        ("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type", ("Timestamp", "Request tokens", "Response tokens"), ("Model", "Total tokens", "Log Type")),
        ("arrival_time,input_tokens,output_tokens", ("arrival_time", "input_tokens", "output_tokens"), ()),
        ("TIME,Input_Length,OUTPUT-LENGTH", ("TIME", "Input_Length", "OUTPUT-LENGTH"), ()),
        ("created_at,prompt_len,completion_tokens,user", ("created_at", "prompt_len", "completion_tokens"), ("user",)),
    ],
    ids=["sizer", "burstgpt", "arrival_time", "upper-case", "openai-usage"],
)
def test_column_aliases_in_any_case(tmp_path, header, roles, ignored):
    cols = header.split(",")
    rows = [header] + [",".join(str(i + 1) if c not in ("Model", "Log Type", "user") else "x" for c in cols) for i in range(3)]
    t = read_trace_file(_write(tmp_path, "t.csv", "\n".join(rows) + "\n"))
    assert tuple(name for _, name in t.columns) == roles
    assert t.ignored == ignored
    assert t.time_s.tolist() == [1.0, 2.0, 3.0]


def test_json_lines_with_millisecond_times(tmp_path):
    """Mooncake's traces are JSON Lines with `timestamp` in milliseconds: read with time_unit ms,
    or a column named timestamp_ms."""
    lines = [{"timestamp": 0, "input_length": 6955, "output_length": 52, "hash_ids": [1, 2]}, {"timestamp": 1500, "input_length": 100, "output_length": 9, "hash_ids": [3]}]
    p = _write(tmp_path, "mooncake.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
    t = read_trace_file(p, time_unit="ms")
    assert t.time_s.tolist() == [0.0, 1.5] and t.prompt_tokens.tolist() == [6955, 100] and t.ignored == ("hash_ids",)
    named = _write(tmp_path, "n.csv", "timestamp_ms,isl,osl\n0,10,1\n2500,20,2\n")
    assert read_trace_file(named).time_s.tolist() == [0.0, 2.5]


def test_epoch_seconds_and_iso_offsets(tmp_path):
    epoch = read_trace_file(_write(tmp_path, "e.csv", "timestamp\n1700000000\n1700000000.5\n"))
    assert epoch.time_s.tolist() == [1700000000.0, 1700000000.5] and epoch.time_format == "seconds"
    # one UTC offset: the wall clock as written (hour 18 stays hour 18)
    local = read_trace_file(_write(tmp_path, "l.csv", "timestamp\n2024-05-10T18:00:00+02:00\n2024-05-10T18:00:01.25+02:00\n"))
    assert local.time_s[0] % 86400 == 18 * 3600 and local.time_s[1] - local.time_s[0] == pytest.approx(1.25, abs=1e-6)
    # offsets that differ (a clock change): one clock, UTC, and the format says so
    mixed = read_trace_file(_write(tmp_path, "m.csv", "timestamp\n2024-03-31T01:59:00+01:00\n2024-03-31T03:01:00+02:00\n"))
    assert mixed.time_s[1] - mixed.time_s[0] == pytest.approx(120.0) and "UTC" in mixed.time_format


@pytest.mark.parametrize(
    "text, needle",
    [
        ("time_of_day,tokens\n1,2\n", "expected a time column (timestamp, TIMESTAMP, arrival_time, ...; optionally prompt_tokens/ContextTokens"),
        ("timestamp\n2023-11-16 18:00:00\nyesterday\n", "line 3: timestamp: expected a time (ISO 8601"),
        ("timestamp\n1\nnan\n", "line 3: timestamp: expected a time"),
        ("timestamp\n1\ninf\n", "line 3: timestamp: expected a time"),
        ("timestamp\n1\n1e13\n", "line 3: timestamp: 1e13 seconds is past the year 5000; if the times are milliseconds"),
        ("timestamp,prompt_tokens\n1,-5\n", "line 2: prompt_tokens: expected a number of tokens >= 0, got -5"),
        ("timestamp,prompt_tokens\n1,many\n", "line 2: prompt_tokens: expected a number of tokens, got 'many'"),
        ("timestamp,TIMESTAMP\n1,1\n", "columns 'timestamp' and 'TIMESTAMP' both read as the time; keep one"),
        ("timestamp\n", "expected at least two arrivals, got none"),
    ],
    ids=["no-time-column", "bad-iso", "nan", "inf", "1e13", "negative", "text-length", "two-time-columns", "empty"],
)
def test_bad_traces_are_refused_in_one_line(tmp_path, text, needle):
    p = _write(tmp_path, "bad.csv", text)
    with pytest.raises(FieldValueError) as info:
        summarise(read_trace_file(p))
    message = str(info.value)
    assert needle in message and "bad.csv" in message and "\n" not in message


def test_a_missing_trace_is_a_file_error(tmp_path):
    with pytest.raises(InputFileError, match="file not found"):
        read_trace_file(tmp_path / "nope.csv")


def test_hourly_exposure_by_hand_and_without_a_loop_over_the_span():
    # 00:30 to 02:15 of day 0: hour 0 has 1,800 s, hour 1 3,600 s, hour 2 900 s
    e = hourly_exposure_s(1800.0, 2 * 3600 + 900.0)
    assert e[0] == 1800 and e[1] == 3600 and e[2] == 900 and e[3:].sum() == 0
    # three days and a half from 12:00: hours 0-11 covered 3 times, hours 12-23 4 times, less
    # the half day at the end (it ends at 00:00 + 3.5 days = 00:00 of day 4 minus ... by hand:
    start, end = 12 * 3600.0, 12 * 3600.0 + 3.5 * 86400
    brute = np.zeros(24)
    for s in range(int(start), int(end), 60):  # minute by minute
        brute[(s // 3600) % 24] += 60
    assert hourly_exposure_s(start, end) == pytest.approx(brute)
    # a span of 30,000 years is 24 sums, not 260 million hours
    huge = hourly_exposure_s(0.0, 1e12)
    assert huge.sum() == pytest.approx(1e12)


def test_a_trace_shorter_than_a_day_is_a_sample(tmp_path):
    """Arrivals at 0, 1, 3, 6 s: rate = 3 arrivals after the first / 6 s = 0.5 req/s; gaps 1, 2,
    3 s: CV = std / mean = 0.8165 / 2 = 0.4082; lengths 0 and blank counted and left out."""
    p = _write(tmp_path, "t.csv", "timestamp,prompt_tokens,output_tokens\n0,100,10\n1,200,0\n3,,30\n6,400,40\n")
    s = summarise(read_trace_file(p))
    assert s.kind == "sample" and s.profile_rps == ()
    assert s.mean_rps == pytest.approx(0.5)
    assert s.interarrival_cv == pytest.approx(math.sqrt(2 / 3) / 2)
    assert s.zero_lengths == 1 and s.missing_lengths == 1
    assert s.prompt_tokens.tolist() == [100, 200, 400] and s.output_tokens.tolist() == [10, 30, 40]
    assert "shorter than a day: a sample of the arrival process" in s.describe()[0]


def test_a_day_or_more_gives_the_hourly_profile(tmp_path):
    """One arrival every 10 minutes for 24 h, two in hour 5: every hour covered, rate[h] = 6 / 3600
    but hour 5 (7 / 3600); 23 h 50 min of span leave hour 23 50 minutes (6 arrivals / 3,000 s)."""
    times = [i * 600.0 for i in range(144)] + [5 * 3600 + 1.0]
    p = _write(tmp_path, "day.csv", "timestamp\n" + "\n".join(f"{t:g}" for t in times) + "\n")
    s = summarise(read_trace_file(p))
    assert s.kind == "daily"
    assert s.profile_rps[0] == pytest.approx(6 / 3600) and s.profile_rps[5] == pytest.approx(7 / 3600)
    assert s.profile_rps[23] == pytest.approx(6 / 3000)


def test_a_workload_from_an_azure_sample(catalog, tmp_path):
    """The workload's rate is the sample's; its lengths are the trace's (p50/p90/p99, capped at
    the largest); --max-model-len then admits the longest prompt + the longest output; the plan
    says it is a sample."""
    _write(tmp_path, "azure.csv", AZURE)
    w = _write(tmp_path, "w.yaml", "model: llama-3.1-8b\ntraffic:\n  trace: azure.csv\nsearch: {devices: [H100-SXM], tp: [1], pp: [1]}\n")
    wl = load_workload(w, catalog)
    span = 60.0 + 13.31941  # 18:15:46.68059 to 18:17:00.0
    assert wl.traffic.requests_per_s == pytest.approx(3 / span)
    assert wl.traffic.trace.kind == "sample" and wl.traffic.profile_rps == ()
    assert wl.traffic.prompt_tokens.cap == 2000 and wl.traffic.output_tokens.cap == 500
    assert wl.max_model_len == 2500 and wl.refused_fraction == 0.0
    # a rate given beside a sample is the rate to plan for; the trace keeps its lengths
    scaled = _write(tmp_path, "s.yaml", "model: llama-3.1-8b\ntraffic:\n  trace: azure.csv\n  requests_per_s: 12\nsearch: {devices: [H100-SXM], tp: [1], pp: [1]}\n")
    assert load_workload(scaled, catalog).traffic.requests_per_s == 12


def test_solve_on_the_azure_format_says_it_is_a_sample(root, tmp_path):
    _write(tmp_path, "azure.csv", AZURE)
    w = _write(tmp_path, "w.yaml", "model: llama-3.1-8b\ntraffic:\n  trace: {path: azure.csv}\nslo: {ttft_s: 2}\nsearch: {devices: [H100-SXM], tp: [1], pp: [1], kv_dtypes: [fp8], weight_dtypes: [fp8]}\n")
    proc = subprocess.run([sys.executable, "-m", "sizer", "solve", str(w), "--format", "json"], capture_output=True, text=True, cwd=root)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["workload"]["trace"]["kind"] == "sample" and d["workload"]["trace"]["columns"]["prompt"] == "ContextTokens"
    text = subprocess.run([sys.executable, "-m", "sizer", "solve", str(w)], capture_output=True, text=True, cwd=root).stdout
    assert "trace     azure.csv: 4 arrivals over 1.2 min, shorter than a day: a sample of the arrival process" in text


def test_simulate_scales_a_trace_to_the_plan_or_replays_it_as_recorded(tmp_path):
    """A trace of 11 arrivals one per second (1 req/s): scaled to 2 req/s its times halve and it
    loops to fill the window; as recorded it keeps its times, and says its rate."""
    p = _write(tmp_path, "t.csv", "timestamp\n" + "\n".join(str(i) for i in range(11)) + "\n")
    plan = trace_arrivals(p, 20.0, 1, FIXED, FIXED, 0, target_rps=2.0)
    assert plan.time_s[:3].tolist() == [0.0, 0.5, 1.0]
    # one copy spans 5 s, the next starts a mean gap (0.5 s) later, at 5.5, 11 and 16.5 s: three
    # whole copies and the 8 arrivals of the fourth up to 20 s
    assert plan.time_s.shape[0] == 3 * 11 + 8 and plan.time_s[11] == 5.5
    assert "replayed 2x as fast, to the plan's 2 req/s, looped 3 time(s)" in plan.source and plan.rate_rps is None
    recorded = trace_arrivals(p, 20.0, 1, FIXED, FIXED, 0)
    assert recorded.time_s.tolist() == [float(i) for i in range(11)]
    assert "as recorded: 11 arrivals in 20 s, 0.55 req/s" in recorded.source and recorded.rate_rps == pytest.approx(0.55)
    # two replicas: each arrival routed to this one with probability 1/2
    half = trace_arrivals(p, 20.0, 2, FIXED, FIXED, 0, target_rps=2.0)
    assert 0 < half.time_s.shape[0] < 41 and "1 in 2 arrivals" in half.source


def test_bare_millisecond_times_read_as_seconds_are_flagged(tmp_path):
    """Mooncake counts milliseconds in a column called `timestamp`: read as seconds, 3 arrivals
    over 2,000,000 s (23 days) are 1e-6 req/s, which the summary warns of; time_unit ms reads
    them as 2,000 s."""
    p = _write(tmp_path, "m.csv", "timestamp,input_length\n0,10\n1000000,20\n2000000,30\n")
    s = summarise(read_trace_file(p))
    assert s.kind == "daily" and len(s.warnings) == 1 and "give time_unit: ms" in s.warnings[0]
    ms = summarise(read_trace_file(p, time_unit="ms"))
    assert ms.kind == "sample" and ms.span_s == 2000.0 and ms.warnings == ()
    # epoch seconds at a low rate are not flagged: they are plainly seconds
    epoch = summarise(read_trace_file(_write(tmp_path, "e.csv", "timestamp\n1700000000\n1700100000\n1700200000\n")))
    assert epoch.warnings == ()


def test_other_delimiters_and_formats(tmp_path):
    """A spreadsheet's semicolons or a TSV read as well as commas; a parquet file is refused with
    the one line that converts it."""
    semi = read_trace_file(_write(tmp_path, "s.csv", "timestamp;prompt_tokens\n1;10\n2;20\n"))
    assert semi.time_s.tolist() == [1.0, 2.0] and semi.prompt_tokens.tolist() == [10, 20]
    tsv = read_trace_file(_write(tmp_path, "t.tsv", "TIMESTAMP\tContextTokens\n1\t10\n2\t20\n"))
    assert dict(tsv.columns)["prompt"] == "ContextTokens"
    with pytest.raises(FieldValueError, match=r"t.parquet: a parquet file; expected CSV or JSON Lines \(pandas: frame.to_csv"):
        read_trace_file(_write(tmp_path, "t.parquet", "PAR1"))
