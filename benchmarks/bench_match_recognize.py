"""MATCH_RECOGNIZE throughput on the stock tape (issue 26).

One million rows of the seeded stock generator (20 tickers, prices uniform
in [5, 40)), PARTITION BY the ticker, ORDER BY time and id, three clauses:

- ``v_shape``: Oracle's V (STRT DOWN+ UP+), ONE ROW PER MATCH, SKIP TO LAST UP;
- ``w_shape``: Oracle's W (STRT DOWN+ UP+ DOWN+ UP+), same options;
- ``alt_bounded``: an alternation with bounded quantifiers,
  (STRT (DOWN{2,4} | FLAT) UP{1,3}).

For each: rows/s in-process on the fast path (numpy conditions, the pattern
as a regular expression, column-wise measures), in-process on the general
thread-list matcher (the fast path off), and on Spark ``local[2]``
(``sharp_cer.spark.match_recognize`` over the Parquet file, every output row
computed into Spark's ``noop`` sink, after a warm-up job). Each run's row
count must equal the fast path's. The fast path's time is the best of
``--repeat`` runs (the machine is shared; the best run is the least
disturbed one); the general path and Spark run once. The target: V-shape
in-process at least 300,000 rows/s.

    cd benchmarks && PYTHONPATH=.. ../.venv/bin/python bench_match_recognize.py [--rows N] [--repeat K] [--no-spark]

Prints the table; writes ``results/match_recognize.json``.

``--scans`` times instead the scans of issues 33 and 40 that used to
backtrack or rescan, each at three sizes (time should grow linearly), and
checks the fast path's matches against the general path's at the smallest:

- ``a_plus_b``: ``PATTERN (A+ B)`` where B never holds (fast path, 1M rows at the largest);
- ``a_plus_b_general``: the same on the general matcher;
- ``sum_in_define``: ``A AS SUM(A.v) >= 0`` (general matcher; B never holds);
- ``sum_in_define_matching``: the same where the last row is B: one match of every row, so each
  row's condition reads a running SUM, COUNT, MIN and MAX (kept per thread since issue 40 item 7);
- ``stars``: ``PATTERN (A* A* A* A* A* F)``, F never holds;
- ``optional_1000``: ``(A?){1000}`` with SKIP TO NEXT ROW (ALL ROWS: output grows as rows**2 / 2);
- ``reluctant``, ``reluctant_greedy_b``, ``reluctant_next_row``, ``reluctant_time``: the CEQL-style
  ``PATTERN (S X1*? B+? X2*? S2)`` over the stock tape, with B+, SKIP TO NEXT ROW, a time bound.

    cd benchmarks && PYTHONPATH=.. ../.venv/bin/python bench_match_recognize.py --scans

Writes ``results/match_recognize_scans.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from core_tape import RESULTS

from sharp_cer.events.generators import stocks
from sharp_cer.recognize import match_recognize, parse_clause
from sharp_cer.recognize.run import compile_clause, recognize_table

HEAD = "MATCH_RECOGNIZE (PARTITION BY name ORDER BY t, id "
DEFINE = "DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)"
CLAUSES = {
    "v_shape": HEAD + "MEASURES STRT.t AS start_t, LAST(DOWN.t) AS bottom_t, LAST(UP.t) AS end_t "
    "ONE ROW PER MATCH AFTER MATCH SKIP TO LAST UP PATTERN (STRT DOWN+ UP+) " + DEFINE + ")",
    "w_shape": HEAD + "MEASURES STRT.t AS start_t, LAST(UP.t) AS end_t, COUNT(*) AS rows_in_match "
    "ONE ROW PER MATCH AFTER MATCH SKIP TO LAST UP PATTERN (STRT DOWN+ UP+ DOWN+ UP+) " + DEFINE + ")",
    "alt_bounded": HEAD + "MEASURES FIRST(t) AS start_t, LAST(t) AS end_t, COUNT(DOWN.*) AS downs "
    "ONE ROW PER MATCH PATTERN (STRT (DOWN{2,4} | FLAT) UP{1,3}) "
    + DEFINE
    + ", FLAT AS price BETWEEN PREV(price) - 1 AND PREV(price) + 1)",
}


STOCK = (
    "S AS type = 'SELL' AND name = 'MSFT', B AS type = 'BUY' AND name = 'ORCL', S2 AS type = 'SELL' AND name = 'AMAT'"
)
STOCK_MEASURES = "MEASURES S.id AS s, LAST(B.id) AS b, S2.id AS s2 ONE ROW PER MATCH"
SCANS: dict[str, tuple[str, str, list[int], bool]] = {
    # name: (input: ones or stocks, clause, sizes, fast path)
    "a_plus_b": (
        "ones",
        "MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n PATTERN (A+ B) DEFINE A AS v = 1, B AS v = 2)",
        [250_000, 500_000, 1_000_000],
        True,
    ),
    "a_plus_b_general": (
        "ones",
        "MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n PATTERN (A+ B) DEFINE A AS v = 1, B AS v = 2)",
        [25_000, 50_000, 100_000],
        False,
    ),
    "sum_in_define": (
        "ones",
        "MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n PATTERN (A+ B) DEFINE A AS SUM(A.v) >= 0, B AS v = 2)",
        [25_000, 50_000, 100_000],
        False,
    ),
    "sum_in_define_matching": (
        "ones_then_b",
        "MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n PATTERN (A+ B) DEFINE A AS SUM(A.v) >= 0 "
        "AND COUNT(A.v) >= 0 AND MIN(v) <= MAX(A.v), B AS v = 2)",
        [25_000, 50_000, 100_000],
        False,
    ),
    "stars": (
        "ones",
        "MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n PATTERN (A* A* A* A* A* F) DEFINE A AS v = 1, F AS v = 2)",
        [25_000, 50_000, 100_000],
        True,
    ),
    "optional_1000": (
        "ones",
        "MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n ALL ROWS PER MATCH AFTER MATCH SKIP TO NEXT ROW "
        "PATTERN ((A?){1000}) DEFINE A AS v = 1)",
        [100, 200, 400],
        True,
    ),
    "reluctant": (
        "stocks",
        f"MATCH_RECOGNIZE (ORDER BY t, id {STOCK_MEASURES} PATTERN (S X1*? B+? X2*? S2) DEFINE {STOCK})",
        [20_000, 40_000, 80_000],
        True,
    ),
    "reluctant_greedy_b": (
        "stocks",
        f"MATCH_RECOGNIZE (ORDER BY t, id {STOCK_MEASURES} PATTERN (S X1*? B+ X2*? S2) DEFINE {STOCK})",
        [20_000, 40_000, 80_000],
        True,
    ),
    "reluctant_next_row": (
        "stocks",
        f"MATCH_RECOGNIZE (ORDER BY t, id {STOCK_MEASURES} AFTER MATCH SKIP TO NEXT ROW "
        f"PATTERN (S X1*? B+? X2*? S2) DEFINE {STOCK})",
        [20_000, 40_000, 80_000],
        True,
    ),
    "reluctant_time": (
        "stocks",
        f"MATCH_RECOGNIZE (ORDER BY t, id {STOCK_MEASURES} AFTER MATCH SKIP TO NEXT ROW "
        f"PATTERN (S X1*? B+? X2*? S2) DEFINE {STOCK} AND S2.t - S.t <= 60000000000)",
        [20_000, 40_000, 80_000],
        True,
    ),
}


def scans(only: list[str] | None = None) -> None:
    import numpy as np

    results: dict[str, Any] = {}
    for name, (kind, text, sizes, fast) in SCANS.items():
        if only and name not in only:
            continue
        clause = parse_clause(text)
        results[name] = {}
        for rows in sizes:
            if kind == "ones":
                table = pa.table({"id": np.arange(rows), "v": np.ones(rows, np.int64)})
            elif kind == "ones_then_b":
                v = np.ones(rows, np.int64)
                v[-1] = 2
                table = pa.table({"id": np.arange(rows), "v": v})
            else:
                table = pa.Table.from_pandas(stocks(rows)[["id", "type", "name", "t"]], preserve_index=False)
            recognizer = compile_clause(clause, table.column_names, fast=fast)
            seconds, found = timed(lambda r=recognizer, t=table: recognize_table(t, r).num_rows)
            if rows == sizes[0] and fast:
                general = compile_clause(clause, table.column_names, fast=False)
                assert recognize_table(table, general).num_rows == found, name
            results[name][rows] = {"seconds": seconds, "output_rows": found}
            print(f"{name:<20} {'fast' if fast else 'general':<8} {rows:>9,} rows {found:>7} out {seconds:8.2f} s")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "match_recognize_scans.json"
    if only and path.exists():  # keep the other cases' figures
        results = {**json.loads(path.read_text()), **results}
    path.write_text(json.dumps(results, indent=2))
    print(f"wrote {RESULTS / 'match_recognize_scans.json'}")


def tape(rows: int) -> pa.Table:
    frame = stocks(rows)[["id", "name", "price", "t"]]
    return pa.Table.from_pandas(frame, preserve_index=False)


def timed(run: Any) -> tuple[float, int]:
    start = time.perf_counter()
    count = run()
    return time.perf_counter() - start, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of the fast path; the best is kept")
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--scans", action="store_true", help="time the linear-scan cases at three sizes")
    parser.add_argument("--scan", action="append", help="with --scans: only this case (repeatable)")
    args = parser.parse_args()
    if args.scans:
        scans(args.scan)
        return
    table = tape(args.rows)
    for text in CLAUSES.values():
        match_recognize(table.slice(0, 2000), text)  # warm-up: grammar, regex compilation
    results: dict[str, dict[str, Any]] = {}
    for name, text in CLAUSES.items():
        clause = parse_clause(text)
        runs = [timed(lambda c=clause: match_recognize(table, c).num_rows) for _ in range(args.repeat)]
        fast_s, fast_n = min(runs)
        general = compile_clause(clause, table.column_names, fast=False)
        slow_s, slow_n = timed(lambda g=general: recognize_table(table, g).num_rows)
        assert slow_n == fast_n, (name, slow_n, fast_n)
        results[name] = {"matches": fast_n, "fast_s": fast_s, "fast_runs_s": [r[0] for r in runs], "general_s": slow_s}
        print(f"{name}: {fast_n} matches, fast {fast_s:.2f} s, general {slow_s:.2f} s", flush=True)
    if not args.no_spark:
        spark_runs(table, results)
    rows = args.rows
    print(f"\n{rows:,} rows, 20 tickers")
    print(f"{'clause':<12} {'matches':>8} {'fast rows/s':>12} {'general rows/s':>15} {'spark local[2] rows/s':>22}")
    for name, r in results.items():
        spark = f"{rows / r['spark_s']:>22,.0f}" if "spark_s" in r else f"{'-':>22}"
        print(f"{name:<12} {r['matches']:>8} {rows / r['fast_s']:>12,.0f} {rows / r['general_s']:>15,.0f} {spark}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "match_recognize.json").write_text(json.dumps({"rows": rows, "results": results}, indent=2))
    print(f"wrote {RESULTS / 'match_recognize.json'}")


def spark_runs(table: pa.Table, results: dict[str, dict[str, Any]]) -> None:
    from sharp_cer.spark import match_recognize as on_spark
    from sharp_cer.spark import spark_session

    spark = spark_session("local[2]")
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "tape.parquet")
        pq.write_table(table, path, row_group_size=131_072)
        frame = spark.read.parquet(path)
        on_spark(frame.limit(2000), CLAUSES["v_shape"]).write.format("noop").mode("overwrite").save()  # warm-up
        for name, text in CLAUSES.items():
            out = on_spark(frame, text)
            spark_s, _ = timed(lambda o=out: o.write.format("noop").mode("overwrite").save() or 0)
            count = on_spark(frame, text).count()
            assert count == results[name]["matches"], (name, count, results[name]["matches"])
            results[name]["spark_s"] = spark_s
            print(f"{name}: spark {spark_s:.2f} s", flush=True)


if __name__ == "__main__":
    main()
