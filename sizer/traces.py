"""Traces of arrivals as they are published: one row per request with its arrival time and,
optionally, its prompt and output lengths. Read with pandas; the single reader behind the
workload's `traffic.trace` and `sizer simulate --trace`. Units: seconds, tokens.

Columns are matched by name, case and punctuation ignored (`TIMESTAMP`, `timestamp`,
`Request tokens`, `request_tokens` are one name each), among the usual spellings:

    time      timestamp, time, arrival_time, arrival, ts, created_at, request_time, start_time
              (Azure LLM inference traces: TIMESTAMP; BurstGPT: Timestamp; Mooncake: timestamp)
    prompt    prompt_tokens, input_tokens, context_tokens, request_tokens, input_length,
              prompt_length, prompt_len, input_len, num_prompt_tokens, isl
              (Azure: ContextTokens; BurstGPT: Request tokens; Mooncake: input_length)
    output    output_tokens, generated_tokens, response_tokens, completion_tokens, output_length,
              output_len, num_output_tokens, osl (Azure: GeneratedTokens; BurstGPT: Response tokens)

Other columns are ignored and named as such. Times are ISO 8601 at any precision (Azure's
`2023-11-16 18:00:00.9619400` has seven fractional digits, which Python 3.10's `fromisoformat`
refuses; pandas reads them on every supported Python) or numbers: seconds, or the unit a
column's name ends in (`timestamp_ms`, `arrival_time_us`) or the one given (`time_unit`).
An ISO time is read on its own wall clock (its hour is the hour of day as written); numbers
count from an origin taken as midnight (epoch seconds: 00:00 UTC).

A CSV (optionally compressed: .gz, .bz2, .zip, .xz, .zst) or JSON Lines (.jsonl, Mooncake's
format). What a trace gives (`summarise`):

    a day or more   every hour of the day covered for at least half an hour: the hourly
                    profile, rate[h] = arrivals in hour h of any day / seconds of the trace
                    in hour h of any day
    less than that  a sample of the arrival process: its mean rate (arrivals after the first /
                    seconds from first to last arrival), its lengths, and its burstiness (the
                    inter-arrival times' coefficient of variation, 1 for Poisson arrivals),
                    which `sizer simulate` replays

Lengths: a blank cell is a missing length; a zero (BurstGPT's failed requests have 0 response
tokens) is counted and left out of the length distribution; both are reported.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import FieldValueError, InputFileError, YamlSyntaxError
from .schema import NUL_SCAN_BYTES, check_regular_file, decode_text, needs_decoding

SECONDS_PER_HOUR = 3600.0
HOURS_PER_DAY = 24
DAILY_MIN_EXPOSURE_S = 1800.0  # each hour of the day covered at least this long for a profile
MAX_ABS_SECONDS = 1e11  # about the year 5100: a larger number of seconds is another unit
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}

# names with case, spaces, underscores, hyphens and brackets removed
TIME_NAMES = ("timestamp", "time", "arrivaltime", "arrival", "ts", "createdat", "requesttime", "starttime", "arrivaltimestamp")
PROMPT_NAMES = (
    "prompttokens", "inputtokens", "contexttokens", "requesttokens", "inputlength", "promptlength",
    "promptlen", "inputlen", "numprompttokens", "numinputtokens", "isl",
)  # fmt: skip
OUTPUT_NAMES = (
    "outputtokens", "generatedtokens", "responsetokens", "completiontokens", "outputlength",
    "outputlen", "numoutputtokens", "numgeneratedtokens", "osl",
)  # fmt: skip
_UNIT_SUFFIX = re.compile(r"(?:^|[^a-z0-9])(s|ms|us|µs|ns)\W*$")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Trace:
    """The arrivals of a trace file, sorted by time."""

    label: str
    time_s: np.ndarray  # seconds, sorted
    prompt_tokens: np.ndarray | None  # float per row (NaN: missing), None: no column
    output_tokens: np.ndarray | None
    columns: tuple[tuple[str, str], ...]  # (role, column as written): time, prompt, output
    ignored: tuple[str, ...]  # columns not read
    time_format: str  # "ISO 8601", "ISO 8601 (UTC: mixed offsets)", "seconds", "milliseconds", ...
    unit_given: bool = False  # numeric times in a unit named by the column or by time_unit


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class TraceSummary:
    """What a trace gives a workload: a daily profile (a day or more) or a sample's rate, and
    its lengths and burstiness."""

    path: str
    kind: str  # "daily" | "sample"
    requests: int
    span_s: float  # first to last arrival
    mean_rps: float  # sample: arrivals after the first / span; daily: arrivals / span
    profile_rps: tuple[float, ...] = ()  # daily: 24 hourly rates
    interarrival_cv: float = math.nan  # std / mean of the gaps between arrivals (Poisson: 1)
    peak_minute_rps: float | None = None  # the busiest whole minute's arrivals / 60 (spans >= 10 min)
    prompt_tokens: np.ndarray | None = None  # every request's prompt length (> 0), when the column is there
    output_tokens: np.ndarray | None = None
    missing_lengths: int = 0  # rows with a blank length
    zero_lengths: int = 0  # rows with a length of 0 (left out of the lengths)
    columns: tuple[tuple[str, str], ...] = ()
    ignored: tuple[str, ...] = ()
    time_format: str = ""
    warnings: tuple[str, ...] = ()

    @property
    def rate_relative_error(self) -> float:
        """The rate's relative standard error for Poisson arrivals, 1 / sqrt(arrivals)."""
        return 1 / math.sqrt(max(self.requests - 1, 1))

    @property
    def span_text(self) -> str:
        """The span in hours, minutes or seconds."""
        if self.span_s >= SECONDS_PER_HOUR:
            return f"{self.span_s / SECONDS_PER_HOUR:.1f} h"
        return f"{self.span_s / 60:.1f} min" if self.span_s >= 60 else f"{self.span_s:.3g} s"

    def describe(self) -> list[str]:
        """Lines for the plan's header: what the trace is, what it gives, what was read."""
        span = self.span_text
        if self.kind == "daily":
            first = f"{self.path}: {self.requests:,} arrivals over {span}, a day or more: the hourly profile"
            rate = f"{min(self.profile_rps):.4g}-{max(self.profile_rps):.4g} req/s by hour of day"
        else:
            first = f"{self.path}: {self.requests:,} arrivals over {span}, shorter than a day: a sample of the arrival process"
            rate = f"{self.mean_rps:.4g} req/s (+/- {self.rate_relative_error:.1%} for Poisson arrivals)"
        if math.isfinite(self.interarrival_cv):
            rate += f", inter-arrival CV {self.interarrival_cv:.2f} (Poisson: 1)"
        cols = ", ".join(f"{name} ({role})" for role, name in self.columns)
        second = f"{rate}; columns {cols}"
        if self.ignored:
            second += f"; ignored {', '.join(self.ignored)}"
        if self.zero_lengths or self.missing_lengths:
            second += f"; {self.zero_lengths:,} zero and {self.missing_lengths:,} blank lengths left out"
        return [first, second]

    def to_dict(self) -> dict:
        def r(x, nd=6):
            return None if x is None or not math.isfinite(x) else round(float(x), nd)

        return {
            "path": self.path,
            "kind": self.kind,
            "requests": self.requests,
            "span_s": r(self.span_s, 3),
            "mean_rps": r(self.mean_rps),
            "rate_relative_error": r(self.rate_relative_error, 4),
            "interarrival_cv": r(self.interarrival_cv, 4),
            "peak_minute_rps": r(self.peak_minute_rps),
            "missing_lengths": self.missing_lengths,
            "zero_lengths": self.zero_lengths,
            "columns": {role: name for role, name in self.columns},
            "ignored_columns": list(self.ignored),
            "time_format": self.time_format,
        }


