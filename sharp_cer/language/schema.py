"""Schemas: the streams, their event types and typed attributes.

>>> schema = Schema.parse("CREATE STREAM S { EVENT BUY { id:int, price:double, t:primary_time } }")
>>> schema.event("BUY").attributes
{'id': 'int', 'price': 'double', 't': 'primary_time'}
>>> schema.event("BUY").primary_time
't'
"""

from __future__ import annotations

from dataclasses import dataclass

from sharp_cer.errors import LanguageError, kind_of

from . import ast
from .diagnostics import SchemaError, did_you_mean, listing
from .parser import parse_stream_declarations
from .source import Source

NUMERIC_TYPES = frozenset({"int", "double", "primary_time"})
# Spellings other systems use, refused with the one this language has: one
# spelling per type keeps schemas comparable and greppable.
_OTHER_SPELLINGS = {"boolean": "bool", "integer": "int", "float": "double", "str": "string", "long": "int"}


@dataclass(frozen=True)
class EventSchema:
    """One event type: its stream, attributes in declaration order, and the
    name of its ``primary_time`` attribute (if it has one)."""

    name: str
    stream: str
    attributes: dict[str, str]
    primary_time: str | None = None

    def __hash__(self) -> int:
        return hash((self.stream, self.name))


@dataclass(frozen=True)
class Schema:
    """Streams by name, each a mapping from event-type name to its schema."""

    streams: dict[str, dict[str, EventSchema]]
    declarations: tuple[ast.StreamDecl, ...] = ()

    @classmethod
    def parse(cls, text: str, name: str = "<schema>", *, source: Source | None = None) -> Schema:
        """Parse and validate ``CREATE STREAM`` declarations.

        >>> Schema.parse(None)
        Traceback (most recent call last):
        ...
        sharp_cer.errors.LanguageError: Schema.parse takes the schema's text (CREATE STREAM ...), found None
          hint: give the text, e.g. Schema.parse(Path("s.core").read_text())
        """
        if source is None and not isinstance(text, str):
            raise LanguageError(
                f"Schema.parse takes the schema's text (CREATE STREAM ...), found {kind_of(text)}\n"
                '  hint: give the text, e.g. Schema.parse(Path("s.core").read_text())'
            )
        src = source or Source(text, name)
        return cls.from_declarations(parse_stream_declarations(src.text, source=src), src)

    @classmethod
    def from_declarations(cls, decls: tuple[ast.StreamDecl, ...], source: Source) -> Schema:
        """Validate declarations: known types, no duplicates, one primary time."""
        streams: dict[str, dict[str, EventSchema]] = {}
        for stream in decls:
            if stream.name in streams:
                raise SchemaError(
                    f"stream {stream.name} is declared twice",
                    source,
                    stream.span,
                    expected="one declaration per stream",
                    found=f"a second CREATE STREAM {stream.name}",
                    hint="merge the two declarations or rename one stream",
                )
            events: dict[str, EventSchema] = {}
            for event in stream.events:
                if event.name in events:
                    raise SchemaError(
                        f"event type {event.name} is declared twice in stream {stream.name}",
                        source,
                        event.span,
                        expected="one declaration per event type",
                        found=f"a second EVENT {event.name}",
                        hint="merge the two declarations",
                    )
                events[event.name] = _event_schema(stream.name, event, source)
            streams[stream.name] = events
        return cls(streams, decls)

    def event_types(self, streams: tuple[str, ...] | None = None) -> list[EventSchema]:
        """Every event type of the given streams (all streams by default)."""
        names = streams if streams else tuple(self.streams)
        return [e for s in names for e in self.streams.get(s, {}).values()]

    def event(self, name: str, stream: str | None = None) -> EventSchema:
        """The event type ``name`` (in ``stream`` if given); KeyError if absent or ambiguous."""
        if stream is not None:
            return self.streams[stream][name]
        found = [e for e in self.event_types() if e.name == name]
        if len(found) != 1:
            raise KeyError(name)
        return found[0]


def _event_schema(stream: str, event: ast.EventDecl, source: Source) -> EventSchema:
    attributes: dict[str, str] = {}
    primary: str | None = None
    for attr in event.attributes:
        kind = attr.type.lower()
        if kind not in ast.ATTRIBUTE_TYPES:
            other = _OTHER_SPELLINGS.get(kind)
            raise SchemaError(
                f"unknown type '{attr.type}' for attribute {attr.name} of {event.name}",
                source,
                attr.span,
                expected=f"one of {', '.join(ast.ATTRIBUTE_TYPES)}",
                found=f"'{attr.type}'",
                hint=f"did you mean {other}?" if other else did_you_mean(attr.type, ast.ATTRIBUTE_TYPES),
            )
        if attr.name in attributes:
            raise SchemaError(
                f"attribute {attr.name} is declared twice in event type {event.name}",
                source,
                attr.span,
                expected=f"distinct attribute names (declared so far: {listing(attributes)})",
                found=f"a second '{attr.name}'",
                hint="rename or remove one of them",
            )
        if kind == "primary_time":
            if primary is not None:
                raise SchemaError(
                    f"event type {event.name} has two primary_time attributes",
                    source,
                    attr.span,
                    expected="at most one primary_time attribute per event type",
                    found=f"'{primary}' and '{attr.name}'",
                    hint=f"declare {attr.name} as int",
                )
            primary = attr.name
        attributes[attr.name] = kind
    return EventSchema(event.name, stream, attributes, primary)
