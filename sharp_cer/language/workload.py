"""Workloads: a schema and many queries, each with a tenant, a weight, a
latency bound and options, read from a TOML file.

A workload file looks like this (see ``configs/`` for complete ones)::

    [workload]
    name = "stock-trading"
    schema = '''CREATE STREAM Stock { EVENT BUY { ... } }'''   # or schema_file = "x.core"

    [defaults]                 # optional; every key of a query may be given here
    tenant = "desk-a"
    latency_bound = "250ms"    # arrival to alert; or cost units, or "40%" of the unshedded mean

    [[query]]
    name = "drop"
    weight = 2.0
    text = '''SELECT * FROM Stock WHERE ...'''                # or file = "drop.ceql"

>>> w = parse_workload('''
... [workload]
... name = "w"
... schema = "CREATE STREAM S { EVENT A { x:int } }"
... [[query]]
... name = "q"
... tenant = "t"
... text = "SELECT * WHERE A WITHIN 2 EVENTS"
... ''')
>>> [(q.name, q.tenant, q.weight, q.shed) for q in w.queries]
[('q', 't', 1.0, True)]
"""

from __future__ import annotations

import bisect
import hashlib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from sharp_cer.errors import LanguageError, kind_of

from .checker import CheckedQuery, parse_and_check
from .collector import collector_paused
from .diagnostics import (
    ContradictoryOptionsError,
    LanguageErrors,
    QueryError,
    UndeclaredAttributeError,
    WorkloadError,
    did_you_mean,
    listing,
    text_kind,
)
from .files import read_source
from .schema import Schema
from .source import Source, Span, lines_of

if TYPE_CHECKING:
    import tomllib

_WORKLOAD_KEYS = {"name", "description", "schema", "schema_file", "generator", "allowed_lateness", "capacity"}
_QUERY_KEYS = {"name", "tenant", "weight", "latency_bound", "shed", "sketch_attributes", "text", "file"}
_DEFAULT_KEYS = _QUERY_KEYS - {"name", "text", "file"}
_QUOTES = ('"""', "'''", '"', "'")
_TOP_KEYS = {"workload", "defaults", "query"}


@dataclass(frozen=True)
class LatencyBound:
    """A query's latency bound: the time from an event's arrival until the
    query's matches ending there are out, queueing included. Given as
    milliseconds (``"250ms"``, ``"2s"``), as cost units (a number: seconds
    times the engine's capacity), or as a fraction (``"40%"``) of the query's
    mean latency in an unshedded run under the same arrivals.

    >>> LatencyBound.parse("250ms"), LatencyBound.parse("2s").milliseconds
    (LatencyBound(cost_units=None, fraction=None, milliseconds=250.0), 2000.0)
    >>> LatencyBound.parse("40%").fraction, LatencyBound.parse(1500).cost_units
    (0.4, 1500.0)
    >>> str(LatencyBound.parse("250ms")), str(LatencyBound.parse("40%")), str(LatencyBound.parse(12))
    ('250ms', '40%', '12 units')
    """

    cost_units: float | None = None
    fraction: float | None = None
    milliseconds: float | None = None

    @classmethod
    def parse(cls, value: object) -> LatencyBound:
        """From ``"NNms"``, ``"NNs"``, ``"NN%"`` or a positive number; ValueError otherwise."""
        if isinstance(value, bool):
            raise ValueError("a boolean is not a latency bound")
        if isinstance(value, (int, float)):
            if not 0 < value < math.inf:  # nan fails too
                raise ValueError("a latency bound must be a positive, finite number")
            return cls(cost_units=float(value))
        if isinstance(value, str):
            m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(%|ms|s)?\s*", value)
            if m and 0 < float(m.group(1)) < math.inf:
                number, unit = float(m.group(1)), m.group(2)
                if unit == "%" and number <= 100:
                    return cls(fraction=number / 100)
                if unit in ("ms", "s"):
                    return cls(milliseconds=number * (1000 if unit == "s" else 1))
                if unit is None:
                    return cls(cost_units=number)
        raise ValueError(f"{value!r} is not a latency bound")

    def __str__(self) -> str:
        if self.milliseconds is not None:
            return f"{self.milliseconds:g}ms"
        if self.fraction is not None:
            return f"{self.fraction * 100:g}%"
        return f"{self.cost_units:g} units"


