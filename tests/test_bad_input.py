"""Bad input, end to end.

Requirement (from the issue): a missing file, YAML that does not parse, an unknown key (with a
did-you-mean), a wrong type, a zero or negative rate, p99 below p50, an unknown model or device, a
workload nothing can serve -- each gets one line naming the file and the field, a distinct
documented non-zero exit code, and no traceback.

Exit codes (sizer/errors.py): 3 missing file, 4 YAML syntax, 5 unknown key, 6 wrong type,
7 bad value, 8 unknown model/device/provider, 9 infeasible, 2 click usage errors.

The CLI is run as a user runs it, `python -m sizer ...` in a subprocess, from a scratch working
directory (so paths inside a workload must resolve relative to the workload file, not the cwd).
Each broken input lives in tests/data/bad/ and differs from control-valid.yaml in one place.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sizer.catalog import load_catalog
from sizer.errors import (
    EXIT_CODES,
    FieldTypeError,
    FieldValueError,
    InfeasibleError,
    InputError,
    InputFileError,
    UnknownKeyError,
    UnknownNameError,
    YamlSyntaxError,
)
from sizer.optimize import solve
from sizer.workload import load_workload

BAD = Path(__file__).resolve().parent / "data" / "bad"


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


def run_sizer(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a subprocess with the shipped catalogs."""
    env = {k: v for k, v in os.environ.items() if k != "SIZER_CATALOG_DIR"}
    return subprocess.run(
        [sys.executable, "-m", "sizer", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], exit_code: int, prefix: str, *needles: str) -> str:
    """Exit code as given, nothing on stdout, exactly one stderr line starting `prefix`, no traceback.

    `prefix` is "error: <file>: <dotted.field>" (or "error: --option") so the line is checked to
    name the file and the field, in that order, right at its start."""
    detail = f"\nexit code: {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, detail
    assert proc.returncode == exit_code, detail
    assert proc.stdout == "", detail
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, detail
    line = lines[0]
    assert line.startswith("error:"), detail
    assert line.startswith(prefix), f"expected the line to start with {prefix!r}" + detail
    for needle in needles:
        assert needle in line, f"expected {needle!r} in the message" + detail
    return line


def bad(name: str) -> Path:
    path = BAD / name
    assert path.is_file(), f"test data missing: {path}"
    return path


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


# ------------------------------------------------------------------------------------------------
# the exit codes themselves
# ------------------------------------------------------------------------------------------------


def test_exit_codes_are_the_documented_distinct_codes():
    assert EXIT_CODES == {
        "SizerError": 1,
        "InputFileError": 3,
        "YamlSyntaxError": 4,
        "UnknownKeyError": 5,
        "FieldTypeError": 6,
        "FieldValueError": 7,
        "UnknownNameError": 8,
        "InfeasibleError": 9,
        "SolverError": 10,
    }
    codes = [c for name, c in EXIT_CODES.items() if name != "SizerError"]
    assert len(codes) == len(set(codes))
    assert 0 not in EXIT_CODES.values() and 2 not in EXIT_CODES.values()  # 2 is click's usage error


def test_control_workload_solves(tmp_path):
    """The template every broken file departs from is itself valid, so each failure below is
    caused by its one defect."""
    proc = run_sizer("solve", BAD / "control-valid.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------------------------------------------
# sizer solve: missing file, unparsable YAML
# ------------------------------------------------------------------------------------------------


def test_missing_workload_file(tmp_path):
    path = BAD / "does-not-exist.yaml"
    assert not path.exists()
    proc = run_sizer("solve", path, cwd=tmp_path)
    assert_one_line_error(proc, 3, f"error: {path}: ", "not found")


@pytest.mark.parametrize(
    "name, line_no",
    [
        pytest.param("yaml-tab.yaml", 4, id="tab-indentation"),
        pytest.param("yaml-unclosed.yaml", None, id="unclosed-flow-mapping"),
    ],
)
def test_yaml_that_does_not_parse(tmp_path, name, line_no):
    path = bad(name)
    proc = run_sizer("solve", path, cwd=tmp_path)
    line = assert_one_line_error(proc, 4, f"error: {path}: not valid YAML")
    # YAML syntax has no field yet: the place is the line and column.
    assert re.search(r"line \d+, column \d+", line), line
    if line_no is not None:
        assert f"line {line_no}," in line, line


# ------------------------------------------------------------------------------------------------
# unknown keys, with a did-you-mean
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, field, suggestion",
    [
        pytest.param("unknown-top-key.yaml", "slos", "slo", id="top-level-slos"),
        pytest.param("unknown-nested-key.yaml", "traffic.request_per_s", "requests_per_s", id="nested-request_per_s"),
    ],
)
def test_unknown_key_suggests_the_right_one(tmp_path, name, field, suggestion):
    path = bad(name)
    proc = run_sizer("solve", path, cwd=tmp_path)
    assert_one_line_error(proc, 5, f"error: {path}: {field}: ", "unknown key", f"did you mean '{suggestion}'?")