# ---------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def _role_of(name: str) -> tuple[str | None, str | None]:
    """(role, unit from the name's suffix) of a column name."""
    lowered = str(name).strip().lower()
    unit = None
    m = _UNIT_SUFFIX.search(lowered)
    base = lowered
    if m:
        unit = m.group(1).replace("µs", "us")
        base = lowered[: m.start(1)]
    n = _norm(base)
    if n in TIME_NAMES:
        return "time", unit
    n_full = _norm(lowered)
    if n_full in TIME_NAMES:
        return "time", None
    if n_full in PROMPT_NAMES:
        return "prompt", None
    if n_full in OUTPUT_NAMES:
        return "output", None
    return None, None


# What pandas decompresses by the file's name (compression="infer"): its bytes are no text to
# decode here, and hold NUL bytes (a gzip header's flags and time, a zip's local header)
_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".zip", ".xz", ".zst", ".tar", ".tgz")


def _marked_text(path: Path, label: str):
    """What pandas reads a trace from, a fresh reader at each call: the path, or the decoded text
    of a file a byte-order mark opens (schema.decode_text): UTF-16 or UTF-32, which pandas would
    read as UTF-8 and refuse, or UTF-8's, which pandas's JSON reader refuses; a NUL byte near the
    start (UTF-16 without its mark) is refused there in one line. A compressed file is pandas's
    to read, from its path."""
    import io

    if Path(path).suffix.lower() in _COMPRESSED_SUFFIXES:
        return lambda: path
    try:
        with open(path, "rb") as fh:
            head = fh.read(NUL_SCAN_BYTES)
    except OSError:
        return lambda: path  # pandas's own error, as before
    if not needs_decoding(head):
        return lambda: path
    text = decode_text(Path(path).read_bytes(), label, "not a CSV or JSON Lines table of arrivals")
    return lambda: io.StringIO(text)


