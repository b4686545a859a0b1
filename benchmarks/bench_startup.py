"""Start-up of ``sharp-cer match``: the CPU seconds of a whole process that
matches a workload over a 10-event file, so nearly all of it is imports,
loading the workload and the engine's set-up.

    python benchmarks/bench_startup.py --repeat 15
    python benchmarks/bench_startup.py --repeat 15 --no-bytecode

By default the children run from cached bytecode, as an installed package
does (``core_tape.installed_env``: pip compiles a package's modules when it
installs it; the first run here fills the cache and is not counted).
``--no-bytecode`` keeps ``PYTHONDONTWRITEBYTECODE=1``, so each child
compiles every module it imports, as a run from a source tree in such a
sandbox does. Each row is the median (and the spread) of ``--repeat`` runs,
CPU seconds of the child (user + sys, from ``wait4``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_workloads import events_file as generated  # the script's folder is on the path
from core_tape import DATA, installed_env

ROOT = Path(__file__).resolve().parent.parent
_MAIN = "import sys; from sharp_cer.cli import main; sys.exit(main())"  # as bench_dense runs it
WORKLOADS = ("stock_trading", "card_fraud", "iot_sensors")


def events_file(workload: str, folder: Path, rows: int = 10) -> Path:
    """The first ``rows`` events of the workload's generated bench data (or,
    without it, of a small generated file)."""
    path = folder / f"{workload}-first-{rows}.csv"
    source = DATA / "dense" / f"{workload}-200000.csv"
    if not source.exists():
        source = generated(workload, rows, folder)
    with source.open() as src, path.open("w") as out:
        for _, line in zip(range(rows + 1), src, strict=False):
            out.write(line)
    return path


def cpu_of(command: list[str], env: dict[str, str], cwd: Path) -> float:
    """The CPU seconds (user + sys) of one run of ``command`` in ``cwd``
    (``python -c`` puts its folder first on the path: run in a source tree,
    it would import that tree's sharp_cer, not the interpreter's)."""
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    _, status, usage = os.wait4(child.pid, 0)
    if status != 0:
        raise SystemExit(f"{' '.join(command)} failed ({status})")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=15, help="runs per workload (median reported)")
    ap.add_argument("--no-bytecode", action="store_true", help="children compile every module (no .pyc)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated example workloads")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        work = Path(tmp)
        env = installed_env(work / "bytecode")
        if args.no_bytecode:
            env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
            env.pop("PYTHONPYCACHEPREFIX", None)
        print(f"load: {os.getloadavg()[0]:.2f}; bytecode: {'none' if args.no_bytecode else 'cached'}")
        for workload in args.workloads.split(","):
            events = events_file(workload, work)
            command = [sys.executable, "-c", _MAIN, "match", str(ROOT / "configs" / f"{workload}.toml")]
            command += ["--events", str(events), "--out", str(work / "out.jsonl")]
            cpu_of(command, env, work)  # fills the bytecode cache
            runs = sorted(cpu_of(command, env, work) for _ in range(args.repeat))
            print(
                f"{workload:14s} median {statistics.median(runs):.3f} CPU s "
                f"(min {runs[0]:.3f}, max {runs[-1]:.3f}, {len(runs)} runs)"
            )
        print(f"load: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
