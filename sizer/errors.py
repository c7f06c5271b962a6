"""Errors: one exception type per user-facing failure, each with its own exit code.

    SizerError                        1  anything else the library refuses
    ├── InputError                       bad input; the message names the file and the field
    │   ├── InputFileError            3  a file is missing or unreadable
    │   ├── YamlSyntaxError           4  YAML, JSON or CSV that does not parse
    │   ├── UnknownKeyError           5  a key the schema does not know (with a did-you-mean)
    │   ├── FieldTypeError            6  a value of the wrong type
    │   ├── FieldValueError           7  a value out of range: zero or negative rate, p99 < p50, ...
    │   └── UnknownNameError          8  a model, device or provider not in the catalog
    ├── InfeasibleError               9  nothing in the search space can serve the workload
    └── SolverError                  10  the integer-program solver failed or gave no optimum

Exit code 2 is click's own, for command-line usage errors (an unknown option, say). Exit code 70
(EX_SOFTWARE of sysexits.h) is an internal error: an exception no input should cause, a bug in
sizer, told in one line like the rest (`sizer --debug` shows its traceback).
The CLI turns each of these into one line on stderr and exits with `exit_code`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable


class SizerError(Exception):
    """Base class of every error the library raises on purpose."""

    exit_code = 1


class InputError(SizerError, ValueError):
    """Bad input: the message names the file, the field and what was expected."""

    exit_code = 7


class InputFileError(InputError):
    exit_code = 3


class YamlSyntaxError(InputError):
    """A file that does not parse: YAML, JSON, or a CSV table (measurements, traces)."""

    exit_code = 4


class UnknownKeyError(InputError):
    exit_code = 5


class FieldTypeError(InputError):
    exit_code = 6


class FieldValueError(InputError):
    exit_code = 7


class UnknownNameError(InputError):
    exit_code = 8


class InfeasibleError(SizerError):
    """No candidate configuration serves the workload; `reasons` says why, per device."""

    exit_code = 9

    def __init__(self, message: str, reasons: tuple[tuple[str, str], ...] = ()):
        super().__init__(message)
        self.reasons = reasons


class SolverError(SizerError):
    exit_code = 10


INTERNAL_ERROR_EXIT_CODE = 70

EXIT_CODES: dict[str, int] = {
    cls.__name__: cls.exit_code
    for cls in (
        SizerError,
        InputFileError,
        YamlSyntaxError,
        UnknownKeyError,
        FieldTypeError,
        FieldValueError,
        UnknownNameError,
        InfeasibleError,
        SolverError,
    )
}


LINE_CHARACTERS = 200  # a reason line kept within this where the reason allows


def reason_lines(reasons: Iterable[tuple[str, str]], indent: str = "  ", width: int = LINE_CHARACTERS) -> list[str]:
    """One line per device: `device: reason`, the configuration's repeated device name dropped,
    and devices whose reasons differ only by their name on one line (`RTX-3090, H20: no
    on_demand price for {device} ...`). Each line within `width` characters where the reason
    allows: a reason is never cut, only its repetitions removed; when the devices sharing a reason
    would take the line past `width`, they are spread over as few lines as fit, each with the
    reason."""
    groups: dict[str, list[str]] = {}
    for device, reason in reasons:
        text = str(reason)
        if text.startswith(f"{device} "):
            text = text[len(device) + 1 :]  # "L4 tp=1 pp=1 ...: why" -> "tp=1 pp=1 ...: why"
        shape = re.match(r"tp=\d+ pp=\d+", text)
        if shape:  # "tp=8 pp=2 ...: A100-40GB tp=8 pp=2 needs ..." -> "tp=8 pp=2 ...: needs ..."
            text = text.replace(f": {device} {shape.group(0)} ", ": ", 1)
        key = text.replace(device, "{device}")
        groups.setdefault(key, []).append(device)
    out = []
    for key, devices in groups.items():
        shared = key.replace("{device}", "the device")
        chunks: list[list[str]] = [[]]
        for device in devices:
            if chunks[-1] and len(f"{indent}{', '.join([*chunks[-1], device])}: {shared}") > width:
                chunks.append([])
            chunks[-1].append(device)
        for names in chunks:
            own = f"{indent}{names[0]}: {key.replace('{device}', names[0])}"
            out.append(own if len(names) == 1 and (len(devices) == 1 or len(own) <= width) else f"{indent}{', '.join(names)}: {shared}")
    return out


def printable(text: object) -> str:
    """`text` with every character that is not printable (a line break, a tab, a terminal
    escape) written as its Python escape: a key or path the user gave, quoted in a message, keeps
    the message on one line and the terminal as it was."""
    s = str(text)
    return s if s.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)


def is_name(text: str) -> bool:
    """A name a user gives (a device, a served model id): printable and not blank."""
    return bool(text.strip()) and text.isprintable()


def is_release(text: str) -> bool:
    """An engine release string: letters, digits and . + _ - ('0.19', '1.1.0rc2.post2'), no
    spaces or line breaks."""
    return re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.+_-]*", text) is not None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return " (did you mean 'x'?)" for the closest of `choices`, or "" when none is close."""
    lowered: dict[str, str] = {}
    for c in choices:  # the first spelling of each name wins: callers list canonical names first
        lowered.setdefault(str(c).lower(), str(c))
    close = difflib.get_close_matches(str(word).lower(), list(lowered), n=1, cutoff=0.6)
    return f" (did you mean '{lowered[close[0]]}'?)" if close else ""