def _read_frame(path: Path, label: str):
    import pandas as pd

    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".parquet", ".feather", ".xlsx", ".xls"):
        raise FieldValueError(f"{label}: a {suffixes[-1][1:]} file; expected CSV or JSON Lines (pandas: frame.to_csv('trace.csv', index=False))")
    check_regular_file(path, label)
    source = _marked_text(path, label)  # pandas reads UTF-8 (and compressed files) from the path itself
    try:
        if ".jsonl" in suffixes or ".ndjson" in suffixes:
            frame = pd.read_json(source(), lines=True, dtype=False)
        elif ".json" in suffixes:
            frame = pd.read_json(source(), dtype=False)  # a list of records
        else:
            sep = "\t" if ".tsv" in suffixes else ","
            frame = pd.read_csv(source(), dtype=str, keep_default_na=False, skipinitialspace=True, sep=sep)
            if frame.shape[1] == 1:  # one column: another delimiter (semicolons, tabs, pipes)?
                header = str(frame.columns[0])
                other = next((d for d in (";", "\t", "|") if d in header), None)
                if other:
                    frame = pd.read_csv(source(), dtype=str, keep_default_na=False, skipinitialspace=True, sep=other)
    except FileNotFoundError:
        raise InputFileError(f"{label}: file not found") from None
    except IsADirectoryError:
        raise InputFileError(f"{label}: is a directory, expected a CSV or JSON Lines file of arrivals") from None
    except OSError as exc:
        raise InputFileError(f"{label}: cannot read: {exc}") from None
    except UnicodeDecodeError as exc:  # UTF-16, Latin-1: a table that does not parse, exit 4
        raise YamlSyntaxError(f"{label}: not a CSV or JSON Lines table of arrivals: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from None
    except (ValueError, pd.errors.ParserError) as exc:  # exit 4, as YAML or JSON that does not parse
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise YamlSyntaxError(f"{label}: not a CSV or JSON Lines table of arrivals: {first}") from None
    return frame


def _as_series(values):
    """A column as numbers when pandas read numbers, else as stripped text."""
    import pandas as pd
    from pandas.api.types import is_numeric_dtype

    series = pd.Series(values).reset_index(drop=True)
    if is_numeric_dtype(series) and not series.dtype == bool:
        return series, True
    return series.astype(str).str.strip(), False


def _times(values, label: str, column: str, unit: str | None) -> tuple[np.ndarray, str]:
    """Seconds for a time column: numbers in `unit` (default seconds), or ISO 8601 wall-clock."""
    import pandas as pd

    series, numeric = _as_series(values)
    numbers = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, copy=True)
    text = ~np.isfinite(numbers)
    fmt = {None: "seconds", "s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}[unit]
    out = numbers * TIME_UNITS[unit or "s"]
    if text.any():
        if numeric:
            i = int(np.flatnonzero(text)[0])
            raise FieldValueError(f"{label}: line {i + 2}: {column}: expected a finite time, got {series.iloc[i]!r}")
        stamps = series[text]
        kind = "ISO 8601"
        try:
            with warnings.catch_warnings():  # pandas 2.x warns of mixed offsets and returns objects
                warnings.simplefilter("ignore", FutureWarning)
                parsed = pd.to_datetime(stamps, format="ISO8601", errors="coerce")
            mixed = not pd.api.types.is_datetime64_any_dtype(parsed)
        except ValueError:  # pandas 3 refuses mixed offsets
            mixed = True
        if mixed:  # one clock for all: UTC
            parsed = pd.to_datetime(stamps, format="ISO8601", errors="coerce", utc=True)
            kind = "ISO 8601 (mixed UTC offsets: hours of day in UTC)"
        bad = parsed.isna().to_numpy()
        if bad.any():
            i = int(np.flatnonzero(text)[np.flatnonzero(bad)[0]])
            raise FieldValueError(
                f"{label}: line {i + 2}: {column}: expected a time (ISO 8601 such as 2023-11-16 18:00:00.9619400, or seconds), got {series.iloc[i]!r}"
            )
        if getattr(parsed.dt, "tz", None) is not None:
            parsed = parsed.dt.tz_localize(None)  # the wall clock as written (UTC when offsets are mixed)
        out[text] = (parsed - pd.Timestamp("1970-01-01")).dt.total_seconds().to_numpy(dtype=float)
        fmt = kind if text.all() else f"{kind} and {fmt}"
    big = np.abs(out) > MAX_ABS_SECONDS
    if big.any():
        i = int(np.flatnonzero(big)[0])
        raise FieldValueError(
            f"{label}: line {i + 2}: {column}: {series.iloc[i]} {fmt} is past the year 5000; "
            "if the times are milliseconds, name the column timestamp_ms or give the trace's time_unit: ms"
        )
    return out, fmt


_BLANK = ("", "nan", "NaN", "None", "none", "null", "NULL", "NA", "N/A")


def _lengths(values, label: str, column: str) -> np.ndarray:
    """Token counts: numbers >= 0 (NaN where blank)."""
    import pandas as pd

    series, numeric = _as_series(values)
    if numeric:
        blank = series.isna().to_numpy()
        numbers = series.to_numpy(dtype=float, copy=True)
    else:
        blank = series.isin(_BLANK).to_numpy()
        numbers = pd.to_numeric(series.where(~series.isin(_BLANK)), errors="coerce").to_numpy(dtype=float, copy=True)
    bad = ~blank & ~np.isfinite(numbers)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise FieldValueError(f"{label}: line {i + 2}: {column}: expected a number of tokens, got {series.iloc[i]!r}")
    negative = ~blank & (numbers < 0)
    if negative.any():
        i = int(np.flatnonzero(negative)[0])
        raise FieldValueError(f"{label}: line {i + 2}: {column}: expected a number of tokens >= 0, got {series.iloc[i]}")
    numbers[blank] = np.nan
    return numbers


def read_trace_file(path: Path | str, label: str | None = None, *, time_unit: str | None = None) -> Trace:
    """The arrivals of a trace file (module docstring). Raises an InputError naming the file,
    the line and the column for anything it cannot read."""
    path = Path(path)
    label = label or str(path)
    if time_unit is not None and time_unit not in TIME_UNITS:
        raise FieldValueError(f"{label}: time_unit: expected one of {', '.join(TIME_UNITS)}, got {time_unit!r}")
    frame = _read_frame(path, label)
    roles: dict[str, tuple[str, str | None]] = {}
    ignored = []
    names = {str(c) for c in frame.columns}
    for col in frame.columns:
        twin = re.fullmatch(r"(.+)\.(\d+)", str(col))  # pandas renames a repeated header x to x.1
        if twin and twin.group(1) in names and _role_of(twin.group(1))[0] is not None:
            raise FieldValueError(f"{label}: the column {twin.group(1)!r} is given twice; keep one")
        role, unit = _role_of(col)
        if role is None:
            ignored.append(str(col))
            continue
        if role in roles:
            raise FieldValueError(f"{label}: columns {roles[role][0]!r} and {col!r} both read as the {role}; keep one")
        roles[role] = (str(col), unit)
    if "time" not in roles:
        have = ", ".join(map(str, frame.columns)) or "none"
        raise FieldValueError(
            f"{label}: expected a time column (timestamp, TIMESTAMP, arrival_time, ...; optionally prompt_tokens/ContextTokens "
            f"and output_tokens/GeneratedTokens), got columns: {have}"
        )
    if len(frame) == 0:
        raise FieldValueError(f"{label}: expected at least two arrivals, got none")
    tcol, unit = roles["time"]
    times, fmt = _times(frame[tcol].to_numpy(), label, tcol, time_unit or unit)
    order = np.argsort(times, kind="stable")
    lengths = {}
    for role in ("prompt", "output"):
        if role in roles:
            col = roles[role][0]
            lengths[role] = _lengths(frame[col].to_numpy(), label, col)[order]
    return Trace(
        label=label,
        time_s=times[order],
        prompt_tokens=lengths.get("prompt"),
        output_tokens=lengths.get("output"),
        columns=tuple((role, roles[role][0]) for role in ("time", "prompt", "output") if role in roles),
        ignored=tuple(ignored),
        time_format=fmt,
        unit_given=bool(time_unit or unit),
    )


# ---------------------------------------------------------------------------------------------
# what a trace gives
# ---------------------------------------------------------------------------------------------


def hourly_exposure_s(start: float, end: float) -> np.ndarray:
    """Seconds of [start, end] in each hour of the day (hour h: [h, h+1) hours after midnight of
    any day), without a loop over the hours of the span: whole hours counted per hour of day."""
    out = np.zeros(HOURS_PER_DAY)
    if not end > start:
        return out
    s0, s1 = math.floor(start / SECONDS_PER_HOUR), math.floor(end / SECONDS_PER_HOUR)
    if s0 == s1:
        out[s0 % HOURS_PER_DAY] = end - start
        return out
    # whole slots s0+1 .. s1-1: for each hour of day, how many of them fall on it
    for h in range(HOURS_PER_DAY):
        out[h] = ((s1 - 1 - h) // HOURS_PER_DAY - (s0 - h) // HOURS_PER_DAY) * SECONDS_PER_HOUR
    out[s0 % HOURS_PER_DAY] += (s0 + 1) * SECONDS_PER_HOUR - start
    out[s1 % HOURS_PER_DAY] += end - s1 * SECONDS_PER_HOUR
    return out


def summarise(trace: Trace, path_label: str | None = None) -> TraceSummary:
    """A day or more: the hourly profile; less: a sample (module docstring)."""
    t = trace.time_s
    n = int(t.shape[0])
    if n < 2:
        raise FieldValueError(f"{trace.label}: expected at least two arrivals, got {n}")
    start, end = float(t[0]), float(t[-1])
    span = end - start
    if not span > 0:
        raise FieldValueError(f"{trace.label}: every arrival has the same time; expected arrivals spread over time")
    exposure = hourly_exposure_s(start, end)
    gaps = np.diff(t)
    cv = float(np.std(gaps) / np.mean(gaps)) if n > 2 else math.nan
    peak_minute = None
    if span >= 600:
        minutes = np.floor((t - start) / 60.0).astype(np.int64)
        full = minutes < math.floor(span / 60.0)  # whole minutes only
        if full.any():
            peak_minute = float(np.bincount(minutes[full]).max() / 60.0)
    profile: tuple[float, ...] = ()
    if exposure.min() >= DAILY_MIN_EXPOSURE_S:
        counts = np.bincount(np.floor(t / SECONDS_PER_HOUR).astype(np.int64) % HOURS_PER_DAY, minlength=HOURS_PER_DAY)
        profile = tuple(float(c / e) for c, e in zip(counts, exposure))
        kind, mean = "daily", n / span
    else:
        kind, mean = "sample", (n - 1) / span
    zero = missing = 0
    kept: dict[str, np.ndarray] = {}
    for role, values in (("prompt", trace.prompt_tokens), ("output", trace.output_tokens)):
        if values is None:
            continue
        blank = np.isnan(values)
        zeros = values == 0
        missing += int(blank.sum())
        zero += int(zeros.sum())
        good = values[~blank & ~zeros]
        if good.size:
            good.flags.writeable = False
            kept[role] = good
    warnings = []
    if trace.time_format == "seconds" and not trace.unit_given and float(np.abs(t).max()) < 1e9 and mean < 0.05:
        # relative numbers, not epoch seconds, at a rate a service rarely has: milliseconds?
        warnings.append(
            f"{path_label or trace.label}: {n:,} arrivals over {span / 86400:,.1f} days read as seconds ({mean:.3g} req/s); "
            "if the times are milliseconds (Mooncake's are), give time_unit: ms or name the column timestamp_ms"
        )
    return TraceSummary(
        path=path_label or trace.label,
        kind=kind,
        requests=n,
        span_s=span,
        mean_rps=mean,
        profile_rps=profile,
        interarrival_cv=cv,
        peak_minute_rps=peak_minute,
        prompt_tokens=kept.get("prompt"),
        output_tokens=kept.get("output"),
        missing_lengths=missing,
        zero_lengths=zero,
        columns=trace.columns,
        ignored=trace.ignored,
        time_format=trace.time_format,
        warnings=tuple(warnings),
    )