@dataclass(frozen=True)
class WorkloadQuery:
    """One query of a workload with its tenant, weight and options."""

    name: str
    tenant: str
    weight: float
    latency_bound: LatencyBound | None
    shed: bool
    sketch_attributes: tuple[str, ...]
    checked: CheckedQuery


@dataclass(frozen=True)
class Workload:
    """A checked workload."""

    name: str
    description: str
    schema: Schema
    queries: tuple[WorkloadQuery, ...]
    generator: str | None = None
    allowed_lateness: int = 0
    path: Path | None = None
    #: cost units the engine serves per second (None: service is wall time)
    capacity: float | None = None

    @property
    def tenants(self) -> list[str]:
        """Tenants in order of first appearance."""
        return list(dict.fromkeys(q.tenant for q in self.queries))

    def warnings(self) -> list[str]:
        """Every query's warnings, rendered."""
        return [str(w) for q in self.queries for w in q.checked.warnings]

    def signature(self) -> dict[str, str]:
        """What decides the workload's matches and shedding, part by part:
        the schema, the allowed lateness, and each query's options and text
        (printed canonically, so comments and layout do not count).

        >>> w = parse_workload('''
        ... [workload]
        ... name = "w"
        ... schema = "CREATE STREAM S { EVENT A { x:int } }"
        ... [[query]]
        ... name = "q"
        ... text = "select  /* all */ * WHERE A WITHIN 2 EVENTS"
        ... ''')
        >>> w.signature()["query q"]
        "tenant='default' weight=1.0 bound=None shed=True sketch=() | SELECT * WHERE A WITHIN 2 EVENTS"
        """
        from .printer import stream_declarations, to_ceql

        parts = {
            "schema": stream_declarations(self.schema.declarations),
            "allowed_lateness": str(self.allowed_lateness),
        }
        if self.capacity is not None:
            parts["capacity"] = f"{self.capacity:g}"
        for q in self.queries:
            b = q.latency_bound
            bound = None if b is None else f"{b.fraction:g}" if b.fraction is not None else str(b).replace(" ", "")
            parts[f"query {q.name}"] = (
                f"tenant={q.tenant!r} weight={q.weight!r} bound={bound} shed={q.shed} "
                f"sketch={q.sketch_attributes} | {to_ceql(q.checked.query)}"
            )
        return parts

    def fingerprint(self) -> str:
        """A digest of ``signature()``. Saved state is only valid for the
        workload it was made with.

        >>> text = '''
        ... [workload]
        ... name = "w"
        ... schema = "CREATE STREAM S { EVENT A { x:int } }"
        ... [[query]]
        ... name = "q"
        ... text = "SELECT * WHERE A WITHIN 2 EVENTS"
        ... '''
        >>> same = text.replace("SELECT *", "select  /* all */ *")
        >>> other = text.replace("2 EVENTS", "3 EVENTS")
        >>> f = parse_workload(text).fingerprint()
        >>> len(f), f == parse_workload(same).fingerprint(), f == parse_workload(other).fingerprint()
        (16, True, False)
        """
        text = "\n".join(f"{k}: {v}" for k, v in self.signature().items())
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def signature_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What differs between two workload signatures, one line per part,
    naming it (an empty list: the same workload).

    >>> signature_changes({"query a": "x", "query b": "y"}, {"query a": "z", "query c": "y"})
    ["query a changed: was 'x', now 'z'", 'query b removed', 'query c added']
    """
    out = []
    for part in sorted(before.keys() | after.keys()):
        if part not in after:
            out.append(f"{part} removed")
        elif part not in before:
            out.append(f"{part} added")
        elif before[part] != after[part]:
            out.append(f"{part} changed: was {before[part]!r}, now {after[part]!r}")
    return out


def sheddable(checked: CheckedQuery) -> bool:
    """Whether shedding may apply: only queries whose output does not depend
    on what else was output (ALL/ANY, CONSUME BY NONE, no LIMIT)."""
    q = checked.query
    return q.effective_strategy == "ALL" and q.consume in (None, "NONE") and q.limit is None


class _Locator:
    """Finds keys of a TOML text by line, since tomllib reports no positions.

    The text is scanned once: which lines start inside a multi-line string,
    which lines open a table, and each table's header lines (per name, on
    first use), so locating every query of a large workload stays linear.
    """

    def __init__(self, text: str) -> None:
        self.lines = lines_of(text)
        # whether each line starts inside a multi-line string: the parity of
        # the triple quotes before it (comment lines skipped: a quote inside
        # one opens nothing)
        self.inside: list[bool] = []
        count = 0
        for line in self.lines:
            self.inside.append(count % 2 == 1)
            if not line.lstrip().startswith("#"):
                count += line.count('"""') + line.count("'''")
        # the lines that open a table (a block ends at the next one)
        self.openers = [i for i, line in enumerate(self.lines) if not self.inside[i] and _OPENER.match(line)]
        self.headers: dict[tuple[str, bool], list[int]] = {}

    def _starts(self, table: str, array: bool) -> list[int]:
        found = self.headers.get((table, array))
        if found is None:
            header = re.compile(
                r"\s*\[\[\s*" + re.escape(table) + r"\s*\]\]" if array else r"\s*\[\s*" + re.escape(table) + r"\s*\]"
            )
            found = self.headers[table, array] = [i for i, line in enumerate(self.lines) if header.match(line)]
        return found

    def _block(self, table: str, index: int) -> tuple[int, int]:
        starts = self._starts(table, index >= 0)
        pick = starts[index] if index >= 0 and index < len(starts) else (starts[0] if starts else -1)
        if pick < 0:
            return (0, len(self.lines))
        after = bisect.bisect_right(self.openers, pick)
        return (pick, self.openers[after] if after < len(self.openers) else len(self.lines))

    def key(self, table: str, index: int, key: str | None) -> Span:
        start, end = self._block(table, index)
        if key is not None:
            pattern = re.compile(r"\s*([\"']?)" + re.escape(key) + r"\1\s*=")
            for i in range(start, end):
                m = pattern.match(self.lines[i])
                if m:
                    col = len(self.lines[i]) - len(self.lines[i].lstrip()) + 1
                    return Span(i + 1, col, i + 1, col + len(key))
        line = self.lines[start] if start < len(self.lines) else ""
        return Span(start + 1, 1, start + 1, max(2, len(line) + 1))

    def value_origin(self, table: str, index: int, key: str, value: str) -> tuple[int, int] | None:
        """(line offset, column offset) of a string value's text, when it
        appears verbatim in the file."""
        span = self.key(table, index, key)
        line_index = span.line - 1
        line = self.lines[line_index] if line_index < len(self.lines) else ""
        if "=" not in line:
            return None
        eq = line.index("=")
        rest = line[eq + 1 :]
        stripped = rest.lstrip()
        column = eq + 1 + (len(rest) - len(stripped))
        quote = next((q for q in _QUOTES if stripped.startswith(q)), "")
        column += len(quote)
        first = lines_of(value)[0] if value else ""
        if len(quote) == 3 and line[column:].strip() == "":
            if line_index + 1 < len(self.lines) and self.lines[line_index + 1].startswith(first):
                return (line_index + 1, 0)
            return None
        if line[column:].startswith(first):
            return (line_index, column)
        return None


