"""Dense workloads in CPU seconds: the example workloads, their queries alone, and dense shapes against pycer.

Every figure is the CPU time (user + system, read from the kernel's
accounting of the finished child, its own children included) of a whole
``sharp-cer match ... --out M.jsonl`` process: start-up, loading, the engine
and writing the matches. Two parts:

- **workloads**: each example workload of ``configs/`` (``stock_trading``,
  ``card_fraud``, ``iot_sensors``) over its generated events (seed 0, as
  ``demo``; CORE-style CSV), whole, then each of its queries alone (the
  workload file cut down to that one query);
- **shapes**: dense queries where every event is relevant (``SHAPES``:
  sequences, a Kleene run and disjunctions of BUY and SELL, partitioned by
  ticker, or by ticker and volume, within a window) on the CORE-style CSV
  stock tape of ``bench_vs_core.py``, beside CORE's C++ engine pycer
  (``pycer_worker.py`` in ``benchmarks/data/pycer-venv``: the CPU seconds of
  its sends and its final output, events built before), with the ratio
  sharp-cer CPU / pycer CPU and a check that both count the same matches.

``--engine pure`` runs the children with ``SHARP_CER_PURE=1`` (the Python
engine); ``compiled`` without it (the compiled core where it is built: each
column says whether the child can import ``sharp_cer.engine._core``);
``both`` runs the two, taking turns.

    python benchmarks/bench_dense.py [--events 200000] [--repeat 3] [--engine pure|compiled|both]
        [--workloads stock_trading,card_fraud,iot_sensors] [--no-alone] [--shapes sell_buy_sell,buy_sell]
        [--no-pycer] [--pycer-python PY] [--timeout 900] [--name dense] [--match-args "--rate 20000"]

``--match-args`` adds options to every ``sharp-cer match`` child: ``--rate
20000`` makes ``match`` judge the workloads' latency bounds, so its engine
records latency (the observers the Spark workers run with too).

Prints markdown tables (CPU seconds, median of ``--repeat`` runs, and events
per CPU second); writes benchmarks/results/dense.json and dense.png (or
``--name``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import bench_vs_core  # the script's folder is on the path
from bench_workloads import CONFIGS as CONFIGS
from bench_workloads import WORKLOADS, events_file
from core_tape import DATA, RESULTS, installed_env

from sharp_cer.language import load_workload

HERE = Path(__file__).resolve().parent
#: Dense shapes over CORE's stock schema (``bench_vs_core.SCHEMA``): every
#: BUY and SELL is relevant, no condition. A window of 100 time units holds
#: about 67 events of the tape, about 3 of each ticker; 10,000 units hold
#: about 6,700 events, about 0.4 of each (ticker, volume).
SHAPES = {
    "sell_buy_sell": "SELECT * FROM S WHERE SELL ; BUY ; SELL PARTITION BY [name] WITHIN 100 [stock_time]",
    "buy_sell": "SELECT * FROM S WHERE BUY ; SELL PARTITION BY [name] WITHIN 100 [stock_time]",
    "any_any_name_volume": "SELECT * FROM S WHERE (BUY OR SELL) ; (BUY OR SELL) PARTITION BY [name], [volume] "
    "WITHIN 10000 [stock_time]",
    "any_any_name": "SELECT * FROM S WHERE (BUY OR SELL) ; (BUY OR SELL) PARTITION BY [name] WITHIN 100 [stock_time]",
    "sell_buys_sell": "SELECT * FROM S WHERE SELL ; BUY+ ; SELL PARTITION BY [name] WITHIN 100 [stock_time]",
    "either_order": "SELECT * FROM S WHERE (SELL ; BUY) OR (BUY ; SELL) PARTITION BY [name] WITHIN 100 [stock_time]",
}
ENGINES = {"pure": {"SHARP_CER_PURE": "1"}, "compiled": {}}
# ``python -m sharp_cer.cli`` needs the CLI to be a module or a package with
# ``__main__``; calling ``main`` works for either layout
_MAIN = "import sys; from sharp_cer.cli import main; sys.exit(main())"
_PROBE = "import importlib.util as u; print('yes' if u.find_spec('sharp_cer.engine._core') else 'no')"


# ---------------------------------------------------------------- inputs


def workload_alone(workload: Path, query: str, folder: Path) -> Path:
    """The workload file cut down to one query: its text before the first
    ``[[query]]`` table (workload, defaults, schema) and that query's table.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     one = workload_alone(CONFIGS / "card_fraud.toml", "bin_attack", Path(d))
    ...     [q.name for q in load_workload(one).queries]
    ['bin_attack']
    """
    head, *tables = re.split(r"(?m)^(?=\[\[query\]\]\s*$)", workload.read_text())
    chosen = [t for t in tables if re.search(rf'(?m)^name\s*=\s*"{re.escape(query)}"\s*$', t)]
    if len(chosen) != 1:
        raise SystemExit(f"{workload}: {len(chosen)} query tables named {query!r}")
    path = folder / f"{workload.stem}--{query}.toml"
    path.write_text(head + chosen[0])
    return path


def workload_runs(names: list[str], alone: bool, n: int, work: Path) -> list[dict[str, Any]]:
    """One row per workload and, with ``alone``, per query: its name, the
    workload file to run and the events file."""
    rows: list[dict[str, Any]] = []
    folder = DATA / "dense"
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        config = CONFIGS / f"{name}.toml"
        events = folder / f"{name}-{n}.csv"
        if not events.exists():  # generated once, as demo generates it (seed 0)
            events_file(name, n, folder).rename(events)
        rows.append({"kind": "workload", "name": name, "workload": config, "events": events})
        if alone:
            for query in load_workload(config).queries:
                one = workload_alone(config, query.name, work)
                rows.append({"kind": "query", "name": f"{name}/{query.name}", "workload": one, "events": events})
    return rows


# ---------------------------------------------------------------- processes


def sharp_cer(
    row: dict[str, Any],
    engine: str,
    work: Path,
    *,
    timeout: float,
    code: Path | None = None,
    extra: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One ``sharp-cer match`` child of the row on ``engine``: its CPU and
    wall seconds and its matches (lines written), or why it failed."""
    out = work / "matches.jsonl"
    command = [sys.executable, "-c", _MAIN, "match"]
    if "workload" in row:
        command.append(str(row["workload"]))
    else:
        command += ["--schema", str(bench_vs_core.SCHEMA), "--query", str(row["query"])]
    command += ["--events", str(row["events"]), "--out", str(out), *extra]
    env = child_env(engine, work, code)
    began = time.perf_counter()
    with (work / "stderr.txt").open("wb") as err:
        # run from the work folder: a source tree in the current folder would come before ``code``
        child = subprocess.Popen(command, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=err)
        try:
            child.wait(timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            return {"failed": f"timeout after {timeout:.0f} s"}
    wall = time.perf_counter() - began
    if child.returncode != 0:
        lines = (work / "stderr.txt").read_text(errors="replace").strip().splitlines()
        return {"failed": f"exit {child.returncode}: {lines[-1] if lines else 'no message'}"}
    with out.open("rb") as f:
        matches = sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))
    out.unlink()
    return {"matches": matches, "wall_seconds": wall}


