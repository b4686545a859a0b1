"""MATCH_RECOGNIZE on Spark: a sample of the golden cases (every tenth, and
Oracle's ticker examples) gives the sources' rows and the in-process result;
clause errors come from the driver before Spark runs."""

from __future__ import annotations

from typing import Any

import pytest
from recognize_fixtures import Case, as_multiset, load_cases

from sharp_cer.errors import RecognizeError
from sharp_cer.recognize import match_recognize as match_in_process

pytestmark = pytest.mark.spark

CASES = [
    c for i, c in enumerate(load_cases()) if c.expected is not None and c.rows and (i % 10 == 0 or "oracle" in c.id)
]


@pytest.fixture(scope="module")
def spark() -> Any:
    from sharp_cer.spark import spark_session

    session = spark_session("local[2]")
    before = session.conf.get("spark.sql.shuffle.partitions")
    session.conf.set("spark.sql.shuffle.partitions", "2")  # a handful of rows per case: two tasks, not eight
    yield session
    session.conf.set("spark.sql.shuffle.partitions", before)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_on_spark(spark: Any, case: Case) -> None:
    from sharp_cer.spark import match_recognize

    table = case.table()
    out = match_recognize(spark.createDataFrame(table), case.clause)
    local = match_in_process(table, case.clause)
    assert out.columns == local.column_names
    got = [[row[name] for name in case.select] for row in out.collect()]
    assert as_multiset(got) == as_multiset(case.expected or [])
    assert as_multiset([list(r.values()) for r in local.to_pylist()]) == as_multiset([list(r) for r in out.collect()])


def test_clause_errors_come_from_the_driver(spark: Any) -> None:
    from sharp_cer.spark import match_recognize

    df = spark.createDataFrame([(1, 2)], "id long, value long")
    with pytest.raises(RecognizeError, match="no column 'prise'"):
        match_recognize(df, "MATCH_RECOGNIZE (ORDER BY id PATTERN (A+) DEFINE A AS prise > 1)")