def _toml_error(exc: tomllib.TOMLDecodeError, source: Source) -> WorkloadError:
    """A TOML syntax error at its line and column (tomllib says them only in its message)."""
    message = str(exc)
    m = re.search(r"\(at line (\d+), column (\d+)\)", message)
    if m:
        line, column = int(m.group(1)), int(m.group(2))
    else:  # "(at end of document)"
        line = max(1, len(lines_of(source.text)))
        column = len(source.line_text(line)) + 1
    kind = text_kind(source.text)
    if kind in ("query", "schema"):
        what, key = ("query", "text") if kind == "query" else ("schema", "schema")
        message = f"this is a {what}, not a workload"
        hint = (
            f"a {what} goes in a .{'ceql' if what == 'query' else 'core'} file, or in a workload as {key} = '''...'''"
        )
    else:
        message = "not valid TOML: " + re.sub(r"\s*\(at (line|end).*\)$", "", str(exc))
        hint = "strings need quotes; multi-line query text goes between ''' and '''"
    return WorkloadError(
        message,
        source,
        Span(line, column, line, column + 1),
        expected="TOML: key = value lines under [workload], [defaults] and [[query]] tables",
        hint=hint,
    )


#: a line that opens a table: ``[name]`` or ``[[name]]``
_OPENER = re.compile(r"\s*\[")