def timed(run: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """``run(...)``'s figures with ``cpu_seconds``: the delta of this
    process's children's CPU time (user + system) across the run."""
    from resource import RUSAGE_CHILDREN, getrusage

    before = getrusage(RUSAGE_CHILDREN)
    figures: dict[str, Any] = run(*args, **kwargs)
    after = getrusage(RUSAGE_CHILDREN)
    if "failed" not in figures:
        figures["cpu_seconds"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return figures


def child_env(engine: str, work: Path, code: Path | None = None) -> dict[str, str]:
    """The environment of a child on ``engine``: from cached bytecode, with
    or without ``SHARP_CER_PURE``, ``code`` first on the path if given."""
    extra = {"PYTHONPATH": str(code)} if code else {}
    env = installed_env(work / "bytecode", **extra, **ENGINES[engine])
    if engine == "compiled":
        env.pop("SHARP_CER_PURE", None)
    return env


def has_compiled_core(engine: str, work: Path, code: Path | None = None) -> bool:
    """Whether a child on ``engine`` can import the compiled core."""
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE], env=child_env(engine, work, code), cwd=work, capture_output=True, text=True
    )
    return probe.stdout.strip() == "yes"


def pycer(python: Path, query: Path, events: Path, work: Path, *, timeout: float) -> dict[str, Any]:
    """pycer on one query: its match counts and the CPU seconds of its
    sends and output (``pycer_worker.py``)."""
    figures = bench_vs_core.run_pycer(python, query, events, work, timeout=timeout, max_rss_mb=8000.0)
    if "failed" not in figures:
        figures["cpu_seconds"] = figures["send_cpu_seconds"] + figures["output_cpu_seconds"]
    return figures


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """``bench_vs_core.median_of`` on CPU seconds.

    >>> median_of([{"cpu_seconds": 3.0, "matches": 5}, {"cpu_seconds": 1.0, "matches": 5}])
    {'cpu_seconds': 2.0, 'matches': 5, 'runs': [3.0, 1.0]}
    """
    return bench_vs_core.median_of(runs, "cpu_seconds")


