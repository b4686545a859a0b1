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

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .checker import CheckedQuery, parse_and_check
from .errors import ContradictoryOptionsError, UndeclaredAttributeError, WorkloadError, did_you_mean, listing
from .schema import Schema
from .source import Source, Span

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
            if not value > 0:
                raise ValueError("a latency bound must be positive")
            return cls(cost_units=float(value))
        if isinstance(value, str):
            m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(%|ms|s)?\s*", value)
            if m and float(m.group(1)) > 0:
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
    """Finds keys of a TOML text by line, since tomllib reports no positions."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()

    def _block(self, table: str, index: int) -> tuple[int, int]:
        header = re.compile(
            r"\s*\[\[\s*" + re.escape(table) + r"\s*\]\]" if index >= 0 else r"\s*\[\s*" + re.escape(table) + r"\s*\]"
        )
        starts = [i for i, line in enumerate(self.lines) if header.match(line)]
        pick = starts[index] if index >= 0 and index < len(starts) else (starts[0] if starts else -1)
        if pick < 0:
            return (0, len(self.lines))
        end = next(
            (
                i
                for i in range(pick + 1, len(self.lines))
                if re.match(r"\s*\[", self.lines[i]) and not _inside_string(self.lines, i)
            ),
            len(self.lines),
        )
        return (pick, end)

    def key(self, table: str, index: int, key: str | None) -> Span:
        start, end = self._block(table, index)
        if key is not None:
            pattern = re.compile(r"\s*" + re.escape(key) + r"\s*=")
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
        line = self.lines[line_index]
        eq = line.index("=")
        rest = line[eq + 1 :]
        stripped = rest.lstrip()
        column = eq + 1 + (len(rest) - len(stripped))
        quote = next((q for q in _QUOTES if stripped.startswith(q)), "")
        column += len(quote)
        first = value.splitlines()[0] if value else ""
        if len(quote) == 3 and line[column:].strip() == "":
            if line_index + 1 < len(self.lines) and self.lines[line_index + 1].startswith(first):
                return (line_index + 1, 0)
            return None
        if line[column:].startswith(first):
            return (line_index, column)
        return None


def _inside_string(lines: list[str], index: int) -> bool:
    # Comment lines are skipped: a quote inside one opens nothing.
    count = sum(line.count('"""') + line.count("'''") for line in lines[:index] if not line.lstrip().startswith("#"))
    return count % 2 == 1


def load_workload(path: str | Path) -> Workload:
    """Read and check a workload file; raise a located error on any problem."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise WorkloadError(f"cannot read workload {p}: {exc.strerror}", Source("", str(p))) from None
    return parse_workload(text, str(p), base=p.parent, path=p)


def parse_workload(
    text: str, name: str = "<workload>", *, base: Path | None = None, path: Path | None = None
) -> Workload:
    """Parse and check a workload given as TOML text."""
    source = Source(text, name)
    loc = _Locator(text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        span = Span(int(m.group(1)), int(m.group(2)), int(m.group(1)), int(m.group(2)) + 1) if m else None
        message = re.sub(r"\s*\(at line.*\)$", "", str(exc))
        raise WorkloadError(
            f"not valid TOML: {message}",
            source,
            span,
            expected="TOML: key = value lines under [workload], [defaults] and [[query]] tables",
            hint="strings need quotes; multi-line query text goes between ''' and '''",
        ) from None

    def fail(
        message: str, span: Span, *, expected: str | None = None, found: str | None = None, hint: str | None = None
    ) -> None:
        raise WorkloadError(message, source, span, expected=expected, found=found, hint=hint)

    def unknown_keys(table: dict[str, Any], allowed: set[str], where: str, index: int) -> None:
        for key in table:
            if key not in allowed:
                fail(
                    f"unknown key '{key}' in [{where}]" if index < 0 else f"unknown key '{key}' in query {index + 1}",
                    loc.key(where, index, key),
                    expected=f"one of {listing(allowed)}",
                    found=f"'{key}'",
                    hint=did_you_mean(key, allowed),
                )

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
    unknown_keys(head, _WORKLOAD_KEYS, "workload", -1)
    wname = head.get("name")
    if not isinstance(wname, str) or not wname:
        fail("[workload] needs a name", loc.key("workload", -1, "name"), expected='name = "..."', found=repr(wname))

    schema = _load_schema(head, source, loc, base)
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        fail("[defaults] must be a table", loc.key("defaults", -1, None))
    unknown_keys(defaults, _DEFAULT_KEYS, "defaults", -1)

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
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        unknown_keys(entry, _QUERY_KEYS, "query", i)
        merged = {**defaults, **entry}

        def where(key: str, i: int = i, entry: dict[str, Any] = entry) -> Span:
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
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0:
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
        queries.append(WorkloadQuery(qname, tenant, float(weight), bound, shed, tuple(sketch), checked))

    generator = head.get("generator")
    lateness = head.get("allowed_lateness", 0)
    if isinstance(lateness, bool) or not isinstance(lateness, int) or lateness < 0:
        fail(
            "allowed_lateness must be a non-negative integer",
            loc.key("workload", -1, "allowed_lateness"),
            found=repr(lateness),
        )
    capacity = head.get("capacity")
    if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, (int, float)) or capacity <= 0):
        fail(
            "capacity must be a positive number of cost units per second",
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


def _load_schema(head: dict[str, Any], source: Source, loc: _Locator, base: Path | None) -> Schema:
    if ("schema" in head) == ("schema_file" in head):
        raise WorkloadError(
            "[workload] needs exactly one of schema and schema_file",
            source,
            loc.key("workload", -1, "schema" if "schema" in head else None),
            expected="schema = '''CREATE STREAM ...''' or schema_file = \"path.core\"",
            found="both" if "schema" in head else "neither",
        )
    if "schema_file" in head:
        path = (base or Path(".")) / str(head["schema_file"])
        try:
            text = path.read_text()
        except OSError as exc:
            raise WorkloadError(
                f"cannot read schema file {path}: {exc.strerror}",
                source,
                loc.key("workload", -1, "schema_file"),
                hint="paths are relative to the workload file",
            ) from None
        return Schema.parse(text, str(path))
    text = head["schema"]
    origin = loc.value_origin("workload", -1, "schema", text)
    inner = Source(text, source.name, *(origin or (0, 0))) if origin else Source(text, f"{source.name} (schema)")
    return Schema.parse(text, source=inner)


def _query_text(
    entry: dict[str, Any], qname: str, index: int, schema: Schema, source: Source, loc: _Locator, base: Path | None
) -> CheckedQuery:
    if ("text" in entry) == ("file" in entry):
        raise WorkloadError(
            f"query {qname} needs exactly one of text and file",
            source,
            loc.key("query", index, "text" if "text" in entry else "name"),
            expected="text = '''SELECT ...''' or file = \"query.ceql\"",
            found="both" if "text" in entry else "neither",
        )
    if "file" in entry:
        path = (base or Path(".")) / str(entry["file"])
        try:
            text = path.read_text()
        except OSError as exc:
            raise WorkloadError(
                f"cannot read query file {path}: {exc.strerror}",
                source,
                loc.key("query", index, "file"),
                hint="paths are relative to the workload file",
            ) from None
        return parse_and_check(text, schema, str(path))
    text = entry["text"]
    if not isinstance(text, str):
        raise WorkloadError(f"query {qname}: text must be a string", source, loc.key("query", index, "text"))
    origin = loc.value_origin("query", index, "text", text)
    inner = Source(text, source.name, *origin) if origin else Source(text, f"{source.name} (query {qname})")
    return parse_and_check(text, schema, source=inner)
