"""Command line: parse, call the library, render, map errors to exit codes. Nothing else.

Exit codes (errors.py): 0 success, 2 command-line usage, 3 missing or unreadable file, 4 YAML/JSON
syntax, 5 unknown key, 6 wrong type, 7 bad value, 8 unknown model/device/provider, 9 infeasible,
10 solver failure, 1 any other sizer error. Errors are one line on stderr; --debug shows the traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import __version__
from .catalog import load_catalog, resolve_model
from .errors import SizerError
from .explain import explain_config
from .optimize import solve, write_lp
from .report import render_explanation, render_plan, to_json
from .units import normalise_dtype
from .workload import load_workload

FORMATS = click.Choice(["table", "json", "csv"])


def _emit(text: str, output: str | None) -> None:
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)


def _catalog_option(f):
    return click.option(
        "--catalog",
        "catalog_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Catalog directory (gpus.yaml, prices.yaml, models/). Default: the shipped catalogs, or $SIZER_CATALOG_DIR.",
    )(f)


def _output_options(f):
    f = click.option("--output", "-o", type=click.Path(dir_okay=False), default=None, help="Write to this file instead of stdout.")(f)
    f = click.option("--format", "fmt", type=FORMATS, default="table", show_default=True, help="Output format.")(f)
    return f


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sizer")
@click.option("--debug", is_flag=True, help="Show the full traceback on errors.")
def cli(debug: bool) -> None:
    """Size an LLM deployment: which accelerators, how many, configured how, at what cost per token."""


@cli.command("solve")
@click.argument("workload", type=click.Path(dir_okay=False, path_type=Path))
@_output_options
@_catalog_option
@click.option("--write-lp", "write_lp_path", type=click.Path(dir_okay=False), default=None, help="Also write the integer program (LP format) to this file.")
def solve_cmd(workload: Path, fmt: str, output: str | None, catalog_dir: Path | None, write_lp_path: str | None) -> None:
    """Cheapest deployment that serves WORKLOAD (a YAML file) within its latency bounds."""
    catalog = load_catalog(catalog_dir)
    w = load_workload(workload, catalog)
    plan = solve(w, catalog)
    if write_lp_path:
        write_lp(w, catalog, write_lp_path)
    _emit(render_plan(plan, fmt), output)


@cli.command("explain")
@click.option("--model", "model_spec", required=True, help="Catalog model name, or a path to a config.json (or its folder).")
@click.option("--device", required=True, help="Device name from the GPU catalog.")
@click.option("--tp", type=int, default=1, show_default=True, help="Tensor-parallel degree.")
@click.option("--pp", type=int, default=1, show_default=True, help="Pipeline-parallel degree.")
@click.option("--kv-dtype", default="bf16", show_default=True, help="KV-cache dtype: bf16, fp16 or fp8.")
@click.option("--weight-dtype", default=None, help="Weight dtype (default: the checkpoint's own).")
@click.option("--context-tokens", type=int, default=None, help="Tokens per sequence for max concurrency (default: the model's max_position_embeddings).")
@click.option("--gpu-memory-utilization", type=float, default=None, help="Fraction of GPU memory the engine may use (default: the engine's, 0.9).")
@click.option("--block-size", type=int, default=None, help="KV block size in tokens (default: the engine's, 16).")
@click.option("--max-num-seqs", type=int, default=None, help="Engine sequence cap (default: the engine's for this device).")
@click.option("--max-num-batched-tokens", type=int, default=None, help="Engine token budget per step (default: the engine's for this device).")
@_output_options
@_catalog_option
def explain_cmd(model_spec, device, tp, pp, kv_dtype, weight_dtype, context_tokens, gpu_memory_utilization, block_size, max_num_seqs, max_num_batched_tokens, fmt, output, catalog_dir) -> None:
    """Memory of one configuration per GPU, line by line."""
    catalog = load_catalog(catalog_dir)
    model = resolve_model(model_spec, catalog, base_dir=Path.cwd(), where="--model: ")
    gpu = catalog.gpu(device, where="--device: ")
    x = explain_config(
        model,
        gpu,
        tp=tp,
        pp=pp,
        kv_dtype=normalise_dtype(kv_dtype),
        weight_dtype=normalise_dtype(weight_dtype) if weight_dtype else None,
        context_tokens=context_tokens,
        gpu_memory_utilization=gpu_memory_utilization,
        block_size_tokens=block_size,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
    )
    _emit(render_explanation(x, fmt), output)


@cli.command("catalog")
@click.argument("what", type=click.Choice(["gpus", "prices", "models"]))
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@_catalog_option
def catalog_cmd(what: str, fmt: str, catalog_dir: Path | None) -> None:
    """List the shipped GPUs, prices or models."""
    from .report import catalog_rows

    catalog = load_catalog(catalog_dir)
    rows = catalog_rows(catalog, what)
    if fmt == "json":
        click.echo(to_json(rows), nl=False)
    else:
        import pandas as pd

        click.echo(pd.DataFrame(rows).to_string(index=False))


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the click group, turn SizerError into one line and its exit code."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    try:
        cli.main(args=args, prog_name="sizer", standalone_mode=False)
    except SizerError as exc:
        if debug:
            raise
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(0)
