"""sizer: which accelerators, how many, configured how, and what each token costs.

The library never prints; `sizer.cli` is a thin layer over these functions.
"""

import sys as _sys
import types as _types

__version__ = "0.1.0"

# Names resolve on first use (PEP 562): `sizer solve` then imports what it runs, not the
# validation, simulation and sweep machinery beside it (a quarter of its start-up).
_HOMES = {
    "Evaluated": "candidates",
    "evaluate_candidates": "candidates",
    "Catalog": "catalog",
    "Gpu": "catalog",
    "Price": "catalog",
    "load_catalog": "catalog",
    "resolve_model": "catalog",
    "Comparison": "compare",
    "compare": "compare",
    "InfeasibleError": "errors",
    "InputError": "errors",
    "SizerError": "errors",
    "SolverError": "errors",
    "Explanation": "explain",
    "explain_config": "explain",
    "configuration_breakdown": "engines",
    "MemoryBreakdown": "memory",
    "ModelArch": "model",
    "arch_from_config": "model",
    "load_config_json": "model",
    "Plan": "optimize",
    "solve": "optimize",
    "Constraints": "purchasing",
    "comparison_to_frame": "report",
    "explanation_to_dict": "report",
    "plan_to_dict": "report",
    "plan_to_frame": "report",
    "render_plan": "report",
    "Trace": "traces",
    "TraceSummary": "traces",
    "read_trace_file": "traces",
    "summarise": "traces",
    "Simulation": "simulate",
    "simulate_workload": "simulate",
    "SweepResult": "sweep",
    "sweep": "sweep",
    "Report": "validate",
    "validate_rows": "validate",
    "validate_shipped": "validate",
    "Workload": "workload",
    "load_workload": "workload",
}


# `compare` and `sweep` name both a function of the API and the module it lives in: importing the
# module (sizer.compare) would set the package's attribute to the module and hide the function.
# The package keeps the function: a submodule bound under one of these names is not stored.
_SHADOWED = frozenset(name for name, home in _HOMES.items() if name == home)


class _Package(_types.ModuleType):
    def __setattr__(self, name: str, value) -> None:
        if name in _SHADOWED and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'sizer' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


__all__ = sorted(["__version__", *_HOMES])