def load_workload(path: str | Path) -> Workload:
    """Read and check a workload file; raise a located error on any problem."""
    p = Path(path)
    text = read_source(p, "workload")
    return parse_workload(text, str(p), base=p.parent, path=p)


def parse_workload(
    text: str, name: str = "<workload>", *, base: Path | None = None, path: Path | None = None
) -> Workload:
    """Parse and check a workload given as TOML text.

    >>> parse_workload(None)
    Traceback (most recent call last):
    ...
    sharp_cer.errors.LanguageError: parse_workload takes the workload's TOML text, found None
      hint: load_workload(path) reads a workload file
    """
    if not isinstance(text, str):
        raise LanguageError(
            f"parse_workload takes the workload's TOML text, found {kind_of(text)}\n"
            "  hint: load_workload(path) reads a workload file"
        )
    with collector_paused():
        return _parse_workload(text, name, base, path)


def _parse_workload(text: str, name: str, base: Path | None, path: Path | None) -> Workload:
    import tomllib  # here: a match with --schema reads no TOML, and the import costs ~1.5 ms

    source = Source(text, name)
    loc = _Locator(text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _toml_error(exc, source) from None

    def fail(
        message: str, span: Span, *, expected: str | None = None, found: str | None = None, hint: str | None = None
    ) -> NoReturn:
        raise WorkloadError(message, source, span, expected=expected, found=found, hint=hint)

    for key in data:
        if key not in _TOP_KEYS:
            fail(
                f"unknown table '{key}'",
                loc.key(key, -1, None) if isinstance(data[key], dict) else Span(1, 1, 1, 2),
                expected="[workload], [defaults] and [[query]] tables",
                found=f"'{key}'",
                hint=did_you_mean(key, _TOP_KEYS),
            )
    head = data.get("workload")
    if not isinstance(head, dict):
        fail(
            "a workload needs a [workload] table",
            Span(1, 1, 1, 2),
            expected="[workload] with name and schema",
            hint="add [workload] at the top",
        )
    assert isinstance(head, dict)
    _unknown_keys(head, _WORKLOAD_KEYS, "workload", -1, source, loc)
    wname = head.get("name")
    if not isinstance(wname, str) or not wname:
        fail("[workload] needs a name", loc.key("workload", -1, "name"), expected='name = "..."', found=repr(wname))

    schema = _load_schema(head, source, loc, base)
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        fail("[defaults] must be a table", loc.key("defaults", -1, None))
    _unknown_keys(defaults, _DEFAULT_KEYS, "defaults", -1, source, loc)

    entries = data.get("query")
    if not isinstance(entries, list) or not entries:
        fail(
            "a workload needs at least one [[query]]",
            Span(1, 1, 1, 2),
            expected="[[query]] tables with name and text",
            hint="add a [[query]] table",
        )
    assert isinstance(entries, list)

    queries: list[WorkloadQuery] = []
    errors: list[QueryError] = []  # one per query at fault: each is checked on its own
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        try:
            queries.append(_query(entry, i, defaults, schema, seen, source, loc, base))
        except LanguageErrors as many:
            errors.extend(many.errors)
        except QueryError as exc:
            errors.append(exc)
    if errors:
        raise errors[0] if len(errors) == 1 else LanguageErrors(errors)

    generator = head.get("generator")
    lateness = head.get("allowed_lateness", 0)
    if isinstance(lateness, bool) or not isinstance(lateness, int) or not 0 <= lateness < 2**63:
        fail(
            "allowed_lateness must be a non-negative integer",
            loc.key("workload", -1, "allowed_lateness"),
            found=repr(lateness),
        )
    capacity = head.get("capacity")
    if capacity is not None and (
        isinstance(capacity, bool) or not isinstance(capacity, (int, float)) or not 0 < capacity < math.inf
    ):
        fail(
            "capacity must be a positive, finite number of cost units per second",
            loc.key("workload", -1, "capacity"),
            found=repr(capacity),
        )
    return Workload(
        name=str(wname),
        description=str(head.get("description", "")),
        schema=schema,
        queries=tuple(queries),
        generator=generator if isinstance(generator, str) else None,
        allowed_lateness=lateness,
        path=path,
        capacity=float(capacity) if capacity is not None else None,
    )


def _unknown_keys(
    table: dict[str, Any], allowed: set[str], where: str, index: int, source: Source, loc: _Locator
) -> None:
    """Refuse a key not in ``allowed`` in table ``where`` (``index``: which [[query]], or -1)."""
    for key in table:
        if key not in allowed:
            raise WorkloadError(
                f"unknown key '{key}' in [{where}]" if index < 0 else f"unknown key '{key}' in query {index + 1}",
                source,
                loc.key(where, index, key),
                expected=f"one of {listing(allowed)}",
                found=f"'{key}'",
                hint=did_you_mean(key, allowed),
            )


def _query(
    entry: object,
    i: int,
    defaults: dict[str, Any],
    schema: Schema,
    seen: dict[str, int],
    source: Source,
    loc: _Locator,
    base: Path | None,
) -> WorkloadQuery:
    """One [[query]] entry, checked; a located error for the first problem in it."""

    def fail(
        message: str, span: Span, *, expected: str | None = None, found: str | None = None, hint: str | None = None
    ) -> NoReturn:
        raise WorkloadError(message, source, span, expected=expected, found=found, hint=hint)

    if not isinstance(entry, dict):
        fail(
            f"query {i + 1} is not a table",
            loc.key("query", i, None),
            expected="[[query]] tables with name and text",
            found=repr(entry),
            hint="write each query as a [[query]] table with name = ... and text = ...",
        )
    _unknown_keys(entry, _QUERY_KEYS, "query", i, source, loc)
    merged = {**defaults, **entry}

    def where(key: str) -> Span:
        """The line that set ``key`` for this query: its own, or [defaults]'s."""
        if key not in entry and key in defaults:
            return loc.key("defaults", -1, key)
        return loc.key("query", i, key if key in entry else None)

    qname = entry.get("name")
    if not isinstance(qname, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", qname):
        fail(
            f"query {i + 1} needs a name",
            loc.key("query", i, "name" if "name" in entry else None),
            expected='name = "..." (letters, digits, _ . -)',
            found=repr(qname),
        )
    if qname in seen:
        fail(
            f"two queries are named {qname}",
            loc.key("query", i, "name"),
            expected="a distinct name per query",
            found=f"'{qname}' (also query {seen[qname] + 1})",
            hint="names identify queries in outputs; rename one",
        )
    seen[qname] = i
    tenant = merged.get("tenant", "default")
    if not isinstance(tenant, str) or not tenant:
        fail(f"query {qname}: tenant must be a string", where("tenant"), found=repr(tenant))
    weight = merged.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight < math.inf:
        fail(
            f"query {qname}: weight must be a positive number",
            where("weight"),
            expected="a number > 0",
            found=repr(weight),
        )
    bound = None
    if "latency_bound" in merged:
        try:
            bound = LatencyBound.parse(merged["latency_bound"])
        except ValueError:
            fail(
                f"query {qname}: invalid latency_bound",
                where("latency_bound"),
                expected='milliseconds such as "250ms", cost units (a positive number) or a fraction such as "40%"',
                found=repr(merged["latency_bound"]),
            )
    checked = _query_text(entry, qname, i, schema, source, loc, base)
    can_shed = sheddable(checked)
    shed = merged.get("shed", can_shed)
    if not isinstance(shed, bool):
        fail(f"query {qname}: shed must be true or false", where("shed"), found=repr(shed))
    if shed and not can_shed:
        raise ContradictoryOptionsError(
            f"query {qname} asks for shedding, but its output depends on what else was output",
            source,
            where("shed"),
            expected="shed = false for queries with NEXT, LAST, MAX, STRICT, CONSUME BY ANY/PARTITION or LIMIT",
            found="shed = true",
            hint="set shed = false for this query, or make it ALL with CONSUME BY NONE and no LIMIT",
        )
    sketch = merged.get("sketch_attributes", [])
    if not isinstance(sketch, list) or not all(isinstance(a, str) for a in sketch):
        fail(
            f"query {qname}: sketch_attributes must be a list of attribute names",
            where("sketch_attributes"),
            found=repr(sketch),
        )
    known = {a for e in checked.event_types for a in e.attributes}
    for attr in sketch:
        if attr not in known:
            raise UndeclaredAttributeError(
                f"query {qname}: sketch attribute '{attr}' is not an attribute of its event types",
                source,
                where("sketch_attributes"),
                expected=f"attributes of the query's events: {listing(known)}",
                found=f"'{attr}'",
                hint=did_you_mean(attr, known),
            )
    return WorkloadQuery(qname, tenant, float(weight), bound, shed, tuple(sketch), checked)


def _load_schema(head: dict[str, Any], source: Source, loc: _Locator, base: Path | None) -> Schema:
    text = _inline_or_file(head, ("schema", "schema_file"), "workload", -1, "[workload]", source, loc, base)
    return Schema.parse(text.text, source=text)


def _query_text(
    entry: dict[str, Any], qname: str, index: int, schema: Schema, source: Source, loc: _Locator, base: Path | None
) -> CheckedQuery:
    text = _inline_or_file(entry, ("text", "file"), "query", index, f"query {qname}", source, loc, base)
    return parse_and_check(text.text, schema, source=text)


def _inline_or_file(
    table: dict[str, Any],
    keys: tuple[str, str],
    block: str,
    index: int,
    label: str,
    source: Source,
    loc: _Locator,
    base: Path | None,
) -> Source:
    """The text a table gives inline (``keys[0]``) or as a file's path
    (``keys[1]``, relative to the workload), placed where it is written so
    that its errors point into the workload (or the file)."""
    inline, file = keys
    what = "schema" if block == "workload" else "query"
    example = f"{inline} = '''{'CREATE STREAM' if what == 'schema' else 'SELECT'} ...''' or {file} = \"path\""
    if (inline in table) == (file in table):
        raise WorkloadError(
            f"{label} needs exactly one of {inline} and {file}",
            source,
            loc.key(block, index, inline if inline in table else "name" if "name" in table else None),
            expected=example,
            found="both" if inline in table else "neither",
        )
    key = file if file in table else inline
    value = table[key]
    if not isinstance(value, str):
        raise WorkloadError(
            f"{'' if block == 'workload' else label + ': '}{key} must be a string",
            source,
            loc.key(block, index, key),
            expected=example,
            found=f"{value!r} ({_toml_type(value)})",
            hint=f"put the {what} text (or the file's path) in quotes",
        )
    if key == file:
        path = (base or Path(".")) / value
        try:
            return Source(read_source(path, what), str(path))
        except QueryError as exc:
            exc.hint = f'{exc.hint}; {file} = "{value}" is read relative to the workload file'
            raise
    origin = loc.value_origin(block, index, inline, value)
    if origin is None:
        return Source(value, f"{source.name} ({'schema' if block == 'workload' else label})")
    return Source(value, source.name, *origin)


def _toml_type(value: object) -> str:
    """The TOML name of a parsed value's type, for messages.

    >>> _toml_type(5), _toml_type([1]), _toml_type({"a": 1})
    ('an integer', 'an array', 'a table')
    """
    names = {bool: "a boolean", int: "an integer", float: "a float", list: "an array", dict: "a table"}
    return next((n for t, n in names.items() if isinstance(value, t)), "a date or time")
