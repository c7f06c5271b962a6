"""Command line: parse, call the library, render, map errors to exit codes. Nothing else.

Exit codes (errors.py): 0 success, 2 command-line usage, 3 missing or unreadable file, 4 YAML/JSON/CSV
syntax, 5 unknown key, 6 wrong type, 7 bad value, 8 unknown model/device/provider, 9 infeasible,
10 solver failure, 1 any other sizer error, 70 an internal error (a bug in sizer). Errors are one line on
stderr; --debug shows the traceback.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
from datetime import date
from pathlib import Path

import click

from . import __version__
from .catalog import load_catalog, load_price_files, resolve_model
from .deadline import Deadline
from .errors import INTERNAL_ERROR_EXIT_CODE, SizerError, is_name, is_release, printable
from .optimize import DEFAULT_TIME_LIMIT_S, solve

MAX_TIME_LIMIT_S = 7 * 24 * 3600.0  # a week: beyond it a limit is no limit (and the clock's arithmetic overflows)
from .report import render_explanation, render_plan, to_json
from .schema import MAX_INTEGER, check_output_path, write_output
from .units import normalise_dtype
from .workload import load_workload

class Count(click.ParamType):
    """An integer option within [min, 2^53] (schema.MAX_INTEGER: counts meet floats in the
    arithmetic, and an integer beyond every float overflowed there); a refusal shows a long
    value by its number of digits."""

    name = "integer"

    def __init__(self, min: int | None = None, max: int = MAX_INTEGER):  # noqa: A002 (click's own names)
        self.min, self.max = min, max

    def convert(self, value, param, ctx):
        if isinstance(value, int) and not isinstance(value, bool):
            n = value
        else:
            text = str(value).strip()
            if not re.fullmatch(r"[+-]?\d+", text):
                self.fail(f"expected an integer, got {_shown(text)}", param, ctx)
            if len(text) > 40:
                self.fail(f"expected an integer of at most 2^53, got one of {len(text.lstrip('+-')):,} digits", param, ctx)
            n = int(text)
        if (self.min is not None and n < self.min) or n > self.max:
            bound = f"from {self.min} to {self.max:,}" if self.min is not None else f"of at most {self.max:,}"
            self.fail(f"expected an integer {bound}, got {n}", param, ctx)
        return n


class Real(click.FloatRange):
    """A number option: a finite float, within [min, max] where given (click's FloatRange, whose
    comparisons let NaN through: `--time-limit-s nan` was taken, and solve then said infeasible).
    NaN and infinity are refused as usage errors (exit 2) whatever the range: no option means
    anything at either."""

    def __init__(self, min: float | None = None, max: float | None = None, *, min_open: bool = False, max_open: bool = False):  # noqa: A002
        super().__init__(min=min, max=max, min_open=min_open, max_open=max_open)
        if min is None and max is None:
            self.name = "float"  # the help's metavar, FLOAT, as type=float gave

    def _describe_range(self) -> str:
        return "" if self.min is None and self.max is None else super()._describe_range()  # no "[x<=None]" in the help

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"expected a finite number, got {_shown(str(value).strip())}", param, ctx)
        return number


REAL = Real()


def _shown(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


COUNT = Count()
FORMATS = click.Choice(["table", "json", "csv"])
PLAN_FORMATS = click.Choice(["table", "json", "csv", "markdown"])


def _path_type(kind: str, path_type: type | None = Path) -> click.Path:
    """A file (or, `kind` "directory", folder) option or argument whose checks are the readers'
    and writers' own: click's Path refused a folder or an unreadable file as a usage error (exit
    2) where a missing one is exit 3 (schema.read_document, write_output, load_catalog: one line,
    exit 3, for every such case). The help still names it FILE (DIRECTORY)."""
    t = click.Path(path_type=path_type, readable=False)
    t.name = kind
    return t


INPUT_FILE = _path_type("file")
OUTPUT_FILE = _path_type("file", None)


def _emit(text: str, output: str | None) -> None:
    if output:
        write_output(output, text, "--output")
    else:
        click.echo(text, nl=False)


def _writable(ctx, param, value):
    """Option callback: a file to write must be writable where it is named, before any work."""
    if value is not None:
        check_output_path(value, "/".join(param.opts[:1]) or param.name)
    return value


def _same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name one file: os.path.samefile where both exist (a link, another
    spelling, a hard link), else their resolved paths."""
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
        return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):
        return False


def _refuse_overwriting(outputs: list[tuple[str, str | None]], inputs: list[tuple[str, str | Path | None]]) -> None:
    """A usage error, before any work, when a file to write (--output, --write-lp, --plot) is a
    file the command reads (`inputs`: what it is, and its path), or another output's file: the
    write would silently replace it."""
    named = [(option, path) for option, path in outputs if path]
    for i, (option, path) in enumerate(named):
        for what, source in inputs:
            if source is not None and _same_file(path, source):
                raise click.UsageError(f"{option} {printable(path)} is {what} {printable(source)}: writing it would overwrite the input; name another file")
        for other, other_path in named[i + 1 :]:
            if _same_file(path, other_path):
                raise click.UsageError(f"{option} and {other} both name {printable(path)}: one would overwrite the other; name two files")


def _inputs(workload: Path | None = None, price_files: tuple[Path, ...] = (), **named: Path | None) -> list[tuple[str, Path | None]]:
    """The files a command reads, as _refuse_overwriting names them."""
    out: list[tuple[str, Path | None]] = [("the workload", workload)] if workload is not None else []
    out += [("the --prices file", p) for p in price_files]
    out += [(f"the {option} file", p) for option, p in named.items()]
    return out


def _workload_inputs(w) -> list[tuple[str, str | None]]:
    """The files a loaded workload read besides itself: its pricing.files, traffic.trace and a
    model: given as a config.json (or a folder holding one, and an hf_quant_config.json beside it)."""
    out: list[tuple[str, str | None]] = [("the workload's pricing.files entry", p) for p in getattr(w.search, "price_files", ())]
    trace = getattr(w.traffic, "trace_file", None)
    out += [("the workload's traffic.trace", trace)] if trace else []
    return out + [("the workload's model:", p) for p in _model_files(w.model.source)]


def _model_files(source: str | Path | None) -> list[Path]:
    """The files a model read from a path (a config.json or its folder) came from, its
    hf_quant_config.json as the model reads it (model.quant_config_path: `<prefix>_hf_quant_config.json`
    beside `<prefix>_config.json`); none for a catalog model's name."""
    from .model import quant_config_path

    if not source:
        return []
    path = Path(source)
    try:
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            return []
    except OSError:
        return []
    return [path, quant_config_path(path)]


def _catalog_inputs(catalog, outputs: list[tuple[str, str | None]]) -> list[tuple[str, Path]]:
    """The catalog's files an output would replace: an existing file under the catalog folder
    (gpus.yaml, prices.yaml, efficiency.json, a model or measurement file): every command reads
    them, and a write there would replace the catalog's own data without a word."""
    try:
        root = Path(catalog.root).resolve()
    except (OSError, RuntimeError):
        return []
    out = []
    for _, path in outputs:
        if not path:
            continue
        try:
            resolved = Path(path).expanduser().resolve()
            if resolved.is_file() and resolved.is_relative_to(root):
                out.append(("a file of the catalog", resolved))
        except (OSError, RuntimeError, ValueError):
            continue
    return out