# ---------------------------------------------------------------- tables and plot


def _cpu(figures: dict[str, Any] | None) -> str:
    if figures is None:
        return "-"
    return f"failed: {figures['failed']}" if "failed" in figures else f"{figures['cpu_seconds']:.2f}"


def _rate(figures: dict[str, Any] | None, events: int) -> str:
    return f"{events / figures['cpu_seconds']:,.0f}" if figures and "cpu_seconds" in figures else "-"


def _count(figures: dict[str, Any] | None) -> str:
    if figures is None or "matches" not in figures:
        return "-"
    m = figures["matches"]
    return f"{m:,}" if isinstance(m, int) else f"DIFFER {m}"


def workload_table(rows: list[dict[str, Any]], engines: list[str], events: int) -> str:
    lines = [
        f"\n### Workloads and their queries alone, {events:,} events\n",
        "| workload / query | " + " | ".join(f"{e} CPU s | {e} events per CPU s | {e} matches" for e in engines) + " |",
        "|---|" + "---:|" * (3 * len(engines)),
    ]
    for r in rows:
        cells = " | ".join(f"{_cpu(r[e])} | {_rate(r[e], events)} | {_count(r[e])}" for e in engines)
        lines.append(f"| {'**' + r['name'] + '**' if r['kind'] == 'workload' else r['name']} | {cells} |")
    return "\n".join(lines)


def shape_table(rows: list[dict[str, Any]], engines: list[str], events: int) -> str:
    lines = [
        f"\n### Dense shapes against pycer, {events:,} events\n",
        "| shape | pycer CPU s | pycer matches | "
        + " | ".join(f"{e} CPU s | {e} events per CPU s | {e} / pycer | {e} equal" for e in engines)
        + " |",
        "|---|---:|---:|" + "---:|---:|---:|---|" * len(engines),
    ]
    for r in rows:
        cells = []
        for e in engines:
            ratio = r["ratio"].get(e)
            equal = {True: "yes", False: f"no ({_count(r[e])})", None: "-"}[r["equal_counts"].get(e)]
            cells.append(
                f"{_cpu(r[e])} | {_rate(r[e], events)} | {'-' if ratio is None else f'{ratio:.2f}x'} | {equal}"
            )
        lines.append(f"| {r['name']} | {_cpu(r['pycer'])} | {_count(r['pycer'])} | {' | '.join(cells)} |")
    return "\n".join(lines)