# ------------------------------------------------------------------------------------------------
# wrong types
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, field, needles",
    [
        pytest.param("type-rate-string.yaml", "traffic.requests_per_s", ("expected a number", "'fast'"), id="requests_per_s-fast"),
        pytest.param("type-tp-string.yaml", "search.tp", ("expected an integer", "'one'"), id="tp-one"),
        pytest.param("type-prompt-list.yaml", "traffic.prompt_tokens", ("a list",), id="prompt_tokens-list"),
        pytest.param("type-flashinfer-string.yaml", "memory.flashinfer_installed", ("expected true or false", "a string"), id="flashinfer-yes"),
    ],
)
def test_wrong_type(tmp_path, name, field, needles):
    path = bad(name)
    proc = run_sizer("solve", path, cwd=tmp_path)
    assert_one_line_error(proc, 6, f"error: {path}: {field}", *needles)


# ------------------------------------------------------------------------------------------------
# bad values (exit 7)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, field, needles",
    [
        pytest.param("rate-zero.yaml", "traffic.requests_per_s", ("> 0", "got 0"), id="rate-zero"),
        pytest.param("rate-negative.yaml", "traffic.requests_per_s", ("> 0", "got -3"), id="rate-negative"),
        pytest.param("prompt-p99-below-p50.yaml", "traffic.prompt_tokens.p99", ("below p50",), id="prompt-p99-below-p50"),
        pytest.param("output-p99-below-p50.yaml", "traffic.output_tokens.p99", ("below p50",), id="output-p99-below-p50"),
        pytest.param("prompt-max-below-p99.yaml", "traffic.prompt_tokens.max", ("below p99",), id="max-below-p99"),
        pytest.param("slo-p99-below-p50.yaml", "slo.ttft_s.p99", ("p50",), id="slo-p99-below-p50"),
        pytest.param("gpu-util-above-one.yaml", "memory.gpu_memory_utilization", ("<= 1", "1.5"), id="gpu-util-1.5"),
        pytest.param("context-percentile-100.yaml", "memory.context_percentile", ("< 100", "100"), id="context-percentile-100"),
        pytest.param("unknown-kv-dtype.yaml", "search.kv_dtypes", ("'fp4'", "bf16", "fp8"), id="kv-dtype-fp4"),
        pytest.param("empty.yaml", "model", ("required",), id="empty-file-no-model"),
        pytest.param("fractional-tokens.yaml", "traffic.output_tokens.p50", (">= 1", "0.5"), id="half-a-token"),
    ],
)
def test_bad_value(tmp_path, name, field, needles):
    path = bad(name)
    proc = run_sizer("solve", path, cwd=tmp_path)
    assert_one_line_error(proc, 7, f"error: {path}: {field}", *needles)


# ------------------------------------------------------------------------------------------------
# unknown model, device, provider (exit 8); model paths that lead nowhere (exit 3)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, field, needles",
    [
        pytest.param("unknown-model.yaml", "model", ("'llama-3.1-70'", "did you mean 'llama-3.1-70b'?"), id="model-llama-3.1-70"),
        pytest.param("unknown-device.yaml", "search.devices", ("'H100-SMX'", "did you mean"), id="device-H100-SMX"),
        pytest.param("unknown-provider.yaml", "search.provider", ("'awz'", "did you mean 'aws'?"), id="provider-awz"),
    ],
)
def test_unknown_name(tmp_path, name, field, needles):
    path = bad(name)
    proc = run_sizer("solve", path, cwd=tmp_path)
    line = assert_one_line_error(proc, 8, f"error: {path}: {field}", *needles)
    if name == "unknown-device.yaml":
        # the suggestion is the catalog's own spelling of the device
        assert "did you mean 'H100-SXM'?" in line, line


def test_duplicate_key_is_refused_not_silently_overwritten(tmp_path):
    path = bad("duplicate-key.yaml")
    proc = run_sizer("solve", path, cwd=tmp_path)
    assert_one_line_error(proc, 4, f"error: {path}: duplicate key 'model' at line 3", "first at line 2")


def test_model_config_json_that_does_not_exist(tmp_path):
    path = bad("missing-config-json.yaml")
    proc = run_sizer("solve", path, cwd=tmp_path)
    # resolved next to the workload file, not in the cwd
    expected = BAD / "no-such-model" / "config.json"
    assert_one_line_error(proc, 3, f"error: {path}: model: ", "config.json", str(expected))