def _catalog_option(f):
    return click.option(
        "--catalog",
        "catalog_dir",
        type=_path_type("directory"),
        default=None,
        help="Catalog directory (gpus.yaml, prices.yaml, models/). Default: the shipped catalogs, or $SIZER_CATALOG_DIR.",
    )(f)


def _prices_option(f):
    return click.option(
        "--prices",
        "price_files",
        multiple=True,
        type=INPUT_FILE,
        help="Your own price file (YAML `prices:` rows; repeatable), laid over the catalog's: a row with the same device, provider, kind and instance replaces it.",
    )(f)


def _as_of_option(f):
    return click.option(
        "--as-of",
        "as_of",
        type=click.DateTime(formats=["%Y-%m-%d"]),
        default=None,
        help="Count price ages to this date (YYYY-MM-DD; default today): the same date reproduces a run byte for byte.",
    )(f)


_confidence_option = click.option(
    "--confidence",
    type=REAL,
    default=None,
    help="Size every pool so its SLOs hold at this quantile of the latency model's error for its device (0 < Q < 1; default: the workload's slo.confidence, else 0.5, the model's own estimate).",
)


def _check_confidence(confidence: float | None) -> None:
    if confidence is not None and not 0 < confidence < 1:
        from .errors import FieldValueError

        raise FieldValueError(f"--confidence: expected a number between 0 and 1 (0 < Q < 1), got {confidence:g}")


def _at_confidence(w, confidence: float | None):
    """The workload at --confidence, where given (over its slo.confidence)."""
    if confidence is None:
        return w
    from dataclasses import replace

    return replace(w, slo=replace(w.slo, confidence=confidence))


def _load(catalog_dir: Path | None, price_files: tuple[Path, ...] = ()):
    """The catalog, with the user's --prices files laid over it."""
    return load_price_files(load_catalog(catalog_dir), price_files)


def _output_options(f):
    f = click.option("--output", "-o", type=OUTPUT_FILE, default=None, callback=_writable, help="Write to this file instead of stdout.")(f)
    f = click.option("--format", "fmt", type=FORMATS, default="table", show_default=True, help="Output format.")(f)
    return f


EXIT_CODES_HELP = """\b
Exit codes:
  0   success
  1   any other sizer error
  2   command-line usage
  3   a file is missing or unreadable
  4   YAML, JSON or CSV that does not parse
  5   an unknown key (the message suggests the closest known one)
  6   a value of the wrong type
  7   a value out of range
  8   an unknown model, device or provider
  9   infeasible: nothing serves the workload (reasons per device), or the constraints conflict
  10  the solver failed, or found no plan within --time-limit-s
  11  simulate: the plan misses its SLO in simulation

Errors are one line on stderr (`sizer --debug COMMAND` shows the traceback); warnings about
the inputs go to stderr too, and into the JSON outputs' `warnings`."""

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT, epilog=EXIT_CODES_HELP)
@click.version_option(__version__, prog_name="sizer")
@click.option("--debug", is_flag=True, help="Show the full traceback on errors.")
def cli(debug: bool) -> None:
    """Size an LLM deployment: which accelerators, how many, configured how, at what cost per token.

    \b
    Start with:
      sizer solve workloads/chat-llama-3.1-70b.yaml     the cheapest plan, why, and its launch line
      sizer compare workloads/chat-llama-3.1-70b.yaml   the best plan on every device
      sizer simulate workloads/chat-llama-3.1-70b.yaml  the plan request by request: PASS or FAIL
      sizer explain --model llama-3.1-70b --device "NVIDIA H100 80GB HBM3" --tp 4
    """


def _plan_output_options(f):
    f = click.option("--output", "-o", type=OUTPUT_FILE, default=None, callback=_writable, help="Write to this file instead of stdout.")(f)
    f = click.option("--format", "fmt", type=PLAN_FORMATS, default="table", show_default=True, help="Output format.")(f)
    return f


def _time_limit_option(f):
    return click.option(
        "--time-limit-s",
        type=Real(min=0, min_open=True, max=MAX_TIME_LIMIT_S),
        default=DEFAULT_TIME_LIMIT_S,
        show_default=True,
        help="Bound the whole command (rate search, solve, constraint re-solves) to this many seconds; "
        "a plan not proven optimal is reported as such, exit 10 when none is found.",
    )(f)


def _sweep_time_limit_option(f):
    return click.option(
        "--time-limit-s",
        type=Real(min=0, min_open=True, max=MAX_TIME_LIMIT_S),
        default=None,
        help=f"Bound the whole sweep to this many seconds; points not reached are reported as not run. "
        f"Default: {DEFAULT_TIME_LIMIT_S:g} s per point.",
    )(f)


def _plot_option(what: str):
    def deco(f):
        return click.option("--plot", "plot_path", type=OUTPUT_FILE, default=None, callback=_writable, help=f"Also plot {what} to this file (.png, .svg or .html; needs matplotlib).")(f)

    return deco


@cli.command("solve", short_help="The cheapest deployment that serves a workload within its SLO.", epilog=EXIT_CODES_HELP)
@click.argument("workload", type=INPUT_FILE)
@_plan_output_options
@_catalog_option
@click.option("--write-lp", "write_lp_path", type=OUTPUT_FILE, default=None, callback=_writable, help="Also write the integer program (LP format) to this file.")
@_time_limit_option
@_plot_option("the per-GPU memory of the plan's deployments")
@_prices_option
@_as_of_option
@_confidence_option
def solve_cmd(
    workload: Path, fmt: str, output: str | None, catalog_dir: Path | None, write_lp_path: str | None, time_limit_s: float, plot_path: str | None,
    price_files: tuple[Path, ...], as_of, confidence: float | None,
) -> None:
    """Cheapest deployment that serves WORKLOAD (a YAML file) within its latency bounds.

    \b
    Examples:
      sizer solve workloads/chat-llama-3.1-70b.yaml
      sizer solve workloads/chat-llama-3.1-70b.yaml --format json --output plan.json
      sizer solve my-workload.yaml --write-lp program.lp --time-limit-s 60
      sizer solve workloads/chat-llama-3.1-70b.yaml --confidence 0.9
    """
    deadline = Deadline(time_limit_s)  # the whole command, from here
    outputs = [("--output", output), ("--write-lp", write_lp_path), ("--plot", plot_path)]
    _refuse_overwriting(outputs, _inputs(workload, price_files))
    _check_confidence(confidence)
    if plot_path:
        from .plots import check_plot_path

        check_plot_path(plot_path)
    catalog = _load(catalog_dir, price_files)
    w = _at_confidence(load_workload(workload, catalog), confidence)
    _refuse_overwriting(outputs, _workload_inputs(w) + _catalog_inputs(catalog, outputs))
    _warn(w.warnings)
    plan = solve(w, catalog, time_limit_s=time_limit_s, lp_path=write_lp_path, as_of=as_of.date() if as_of else None, deadline=deadline)
    if plot_path:
        from .plots import plot_memory

        plot_memory(plan, plot_path)
    _emit(render_plan(plan, fmt), output)


