"""Reading YAML/JSON input and checking it field by field, with messages that name the place.

Every loader in sizer goes through `read_document` (safe_load only) and `Fields`, so every bad
input produces one line of the form

    workloads/chat.yaml: traffic.requests_per_s: expected a number > 0, got -3

naming the file, the dotted field path, what was expected and what was found.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from .errors import (
    FieldTypeError,
    FieldValueError,
    InputFileError,
    UnknownKeyError,
    YamlSyntaxError,
    did_you_mean,
    printable,
)

_MISSING = object()
# The largest integer a count may be: 2^53, the last a float holds exactly (every count meets
# floats in the arithmetic; 1e308 read as an integer overflowed there).
MAX_INTEGER = 2**53
# Safe loaders only: libyaml's C implementation when pyyaml was built with it, else the pure one.
_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# An integer literal longer than this many digits is beyond every float (1.8e308), hence beyond
# anything sizer reads; Python refuses even to convert one of over 4,300 digits from text.
MAX_INTEGER_DIGITS = 308


class _TooLong(Exception):
    """An integer literal of more than MAX_INTEGER_DIGITS digits (line: 1-based, or None)."""

    def __init__(self, digits: int, line: int | None):
        super().__init__(digits, line)
        self.digits, self.line = digits, line


def _digits(text: str) -> int:
    return sum(ch.isdigit() for ch in text)


class _BadDate(Exception):
    """A plain scalar of the form of a date (2026-02-30, 2026-13-01) that is no calendar date."""

    def __init__(self, node: Any, reason: str):
        super().__init__(node, reason)
        self.node, self.reason = node, reason


class _SafeLoader(_BASE_LOADER):  # type: ignore[misc,valid-type]
    """The safe loader, refusing integer literals beyond any float before Python converts them,
    and dates no calendar has before Python's ValueError."""

    def construct_yaml_timestamp(self, node):
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError) as exc:  # day is out of range for month, month must be in 1..12
            raise _BadDate(node, str(exc)) from None

    def construct_yaml_int(self, node):
        """An integer as YAML 1.2 reads it (`_INT` below): decimal digits are decimal whatever
        they start with (0700 is 700, not YAML 1.1's octal 448), 0o17 octal, 0x1F hexadecimal
        (and 0b101 binary, `_` between digits, as pyyaml's YAML 1.1 reads them)."""
        text = str(self.construct_scalar(node)).replace("_", "")
        n = _digits(text)
        if n > MAX_INTEGER_DIGITS:
            raise _TooLong(n, node.start_mark.line + 1)
        sign, body = (-1, text[1:]) if text[:1] == "-" else (1, text[1:] if text[:1] == "+" else text)
        base = {"0b": 2, "0o": 8, "0x": 16}.get(body[:2].lower(), 10)
        try:
            return sign * int(body[2:] if base != 10 else body, base)
        except ValueError:  # an explicit `!!int` on what is no integer (`!!int 1:30`)
            raise yaml.constructor.ConstructorError(
                None, None, f"expected an integer, got {printable(text)!r}", node.start_mark
            ) from None


_SafeLoader.add_constructor("tag:yaml.org,2002:int", _SafeLoader.construct_yaml_int)
_SafeLoader.add_constructor("tag:yaml.org,2002:timestamp", _SafeLoader.construct_yaml_timestamp)