def test_model_folder_without_config_json(tmp_path):
    """`model:` naming a folder that holds no config.json: the line must name the workload file
    and its `model` field, like the missing-config.json case above."""
    path = bad("model-folder-without-config.yaml")
    proc = run_sizer("solve", path, cwd=tmp_path)
    assert_one_line_error(proc, 3, f"error: {path}: model: ", "config.json", str(BAD / "folder-without-config"))


def test_config_json_missing_required_field(tmp_path):
    """A config.json (resolved next to the workload) without hidden_size: exit 7, the line names
    the config.json and hidden_size."""
    path = bad("config-missing-hidden-size.yaml")
    config = BAD / "no-hidden-size" / "config.json"
    assert config.is_file()
    proc = run_sizer("solve", path, cwd=tmp_path)
    assert_one_line_error(proc, 7, "error: ", str(config), "hidden_size", "missing")


# ------------------------------------------------------------------------------------------------
# nothing can serve (exit 9)
# ------------------------------------------------------------------------------------------------


def test_workload_nothing_can_serve(tmp_path):
    """llama-3.1-405b on one L4 (tp 1, pp 1): the reason names the device, in numbers."""
    path = bad("infeasible-405b-on-l4.yaml")
    proc = run_sizer("solve", path, cwd=tmp_path)
    line = assert_one_line_error(proc, 9, f"error: {path}: ", "L4", "GiB")
    # by hand: 405,853,388,800 parameters (the model page's 405.85B), fp8 but for the embedding and lm_head,
    # 2 x 128,256 x 16,384 = 4,202,692,608 of them kept at 2 B: 410,056,081,408 B = 381.9 GiB; against
    # 0.9 x L4's 21.95 GiB usable (the catalog) = 19.8 GiB
    assert "weights 381.9 GiB > 19.8 GiB usable per GPU at tp=1 pp=1 (0.9 x 21.9 GiB)" in line, line


def test_context_beyond_model_window(tmp_path):
    """llama-2-70b (max_position_embeddings 4096) with a p99 context of 6000 + 1200 tokens."""
    path = bad("context-beyond-window.yaml")
    proc = run_sizer("solve", path, cwd=tmp_path)
    line = assert_one_line_error(proc, 9, f"error: {path}: ", "max_position_embeddings", "llama-2-70b")
    assert re.search(r"4,?096", line), line
    assert re.search(r"7,?200", line), line


# ------------------------------------------------------------------------------------------------
# sizer explain
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, exit_code, option, needles",
    [
        pytest.param(("--model", "llama-3.1-70b", "--device", "H100-SMX"), 8, "--device", ("'H100-SMX'", "did you mean"), id="unknown-device"),
        pytest.param(("--model", "llama-3.1-70", "--device", "H100-SXM"), 8, "--model", ("did you mean 'llama-3.1-70b'?",), id="unknown-model"),
        pytest.param(("--model", "llama-3.1-70b", "--device", "H100-SXM", "--kv-dtype", "fp4"), 7, "--kv-dtype", ("'fp4'",), id="kv-dtype-fp4"),
    ],
)
def test_explain_bad_input(tmp_path, args, exit_code, option, needles):
    proc = run_sizer("explain", *args, cwd=tmp_path)
    assert_one_line_error(proc, exit_code, f"error: {option}: ", *needles)


@pytest.mark.parametrize(
    "option, value",
    [
        pytest.param("--context-tokens", "-5", id="context-tokens"),
        pytest.param("--block-size", "-1", id="block-size"),
        pytest.param("--max-num-seqs", "-1", id="max-num-seqs"),
        pytest.param("--max-num-batched-tokens", "-1", id="max-num-batched-tokens"),
    ],
)
def test_explain_negative_count_is_a_bad_value(tmp_path, option, value):
    """A negative count is as bad on the command line as in a workload file (where
    memory.block_size_tokens: 0 is exit 7): one line naming the option, exit 7."""
    proc = run_sizer("explain", "--model", "llama-3.1-70b", "--device", "H100-SXM", option, value, cwd=tmp_path)
    assert_one_line_error(proc, 7, f"error: {option}: ", value)


