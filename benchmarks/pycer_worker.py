"""One CEQL query on CORE's C++ engine (pycer) over a CORE-style CSV file.

``bench_vs_core.py`` runs this file in pycer's own virtual environment
(pycer is built for Python 3.13 only), so it imports nothing but the standard
library and pycer. The events are read and built as pycer events a chunk at a
time, untimed; only the engine is timed: ``send_events`` for each chunk and
one ``get_output`` at the end (calling it between two sends crashes pycer
0.1.6, so the output of the whole run is taken once). Every complex event is
one line of that output: its interval in time units, then its events with
their attributes, ``[980,983], ((id: 0 attributes: [685 INTC ...]) ...)``.
pycer's offline server listens on a fixed port (6000), so only one runs on a
machine at a time; a second fails with "Address already in use".

    python pycer_worker.py SCHEMA.core QUERY.ceql EVENTS.csv [--chunk 100000]

Prints one JSON object: matches, distinct_matches (lines that differ),
send_seconds, output_seconds, build_seconds, events, peak_rss_kb, and the
CPU seconds (user + system, every thread of the process) of the sends and of
the output: send_cpu_seconds, output_cpu_seconds.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import time
from collections.abc import Callable, Iterator
from typing import Any

import pycer  # type: ignore[import-not-found]  # only in pycer's own environment


def _converters() -> dict[Any, Callable[[str], Any]]:
    return {
        pycer.INT64: lambda v: pycer.PyIntValue(int(v)),
        pycer.DOUBLE: lambda v: pycer.PyDoubleValue(float(v)),
        pycer.STRING_VIEW: pycer.PyStringValue,
        pycer.BOOL: lambda v: pycer.PyBoolValue(v.lower() == "true"),
    }


def _chunks(path: str, layout: dict[str, tuple[int, list[Callable[[str], Any]]]], size: int) -> Iterator[list[Any]]:
    """The file's rows as pycer events, ``size`` at a time (type first, then
    that type's attributes in declaration order)."""
    chunk: list[Any] = []
    with open(path, newline="") as f:
        for row in csv.reader(f):
            type_id, convert = layout[row[0]]
            chunk.append(pycer.PyEvent(type_id, [c(v) for c, v in zip(convert, row[1:], strict=True)]))
            if len(chunk) == size:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


def run(schema: str, query: str, events: str, chunk: int) -> dict[str, Any]:
    server = pycer.PyOfflineServer()
    stream = server.declare_stream(schema)
    converters = _converters()
    layout = {e.name: (e.id, [converters[a.value_type] for a in e.attributes_info]) for e in stream.events_info}
    server.add_query(query)
    send = build = send_cpu = 0.0
    n = 0
    began = time.perf_counter()
    for events_chunk in _chunks(events, layout, chunk):
        sent = time.perf_counter()
        build += sent - began
        cpu = time.process_time()
        server.send_events(events_chunk)
        send_cpu += time.process_time() - cpu
        began = time.perf_counter()
        send += began - sent
        n += len(events_chunk)
    began, cpu = time.perf_counter(), time.process_time()
    output = server.get_output()
    output_seconds, output_cpu = time.perf_counter() - began, time.process_time() - cpu
    lines = [line for line in output.splitlines() if line.startswith("[")]
    return {
        "events": n,
        "matches": len(lines),
        # the same events at the same interval, output once per valuation that found them
        "distinct_matches": len(set(lines)),
        "send_seconds": send,
        "output_seconds": output_seconds,
        "send_cpu_seconds": send_cpu,
        "output_cpu_seconds": output_cpu,
        "build_seconds": build,
        "peak_rss_kb": _high_water_kb(),
    }


def _high_water_kb() -> int:
    # this process's own peak (getrusage's ru_maxrss keeps the forked parent's size across exec)
    with open("/proc/self/status") as status:
        lines = status.read().splitlines()
    for line in lines:
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("schema")
    parser.add_argument("query")
    parser.add_argument("events")
    parser.add_argument("--chunk", type=int, default=100_000)
    args = parser.parse_args()
    with open(args.schema) as s, open(args.query) as q:
        figures = run(s.read(), q.read(), args.events, args.chunk)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
