"""The few Arrow compute kernels the loaders use, called by name.

``import pyarrow.compute`` wraps each of pyarrow's ~300 kernels in a Python
function and parses its options' docstrings for the wrapper's help text:
15-20 ms of every process that loads events, a tenth of a small ``match``.
The kernels themselves live in ``pyarrow._compute``, which that module only
re-exports (``pyarrow.compute.call_function`` *is*
``pyarrow._compute.call_function``; a test keeps it so). Each function here
calls one kernel with the options pyarrow's own wrapper would build from the
same arguments. Array methods such as ``Array.cast`` or ``Array.take`` import
``pyarrow.compute`` on their first call: use :func:`cast` and :func:`take`.

>>> import pyarrow as pa
>>> lines = split_pattern(pa.array(["a,b", "c"]), ",")
>>> index_in(lines.values, value_set=pa.array(["c", "a"])).to_pylist()
[1, None, 0]
"""

from __future__ import annotations

from typing import Any

from pyarrow._compute import (  # what pyarrow.compute re-exports (see the module docstring)
    CastOptions,
    MatchSubstringOptions,
    ReplaceSubstringOptions,
    SetLookupOptions,
    SplitPatternOptions,
    TakeOptions,
    TrimOptions,
    call_function,
)

__all__ = [
    "any_true",
    "binary_length",
    "cast",
    "count_substring",
    "dictionary_encode",
    "equal",
    "if_else",
    "index_in",
    "is_in",
    "match_substring_regex",
    "maximum",
    "replace_substring_regex",
    "split_pattern",
    "take",
    "total",
    "utf8_lower",
    "utf8_trim",
]


def cast(arr: Any, target_type: Any) -> Any:
    """``arr`` as ``target_type``, checked (pyarrow's safe cast)."""
    return call_function("cast", [arr], CastOptions.safe(target_type))


def take(data: Any, indices: Any) -> Any:
    """The values of ``data`` at ``indices`` (bounds checked)."""
    return call_function("take", [data, indices], TakeOptions(boundscheck=True))


def split_pattern(strings: Any, pattern: str) -> Any:
    """Each string split at every ``pattern``: a list array."""
    return call_function("split_pattern", [strings], SplitPatternOptions(pattern))


def replace_substring_regex(strings: Any, pattern: str, replacement: str) -> Any:
    """Each string with every match of ``pattern`` replaced."""
    return call_function("replace_substring_regex", [strings], ReplaceSubstringOptions(pattern, replacement))


def count_substring(strings: Any, pattern: str) -> Any:
    """How many times ``pattern`` occurs in each string."""
    return call_function("count_substring", [strings], MatchSubstringOptions(pattern))


def match_substring_regex(strings: Any, pattern: str) -> Any:
    """Whether each string holds a match of the regular expression."""
    return call_function("match_substring_regex", [strings], MatchSubstringOptions(pattern))


def utf8_trim(strings: Any, characters: str) -> Any:
    """Each string without the given characters at either end."""
    return call_function("utf8_trim", [strings], TrimOptions(characters))


def utf8_lower(strings: Any) -> Any:
    """Each string in lower case."""
    return call_function("utf8_lower", [strings])


def index_in(values: Any, value_set: Any) -> Any:
    """Each value's index in ``value_set``, null when absent."""
    return call_function("index_in", [values], SetLookupOptions(value_set))


def is_in(values: Any, value_set: Any) -> Any:
    """Whether each value is in ``value_set``."""
    return call_function("is_in", [values], SetLookupOptions(value_set))


def binary_length(strings: Any) -> Any:
    """Each string's length in bytes."""
    return call_function("binary_length", [strings])


def equal(left: Any, right: Any) -> Any:
    """``left == right``, element-wise."""
    return call_function("equal", [left, right])


def if_else(condition: Any, then: Any, otherwise: Any) -> Any:
    """``then`` where ``condition`` holds, else ``otherwise``."""
    return call_function("if_else", [condition, then, otherwise])


def dictionary_encode(values: Any) -> Any:
    """The values as a dictionary array."""
    return call_function("dictionary_encode", [values])


def any_true(flags: Any) -> Any:
    """Whether any flag is true (a scalar; nulls skipped)."""
    return call_function("any", [flags])


def total(values: Any) -> Any:
    """The sum (a scalar; nulls skipped, null when there are no values)."""
    return call_function("sum", [values])


def maximum(values: Any) -> Any:
    """The largest value (a scalar)."""
    return call_function("max", [values])