@cli.command("compare", short_help="The best single-configuration plan on every device, or why none.", epilog=EXIT_CODES_HELP)
@click.argument("workload", type=INPUT_FILE)
@_plan_output_options
@_catalog_option
@click.option(
    "--sort",
    type=click.Choice(["cost", "cost_per_hour", "device", "provider", "gpus", "ttft", "tpot", "headroom"]),
    default="cost",
    show_default=True,
    help="Order of the feasible rows ($/M tokens, $/hour, ...; headroom: most KV headroom first). Infeasible rows come last.",
)
@click.option("--per-provider", is_flag=True, help="One row per device and provider (providers whose plans cost the same share a row).")
@_plot_option("the cost-latency Pareto front of every feasible configuration")
@_prices_option
@_as_of_option
@_confidence_option
def compare_cmd(
    workload: Path, fmt: str, output: str | None, catalog_dir: Path | None, sort: str, per_provider: bool, plot_path: str | None,
    price_files: tuple[Path, ...], as_of, confidence: float | None,
) -> None:
    """Best single-configuration fleet on every device of WORKLOAD's search, or why none serves.

    \b
    Examples:
      sizer compare workloads/chat-llama-3.1-70b.yaml
      sizer compare workloads/chat-llama-3.1-70b.yaml --per-provider --sort cost_per_hour
      sizer compare workloads/chat-llama-3.1-70b.yaml --format markdown
      sizer compare workloads/chat-llama-3.1-70b.yaml --confidence 0.9
    """
    from .compare import compare, comparison_rows, pareto_points
    from .report import render_comparison

    outputs = [("--output", output), ("--plot", plot_path)]
    _refuse_overwriting(outputs, _inputs(workload, price_files))
    _check_confidence(confidence)
    if plot_path:
        from .plots import check_plot_path

        check_plot_path(plot_path)
    catalog = _load(catalog_dir, price_files)
    w = _at_confidence(load_workload(workload, catalog), confidence)
    _refuse_overwriting(outputs, _workload_inputs(w) + _catalog_inputs(catalog, outputs))
    _warn(w.warnings)
    comparison = compare(w, catalog, per_provider=per_provider)
    if plot_path:
        from .plots import plot_pareto

        plot_pareto(pareto_points(comparison, catalog), plot_path, f"{w.name}: cost against TPOT p99, every feasible configuration")
    day = as_of.date() if as_of else date.today()
    _emit(render_comparison(comparison, comparison_rows(comparison, sort, day), fmt, day), output)


