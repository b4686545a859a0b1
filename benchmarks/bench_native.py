"""The compiled core (``sharp_cer.engine._core``) against the pure-Python
engine and CORE's C++ engine (pycer), in CPU seconds of the whole process.

For each dense shape (every event relevant, no condition, ``PARTITION BY
[name]``, ``WITHIN 50 EVENTS``) on the first ``--events`` events of the
seeded stock tape (``core_tape.py``; CORE's CSV convention and stock schema,
as ``bench_vs_core.py``): ``sharp-cer match`` compiled, the same with
``SHARP_CER_PURE=1``, and pycer's worker (``pycer_worker.py``, from
``--pycer-python`` or ``benchmarks/data/pycer-venv``; left out when absent).
CPU is the child's user+system time (``resource.getrusage(RUSAGE_CHILDREN)``
deltas), matches are the output lines (pycer's: its count).

    python benchmarks/bench_native.py [--events 200000] [--tape PATH] [--pycer-python PATH]

Prints a markdown table and writes benchmarks/results/native.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCHEMA = HERE.parent / "tests" / "fixtures" / "core_experiments" / "stocks" / "schema.core"
RESULTS = HERE / "results"
SHAPES = {
    "SELL;BUY;SELL": "SELECT * FROM S WHERE SELL ; BUY ; SELL PARTITION BY [name] WITHIN 50 EVENTS",
    "BUY;SELL": "SELECT * FROM S WHERE BUY ; SELL PARTITION BY [name] WITHIN 50 EVENTS",
    "(BUY OR SELL);(BUY OR SELL)": "SELECT * FROM S WHERE (BUY OR SELL) ; (BUY OR SELL) PARTITION BY [name] "
    "WITHIN 50 EVENTS",
}


def cpu_of(command: list[str], out: Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> float:
    """The CPU seconds (user + system) of one child process; its stdout goes to ``out``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with out.open("w") as sink:
        subprocess.run(command, stdout=sink, stderr=subprocess.DEVNULL, env=env, cwd=cwd, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--tape", type=Path, default=HERE / "data" / "stocks-1000000-7.csv")
    parser.add_argument("--pycer-python", type=Path, default=HERE / "data" / "pycer-venv" / "bin" / "python")
    args = parser.parse_args()
    cli = str(Path(sys.executable).parent / "sharp-cer")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        events = work / "events.csv"
        with args.tape.open() as source, events.open("w") as sink:
            for k, line in enumerate(source):
                if k >= args.events:
                    break
                sink.write(line)
        for name, text in SHAPES.items():
            query = work / "query.ceql"
            query.write_text(text + "\n")
            row: dict[str, Any] = {"shape": name, "events": args.events}
            command = [cli, "match", "--schema", str(SCHEMA), "--query", str(query), "--events", str(events)]
            pure_env = {**os.environ, "SHARP_CER_PURE": "1"}
            for label, env in (("compiled", dict(os.environ)), ("pure", pure_env)):
                out = work / f"{label}.jsonl"
                row[f"{label}_cpu"] = cpu_of(command, out, env)
                row[f"{label}_matches"] = lines(out)
            if args.pycer_python.exists():
                out = work / "pycer.json"
                worker = [str(args.pycer_python), str(HERE / "pycer_worker.py"), str(SCHEMA), str(query), str(events)]
                row["pycer_cpu"] = cpu_of(worker, out, cwd=work)
                figures = json.loads(out.read_text())
                row["pycer_matches"] = figures.get("matches")
            rows.append(row)
    print("| shape | events | compiled CPU s | pure CPU s | pure/compiled | pycer CPU s | compiled/pycer | matches |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        pycer = r.get("pycer_cpu")
        ratio = f"{r['compiled_cpu'] / pycer:.2f}x" if pycer else "-"
        print(
            f"| {r['shape']} | {r['events']:,} | {r['compiled_cpu']:.2f} | {r['pure_cpu']:.2f} | "
            f"{r['pure_cpu'] / r['compiled_cpu']:.2f}x | {pycer if pycer is None else round(pycer, 2)} | {ratio} | "
            f"{r['compiled_matches']:,} / {r['pure_matches']:,} / {r.get('pycer_matches')} |"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "native.json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
