"""How fast the language layer parses and checks queries.

Generates N varied, valid queries over a stock schema (seeded), then times
parsing alone and parsing plus checking. Target (issue 2): 10,000 queries
parsed and checked in under 5 seconds. Then loads the same queries as one
workload (``parse_workload``: TOML, each query located in the text for its
errors), which must be linear too (issue 33): under 5 seconds for 10,000.

    python benchmarks/bench_check.py [--queries 10000] [--quick]

Prints a table and writes benchmarks/results/check_speed.json.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from sharp_cer.language import Schema, check_query, parse_query, parse_workload
from sharp_cer.language.source import Source

SCHEMA_TEXT = """CREATE STREAM Stock {
         EVENT BUY { id:int, name:string, volume:int, price:double, t:primary_time },
         EVENT SELL { id:int, name:string, volume:int, price:double, t:primary_time }
       }"""
SCHEMA = Schema.parse(SCHEMA_TEXT)
TICKERS = ["MSFT", "INTC", "AMZN", "ORCL", "CSCO", "AMAT", "QQQ", "RIMM"]


def make_query(rng: random.Random, index: int) -> str:
    """One valid query, varied in length, operators, filters and clauses."""
    length = rng.randint(2, 6)
    parts = []
    filters = []
    for i in range(length):
        kind = rng.choice(["BUY", "SELL", "(BUY OR SELL)"])
        var = f"v{i}"
        kleene = i not in (0, length - 1) and rng.random() < 0.2
        parts.append(f"{kind}+ AS {var}" if kleene else f"{kind} AS {var}")
        roll = rng.random()
        if roll < 0.4:
            filters.append(f"{var}[name = '{rng.choice(TICKERS)}']")
        elif roll < 0.6:
            filters.append(f"{var}[price > {rng.randint(5, 40)} AND volume IN {{100..{rng.randint(200, 1000)}}}]")
        elif roll < 0.7 and not kleene and i > 0 and not parts[i - 1].startswith(("BUY+", "SELL+", "(BUY OR SELL)+")):
            filters.append(f"v{i - 1}.price < {var}.price * 1.05")
        if kleene and rng.random() < 0.5:
            filters.append(f"avg({var}.price) > {rng.randint(5, 40)}")
    link = " ; " if rng.random() < 0.9 else " : "
    pattern = link.join(parts)
    where = pattern + (" FILTER " + " AND ".join(filters) if filters else "")
    clauses = []
    if rng.random() < 0.5:
        clauses.append("PARTITION BY [name]")
    clauses.append(
        rng.choice(
            [
                f"WITHIN {rng.randint(10, 500)} EVENTS",
                f"WITHIN {rng.randint(1, 60)} SECONDS",
                f"WITHIN {rng.randint(10, 100)} [t]",
            ]
        )
    )
    strategy = rng.choice(["", "", "", "ANY ", "NEXT ", "MAX "])
    return f"SELECT {strategy}* FROM Stock WHERE {where} {' '.join(clauses)}"


def workload_text(texts: list[str]) -> str:
    """The queries as one workload's TOML, each text between triple quotes
    as README writes them, with a tenant and a bound on some."""
    lines = ["[workload]", 'name = "bench"', 'schema = """', SCHEMA_TEXT, '"""', ""]
    for i, text in enumerate(texts):
        lines += ["[[query]]", f'name = "q{i}"', f'tenant = "t{i % 7}"', "text = '''", text, "'''"]
        if i % 3 == 0:
            lines.append('latency_bound = "5ms"')
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="1,000 queries")
    args = parser.parse_args()
    n = 1_000 if args.quick else args.queries
    rng = random.Random(7)
    texts = [make_query(rng, i) for i in range(n)]
    parse_query(texts[0])  # build the parser once, outside the timing

    start = time.perf_counter()
    for text in texts:
        parse_query(text)
    parse_seconds = time.perf_counter() - start

    start = time.perf_counter()
    for i, text in enumerate(texts):
        source = Source(text, f"q{i}")
        check_query(parse_query(text, source=source), SCHEMA, source)
    total_seconds = time.perf_counter() - start

    workload = workload_text(texts)
    start = time.perf_counter()
    loaded = parse_workload(workload)
    workload_seconds = time.perf_counter() - start
    assert len(loaded.queries) == n

    tokens = sum(len(t.split()) for t in texts)
    rows = {
        "queries": n,
        "mean_chars": round(sum(map(len, texts)) / n, 1),
        "parse_seconds": round(parse_seconds, 3),
        "parse_and_check_seconds": round(total_seconds, 3),
        "queries_per_second": round(n / total_seconds),
        "words_per_second": round(tokens / total_seconds),
        "target_seconds_for_10000": 5.0,
        "projected_seconds_for_10000": round(total_seconds * 10_000 / n, 3),
        "workload_seconds": round(workload_seconds, 3),
        "workload_target_seconds_for_10000": 5.0,
    }
    width = max(map(len, rows))
    for key, value in rows.items():
        print(f"{key:<{width}}  {value}")
    out = Path(__file__).parent / "results" / "check_speed.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