@cli.command("sweep", short_help="Re-plan at each value of one parameter; where the hardware flips.", epilog=EXIT_CODES_HELP)
@click.argument("workload", type=INPUT_FILE)
@_plan_output_options
@_catalog_option
@click.option("--requests-per-s", "requests_per_s", default=None, help="Steady rates (a profile is scaled to peak at each): 1,2,5,10 or start:stop:count.")
@click.option("--scale", default=None, help="Traffic multipliers: 0.5,1,2 or start:stop:count such as 0.5:4:8.")
@click.option("--price-scale", "price_scale", default=None, help="Price multipliers (every GPU-hour, or --price-device's): 0.5:1.5:11.")
@click.option("--price-device", default=None, help="With --price-scale: scale this device's prices only.")
@click.option("--ttft-p99-s", "ttft_p99_s", default=None, help="TTFT p99 bounds, seconds: 0.5,1,2,4.")
@click.option("--tpot-p99-s", "tpot_p99_s", default=None, help="TPOT p99 bounds, seconds: 0.03:0.1:8.")
@click.option("--context-percentile", "context_percentile", default=None, help="Admission context percentiles: 90,95,99,99.9.")
@click.option("--confidence", "confidence", default=None, help="Confidences (slo.confidence, 0 < Q < 1): 0.5,0.8,0.9,0.95.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@_sweep_time_limit_option
@_plot_option("the cost of each device and of the plan against the swept parameter")
@_prices_option
def sweep_cmd(
    workload, fmt, output, catalog_dir, requests_per_s, scale, price_scale, price_device, ttft_p99_s, tpot_p99_s, context_percentile, confidence, quiet,
    time_limit_s, plot_path, price_files,
) -> None:
    """Plan WORKLOAD at each value of one parameter; report where the hardware choice flips.

    \b
    Examples:
      sizer sweep workloads/chat-llama-3.1-70b.yaml --scale 0.5:4:8
      sizer sweep workloads/chat-llama-3.1-70b.yaml --price-scale 0.5:2:7 --price-device MI300X
      sizer sweep workloads/chat-llama-3.1-70b.yaml --tpot-p99-s 0.03,0.05,0.08
      sizer sweep workloads/chat-llama-3.1-70b.yaml --confidence 0.5,0.8,0.9,0.95
    """
    from .report import render_sweep
    from .sweep import ValuesError, parse_values, sweep

    outputs = [("--output", output), ("--plot", plot_path)]
    _refuse_overwriting(outputs, _inputs(workload, price_files))
    given = {
        "requests_per_s": ("--requests-per-s", requests_per_s),
        "scale": ("--scale", scale),
        "price_scale": ("--price-scale", price_scale),
        "ttft_p99_s": ("--ttft-p99-s", ttft_p99_s),
        "tpot_p99_s": ("--tpot-p99-s", tpot_p99_s),
        "context_percentile": ("--context-percentile", context_percentile),
        "confidence": ("--confidence", confidence),
    }
    chosen = [(k, opt, v) for k, (opt, v) in given.items() if v is not None]
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of " + ", ".join(opt for opt, _ in given.values()))
    deadline = Deadline(time_limit_s) if time_limit_s is not None else None
    parameter, option, text = chosen[0]
    if price_device and parameter != "price_scale":
        raise click.UsageError("--price-device goes with --price-scale")
    try:
        values = parse_values(text, option)
    except ValuesError as exc:  # a mistyped list, NaN or infinity: usage, as any float option's
        raise click.BadParameter(exc.detail, param_hint=f"'{option}'") from None
    if plot_path:
        from .plots import check_plot_path

        check_plot_path(plot_path)
    catalog = _load(catalog_dir, price_files)
    w = load_workload(workload, catalog)
    _refuse_overwriting(outputs, _workload_inputs(w) + _catalog_inputs(catalog, outputs))
    if price_device:
        _check_price_device(price_device, w, catalog)
    _warn(w.warnings)
    progress = None if quiet else _progress_printer(option)
    result = sweep(w, catalog, parameter, values, device=price_device, progress=progress, time_limit_s=DEFAULT_TIME_LIMIT_S, option=option, deadline=deadline)
    if plot_path:
        from .plots import plot_sweep

        plot_sweep(result, plot_path)
    _emit(render_sweep(result, fmt), output)


def _check_price_device(price_device: str, w, catalog) -> None:
    """--price-device must name a device the sweep can plan on: one of the workload's
    search.devices with a price to scale. Any other changes no point (each device's cost and the
    plan are over the search's devices), and the sweep ran every point alike without a word."""
    device = catalog.gpu(price_device, where="--price-device: ").name
    if device not in w.search.devices:
        raise click.UsageError(
            f"--price-device {printable(price_device)}: {device} is not in {printable(w.path)}'s search.devices ({', '.join(w.search.devices)}): "
            "scaling its price would change no point; name one of them, or add it to search.devices"
        )
    from .catalog import load_price_files

    priced = load_price_files(catalog, [Path(p) for p in w.search.price_files])  # the workload's pricing.files too
    if not any(p.device == device for p in priced.prices):
        raise click.UsageError(
            f"--price-device {printable(price_device)}: {device} has no price in the catalog, --prices or the workload's pricing.files: scaling it would change no point"
        )


def _progress_printer(option: str):
    """Progress on stderr: a line rewritten in place on a terminal, else a line per tenth."""
    tty = sys.stderr.isatty()
    state = {"tenth": -1}

    def show(done: int, total: int, value: float) -> None:
        if tty:
            click.echo(f"\rsweep {option} {value:g}: {done}/{total}", err=True, nl=done == total)
            return
        tenth = done * 10 // total
        if tenth != state["tenth"] or done == total:
            state["tenth"] = tenth
            click.echo(f"sweep {option}: {done}/{total} points", err=True)

    return show


# Other engines' spellings of explain's options, so that an SGLang or TensorRT-LLM launch line's
# flags paste as they are too: (flag, the engine whose spelling it is, the option it stands for,
# its type). Each has an option of its own, so that one given with another --engine is an error,
# not the other engine's rule read silently under this one's flag.
_ENGINE_SPELLINGS = (
    ("--model-path", "sglang", "model_spec", str),
    ("--tp-size", "sglang", "tp", "count"),
    ("--pp-size", "sglang", "pp", "count"),
    ("--context-length", "sglang", "max_model_len", "count"),
    ("--page-size", "sglang", "block_size", "count"),
    ("--chunked-prefill-size", "sglang", "max_num_batched_tokens", "count"),
    ("--tp_size", "trtllm", "tp", "count"),
    ("--pp_size", "trtllm", "pp", "count"),
    ("--max_batch_size", "trtllm", "max_num_seqs", "count"),
    ("--max_num_tokens", "trtllm", "max_num_batched_tokens", "count"),
    ("--max_seq_len", "trtllm", "max_model_len", "count"),
    ("--kv_cache_free_gpu_memory_fraction", "trtllm", "memory_fraction", REAL),
)


def _spelling_dest(flag: str, engine: str) -> str:
    return f"spelled_{engine}_" + flag.lstrip("-").replace("-", "_")  # --tp-size and --tp_size apart


def _engine_spellings(f):
    for flag, engine, canonical, kind in reversed(_ENGINE_SPELLINGS):
        f = click.option(
            flag,
            _spelling_dest(flag, engine),
            type=COUNT if kind == "count" else kind,
            default=None,
            hidden=True,  # listed together in the command's help instead
        )(f)
    return f


def _apply_spellings(params: dict, engine: str, given: set[str]) -> dict:
    """explain's parameters with the engine spellings given folded into the options they stand
    for: a UsageError for a spelling of another engine than --engine's, or one that contradicts
    the same option given in vLLM's spelling (`given`: the parameters set on the command line)."""
    out = {k: v for k, v in params.items() if not k.startswith("spelled_")}
    for flag, spelled_engine, canonical, _ in _ENGINE_SPELLINGS:
        value = params.get(_spelling_dest(flag, spelled_engine))
        if value is None:
            continue
        if spelled_engine != engine:
            from .engines import engine_policy

            raise click.UsageError(f"{flag} is {engine_policy(spelled_engine).label}'s spelling: add --engine {spelled_engine} (or use sizer's own option)")
        if canonical in given and out.get(canonical) != value:
            raise click.UsageError(f"{flag} {value} contradicts the same option given as {out.get(canonical)}")
        out[canonical] = value
        given.add(canonical)  # two spellings of one option must agree too
    return out


# llama-server's flags, as sizer's llama.cpp launch lines write them: (flags, parameter, type)
_LLAMA_SERVER_FLAGS = (
    (("-m",), "llama_model_file", str),
    (("-c", "--ctx-size"), "llama_ctx_size", COUNT),
    (("-np", "--parallel"), "llama_parallel", COUNT),
    (("-ngl", "--n-gpu-layers", "--gpu-layers"), "llama_gpu_layers", click.IntRange(min=0)),
    (("-ctk", "--cache-type-k"), "llama_cache_type_k", str),
    (("-ctv", "--cache-type-v"), "llama_cache_type_v", str),
    (("-fa", "--flash-attn"), "llama_flash_attn", str),
    (("-sm", "--split-mode"), "llama_split_mode", str),
    (("-ts", "--tensor-split"), "llama_tensor_split", str),
)


def _llama_server_spellings(f):
    for flags, dest, kind in reversed(_LLAMA_SERVER_FLAGS):
        f = click.option(*flags, dest, type=kind, default=None, hidden=True)(f)
    return f


def _apply_llama_server(params: dict, llama: dict, engine: str, given: set[str]) -> tuple[dict, tuple[str, ...]]:
    """explain's parameters with a llama-server line's flags folded in (explain.llama_server_flags),
    and the reading's warnings: a UsageError for such a flag without --engine llamacpp, or one that
    contradicts the same option given in sizer's own spelling."""
    from .explain import gguf_file_type, llama_server_flags

    named = {dest: "/".join(flags) for flags, dest, _ in _LLAMA_SERVER_FLAGS}
    present = [named[k] for k, v in llama.items() if v is not None]
    if not present:
        return params, ()
    if engine != "llamacpp":
        raise click.UsageError(f"{present[0]} is llama-server's: add --engine llamacpp")
    flags = llama_server_flags(
        ctx_size=llama["llama_ctx_size"], parallel=llama["llama_parallel"], cache_type_k=llama["llama_cache_type_k"], cache_type_v=llama["llama_cache_type_v"], flash_attn=llama["llama_flash_attn"],
        split_mode=llama["llama_split_mode"], tensor_split=llama["llama_tensor_split"],
    )
    if llama["llama_model_file"] is not None:
        flags["model_spec"], flags["weight_dtype"] = gguf_file_type(llama["llama_model_file"])
    out = dict(params)
    for name, flag in (("model_spec", "-m"), ("weight_dtype", "-m"), ("n_parallel", "-np"), ("max_model_len", "-c / -np"), ("kv_dtype", "--cache-type-k/-v"), ("pp", "--tensor-split")):
        value = flags.get(name)
        if value is None:
            continue
        same = normalise_dtype(str(out.get(name))) == normalise_dtype(str(value)) if name in ("weight_dtype", "kv_dtype") else str(out.get(name)) == str(value)
        if name == "model_spec" and name in given and out.get(name) is not None and not same:
            # --model given as a config.json path or another spelling of the model -m's file is
            # named after (a plan's line names the file after the model's name): explain checks
            # the two once --model is resolved, so that a plan's line pastes with its config
            out["gguf_model"] = value
            continue
        if name in given and out.get(name) is not None and not same:
            raise click.UsageError(f"{flag} gives {name} {value}, which contradicts the same option given as {out[name]}")
        out[name] = value
    return out, flags["warnings"]


def _data_parallel_notes(model, engine: str, tp: int, dp: int, expert_parallel: bool) -> list[str]:
    """explain's reading of vLLM's --data-parallel-size and --enable-expert-parallel: warnings, or a
    FieldValueError where the layout is one sizer does not size."""
    from .errors import FieldValueError

    if (dp > 1 or expert_parallel) and engine != "vllm":
        flag = "--data-parallel-size" if dp > 1 else "--enable-expert-parallel"
        raise click.UsageError(f"{flag} is vLLM's flag: {engine}'s own spelling of data or expert parallelism is not read")
    if dp < 1:  # vLLM's data_parallel_size counts engine cores: 0 or fewer is none (it was read as 1, silently)
        raise FieldValueError(f"--data-parallel-size: expected an integer >= 1, got {dp}")
    out = []
    if dp > 1 and model.is_moe:
        # vLLM's MoE layers span the data-parallel group (FusedMoE: tp x dp ranks, whole experts
        # with --enable-expert-parallel): each GPU holds 1/(tp dp) of the experts, not 1/tp
        raise FieldValueError(
            f"--data-parallel-size {dp}: {model.name} is a mixture of experts, whose experts vLLM spreads over the tp x dp = {tp * dp} GPUs "
            f"of the data-parallel group; sizer sizes one engine instance of tp x pp GPUs and does not size that layout "
            f"(give --data-parallel-size 1 for one instance's figures)"
        )
    if dp > 1:
        out.append(f"--data-parallel-size {dp}: {model.name} has no experts, so its {dp} data-parallel engine cores are "
                   f"{dp} independent replicas of tp={tp} (each its own weights and KV cache); the figures are one replica's, without the "
                   f"communicator vLLM's data-parallel process group sets up")
    if expert_parallel and not model.is_moe:
        out.append(f"--enable-expert-parallel: {model.name} has no experts; vLLM has nothing to place, and the figures are unchanged")
    elif expert_parallel and tp > 1 and model.num_experts % tp:
        out.append(f"--enable-expert-parallel: {model.num_experts} experts over tp={tp} ranks do not divide evenly; a rank holds up to "
                   f"{-(-model.num_experts // tp)} whole experts where sizer counts {model.num_experts / tp:g}")
    return out


@cli.command("explain", short_help="One configuration's memory per GPU, line by line (launch-line flags).", epilog=EXIT_CODES_HELP)
@click.option("--model", "model_spec", default=None, help="Catalog model name or Hugging Face id (with or without Meta-/-Instruct/-chat), or a path to a config.json (or its folder). Required (SGLang's --model-path stands for it).")
@click.option("--device", required=True, help="Device: a catalog name or alias, or the name nvidia-smi / rocm-smi prints ('NVIDIA H100 80GB HBM3', 'AMD Instinct MI300X').")
@click.option("--tp", "--tensor-parallel-size", "-tp", "tp", type=COUNT, default=1, show_default=True, help="Tensor-parallel degree.")
@click.option("--pp", "--pipeline-parallel-size", "-pp", "pp", type=COUNT, default=1, show_default=True, help="Pipeline-parallel degree (llama.cpp: layer split).")
@click.option("--kv-dtype", "--kv-cache-dtype", "kv_dtype", default=None,
              help="KV-cache format: auto (the checkpoint's dtype: the default, as vLLM's, SGLang's and TensorRT-LLM's), bf16, fp16, fp8 (fp8_e4m3, fp8_e5m2), "
                   "int8, int4; llama.cpp: f16 (the default, its --cache-type-k/-v), q8_0, q4_0 ..., or K/V as q8_0/q4_0.")
@click.option("--weight-dtype", default=None, help="Weight dtype: bf16, fp16, fp8, int8, int4, mxfp4, nvfp4; llama.cpp's GGUF types bf16, f16, q8_0, q4_0, mxfp4 (default: the checkpoint's own, or bf16 where the engine has no such type).")
@click.option("--quantization", "-q", "quantization", default=None,
              help="vLLM's --quantization: fp8, fbgemm_fp8, awq, awq_marlin, gptq, gptq_marlin, mxfp4, modelopt_fp4, compressed-tensors, modelopt (the weight format it implies).")
@click.option("--engine", type=click.Choice(["vllm", "sglang", "trtllm", "llamacpp"]), default="vllm", show_default=True, help="Serving engine whose memory rule applies.")
@click.option("--engine-version", default=None, help="Engine release whose memory rule and log lines apply (vLLM 0.2.4 ... 0.22, default 0.19; SGLang 0.4 ... 0.5.5).")
@click.option("--context-tokens", type=COUNT, default=None, help="Tokens per sequence for max concurrency (default: --max-model-len, else the model's context: max_position_embeddings, as rope_scaling scales it).")
@click.option("--max-model-len", type=COUNT, default=None, help="The engine's maximum length per request (default: --context-tokens, else the model's context).")
@click.option("--gpu-memory-utilization", "--mem-fraction-static", "--free-gpu-memory-fraction", "memory_fraction", type=REAL, default=None,
              help="The engine's memory fraction: vLLM gpu_memory_utilization, SGLang mem_fraction_static, TensorRT-LLM free_gpu_memory_fraction.")
@click.option("--block-size", type=COUNT, default=None, help="KV block size in tokens (default: the engine's).")
@click.option("--max-num-seqs", "--max-running-requests", "max_num_seqs", type=COUNT, default=None, help="Engine sequence cap (default: the engine's for this device).")
@click.option("--max-num-batched-tokens", type=COUNT, default=None, help="Engine token budget per step (default: the engine's for this device).")
@click.option("--n-parallel", type=COUNT, default=None, help="llama.cpp slots (-np).")
@click.option("--data-parallel-size", "-dp", "dp", type=COUNT, default=1, show_default=True,
              help="vLLM: data-parallel engine cores. A dense model's are whole replicas of tp x pp GPUs each (the figures are one's); "
                   "a MoE model's share their experts over tp x dp GPUs, which sizer does not size (refused).")
@click.option("--enable-expert-parallel", "-ep", "expert_parallel", is_flag=True, default=False,
              help="vLLM: the experts of a MoE model whole on each rank of the TP group instead of split in it (the same bytes a GPU "
                   "where the TP degree divides the experts).")
@click.option("--speculative-tokens", type=COUNT, default=0, show_default=True, help="Positions reserved per sequence for speculative proposals.")
@click.option("--shared-prefix-tokens", type=COUNT, default=0, show_default=True, help="A prefix every sequence shares (held once).")
@click.option("--served-model-name", "served_model_name", default=None, help="The model id the launch line serves (default: the catalog's Hugging Face id, the config's _name_or_path, or its folder).")
@click.option("--disable-radix-cache", "disable_radix_cache", is_flag=True, default=False,
              help="SGLang: the radix (prefix) cache off; for a Gated DeltaNet model (Qwen3-Next, Qwen3.5) its states then get "
                   "--max-running-requests slots instead of 0.9 / 1.9 of the pool.")
@click.option("--flashinfer/--no-flashinfer", "flashinfer_installed", default=None,
              help="vLLM: FlashInfer installed (as in vLLM's Docker images). Default: as `pip install vllm` of that release leaves it "
                   "(without it before 0.17). Changes the sampler's memory in 0.9-0.11.0 and the TP all-reduce fusion from 0.17.")
@click.option("--backend", "trtllm_backend", type=click.Choice(["pytorch"]), default=None,
              help="TensorRT-LLM: trtllm-serve's --backend; sizer's rule is the PyTorch backend's (the only one accepted).")
@click.option("--extra_llm_api_options", "--extra-llm-api-options", "trtllm_options", type=INPUT_FILE, default=None,
              help="TensorRT-LLM: the YAML file trtllm-serve's --extra_llm_api_options names; its kv_cache_config (dtype, "
                   "free_gpu_memory_fraction, tokens_per_block) is read, other keys are named in a warning.")
@_engine_spellings
@_llama_server_spellings
@_output_options
@_catalog_option
def explain_cmd(
    model_spec, device, tp, pp, kv_dtype, weight_dtype, quantization, engine, engine_version, context_tokens, max_model_len, memory_fraction,
    block_size, max_num_seqs, max_num_batched_tokens, n_parallel, dp, expert_parallel, speculative_tokens, shared_prefix_tokens, served_model_name, disable_radix_cache,
    flashinfer_installed, trtllm_backend, trtllm_options, fmt, output, catalog_dir, **spelled,
) -> None:
    """Memory of one configuration per GPU, line by line, under the engine's own rule.

    \b
    Takes vLLM's own flag spellings, so a launch line's flags can be pasted as they are:
      --tensor-parallel-size (-tp), --pipeline-parallel-size (-pp), --kv-cache-dtype,
      --quantization (-q), --max-num-seqs, --max-model-len, --max-num-batched-tokens,
      --gpu-memory-utilization, --block-size, --served-model-name
    and, with --engine sglang, SGLang's: --model-path, --tp(-size), --pp-size,
      --context-length, --mem-fraction-static, --max-running-requests,
      --chunked-prefill-size, --page-size, --kv-cache-dtype fp8_e4m3, --quantization,
      --disable-radix-cache
    and, with --engine trtllm, trtllm-serve's: --tp_size, --pp_size, --max_batch_size,
      --max_num_tokens, --max_seq_len, --kv_cache_free_gpu_memory_fraction, --backend pytorch,
      --extra_llm_api_options FILE
    and, with --engine llamacpp, llama-server's: -m <model>-<TYPE>.gguf, -c (--ctx-size),
      -np (--parallel), -ngl, --cache-type-k (-ctk), --cache-type-v (-ctv), --flash-attn (-fa),
      --split-mode (-sm) layer, --tensor-split (-ts)

    \b
    Examples:
      sizer explain --model llama-3.1-70b --device H100-SXM --tp 4 --kv-dtype fp8 --context-tokens 7200
      sizer explain --model meta-llama/Meta-Llama-3.1-8B --device "NVIDIA H100 80GB HBM3" \\
          --tensor-parallel-size 1 --kv-cache-dtype fp8 --max-model-len 32768
      sizer explain --model ./my-model/config.json --device "AMD Instinct MI300X" --quantization fp8
    """
    from .explain import explain_config, trtllm_api_options, weight_dtype_of_quantization

    ctx = click.get_current_context()
    llama = {k: spelled.pop(k) for k in list(spelled) if k.startswith("llama_")}
    if quantization is not None and llama.get("llama_model_file") is not None:
        raise click.UsageError("-m names the weights' GGUF type: give it or --quantization, not both")
    own, llama_warnings = _apply_llama_server(
        {"model_spec": model_spec, "weight_dtype": weight_dtype, "n_parallel": n_parallel, "max_model_len": max_model_len, "kv_dtype": kv_dtype, "pp": pp},
        llama, engine, {name for name in ctx.params if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE},
    )
    model_spec, weight_dtype, n_parallel, max_model_len, kv_dtype, pp = (own[k] for k in ("model_spec", "weight_dtype", "n_parallel", "max_model_len", "kv_dtype", "pp"))
    folded = _apply_spellings(
        {"model_spec": model_spec, "tp": tp, "pp": pp, "max_model_len": max_model_len, "block_size": block_size,
         "max_num_batched_tokens": max_num_batched_tokens, "max_num_seqs": max_num_seqs, "memory_fraction": memory_fraction, **spelled},
        engine,
        {name for name in ctx.params if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE},
    )
    model_spec, tp, pp, max_model_len, block_size = (folded[k] for k in ("model_spec", "tp", "pp", "max_model_len", "block_size"))
    max_num_batched_tokens, max_num_seqs, memory_fraction = (folded[k] for k in ("max_num_batched_tokens", "max_num_seqs", "memory_fraction"))
    if model_spec is None:
        raise click.UsageError("Missing option '--model' (or SGLang's '--model-path').")
    config = None
    with contextlib.suppress(OSError, RuntimeError, ValueError):  # a name no file system holds (a catalog name, then), ~nosuchuser
        config = Path(model_spec).expanduser()
        config = config / "config.json" if config.is_dir() else config
        config = config if config.is_file() else None  # a catalog model's name is no file to protect (-o llama-3.1-8b)
    inputs = _inputs(**{"--model": config, "--extra_llm_api_options": trtllm_options})
    _refuse_overwriting([("--output", output)], inputs + [("the --model file", p) for p in _model_files(config)[1:]])
    if (trtllm_backend or trtllm_options) and engine != "trtllm":
        raise click.UsageError(f"{'--backend' if trtllm_backend else '--extra_llm_api_options'} is trtllm-serve's: add --engine trtllm")
    option_warnings: list[str] = list(llama_warnings)
    if disable_radix_cache and engine != "sglang":
        option_warnings.append(f"--disable-radix-cache is SGLang's flag: {engine}'s memory rule does not read it")
    if trtllm_options is not None:
        opts = trtllm_api_options(trtllm_options)
        for name, flag, current in (("kv_dtype", "--kv-cache-dtype", kv_dtype), ("memory_fraction", "--kv_cache_free_gpu_memory_fraction", memory_fraction),
                                    ("block_size", "--block-size", block_size)):
            value = opts.get(name)
            same = (normalise_dtype(str(value)) == normalise_dtype(str(current))) if name == "kv_dtype" else value == current
            if value is not None and current is not None and not same:
                raise click.UsageError(f"{trtllm_options}: kv_cache_config gives {value} where {flag} gives {current}")
        kv_dtype = opts.get("kv_dtype") if opts.get("kv_dtype") is not None else kv_dtype
        memory_fraction = opts.get("memory_fraction") if opts.get("memory_fraction") is not None else memory_fraction
        block_size = opts.get("block_size") if opts.get("block_size") is not None else block_size
        option_warnings += list(opts["warnings"])

    if weight_dtype and quantization:
        raise click.UsageError("give --weight-dtype or --quantization, not both")
    if engine_version is not None and not is_release(engine_version):
        raise click.BadParameter(f"expected a version such as '0.19' or '1.1.0rc2.post2' (letters, digits and . + _ -), got {engine_version!r}", param_hint="'--engine-version'")
    if served_model_name is not None and not is_name(served_model_name):
        raise click.BadParameter(f"expected a model id or path (printable, not blank), got {served_model_name!r}", param_hint="'--served-model-name'")
    catalog = load_catalog(catalog_dir)
    _refuse_overwriting([("--output", output)], _catalog_inputs(catalog, [("--output", output)]))
    model = resolve_model(model_spec, catalog, base_dir=Path.cwd(), where="--model: ")
    if own.get("gguf_model") is not None and own["gguf_model"] != model.name:
        raise click.UsageError(f"-m gives model_spec {own['gguf_model']}, which contradicts the same option given as {model_spec} (model {model.name})")
    from .explain import check_gpu_layers
    from .workload import engine_context

    model = engine_context(model, engine)  # the rope-scaled context is vLLM's derivation

    check_gpu_layers(model, llama["llama_gpu_layers"])
    if served_model_name:
        from dataclasses import replace

        from .catalog import FILE_NAME_ID_NOTE, LOCAL_ID_NOTE

        model = replace(model, hf_id=served_model_name, notes=tuple(n for n in model.notes if n not in (LOCAL_ID_NOTE, FILE_NAME_ID_NOTE)))
    gpu = catalog.gpu(device, where="--device: ")
    option_warnings += _data_parallel_notes(model, engine, tp, dp, expert_parallel)
    if kv_dtype is None:
        kv_dtype = "f16" if engine == "llamacpp" else "auto"
    kv = kv_dtype if engine == "llamacpp" else "/".join(normalise_dtype(p) for p in kv_dtype.split("/"))
    if quantization:
        weight_dtype = weight_dtype_of_quantization(quantization, model)
    x = explain_config(
        model,
        gpu,
        tp=tp,
        pp=pp,
        kv_dtype=kv,
        weight_dtype=normalise_dtype(weight_dtype) if weight_dtype else None,
        context_tokens=context_tokens,
        gpu_memory_utilization=memory_fraction,
        block_size_tokens=block_size,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        engine=engine,
        engine_version=engine_version,
        max_model_len=max_model_len,
        n_parallel=n_parallel,
        speculative_tokens=speculative_tokens,
        shared_prefix_tokens=shared_prefix_tokens,
        flashinfer_installed=flashinfer_installed,
        radix_cache=False if disable_radix_cache else None,
        data_parallel_size=dp,
    )
    if option_warnings:
        from dataclasses import replace

        x = replace(x, warnings=(*x.warnings, *option_warnings))
    _warn(x.warnings)
    _emit(render_explanation(x, fmt), output)


@cli.command("catalog", short_help="List the catalog's GPUs, prices or models.", epilog=EXIT_CODES_HELP)
@click.argument("what", type=click.Choice(["gpus", "prices", "models"]))
@_plan_output_options
@_catalog_option
@_prices_option
@_as_of_option
def catalog_cmd(what: str, fmt: str, output: str | None, catalog_dir: Path | None, price_files: tuple[Path, ...], as_of) -> None:
    """List the shipped GPUs, prices (with --prices, yours laid over them) or models.

    \b
    Examples:
      sizer catalog gpus
      sizer catalog prices --format csv --output prices.csv
      sizer catalog models --format json
    """
    from datetime import date

    from .report import render_catalog

    _refuse_overwriting([("--output", output)], _inputs(None, price_files))
    catalog = _load(catalog_dir, price_files)
    _refuse_overwriting([("--output", output)], _catalog_inputs(catalog, [("--output", output)]))
    _emit(render_catalog(catalog, what, fmt, as_of=as_of.date() if as_of else date.today()), output)


@cli.command("validate", short_help="The latency model against measured TTFT, TPOT and throughput.", epilog=EXIT_CODES_HELP)
@click.option(
    "--measurements",
    "measurements_file",
    type=INPUT_FILE,
    default=None,
    help="Your own results, in the column format of aiconfigurator's silicon_sample.csv (default: the shipped table, split into fit and score rows).",
)
@click.option(
    "--rows",
    type=click.Choice(["all", "score", "fit", "skipped", "none"]),
    default="all",
    show_default=True,
    help="Which rows to list one by one (table format): modelled rows (all, score, fit), the skipped rows and why (skipped), or none (the summary only).",
)
@click.option("--write-residuals", is_flag=True, help="Also store the scoring rows' errors in the catalog's residuals.json (what sizer solve's error bands read).")
@_output_options
@_catalog_option
def validate_cmd(measurements_file: Path | None, rows: str, write_residuals: bool, fmt: str, output: str | None, catalog_dir: Path | None) -> None:
    """The latency model against measured TTFT, TPOT and throughput: per row and its error.

    \b
    Examples:
      sizer validate --rows none            the summary only, skipped rows counted by reason
      sizer validate --rows skipped         each skipped row and why
      sizer validate --measurements mine.csv --format json
      sizer validate --write-residuals      also store the errors sizer solve's bands read
    """
    from .measurements import read_csv
    from .validate import render_table, to_json, validate_rows, validate_shipped

    _refuse_overwriting([("--output", output)], _inputs(**{"--measurements": measurements_file}))
    catalog = load_catalog(catalog_dir)
    _refuse_overwriting([("--output", output)], _catalog_inputs(catalog, [("--output", output)]))
    if write_residuals:
        from .evidence import write_residuals as store

        table, target = store(catalog)
        click.echo(f"wrote {target}: {len(table):,} scoring rows' errors", err=True)
    if measurements_file is None:
        report = validate_shipped(catalog)
    else:
        from dataclasses import replace

        from .measurements import column_warnings
        from .validate import row_warnings, with_coverage

        report = with_coverage(validate_rows(read_csv(measurements_file), catalog, label=str(measurements_file)), catalog)
        report = replace(report, warnings=tuple(column_warnings(measurements_file)) + tuple(row_warnings(report, catalog)))
        _warn(report.warnings)
    if fmt == "json":
        _emit(to_json(report), output)
    elif fmt == "csv":
        import pandas as pd

        from .validate import report_dict

        _emit(pd.DataFrame(report_dict(report)["rows"]).to_csv(index=False), output)
    else:
        _emit(render_table(report, rows), output)


@cli.command("calibrate", short_help="Fit the efficiency factors to the measurement table's fit rows.", epilog=EXIT_CODES_HELP)
@_catalog_option
@click.option(
    "--output",
    "-o",
    type=OUTPUT_FILE,
    default=None,
    callback=_writable,
    help="Write the fitted table here (default: ./efficiency.json; a name not ending in .json writes YAML).",
)
@click.option("--in-place", is_flag=True, default=False, help="Overwrite the catalog's own efficiency.json (what sizer reads) instead.")
@click.option("--fitted", "fitted", type=click.DateTime(formats=["%Y-%m-%d"]), default=None, help="The date recorded as `fitted` (YYYY-MM-DD; default: today).")
@click.option("--max-iterations", type=Count(min=1, max=100_000), default=40, show_default=True, help="Levenberg-Marquardt iterations at most.")
def calibrate_cmd(catalog_dir: Path | None, output: str | None, in_place: bool, fitted, max_iterations: int) -> None:
    """Fit the efficiency factors to the fit rows of the measurement table, from a fixed prior.

    Writes ./efficiency.json unless --output or --in-place says otherwise; two runs on the same rows
    (and --fitted date) write the same bytes."""
    from .calibrate import calibrate_shipped, outlier_lines
    from .efficiency import efficiency_path

    if output and in_place:
        raise click.UsageError("give --output or --in-place, not both")
    catalog = load_catalog(catalog_dir)
    if output:  # the catalog's own table is replaced with --in-place, which rewrites its residuals too
        _refuse_overwriting([("--output", output)], _catalog_inputs(catalog, [("--output", output)]))
    fitted = fitted.date().isoformat() if fitted is not None else None  # click has refused a day no calendar has
    target = str(efficiency_path(catalog.root).with_suffix(".json")) if in_place else (output or "efficiency.json")
    result, _ = calibrate_shipped(
        catalog, output=target, max_iterations=max_iterations, fitted=fitted, progress=lambda i, c: click.echo(f"iteration {i}: cost {c:.3f}", err=True)
    )
    rms = ", ".join(f"{m} {v:.3f}" for m, v in result.rms_log_error.items())
    click.echo(f"fitted {result.rows_fit:,} rows in {result.iterations} iterations from the fixed prior; RMS log error {rms}; wrote {target}")
    for line in outlier_lines(result):
        click.echo(line)
    if in_place:  # the catalog's own table changed: its scoring rows' errors with it
        from .evidence import write_residuals

        table, where = write_residuals(catalog)
        click.echo(f"wrote {where}: {len(table):,} scoring rows' errors under the new factors")


@cli.command("simulate", short_help="Run the plan request by request; PASS or FAIL on its SLO.", epilog=EXIT_CODES_HELP)
@click.argument("workload", type=INPUT_FILE)
@click.option("--plan", "plans", multiple=True, help="A configuration device,tp,pp,kv,weights to simulate (repeatable); default: the solved plan.")
@click.option("--replicas", type=Count(min=1), default=None, help="Replicas of each --plan (default: as many as the analytic model needs).")
@click.option("--duration-s", type=Real(min=0, min_open=True), default=600.0, show_default=True, help="Seconds of arrivals to simulate.")
@click.option("--seed", type=Count(min=0, max=2**63 - 1), default=0, show_default=True, help="Random seed of the arrivals and lengths.")
@click.option("--trace", "trace_path", type=INPUT_FILE, default=None,
              help="Arrivals from a trace (CSV or JSON Lines: a time column, optional prompt and output lengths) instead of the workload's.")
@click.option("--trace-rate", type=click.Choice(["plan", "recorded"]), default="plan", show_default=True,
              help="plan: scale the trace's time to the plan's load; recorded: replay it at its own rate.")
@click.option("--trace-time-unit", type=click.Choice(["s", "ms", "us", "ns"]), default=None, help="Unit of a numeric time column (default: seconds, or the unit its name ends in).")
@click.option("--poisson", is_flag=True, help="Poisson arrivals even when the workload has a trace.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True, help="Output format.")
@click.option("--output", "-o", type=OUTPUT_FILE, default=None, callback=_writable, help="Write to this file instead of stdout.")
@_catalog_option
@_prices_option
def simulate_cmd(workload, plans, replicas, duration_s, seed, trace_path, trace_rate, trace_time_unit, poisson, quiet, fmt, output, catalog_dir, price_files) -> None:
    """Run the plan request by request: the configuration its launch line sets, PASS or FAIL on the SLO.

    A discrete-event simulation of one replica of each deployment (continuous batching, chunked
    prefill, paged KV, preemption) with the plan's --max-num-seqs, --max-num-batched-tokens,
    --max-model-len and block size, against the analytic model at the same load.

    \b
    Examples:
      sizer simulate workloads/chat-llama-3.1-70b.yaml
      sizer simulate workloads/chat-llama-3.1-70b.yaml --plan H100-SXM,2,1,fp8,fp8 --replicas 3
      sizer simulate w.yaml --trace AzureLLMInferenceTrace_conv.csv --duration-s 1800
    """
    from .simulate import render_simulations, simulate_workload, simulation_dict

    _refuse_overwriting([("--output", output)], _inputs(workload, price_files, **{"--trace": trace_path}))
    catalog = _load(catalog_dir, price_files)
    w = load_workload(workload, catalog)
    _refuse_overwriting([("--output", output)], _workload_inputs(w) + _catalog_inputs(catalog, [("--output", output)]))
    _warn(w.warnings)
    sims = simulate_workload(
        w, catalog, plans=list(plans) or None, replicas=replicas, duration_s=duration_s, seed=seed, trace=trace_path,
        trace_rate=trace_rate, trace_time_unit=trace_time_unit, poisson=poisson, progress=None if quiet else _simulate_progress(),
    )
    if fmt == "json":
        _emit(to_json({"workload": w.name, "warnings": list(w.warnings), "simulations": [simulation_dict(s) for s in sims]}), output)
    else:
        _emit(render_simulations(sims, w), output)
    if any(s.passed is False for s in sims):  # None: nothing to judge, said in its verdict
        sys.exit(SIMULATED_FAIL_EXIT)


SIMULATED_FAIL_EXIT = 11
PROGRESS_AFTER_S = 2.0


def _simulate_progress():
    """Progress on stderr once a replica's run has taken a few seconds: in place on a
    terminal, else a line per tenth of the window."""
    import time

    tty = sys.stderr.isatty()
    state = {"label": None, "start": 0.0, "tenth": -1}

    def show(label: str, clock: float, total: float) -> None:
        now = time.monotonic()
        if label != state["label"]:
            state.update(label=label, start=now, tenth=-1)
        if now - state["start"] < PROGRESS_AFTER_S:
            return
        done = min(clock / total, 1.0) if total > 0 else 1.0
        text = f"simulate {label}: {min(clock, total):,.0f} of {total:,.0f} s of arrivals ({now - state['start']:.0f} s)"
        if tty:
            click.echo(f"\r{text}", err=True, nl=done >= 1.0)
            return
        tenth = int(done * 10)
        if tenth != state["tenth"]:
            state["tenth"] = tenth
            click.echo(text, err=True)

    return show


def _warn(warnings) -> None:
    """Each warning on its own stderr line (the JSON outputs carry them as `warnings`)."""
    for text in warnings:
        click.echo(f"warning: {text}", err=True)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the click group, turn SizerError into one line and its exit code."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    try:
        with _quiet_numerics(debug):
            cli.main(args=args, prog_name="sizer", standalone_mode=False)
    except SizerError as exc:
        if debug:
            raise
        for line in str(exc).splitlines() or [""]:
            click.echo(f"error: {line}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:  # usage: one line too, with where to look
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:  # `sizer` alone: its help, as --help gives it
            click.echo(ctx.get_help())
            sys.exit(0)
        hint = f" (see '{ctx.command_path} --help')" if isinstance(exc, click.UsageError) and ctx is not None else ""
        click.echo(f"error: {_one_line(exc.format_message(), limit=None)}{hint}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # a bug in sizer, not in the input: one line, its own exit code
        if debug:
            raise
        click.echo(f"error: internal error (a bug in sizer; `sizer --debug ...` shows where): {type(exc).__name__}: {_one_line(exc)}", err=True)
        sys.exit(INTERNAL_ERROR_EXIT_CODE)
    sys.exit(0)


@contextlib.contextmanager
def _quiet_numerics(debug: bool):
    """numpy's floating-point warnings kept off the user's stderr (an overflow to inf is a
    figure the model then handles: infeasible, unbounded, null in JSON); `--debug` shows them.
    The tests turn every warning into an error, so the library's own stay visible there."""
    if debug:
        yield
        return
    import warnings

    import numpy as np

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _one_line(exc: BaseException | str, limit: int | None = 300) -> str:
    """The message on one line (its line breaks and runs of spaces as one space), cut at `limit`."""
    text = " ".join(str(exc).split())
    return text if limit is None or len(text) <= limit else text[:limit] + "..."
