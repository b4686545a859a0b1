"""Side by side with CORE's C++ engine (pycer) on CORE-style CSV stock tapes.

The seeded stock tape of ``core_tape.py`` is written as CSV in CORE's
convention (type first, then the attributes in declaration order, no header)
and declared with CORE's own stock schema
(``tests/fixtures/core_experiments/stocks/schema.core``: ``t`` is called
``stock_time`` there). Queries: the four CORE §5 shapes of
``bench_core_operators.py`` (name filters, PARTITION BY [volume], Kleene,
OR; ``FROM S`` added, as pycer wants a stream) and CORE's current stock
experiment queries that pycer runs (``LEFT_OUT`` says why the others are
not run). For each tape size and query, the median of ``--runs`` runs of:

- pycer's engine seconds and CPU seconds: ``send_events`` plus the final
  ``get_output`` (``pycer_worker.py``, events built before timing), and its
  match count;
- the whole ``sharp-cer match --schema S --query Q --events F`` process
  (load included, matches written to a file): wall and CPU seconds (user +
  system, from ``wait4``), its match count (lines of JSON on stdout) and its
  peak RSS (its own high-water mark, ``VmHWM``).

The ratio is of CPU seconds (the wall ratio is kept beside it: on a shared
machine wall time swings with the load, CPU time much less).

Then loading alone: ``sharp_cer.events.loaders.iter_csv`` (the checked batches `match` reads) against
``pyarrow.csv.read_csv`` of the same file (the floor), each in a fresh
process. pycer is installed from the package registry into its own virtual
environment (``benchmarks/data/pycer-venv``, made with ``python3.13`` or
``--pycer-python``); when that fails, the pycer columns are left empty and
the script says why.

    python benchmarks/bench_vs_core.py [--events 1000000 --events 10000000] [--runs 3] [--quick]
        [--queries names,kleene] [--timeout 900] [--max-rss-mb 6000] [--no-pycer] [--name vs_core]

Prints markdown tables; writes benchmarks/results/vs_core.json and
vs_core.png (vs_core_quick.* with --quick: 100,000 events, one run; or
``--name``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from bench_core_operators import QUERIES  # the script's folder is on the path
from core_tape import DATA, RESULTS, installed_env, tape

HERE = Path(__file__).resolve().parent
EXPERIMENTS = HERE.parent / "tests" / "fixtures" / "core_experiments" / "stocks"
SCHEMA = EXPERIMENTS / "schema.core"
SHAPES = ("names", "partition", "kleene", "or")
#: CORE's current stock experiment queries left out, and why. (The
#: ``expstock_*``, ``unordered_*`` and ``paperexp_*`` files are older
#: copies of the same queries, or need a primary-time schema or a window
#: template pycer does not parse.)
_EXPLODES = "the matches explode: neither engine finishes 20,000 events in a minute"
LEFT_OUT = {
    "q2_none": f"6 steps, CONSUME BY NONE, 10,000 time units (~6,700 events of this tape): {_EXPLODES}",
    "q5": f"24 steps, 1,000 time units (~670 events): {_EXPLODES}",
    "q5_any": f"24 steps, 10,000 time units (~6,700 events): {_EXPLODES}",
    "other-q4_none": f"OR steps, CONSUME BY NONE, 10,000 time units: {_EXPLODES}",
    "other-q5_none": f"OR steps, CONSUME BY NONE, 10,000 time units: {_EXPLODES}",
    "other-q1_any_v391d8a2": "CORE's own typo (names = ...): both engines reject it",
}
#: Why counts can differ by design (found by comparing the two engines'
#: matches event by event on 20,000 events of the tape): what the query
#: says, and the reason.
DIFFER_BY_DESIGN = {
    "valuations": "pycer outputs a complex event once per valuation that finds it (variables bound "
    "differently); sharp-cer's outputs are sets (distinct pycer lines: {distinct:,})",
    "CONSUME BY ANY": "pycer consumes when a match is output; sharp-cer also when a valuation completes "
    "outside the window, so pycer finds more",
    "strategy": "pycer ignores selection strategies (it outputs every match, as ALL)",
}
STRATEGIES = ("SELECT NEXT", "SELECT LAST", "SELECT MAX", "SELECT STRICT")
PYCER_VENV = DATA / "pycer-venv"
PORT_TRIES, PORT_WAIT = 30, 10


def core_csv(n: int) -> Path:
    """The first ``n`` events of the stock tape as CORE-style CSV (written on
    first use, from the tape's Parquet file, a row group at a time)."""
    path = DATA / f"stocks-{n}-7.csv"
    if path.exists():
        return path
    source = pq.ParquetFile(tape(n))
    partial = path.with_suffix(".partial")
    # No header, no quotes (tickers have no commas): CORE's reader takes the fields as they are.
    options = pa_csv.WriteOptions(include_header=False, quoting_style="none")
    with pa_csv.CSVWriter(partial, source.schema_arrow, write_options=options) as writer:
        for batch in source.iter_batches():
            writer.write_batch(batch)
    partial.rename(path)
    return path


def queries(only: set[str] | None, folder: Path) -> dict[str, Path]:
    """The query files to run, by name: the four shapes (written to
    ``folder``) and CORE's experiment queries, restricted to ``only``."""
    folder.mkdir(parents=True, exist_ok=True)
    chosen: dict[str, Path] = {}
    for name in SHAPES:
        text = QUERIES[name].replace("SELECT * WHERE", "SELECT * FROM S WHERE").replace("[t]", "[stock_time]")
        path = folder / f"{name}.ceql"
        path.write_text(text + "\n")
        chosen[name] = path
    for path in sorted([*EXPERIMENTS.glob("q*.ceql"), *EXPERIMENTS.glob("other-q*.ceql")]):
        if path.stem not in LEFT_OUT:
            chosen[path.stem] = path
    return {name: path for name, path in chosen.items() if only is None or name in only}


# ---------------------------------------------------------------- processes


@dataclass(frozen=True)
class Run:
    """One child process: wall seconds, CPU seconds (user + system), peak
    RSS, exit code, and why it was stopped (timeout, memory), if it was."""

    seconds: float
    cpu_seconds: float
    peak_rss_mb: float
    returncode: int
    stopped: str | None


def run_process(
    command: list[str],
    stdout: Path,
    *,
    timeout: float,
    max_rss_mb: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> Run:
    """Run ``command`` with stdout to a file; stop it past ``timeout``
    seconds or ``max_rss_mb`` of resident memory (polled every 0.1 s).

    The peak RSS is the child's own high-water mark (``VmHWM``, polled):
    ``wait4``'s ``ru_maxrss`` keeps, across ``exec``, the RSS of the forked
    copy of this process, so a child of a large parent reports the parent's
    size."""
    stopped: list[str] = []
    peak = [0.0]
    with stdout.open("wb") as out, stdout.with_suffix(".err").open("wb") as err:
        began = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err, cwd=cwd, env=env)
        done = threading.Event()

        def watch() -> None:
            status = Path(f"/proc/{child.pid}/status")
            while not done.wait(0.1):
                peak[0] = max(peak[0], _rss_mb(status, "VmHWM:"))
                if time.perf_counter() - began > timeout:
                    stopped.append(f"timeout after {timeout:.0f} s")
                elif _rss_mb(status) > max_rss_mb:
                    stopped.append(f"resident memory over {max_rss_mb:.0f} MB")
                else:
                    continue
                child.kill()
                return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - began
        done.set()
        watcher.join()
        child.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return Run(seconds, cpu, peak[0] or usage.ru_maxrss / 1024, child.returncode, stopped[0] if stopped else None)


def _rss_mb(status: Path, field: str = "VmRSS:") -> float:
    try:
        for line in status.read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    except OSError:  # the process is gone, or no /proc here
        pass
    return 0.0


def _lines(path: Path) -> int:
    count = 0
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            count += block.count(b"\n")
    return count


def _failure(run: Run, err: Path) -> str | None:
    if run.stopped:
        return run.stopped
    if run.returncode != 0:
        lines = err.read_text(errors="replace").strip().splitlines()
        return f"exit {run.returncode}: {lines[-1] if lines else 'no message'}"
    return None


# ---------------------------------------------------------------- the two engines


def pycer_python(explicit: str | None) -> tuple[Path | None, str]:
    """pycer's interpreter (its virtual environment made and pycer installed
    on first use), or None and the reason it cannot be had."""
    python = PYCER_VENV / "bin" / "python"
    if python.exists() and _has_pycer(python):
        return python, f"pycer from {PYCER_VENV}"
    base = _python313(explicit)
    if base is None:
        return None, "no working python3.13 found (pycer is built for Python 3.13 only); give one with --pycer-python"
    made = subprocess.run([base, "-m", "venv", "--clear", str(PYCER_VENV)], capture_output=True, text=True)
    if made.returncode != 0:
        return None, f"cannot make pycer's virtual environment: {made.stderr.strip()[-300:]}"
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q", "pycer"], capture_output=True, text=True)
    if installed.returncode != 0 or not _has_pycer(python):
        return None, f"cannot install pycer: {installed.stderr.strip()[-300:]}"
    return python, f"pycer installed into {PYCER_VENV}"


def _python313(explicit: str | None) -> str | None:
    """The first Python 3.13 that runs: the one given, else ``python3.13`` on
    the path, else pyenv's (whose shim on the path may refuse to run it)."""
    found = shutil.which("python3.13")
    pyenv = sorted((Path.home() / ".pyenv" / "versions").glob("3.13*/bin/python3.13"))
    candidates = [explicit] if explicit else [*([found] if found else []), *map(str, pyenv)]
    for python in candidates:
        try:
            probe = subprocess.run(
                [python, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True
            )
        except OSError:
            continue
        if probe.stdout.strip() == "(3, 13)":
            return python
    return None


def _has_pycer(python: Path) -> bool:
    return subprocess.run([str(python), "-c", "import pycer"], capture_output=True).returncode == 0


def run_pycer(
    python: Path, query: Path, events: Path, work: Path, *, timeout: float, max_rss_mb: float
) -> dict[str, Any]:
    out = work / "pycer.json"
    # pycer writes a log folder into its working directory: keep it in the scratch folder
    command = [str(python), str(HERE / "pycer_worker.py"), str(SCHEMA), str(query), str(events)]
    for _ in range(PORT_TRIES):
        run = run_process(command, out, timeout=timeout, max_rss_mb=max_rss_mb, cwd=work)
        failure = _failure(run, out.with_suffix(".err"))
        if not (failure and "Address already in use" in failure):
            break
        time.sleep(PORT_WAIT)  # another pycer holds its fixed port (on a shared machine): wait for it
    else:
        failure = f"{failure} (pycer's server port stayed taken for {PORT_TRIES * PORT_WAIT} s)"
    if failure:
        return {"failed": failure}
    figures: dict[str, Any] = json.loads(out.read_text())
    figures["seconds"] = figures["send_seconds"] + figures["output_seconds"]
    figures["cpu_seconds"] = figures["send_cpu_seconds"] + figures["output_cpu_seconds"]
    figures["peak_rss_mb"] = figures.pop("peak_rss_kb") / 1024
    return figures


def run_sharp(query: Path, events: Path, work: Path, *, timeout: float, max_rss_mb: float) -> dict[str, Any]:
    cli = Path(sys.executable).parent / "sharp-cer"
    out = work / "sharp.jsonl"
    command = [str(cli), "match", "--schema", str(SCHEMA), "--query", str(query), "--events", str(events)]
    # as an installed package starts: from bytecode (the first run caches it)
    run = run_process(command, out, timeout=timeout, max_rss_mb=max_rss_mb, env=installed_env(work / "bytecode"))
    failure = _failure(run, out.with_suffix(".err"))
    if failure:
        return {"failed": failure, "peak_rss_mb": run.peak_rss_mb}
    matches = _lines(out)
    out.unlink()  # it can be large
    return {"matches": matches, "seconds": run.seconds, "cpu_seconds": run.cpu_seconds, "peak_rss_mb": run.peak_rss_mb}


def time_load(reader: str, events: Path) -> dict[str, Any]:
    """Load ``events`` once with ``reader`` (in this process, its modules
    imported before the clock starts, as pyarrow's are): seconds, rows."""
    from sharp_cer.events.loaders import iter_csv
    from sharp_cer.language import Schema

    schema = Schema.parse(SCHEMA.read_text(), str(SCHEMA))
    began = time.perf_counter()
    if reader == "pyarrow":
        rows = pa_csv.read_csv(events, pa_csv.ReadOptions(autogenerate_column_names=True)).num_rows
    else:
        # checked batches as `match` reads them (a table in chunks, as pyarrow's read gives one)
        rows = sum(len(batch) for batch, _ in iter_csv(str(events), schema))
    seconds = time.perf_counter() - began
    return {"seconds": seconds, "rows": rows, "peak_rss_mb": _rss_mb(Path("/proc/self/status"), "VmHWM:")}


def run_load(reader: str, events: Path, work: Path, *, timeout: float, max_rss_mb: float) -> dict[str, Any]:
    out = work / f"load-{reader}.json"
    command = [sys.executable, str(Path(__file__).resolve()), "--time-load", reader, str(events)]
    run = run_process(command, out, timeout=timeout, max_rss_mb=max_rss_mb)
    failure = _failure(run, out.with_suffix(".err"))
    return {"failed": failure} if failure else json.loads(out.read_text())


# ---------------------------------------------------------------- medians and tables


def median_of(runs: list[dict[str, Any]], timing: str = "seconds") -> dict[str, Any]:
    """The runs' medians of timings and memory, their counts (a list when
    runs disagree; counts may be lists themselves), every run's ``timing``;
    or the first failure.

    >>> median_of([{"seconds": 3.0, "matches": 5}, {"seconds": 1.0, "matches": 5}, {"seconds": 2.0, "matches": 5}])
    {'seconds': 2.0, 'matches': 5, 'runs': [3.0, 1.0, 2.0]}
    >>> median_of([{"cpu_seconds": 3.0, "matches": 5}, {"cpu_seconds": 1.0, "matches": 6}], "cpu_seconds")
    {'cpu_seconds': 2.0, 'matches': [5, 6], 'runs': [3.0, 1.0]}
    >>> median_of([{"seconds": 1.0, "matches": 5}, {"failed": "timeout after 9 s"}])
    {'failed': 'timeout after 9 s'}
    """
    failed = [r for r in runs if "failed" in r]
    if failed:
        return failed[0]
    merged: dict[str, Any] = {}
    for key, first in runs[0].items():
        values = [r[key] for r in runs]
        if isinstance(first, float):
            merged[key] = statistics.median(values)
        else:
            distinct = sorted(set(map(json.dumps, values)))
            merged[key] = json.loads(distinct[0]) if len(distinct) == 1 else [json.loads(v) for v in distinct]
    merged["runs"] = [r[timing] for r in runs]
    return merged


def compare(name: str, text: str, pycer: dict[str, Any] | None, sharp: dict[str, Any]) -> dict[str, Any]:
    """The row of one query: both engines' figures, the CPU ratio (sharp-cer
    process over pycer engine: the issue's measure, steady on a shared
    machine where wall time swings), the wall ratio and whether the counts
    agree."""
    row: dict[str, Any] = {
        "query": name,
        "pycer": pycer,
        "sharp_cer": sharp,
        "ratio": None,
        "wall_ratio": None,
        "equal_counts": None,
    }
    if pycer and "cpu_seconds" in pycer and "cpu_seconds" in sharp:
        row["ratio"] = sharp["cpu_seconds"] / pycer["cpu_seconds"]
        row["wall_ratio"] = sharp["seconds"] / pycer["seconds"]
    if pycer and "matches" in pycer and "matches" in sharp:
        row["equal_counts"] = pycer["matches"] == sharp["matches"]
        if not row["equal_counts"]:
            row["difference"] = difference(text, pycer, sharp)
    return row


def difference(text: str, pycer: dict[str, Any], sharp: dict[str, Any]) -> str:
    """Why two counts differ, if by design.

    >>> difference("SELECT LAST * FROM S WHERE A", {"matches": 3, "distinct_matches": 3}, {"matches": 1})
    'pycer ignores selection strategies (it outputs every match, as ALL)'
    >>> difference("SELECT * FROM S WHERE A", {"matches": 3, "distinct_matches": 3}, {"matches": 1})
    'not explained'
    """
    if pycer.get("distinct_matches") == sharp["matches"]:
        return DIFFER_BY_DESIGN["valuations"].format(distinct=pycer["distinct_matches"])
    if any(s in " ".join(text.upper().split()) for s in STRATEGIES):
        return DIFFER_BY_DESIGN["strategy"]
    if "CONSUME BY ANY" in " ".join(text.upper().split()) and pycer["matches"] > sharp["matches"]:
        return DIFFER_BY_DESIGN["CONSUME BY ANY"]
    return "not explained"


def _cell(figures: dict[str, Any] | None, key: str, fmt: str) -> str:
    if figures is None:
        return "-"
    if "failed" in figures:
        return f"failed: {figures['failed']}" if key == "cpu_seconds" else "-"
    return format(figures[key], fmt) if key in figures else "-"


def table(size: int, rows: list[dict[str, Any]]) -> str:
    lines = [
        f"\n### {size:,} events\n",
        "| query | pycer matches | sharp-cer matches | equal | pycer engine CPU s | sharp-cer match CPU s "
        "| CPU ratio | wall ratio | sharp-cer peak RSS MB |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        equal = {True: "yes", False: f"no ({r.get('difference')})", None: "-"}[r["equal_counts"]]
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        wall = "-" if r.get("wall_ratio") is None else f"{r['wall_ratio']:.2f}x"
        lines.append(
            f"| {r['query']} | {_cell(r['pycer'], 'matches', ',')} | {_cell(r['sharp_cer'], 'matches', ',')} "
            f"| {equal} | {_cell(r['pycer'], 'cpu_seconds', '.2f')} | {_cell(r['sharp_cer'], 'cpu_seconds', '.2f')} "
            f"| {ratio} | {wall} | {_cell(r['sharp_cer'], 'peak_rss_mb', '.0f')} |"
        )
    return "\n".join(lines)


def load_table(loads: dict[int, dict[str, Any]]) -> str:
    lines = [
        "\n### Loading alone\n",
        "| events | pyarrow read_csv s | sharp-cer iter_csv s | speed vs pyarrow | sharp-cer load peak RSS MB |",
        "|---:|---:|---:|---:|---:|",
    ]
    for size, load in loads.items():
        arrow, sharp = load["pyarrow"], load["sharp_cer"]
        speed = f"{arrow['seconds'] / sharp['seconds']:.2f}x" if "seconds" in arrow and "seconds" in sharp else "-"
        lines.append(
            f"| {size:,} | {_cell(arrow, 'seconds', '.2f')} | {_cell(sharp, 'seconds', '.2f')} | {speed} "
            f"| {_cell(sharp, 'peak_rss_mb', '.0f')} |"
        )
    return "\n".join(lines)


def memory_table(results: dict[int, list[dict[str, Any]]]) -> str:
    """sharp-cer's peak RSS on the largest tape over the smallest, per query."""
    small, large = min(results), max(results)
    lines = [
        f"\n### Peak RSS, {large:,} against {small:,} events\n",
        f"| query | {small:,} MB | {large:,} MB | ratio |",
        "|---|---:|---:|---:|",
    ]
    for before, after in zip(results[small], results[large], strict=True):
        a, b = before["sharp_cer"].get("peak_rss_mb"), after["sharp_cer"].get("peak_rss_mb")
        over = " (stopped: " + after["sharp_cer"]["failed"] + ")" if "failed" in after["sharp_cer"] else ""
        ratio = f"{b / a:.2f}x" if a and b else "-"
        lines.append(f"| {before['query']} | {a or 0:.0f} | {b or 0:.0f}{over} | {ratio} |")
    return "\n".join(lines)


def plot(path: Path, results: dict[int, list[dict[str, Any]]]) -> None:
    """CPU seconds per query, pycer's engine beside sharp-cer's whole process
    (the ratio above, or why a run was stopped), one panel per tape size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 1, figsize=(10, 3.8 * len(results)), squeeze=False)
    for ax, (size, rows) in zip(axes[:, 0], results.items(), strict=True):
        xs = range(len(rows))
        for offset, key, label in ((-0.2, "pycer", "pycer engine"), (0.2, "sharp_cer", "sharp-cer match process")):
            ys = [(r[key] or {}).get("cpu_seconds", 0.0) for r in rows]
            ax.bar([x + offset for x in xs], ys, width=0.4, label=label)
        for x, r in zip(xs, rows, strict=True):
            sharp = r["sharp_cer"]
            note = f"{r['ratio']:.1f}x" if r["ratio"] else ("stopped" if "failed" in sharp else "")
            ax.annotate(note, (x + 0.2, sharp.get("cpu_seconds", 0.0)), ha="center", va="bottom", fontsize=8)
        ax.set_xticks(list(xs), [r["query"] for r in rows], rotation=40, ha="right")
        ax.set_ylabel("CPU seconds (median)")
        ax.set_title(f"{size:,} CORE-style stock events (CSV); sharp-cer / pycer above the bars")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, action="append", help="tape size (repeatable; default 1M and 10M)")
    parser.add_argument("--runs", type=int, default=3, help="runs per query and engine (the median is kept)")
    parser.add_argument("--quick", action="store_true", help="100,000 events, one run")
    parser.add_argument("--queries", help="comma-separated query names (default: all)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before a run is stopped")
    parser.add_argument("--max-rss-mb", type=float, default=6000.0, help="resident memory at which a run is stopped")
    parser.add_argument("--no-pycer", action="store_true", help="run sharp-cer only")
    parser.add_argument("--pycer-python", help="a Python 3.13 to make pycer's virtual environment with")
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder of the JSON and PNG")
    parser.add_argument("--name", help="file name of the JSON and PNG (default: vs_core, or vs_core_quick)")
    parser.add_argument("--time-load", nargs=2, metavar=("READER", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.time_load:
        print(json.dumps(time_load(args.time_load[0], Path(args.time_load[1]))))
        return
    sizes = [100_000] if args.quick else (args.events or [1_000_000, 10_000_000])
    runs = 1 if args.quick else args.runs
    limits = {"timeout": args.timeout, "max_rss_mb": args.max_rss_mb}
    work = DATA / "vs-core" / str(os.getpid())  # scratch: query files, outputs, pycer's logs
    chosen = queries(set(args.queries.split(",")) if args.queries else None, work)
    python, how = (None, "--no-pycer given") if args.no_pycer else pycer_python(args.pycer_python)
    print(how if python else f"pycer skipped: {how}", file=sys.stderr)
    name = args.name or ("vs_core_quick" if args.quick else "vs_core")
    args.results.mkdir(parents=True, exist_ok=True)
    results: dict[int, list[dict[str, Any]]] = {}
    loads: dict[int, dict[str, Any]] = {}
    document = {
        "command": " ".join(["python", "benchmarks/bench_vs_core.py", *sys.argv[1:]]),
        "runs": runs,
        "pycer": how,
        "schema": str(SCHEMA.relative_to(HERE.parent)),
        "load_average_before": os.getloadavg(),
        "results": results,
        "loading": loads,
        "left_out": LEFT_OUT,
        "differ_by_design": DIFFER_BY_DESIGN,
    }

    def save() -> None:  # after every query, so a stopped run keeps what it measured
        (args.results / f"{name}.json").write_text(json.dumps(document, indent=2) + "\n")

    for size in sizes:
        events = core_csv(size)
        results[size] = []
        for query_name, query in chosen.items():
            pycer_runs: list[dict[str, Any]] = []
            sharp_runs: list[dict[str, Any]] = []
            for _ in range(runs):  # the engines take turns, so both see the same machine
                # a run stopped (time, memory) or failed is not tried again
                if python is not None and not any("failed" in r for r in pycer_runs):
                    pycer_runs.append(run_pycer(python, query, events, work, **limits))
                if not any("failed" in r for r in sharp_runs):
                    sharp_runs.append(run_sharp(query, events, work, **limits))
            pycer = median_of(pycer_runs, "cpu_seconds") if pycer_runs else None
            row = compare(query_name, query.read_text(), pycer, median_of(sharp_runs, "cpu_seconds"))
            print(json.dumps({"events": size, **row}), file=sys.stderr)
            results[size].append(row)
            save()
        loads[size] = {
            reader: median_of([run_load(reader, events, work, **limits) for _ in range(runs)])
            for reader in ("pyarrow", "sharp_cer")
        }
        save()
    document["load_average_after"] = os.getloadavg()
    save()
    print(f"# sharp-cer vs CORE's C++ engine (pycer); median of {runs} run(s); {how}")
    print(f"load average before / after: {document['load_average_before']} / {document['load_average_after']}")
    for size, rows in results.items():
        print(table(size, rows))
    if len(results) > 1:
        print(memory_table(results))
    print(load_table(loads))
    print("\nLeft out: " + "; ".join(f"{left}: {why}" for left, why in LEFT_OUT.items()))
    plot(args.results / f"{name}.png", results)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
