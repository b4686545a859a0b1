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
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

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
#: the JVM's own defaults in place of sharp-cer's lean start
JVM_DEFAULTS = ("spark.driver.extraJavaOptions=-XX:+UseG1GC", "spark.ui.enabled=true")


def one_run(master: str, conf: tuple[str, ...]) -> dict[str, float]:
    """One session, one job, stop: wall and CPU seconds of the whole process tree."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    if conf:
        env["SPARK_LAUNCHER_OPTS"] = "-XX:+UseG1GC"  # the launcher's JVM at its defaults too
    began = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", JOB, master, *conf], env=env, stderr=subprocess.DEVNULL)
    with ProcessTree(child.pid) as tree:
        child.wait()
        time.sleep(1.0)  # the JVM outlives its driver by a moment
        tree.sample()
    if child.returncode != 0:
        raise SystemExit(f"the floor job failed ({child.returncode})")
    return {"wall_s": round(time.perf_counter() - began - 1.0, 2), "cpu_s": round(tree.cpu_s, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[1]")
    parser.add_argument("--jvm-defaults", action="store_true", help="the JVM's defaults, not sharp-cer's lean start")
    args = parser.parse_args()
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