# ------------------------------------------------------------------------------------------------
# click usage errors, --debug
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("solve",), id="solve-without-workload"),
        pytest.param(("solve", "--no-such-option", "x.yaml"), id="unknown-option"),
        pytest.param(("explain", "--model", "llama-3.1-70b"), id="explain-without-device"),
    ],
)
def test_usage_error_is_exit_2(tmp_path, args):
    proc = run_sizer(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    # one line, like every other refusal, naming where to look
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert "--help" in proc.stderr


def test_debug_shows_the_traceback(tmp_path):
    path = BAD / "does-not-exist.yaml"
    proc = run_sizer("--debug", "solve", path, cwd=tmp_path)
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr
    assert "InputFileError" in proc.stderr


# ------------------------------------------------------------------------------------------------
# the library directly
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, cls",
    [
        pytest.param("does-not-exist.yaml", InputFileError, id="missing-file"),
        pytest.param("yaml-tab.yaml", YamlSyntaxError, id="yaml-syntax"),
        pytest.param("unknown-nested-key.yaml", UnknownKeyError, id="unknown-key"),
        pytest.param("type-rate-string.yaml", FieldTypeError, id="wrong-type"),
        pytest.param("rate-negative.yaml", FieldValueError, id="negative-rate"),
        pytest.param("prompt-p99-below-p50.yaml", FieldValueError, id="p99-below-p50"),
        pytest.param("unknown-model.yaml", UnknownNameError, id="unknown-model"),
        pytest.param("unknown-device.yaml", UnknownNameError, id="unknown-device"),
        pytest.param("unknown-provider.yaml", UnknownNameError, id="unknown-provider"),
        pytest.param("missing-config-json.yaml", InputFileError, id="missing-config-json"),
        pytest.param("config-missing-hidden-size.yaml", FieldValueError, id="config-missing-hidden-size"),
    ],
)
def test_load_workload_raises_the_right_class(catalog, name, cls):
    path = BAD / name
    with pytest.raises(InputError) as info:
        load_workload(path, catalog)
    exc = info.value
    assert type(exc) is cls, f"{type(exc).__name__}: {exc}"
    assert exc.exit_code == EXIT_CODES[cls.__name__]
    message = str(exc)
    assert "\n" not in message
    assert str(path) in message or (name == "config-missing-hidden-size.yaml" and "config.json" in message), message


def test_load_workload_accepts_a_str_path(catalog):
    with pytest.raises(UnknownKeyError, match=r"traffic\.request_per_s: unknown key.*did you mean 'requests_per_s'\?"):
        load_workload(str(BAD / "unknown-nested-key.yaml"), catalog)


def test_solve_raises_infeasible_with_reasons_per_device(catalog):
    workload = load_workload(BAD / "infeasible-405b-on-l4.yaml", catalog)
    with pytest.raises(InfeasibleError) as info:
        solve(workload, catalog)
    exc = info.value
    assert exc.exit_code == 9
    assert [device for device, _ in exc.reasons] == ["L4"]
    assert "GiB" in exc.reasons[0][1]


def test_solve_raises_infeasible_when_context_exceeds_window(catalog):
    workload = load_workload(BAD / "context-beyond-window.yaml", catalog)
    with pytest.raises(InfeasibleError, match="max_position_embeddings"):
        solve(workload, catalog)


def test_a_vllm_token_budget_below_the_sequence_cap_is_refused_and_a_defaulted_cap_lowered(tmp_path):
    """vLLM's SchedulerConfig refuses max_num_batched_tokens < max_num_seqs (config.py 0.9.0, config/scheduler.py
    0.17-0.22: "must be greater than or equal to max_num_seqs"): a workload giving both so was planned and its launch
    line printed --max-num-seqs 512 --max-num-batched-tokens 256, which vLLM does not start. Given the budget alone, vLLM
    0.10.1+ lowers its default cap to it (engine/arg_utils.py: min(default max_num_seqs, max_num_batched_tokens);
    0.19.0 l. 2240), and the plan's line carries --max-num-seqs 256."""
    w = tmp_path / "w.yaml"
    w.write_text("model: llama-3.1-8b\ntraffic: {requests_per_s: 5, prompt_tokens: 300, output_tokens: 100}\n"
                 "memory: {max_num_seqs: 512, max_num_batched_tokens: 256}\n")
    assert_one_line_error(run_sizer("solve", w, cwd=tmp_path), 7, f"error: {w}: memory.max_num_batched_tokens: 256 is below memory.max_num_seqs 512")
    w.write_text("model: llama-3.1-8b\ntraffic: {requests_per_s: 5, prompt_tokens: 300, output_tokens: 100}\n"
                 "memory: {max_num_batched_tokens: 256}\nsearch: {devices: [H100-SXM]}\n")
    plan = run_sizer("solve", w, "--format", "json", cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    import json

    line = json.loads(plan.stdout)["deployments"][0]["launch_command"]
    assert "--max-num-seqs 256 --max-num-batched-tokens 256" in line, line
