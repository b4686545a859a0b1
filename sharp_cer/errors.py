"""The exception hierarchy: one root, one subclass per layer
(language, events, plan, engine, shedding, surfaces).

Catching :class:`SharpCerError` catches every error the library raises on
purpose; each layer raises only its own subclass (or a subclass of it).

>>> from sharp_cer.errors import LanguageError, SharpCerError
>>> issubclass(LanguageError, SharpCerError)
True
"""

from __future__ import annotations


class SharpCerError(Exception):
    """Root of every error sharp-cer raises on purpose."""


class LanguageError(SharpCerError):
    """A query, schema or workload is malformed or inconsistent."""


class EventsError(SharpCerError):
    """Events could not be loaded or do not fit their schema."""


class PlanError(SharpCerError):
    """A checked workload could not be compiled into a plan."""


class EngineError(SharpCerError):
    """The engine was misused or hit a configured hard limit."""


class SheddingError(SharpCerError):
    """Load shedding was configured inconsistently."""


class SurfaceError(SharpCerError):
    """The API, the CLI or the Spark pipeline was called inconsistently."""


class RecognizeError(SharpCerError):
    """A MATCH_RECOGNIZE clause is malformed, unsupported, or failed on its rows."""


class MissingExtraError(SharpCerError, ImportError):
    """An optional dependency is not installed: PySpark (the ``spark``
    extra) or matplotlib and pydot (the ``plot`` extra). Any layer may raise
    it, through ``sharp_cer._extras.require``; it is an ``ImportError`` too,
    so code that guards an import the usual way still catches it."""


def kind_of(value: object) -> str:
    """What a value is, for a message saying what arrived: its type's name,
    with the type of its first item for a list, tuple or dict.

    >>> kind_of(None), kind_of([{"a": 1}]), kind_of({"a": [1]}), kind_of("x")
    ('None', 'list of dict', 'dict of list', 'str')
    """
    if value is None:
        return "None"
    name = type(value).__name__
    if isinstance(value, list | tuple) and value:
        return f"{name} of {type(value[0]).__name__}"
    if isinstance(value, dict) and value:
        return f"{name} of {type(next(iter(value.values()))).__name__}"
    return name