# Numbers as YAML 1.2's core schema reads them, not YAML 1.1's (which pyyaml follows), whose
# forms changed what the user wrote without a word: `requests_per_s: 0700` was 448 (octal), 012
# was 10, `1:30` was 90 and `1:30.5` 90.5 (base 60). Now octal and hexadecimal need their prefix
# (0o700, 0x1C0), and base-60 forms and integers written with a leading zero (0700, 012, 08) are
# strings: refused where a number goes, as any string, rather than read as 700 when 448 or a typo
# may have been meant; and kept as written where a string goes (`instance: 08` stays "08", as
# YAML 1.1 read it). pyyaml's unambiguous extras stay: `_` between digits (1_000) and 0b binary.
_INT = re.compile(r"^(?:[-+]?(?:0|[1-9][0-9_]*)|[-+]?0o[0-7_]+|[-+]?0x[0-9a-fA-F_]+|[-+]?0b[01_]+)$")
# YAML 1.1's floats less its base-60 form; and YAML 1.2's without a decimal point (1e-3, 5E+2,
# 2e6), which YAML 1.1 reads as strings, so `usd_per_gpu_hour: 1e-3` was refused as "a string".
# Plain scalars only: a quoted '1e-3' or '0700' stays a string.
_FLOAT = re.compile(
    r"""^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?
        |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
        |[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
    re.X,
)
# The resolvers of the other tags as pyyaml's (a copy: pyyaml's own loaders are left as they are),
# less its int and float ones, then ours (no form of a number overlaps a date's).
_SafeLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")]
    for first, resolvers in _BASE_LOADER.yaml_implicit_resolvers.items()
}
_SafeLoader.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
_SafeLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
_SAFE_LOADER = _SafeLoader


def _json_int(text: str) -> int:
    if _digits(text) > MAX_INTEGER_DIGITS:
        raise _TooLong(_digits(text), None)
    return int(text)


MAX_DOCUMENT_BYTES = 64 * 2**20
"""The largest YAML or JSON file sizer reads (64 MiB): the shipped catalogs' largest is 0.3 MB,
a config.json a few kB; a larger one is no workload, price list or model config."""


def check_regular_file(path: str | Path, label: str, max_bytes: int | None = None) -> None:
    """Refuse, before opening it, what is no regular file: a device (/dev/zero never ends), a
    named pipe (opening one blocks until a writer comes), a socket; and a file over `max_bytes`.
    A missing path or a folder is left to the reader's own message."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return
    if stat.S_ISDIR(st.st_mode):
        return
    if not stat.S_ISREG(st.st_mode):
        raise InputFileError(f"{label}: not a regular file (a device, pipe or socket): expected a file")
    if max_bytes is not None and st.st_size > max_bytes:
        raise InputFileError(f"{label}: {st.st_size / 2**20:,.0f} MiB: expected a file of at most {max_bytes / 2**20:,.0f} MiB")


# Byte-order marks, longest first (UTF-32 LE begins with UTF-16 LE's): YAML 1.2 (5.2) and JSON
# (RFC 8259, 8.1) readers take UTF-16 and UTF-32 so marked; Windows PowerShell 5's `>` writes
# UTF-16 LE with its mark.
_BOMS = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


NUL_SCAN_BYTES = 4096  # how far into a file decode_text looks for a NUL


def needs_decoding(head: bytes) -> bool:
    """Whether decode_text reads a file that opens with `head` (its first NUL_SCAN_BYTES) other
    than as plain UTF-8: a byte-order mark, or a NUL (refused)."""
    return head.startswith(tuple(bom for bom, _ in _BOMS)) or b"\x00" in head[:NUL_SCAN_BYTES]


def decode_text(data: bytes, label: str, what: str) -> str:
    """A file's bytes as text: UTF-8, or UTF-16/UTF-32 where a byte-order mark says so (the mark
    dropped). Anything else (Latin-1, UTF-16 without its mark) is a file that does not parse
    (YamlSyntaxError, exit 4), named with the byte where it stops being UTF-8."""
    encoding, start = "utf-8", 0
    for bom, name in _BOMS:
        if data.startswith(bom):
            encoding, start = name, len(bom)
            break
    if encoding == "utf-8" and b"\x00" in data[:NUL_SCAN_BYTES]:
        # valid UTF-8, but no YAML, JSON or CSV holds a NUL: UTF-16 or UTF-32 without its mark
        nul = data.index(b"\x00")
        raise YamlSyntaxError(f"{label}: {what}: a NUL byte at byte {nul}: UTF-16 or UTF-32 without a byte-order mark? save it as UTF-8")
    try:
        return data[start:].decode(encoding)
    except UnicodeDecodeError as exc:
        raise YamlSyntaxError(f"{label}: {what}: not {encoding.upper()} text ({exc.reason} at byte {exc.start + start}); save it as UTF-8") from None


def read_text(path: Path | str, label: str, what: str) -> str:
    """The text of a file (decode_text), or a one-line InputError: exit 3 for a file that cannot
    be read, exit 4 for bytes that are no text."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputFileError(f"{label}: file not found") from None
    except IsADirectoryError:
        raise InputFileError(f"{label}: is a directory, expected a file") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise InputFileError(f"{label}: cannot read: {exc}") from None
    return decode_text(data, label, what)


def read_document(path: Path, label: str | None = None) -> Any:
    """Parse a YAML or JSON file with yaml.safe_load (JSON is YAML). Raise a one-line InputError."""
    label = label or str(path)
    check_regular_file(path, label, MAX_DOCUMENT_BYTES)
    text = read_text(path, label, "not valid JSON" if str(path).endswith(".json") else "not valid YAML")
    try:
        if str(path).endswith(".json"):
            return json.loads(text, object_pairs_hook=lambda pairs: _unique_pairs(pairs, label), parse_int=_json_int)
        # One pass of the safe loader (libyaml's when present: ten times faster on the catalogs):
        # compose the node tree, refuse duplicate keys on it, then construct plain data from it.
        loader = _SAFE_LOADER(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _refuse_duplicate_keys(node, label)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except _TooLong as exc:
        where = f" at line {exc.line}" if exc.line else ""
        raise FieldValueError(f"{label}: an integer of {exc.digits:,} digits{where}: expected a number up to 1.8e308 (counts up to 2^53)") from None
    except _BadDate as exc:
        # The document parses: its value is out of range, as a month 13 or a 30 February is
        # (exit 7, as an integer beyond every float is).
        field = _node_path(node, exc.node)
        raise FieldValueError(
            f"{printable(label)}: {printable(field) + ': ' if field else ''}{printable(exc.node.value)} at line {exc.node.start_mark.line + 1} "
            f"is no calendar date ({exc.reason}): expected a real date YYYY-MM-DD (or, quoted, a string)"
        ) from None
    except json.JSONDecodeError as exc:
        raise YamlSyntaxError(f"{label}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlSyntaxError(f"{label}: not valid YAML{where}: {problem}") from None


def check_output_path(path: str | Path, option: str) -> None:
    """Refuse, before any work, a file that cannot be written: its folder missing, or the path
    a folder. (A write that fails later all the same is refused by write_output.)"""
    p = Path(path)
    if p.is_dir():
        raise InputFileError(f"{option}: {path} is a directory, expected a file")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise InputFileError(f"{option}: {path}: the folder {parent} does not exist")


def write_output(path: str | Path, text: str, option: str) -> None:
    """Write `text` to `path`, or an InputFileError naming the option (exit 3)."""
    check_output_path(path, option)
    try:
        Path(path).write_text(text, encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise InputFileError(f"{option}: cannot write {path}: {getattr(exc, 'strerror', None) or exc}") from None


def _unique_pairs(pairs: list[tuple[str, Any]], label: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise YamlSyntaxError(f"{label}: duplicate key {key!r}: a later value would silently replace the first")
        out[key] = value
    return out


def _node_path(root: Any, target: Any) -> str:
    """The dotted path (`prices[2].price_date`, as Fields names fields) from `root` to the node
    `target` of a composed YAML document; "" when it is the root or not found."""
    stack: list[tuple[Any, str]] = [(root, "")]
    seen: set[int] = set()
    while stack:
        n, path = stack.pop()
        if n is target:
            return path
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, yaml.MappingNode):
            for key_node, value_node in n.value:
                key = str(getattr(key_node, "value", "?"))
                if key_node is target:
                    return ".".join(p for p in (path, key) if p)
                stack.append((value_node, ".".join(p for p in (path, key) if p)))
        elif isinstance(n, yaml.SequenceNode):
            stack.extend((item, f"{path}[{i}]") for i, item in enumerate(n.value))
    return ""


MAX_DOCUMENT_NODES = 1_000_000
"""Nodes a YAML document may stand for once its aliases are expanded: a catalog holds a few
thousand. Nine levels of ten aliases stand for 10^9 (an "alias bomb"), which no loader or walk
over the data should be asked to expand."""


def _refuse_duplicate_keys(node: Any, label: str) -> None:
    """A key given twice in one mapping: YAML keeps the last silently; sizer refuses it. Each node
    is checked once, however many aliases point at it; and a document whose aliases expand to
    more than MAX_DOCUMENT_NODES nodes is refused."""
    _refuse_alias_expansion(node, label)
    stack = [node]
    seen_nodes: set[int] = set()
    while stack:
        n = stack.pop()
        if id(n) in seen_nodes:
            continue
        seen_nodes.add(id(n))
        if isinstance(n, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, value_node in n.value:
                key = getattr(key_node, "value", None)
                if isinstance(key_node, yaml.ScalarNode) and key in seen:
                    line = key_node.start_mark.line + 1
                    raise YamlSyntaxError(
                        f"{label}: duplicate key {key!r} at line {line} (first at line {seen[key]}): "
                        "a later value would silently replace the first"
                    )
                if isinstance(key_node, yaml.ScalarNode):
                    seen[key] = key_node.start_mark.line + 1
                stack.append(value_node)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)


def _refuse_alias_expansion(root: Any, label: str) -> None:
    """Count the nodes the document stands for with its aliases expanded (each distinct node's
    count computed once, children first), and refuse it past MAX_DOCUMENT_NODES."""
    size: dict[int, int] = {}
    visiting: set[int] = set()  # nodes whose children are being counted: reaching one again is a cycle
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        n, children_done = stack.pop()
        if id(n) in size:
            continue
        if not children_done and id(n) in visiting:
            raise YamlSyntaxError(f"{label}: an alias refers to a node that holds it (a recursive document); expected a plain document")
        kids = []
        if isinstance(n, yaml.MappingNode):
            kids = [x for pair in n.value for x in pair]
        elif isinstance(n, yaml.SequenceNode):
            kids = list(n.value)
        if not children_done:
            visiting.add(id(n))
            stack.append((n, True))
            stack.extend((k, False) for k in kids if id(k) not in size)
            continue
        visiting.discard(id(n))
        total = 1 + sum(size.get(id(k), 0) for k in kids)
        size[id(n)] = total
        if total > MAX_DOCUMENT_NODES:
            raise YamlSyntaxError(
                f"{label}: the document expands to more than {MAX_DOCUMENT_NODES:,} values through its aliases (&anchor / *alias); "
                "expected a plain document"
            )


def type_name(value: Any) -> str:
    """How an error message names a value the user gave: its kind, and the value as given."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


class Fields:
    """One mapping of an input file, with typed getters whose errors name `file: path.key`."""

    def __init__(self, raw: Any, file: str, path: str = "", expected: str = "a mapping of keys to values"):
        self.file = file
        self.path = path
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise FieldTypeError(f"{self._where()}expected {expected}, got {type_name(raw)}")
        self.raw: Mapping[str, Any] = raw

    # -- locations -------------------------------------------------------------------------
    def _where(self, key: str | None = None) -> str:
        dotted = printable(".".join(p for p in (self.path, key) if p))
        return f"{printable(self.file)}: {dotted}: " if dotted else f"{printable(self.file)}: "

    def fail_value(self, key: str, message: str) -> FieldValueError:
        return FieldValueError(f"{self._where(key)}{message}")

    # -- keys ------------------------------------------------------------------------------
    def check_keys(self, allowed: Iterable[str]) -> None:
        allowed = list(allowed)
        known = set(allowed)
        for key in self.raw:
            if key not in known:
                hint = did_you_mean(str(key), allowed)
                raise UnknownKeyError(f"{self._where(str(key))}unknown key {str(key)!r}{hint}; expected one of: {', '.join(allowed)}")

    def has(self, key: str) -> bool:
        return key in self.raw and self.raw[key] is not None

    def _get(self, key: str, default: Any) -> Any:
        if key not in self.raw or self.raw[key] is None:
            if default is _MISSING:
                raise FieldValueError(f"{self._where(key)}required field is missing")
            return default
        return self.raw[key]

    # -- typed getters ---------------------------------------------------------------------
    def number(
        self,
        key: str,
        default: Any = _MISSING,
        *,
        gt: float | None = None,
        ge: float | None = None,
        le: float | None = None,
        lt: float | None = None,
    ) -> float:
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FieldTypeError(f"{self._where(key)}expected a number, got {type_name(value)}")
        try:
            value = float(value)
        except OverflowError:  # an integer beyond every float
            raise FieldValueError(f"{self._where(key)}expected a finite number, got an integer of {len(str(abs(value))):,} digits") from None
        if not math.isfinite(value):
            raise FieldValueError(f"{self._where(key)}expected a finite number, got {value}")
        if (
            (gt is not None and not value > gt)
            or (ge is not None and not value >= ge)
            or (le is not None and not value <= le)
            or (lt is not None and not value < lt)
        ):
            raise FieldValueError(f"{self._where(key)}expected a number {_bound_text(gt, ge, le, lt)}, got {_fmt(value)}")
        return value

    def integer(self, key: str, default: Any = _MISSING, *, ge: int | None = None, le: int | None = None) -> int:
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise FieldTypeError(f"{self._where(key)}expected an integer, got {type_name(value)}")
        if (ge is not None and value < ge) or (le is not None and value > le):
            raise FieldValueError(f"{self._where(key)}expected an integer {_bound_text(None, ge, le, None)}, got {value}")
        if abs(value) > MAX_INTEGER:
            raise FieldValueError(f"{self._where(key)}expected an integer of at most 2^53 ({MAX_INTEGER:,}), got {_big(value)}")
        return value

    def string(self, key: str, default: Any = _MISSING, *, choices: Iterable[str] | None = None) -> str:
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        if not isinstance(value, str):
            raise FieldTypeError(f"{self._where(key)}expected a string, got {type_name(value)}")
        if choices is not None:
            choices = list(choices)
            if value not in choices:
                raise FieldValueError(
                    f"{self._where(key)}expected one of {', '.join(choices)}, got {value!r}{did_you_mean(value, choices)}"
                )
        return value

    def boolean(self, key: str, default: Any = _MISSING) -> bool:
        value = self._get(key, default)
        if value is None and default is None:
            return value
        if not isinstance(value, bool):
            raise FieldTypeError(f"{self._where(key)}expected true or false, got {type_name(value)}")
        return value

    def string_list(self, key: str, default: Any = _MISSING, *, choices: Iterable[str] | None = None) -> tuple[str, ...]:
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list) and not value:
            raise FieldValueError(f"{self._where(key)}expected a non-empty list of strings, got an empty list")
        if not isinstance(value, list):
            raise FieldTypeError(f"{self._where(key)}expected a non-empty list of strings, got {type_name(value)}")
        out = []
        choice_list = list(choices) if choices is not None else None
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise FieldTypeError(f"{self._where(f'{key}[{i}]')}expected a string, got {type_name(item)}")
            if choice_list is not None and item not in choice_list:
                raise FieldValueError(
                    f"{self._where(f'{key}[{i}]')}expected one of {', '.join(choice_list)}, got {item!r}"
                    f"{did_you_mean(item, choice_list)}"
                )
            out.append(item)
        return tuple(out)

    def int_list(self, key: str, default: Any = _MISSING, *, ge: int = 1) -> tuple[int, ...]:
        value = self._get(key, default)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, list) or not value:
            raise FieldTypeError(f"{self._where(key)}expected a non-empty list of integers, got {type_name(value)}")
        out = []
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, int):
                raise FieldTypeError(f"{self._where(f'{key}[{i}]')}expected an integer, got {type_name(item)}")
            if item < ge:
                raise FieldValueError(f"{self._where(f'{key}[{i}]')}expected an integer >= {ge}, got {item}")
            if item > MAX_INTEGER:
                raise FieldValueError(f"{self._where(f'{key}[{i}]')}expected an integer of at most 2^53 ({MAX_INTEGER:,}), got {item:.3g}")
            out.append(item)
        return tuple(out)

    def sub(self, key: str, default_empty: bool = True, *, expected: str = "a mapping of keys to values") -> "Fields":
        """The mapping under `key`; `expected` says what the field takes when it is no mapping."""
        value = self.raw.get(key)
        if value is None and not default_empty:
            raise FieldValueError(f"{self._where(key)}required section is missing")
        return Fields(value, self.file, ".".join(p for p in (self.path, key) if p), expected)


def _big(value: int) -> str:
    """An integer too large to print whole: its order of magnitude (10^k), or the value to 3 digits."""
    try:
        return f"{float(value):.3g}"
    except OverflowError:
        return f"an integer of {len(str(abs(value))):,} digits"


def _fmt(value: float) -> str:
    return f"{value:g}"


def _bound_text(gt, ge, le, lt) -> str:
    parts = []
    if gt is not None:
        parts.append(f"> {_fmt(gt)}")
    if ge is not None:
        parts.append(f">= {_fmt(ge)}")
    if lt is not None:
        parts.append(f"< {_fmt(lt)}")
    if le is not None:
        parts.append(f"<= {_fmt(le)}")
    return " and ".join(parts)
