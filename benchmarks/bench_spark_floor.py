"""The least a Spark job with Python workers costs on this machine: the
floor under every ``sharp-cer run`` (issue 38's batch target is judged
against it).

Each run is a fresh process that starts a session as sharp-cer starts it
(``sharp_cer.spark.session.spark_session``: the lean JVM by default, or
the JVM's defaults with ``--jvm-defaults``), runs one job (``range`` of
10 rows through one Python UDF, so a Python worker starts and answers),
and stops. The CPU is every process of the tree (driver, JVM, Python
workers) from ``/proc`` (``spark_cpu``).

    python benchmarks/bench_spark_floor.py [--repeat 3] [--master 'local[1]'] [--jvm-defaults]

Prints one line per run and the median; writes results/spark_floor.json
(``spark_floor_jvm_defaults.json`` with ``--jvm-defaults``).

With ``--shape EVENTS,SMALL``, the floor per event instead: the path every
event of a ``run`` takes, with no work on it. A fresh process per size
reads a CSV of stock_trading's events as text, passes each partition's
lines through a Python task (``mapInArrow``: the lines back, with a key
computed by Arrow), shuffles them by that key into the session's shuffle
partitions, passes each through a second Python task (a count back) and
writes the counts to Spark's ``noop`` sink; ``sharp-cer match`` runs over
the same file. Between the two sizes, the marginal CPU per event (the
fixed start cancelled out) of the shape and of ``match``: whatever
``run`` does, it costs at least the shape's on top of the engine's work.

    python benchmarks/bench_spark_floor.py --shape 1000000,200000 [--repeat 2]

writes results/spark_floor_shape.json (``spark_floor_shape_local2.json`` with ``--master 'local[2]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from spark_cpu import ProcessTree  # the script's folder is on the path

HERE = Path(__file__).resolve().parent
JOB = """
import sys
import pyspark.sql.functions as F
from sharp_cer.spark.session import spark_session
conf = dict(arg.split("=", 1) for arg in sys.argv[2:])
spark = spark_session(sys.argv[1], **conf)
rows = spark.range(10).select(F.udf(lambda x: x + 1, "long")("id")).collect()
assert len(rows) == 10
spark.stop()
"""
#: the path of a ``run``'s events with no work on it (``--shape``)
SHAPE = """
import sys
import pyarrow as pa
import pyarrow.compute as pc
from sharp_cer.spark.session import spark_session


def keyed(batches):
    for batch in batches:  # each line and a key from it, as the routing task gives each event its key group
        lines = batch.column(0)
        yield pa.record_batch([lines, pc.cast(pc.utf8_length(lines), pa.int64())], names=["line", "key"])


def counted(batches):
    yield pa.record_batch([pa.array([sum(b.num_rows for b in batches)], pa.int64())], names=["n"])


spark = spark_session(sys.argv[1])
lines = spark.read.text(sys.argv[2])
routed = lines.mapInArrow(keyed, "line string, key bigint").repartition("key")
routed.mapInArrow(counted, "n bigint").write.format("noop").mode("overwrite").save()
spark.stop()
"""
#: the JVM's own defaults in place of sharp-cer's lean start
JVM_DEFAULTS = ("spark.driver.extraJavaOptions=-XX:+UseG1GC", "spark.ui.enabled=true")


def timed(argv: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """``python ARGV`` in a fresh process: wall and CPU seconds of its whole tree."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", **(env or {})}
    began = time.perf_counter()
    child = subprocess.Popen([sys.executable, *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with ProcessTree(child.pid) as tree:
        child.wait()
        time.sleep(1.0)  # the JVM outlives its driver by a moment
        tree.sample()
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:3])} failed ({child.returncode})")
    return {"wall_s": round(time.perf_counter() - began - 1.0, 2), "cpu_s": round(tree.cpu_s, 2)}


def one_run(master: str, conf: tuple[str, ...]) -> dict[str, float]:
    """One session, one job, stop: wall and CPU seconds of the whole process tree."""
    # with the JVM's defaults, the launcher's JVM at its defaults too
    return timed(["-c", JOB, master, *conf], {"SPARK_LAUNCHER_OPTS": "-XX:+UseG1GC"} if conf else None)


def shape(sizes: list[int], master: str, repeat: int) -> dict[str, Any]:
    """The ``--shape`` experiment (see the module docstring)."""
    from bench_spark import timed_command

    from sharp_cer.events.generators import generate, write_core_csv
    from sharp_cer.language import load_workload

    config = str(HERE.parent / "configs" / "stock_trading.toml")
    workload = load_workload(config)
    types = {e.name: list(e.attributes) for e in workload.schema.event_types()}
    result: dict[str, Any] = {"master": master, "sizes": sizes, "load_before": os.getloadavg()}
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for events in sizes:
            path = Path(tmp) / f"events_{events}.csv"
            write_core_csv(generate(workload.generator or "", events, seed=0), types, path)
            for _ in range(repeat):  # alternately, so that the machine's drift falls on both
                runs.append({"what": "shape", "events": events, **timed(["-c", SHAPE, master, str(path)])})
                print(f"{events:,} events, shape: {runs[-1]}; load {os.getloadavg()[0]:.1f}", flush=True)
                argv = ["match", config, "--events", str(path), "--out", str(Path(tmp) / "m.jsonl")]
                runs.append({"what": "match", "events": events, **timed_command(argv, Path.cwd())})
                print(f"{events:,} events, match: {runs[-1]}; load {os.getloadavg()[0]:.1f}", flush=True)
    result["runs"] = runs
    big, small = max(sizes), min(sizes)

    def per_event(what: str) -> float:
        cpu = {n: statistics.median(r["cpu_s"] for r in runs if r["what"] == what and r["events"] == n)
               for n in (big, small)}  # fmt: skip
        return (cpu[big] - cpu[small]) / (big - small) * 1e6

    result["marginal_us_per_event"] = {what: round(per_event(what), 2) for what in ("shape", "match")}
    result["shape_over_match"] = round(per_event("shape") / per_event("match"), 2)
    result["load_after"] = os.getloadavg()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[1]")
    parser.add_argument("--jvm-defaults", action="store_true", help="the JVM's defaults, not sharp-cer's lean start")
    parser.add_argument("--shape", metavar="EVENTS,SMALL", help="the floor per event, at two sizes, against match")
    args = parser.parse_args()
    if args.shape:
        found = shape([int(n) for n in args.shape.split(",")], args.master, args.repeat)
        print(json.dumps({k: found[k] for k in ("marginal_us_per_event", "shape_over_match")}))
        name = "spark_floor_shape" + (
            "" if args.master == "local[1]" else "_" + args.master.strip("]").replace("[", "")
        )
        (HERE / "results" / f"{name}.json").write_text(json.dumps(found, indent=2) + "\n")
        return
    conf = JVM_DEFAULTS if args.jvm_defaults else ()
    result: dict[str, object] = {"master": args.master, "conf": list(conf), "load_before": os.getloadavg()}
    runs = []
    for _ in range(args.repeat):
        runs.append(one_run(args.master, conf))
        print(f"{args.master}, {'JVM defaults' if conf else 'lean'}: {runs[-1]}", flush=True)
    result["runs"] = runs
    result["median_cpu_s"] = statistics.median(r["cpu_s"] for r in runs)
    result["load_after"] = os.getloadavg()
    print(f"median CPU s: {result['median_cpu_s']}")
    name = "spark_floor_jvm_defaults" if conf else "spark_floor"
    (HERE / "results" / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