def plot(path: Path, document: dict[str, Any]) -> None:
    """Events per CPU second of every workload row per engine, and CPU
    seconds of every shape per engine beside pycer's (ratio above)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    engines, events = document["engines"], document["events"]
    panels = [(k, document[k]) for k in ("workloads", "shapes") if document[k]]
    fig, axes = plt.subplots(len(panels) or 1, 1, figsize=(12, 4.5 * (len(panels) or 1)), squeeze=False)
    for ax, (kind, rows) in zip(axes[:, 0], panels, strict=False):
        series = [*engines, *(["pycer"] if kind == "shapes" else [])]
        width = 0.8 / len(series)
        xs = range(len(rows))
        for k, key in enumerate(series):
            values = []
            for r in rows:
                cpu = (r.get(key) or {}).get("cpu_seconds")
                values.append((events / cpu if kind == "workloads" else cpu) if cpu else 0.0)
            bars = ax.bar([x + (k - (len(series) - 1) / 2) * width for x in xs], values, width=width, label=key)
            if kind == "shapes" and key != "pycer":
                for bar, r in zip(bars, rows, strict=True):
                    ratio = r["ratio"].get(key)
                    if ratio:
                        ax.annotate(
                            f"{ratio:.2f}x",
                            (bar.get_x() + width / 2, bar.get_height()),
                            ha="center",
                            va="bottom",
                            fontsize=7,
                        )
        ax.set_xticks(list(xs), [r["name"] for r in rows], rotation=40, ha="right", fontsize=7)
        if kind == "workloads":
            ax.set_ylabel("events per CPU second")
            ax.set_title(f"Example workloads and their queries alone, {events:,} events (whole process)")
        else:
            ax.set_ylabel("CPU seconds")
            ax.set_title(f"Dense shapes, {events:,} events: sharp-cer process / pycer engine above the bars")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------- main


def _names(text: str | None, known: tuple[str, ...] | list[str], what: str) -> list[str]:
    if text is None:
        return list(known)
    chosen = [n for n in text.split(",") if n]
    unknown = [n for n in chosen if n not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000, help="events of every run (default 200,000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each row and engine (the median is kept)")
    parser.add_argument("--engine", choices=("pure", "compiled", "both"), default="both")
    parser.add_argument("--workloads", help=f"comma-separated, '' for none (default: {','.join(WORKLOADS)})")
    parser.add_argument("--no-alone", action="store_true", help="the workloads whole only, not their queries alone")
    parser.add_argument("--shapes", help=f"comma-separated, '' for none (default: {','.join(SHAPES)})")
    parser.add_argument("--no-pycer", action="store_true", help="run sharp-cer only")
    parser.add_argument("--pycer-python", help="a Python 3.13 to make pycer's virtual environment with")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before a run is stopped")
    parser.add_argument("--code", type=Path, help="a source tree to run instead of the installed sharp_cer")
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder of the JSON and PNG")
    parser.add_argument("--name", default="dense", help="file name of the JSON and PNG (default: dense)")
    parser.add_argument("--match-args", default="", help="options added to every sharp-cer match (e.g. '--rate 20000')")
    args = parser.parse_args()
    extra = tuple(shlex.split(args.match_args))
    engines = ["pure", "compiled"] if args.engine == "both" else [args.engine]
    work = DATA / "dense-work" / str(os.getpid())  # scratch: cut-down workloads, query files, outputs
    work.mkdir(parents=True, exist_ok=True)
    code = args.code.resolve() if args.code else None
    rows = workload_runs(_names(args.workloads, WORKLOADS, "workloads"), not args.no_alone, args.events, work)
    shape_rows: list[dict[str, Any]] = []
    shape_names = _names(args.shapes, tuple(SHAPES), "shapes")
    if shape_names:
        tape = bench_vs_core.core_csv(args.events)
        for name in shape_names:
            query = work / f"{name}.ceql"
            query.write_text(SHAPES[name] + "\n")
            shape_rows.append({"kind": "shape", "name": name, "text": SHAPES[name], "query": query, "events": tape})
    python, how = (None, "--no-pycer given") if args.no_pycer else pycer_python(args.pycer_python, bool(shape_rows))
    print(how if python else f"pycer skipped: {how}", file=sys.stderr)
    compiled = {e: has_compiled_core(e, work, code) for e in engines}
    document: dict[str, Any] = {
        "command": " ".join(["python", "benchmarks/bench_dense.py", *sys.argv[1:]]),
        "events": args.events,
        "repeat": args.repeat,
        "engines": engines,
        "compiled_core": compiled,
        "pycer": how,
        "load_average_before": os.getloadavg(),
        "workloads": [],
        "shapes": [],
    }
    args.results.mkdir(parents=True, exist_ok=True)

    def save() -> None:  # after every row, so a stopped run keeps what it measured
        (args.results / f"{args.name}.json").write_text(json.dumps(document, indent=2, default=str) + "\n")

    # one untimed run per engine fills the bytecode cache
    for e in engines:
        if rows or shape_rows:
            sharp_cer((rows or shape_rows)[0], e, work, timeout=args.timeout, code=code, extra=extra)
    for row in [*rows, *shape_rows]:
        runs: dict[str, list[dict[str, Any]]] = {e: [] for e in engines}
        pycer_runs: list[dict[str, Any]] = []
        for _ in range(args.repeat):  # the engines take turns, so all see the same machine
            if row["kind"] == "shape" and python is not None and not any("failed" in r for r in pycer_runs):
                pycer_runs.append(pycer(python, row["query"], row["events"], work, timeout=args.timeout))
            for e in engines:
                if not any("failed" in r for r in runs[e]):
                    runs[e].append(timed(sharp_cer, row, e, work, timeout=args.timeout, code=code, extra=extra))
        result: dict[str, Any] = {"kind": row["kind"], "name": row["name"]}
        result.update({e: median_of(runs[e]) for e in engines})
        if row["kind"] == "shape":
            result["text"] = row["text"]
            result["pycer"] = median_of(pycer_runs) if pycer_runs else None
            result["ratio"], result["equal_counts"] = {}, {}
            for e in engines:
                theirs, ours = result["pycer"], result[e]
                both = theirs is not None and "cpu_seconds" in theirs and "cpu_seconds" in ours
                result["ratio"][e] = ours["cpu_seconds"] / theirs["cpu_seconds"] if both else None
                result["equal_counts"][e] = theirs["matches"] == ours["matches"] if both else None
            document["shapes"].append(result)
        else:
            document["workloads"].append(result)
        print(json.dumps(result), file=sys.stderr)
        save()
    document["load_average_after"] = os.getloadavg()
    save()
    forced = {"pure": " (SHARP_CER_PURE=1: the Python engine)", "compiled": ""}
    core = ", ".join(
        f"{e}: {'compiled core importable' if c else 'no compiled core'}{forced[e]}" for e, c in compiled.items()
    )
    print(f"# Dense workloads in CPU seconds (whole process), median of {args.repeat} run(s); {core}; {how}")
    print(f"load average before / after: {document['load_average_before']} / {document['load_average_after']}")
    if document["workloads"]:
        print(workload_table(document["workloads"], engines, args.events))
    if document["shapes"]:
        print(shape_table(document["shapes"], engines, args.events))
    plot(args.results / f"{args.name}.png", document)
    shutil.rmtree(work)


def pycer_python(explicit: str | None, wanted: bool) -> tuple[Path | None, str]:
    """pycer's interpreter (``bench_vs_core.pycer_python``), if any shape runs."""
    if not wanted:
        return None, "no shape to run"
    return bench_vs_core.pycer_python(explicit)


if __name__ == "__main__":
    main()
