"""sizer: which accelerators, how many, configured how, and what each token costs.

The library never prints; `sizer.cli` is a thin layer over these functions.
"""

__version__ = "0.1.0"

from .candidates import Evaluated, evaluate_candidates  # noqa: E402
from .catalog import Catalog, Gpu, Price, load_catalog, resolve_model  # noqa: E402
from .compare import Comparison, compare  # noqa: E402
from .errors import InfeasibleError, InputError, SizerError, SolverError  # noqa: E402
from .explain import Explanation, explain_config  # noqa: E402
from .engines import configuration_breakdown  # noqa: E402
from .memory import MemoryBreakdown  # noqa: E402
from .model import ModelArch, arch_from_config, load_config_json  # noqa: E402
from .optimize import Plan, solve  # noqa: E402
from .purchasing import Constraints  # noqa: E402
from .report import explanation_to_dict, plan_to_dict  # noqa: E402
from .simulate import Simulation, simulate_workload  # noqa: E402
from .sweep import SweepResult, sweep  # noqa: E402
from .validate import Report, validate_rows, validate_shipped  # noqa: E402
from .workload import Workload, load_workload  # noqa: E402

__all__ = [
    "Catalog",
    "Comparison",
    "Constraints",
    "Evaluated",
    "Explanation",
    "Gpu",
    "InfeasibleError",
    "InputError",
    "MemoryBreakdown",
    "ModelArch",
    "Plan",
    "Price",
    "Report",
    "Simulation",
    "SizerError",
    "SolverError",
    "SweepResult",
    "Workload",
    "__version__",
    "arch_from_config",
    "compare",
    "configuration_breakdown",
    "evaluate_candidates",
    "explain_config",
    "explanation_to_dict",
    "load_catalog",
    "load_config_json",
    "load_workload",
    "plan_to_dict",
    "resolve_model",
    "simulate_workload",
    "solve",
    "sweep",
    "validate_rows",
    "validate_shipped",
]
