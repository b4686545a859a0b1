"""MATCH_RECOGNIZE over a Spark DataFrame: the clause is parsed and checked
on the driver, then each PARTITION BY key's rows go, in ORDER BY order, to
one instance of an Arrow UDTF that runs the in-process matcher over them
(``TABLE(df) PARTITION BY keys ORDER BY keys``). The output has the same
columns and types as the in-process ``sharp_cer.match_recognize``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sharp_cer.recognize.clause_parser import parse_clause
from sharp_cer.recognize.nodes import Clause
from sharp_cer.recognize.run import compile_clause, recognize_table
from sharp_cer.recognize.types import measure_types

from .columns import WHOLE

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def output_schema(clause: Clause, schema: pa.Schema) -> pa.Schema:
    """The result's Arrow schema for input with ``schema``."""
    recognizer = compile_clause(clause, schema.names)
    before, after = recognizer.layout(schema.names)
    fields = [schema.field(n) for n in before]
    fields += [pa.field(m.name, k) for m, k in zip(clause.measures, measure_types(clause, schema), strict=True)]
    fields += [schema.field(n) for n in after]
    return pa.schema(fields)


def match_recognize(df: DataFrame, clause: str | Clause) -> DataFrame:
    """Run a ``MATCH_RECOGNIZE ( ... )`` clause over a Spark DataFrame.

    Errors in the clause (syntax, unknown columns or variables) are raised
    here, before Spark runs anything; errors found on the rows (a skip that
    would not advance) fail the job with the same message.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.functions import arrow_udtf
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    parsed = parse_clause(clause) if isinstance(clause, str) else clause
    arrow_in = to_arrow_schema(df.schema)
    arrow_out = output_schema(parsed, arrow_in)
    names = arrow_in.names
    # A measure of unknown type (always NULL) is a string column on Spark, which has no NULL-typed column.
    arrow_out = pa.schema([f.with_type(pa.string()) if pa.types.is_null(f.type) else f for f in arrow_out])
    spark_out = from_arrow_schema(arrow_out)

    @arrow_udtf(returnType=spark_out)  # type: ignore[arg-type]  # PySpark's stubs expect a function
    class MatchPartition:
        def __init__(self) -> None:
            self.batches: list[pa.RecordBatch] = []

        def eval(self, batch: pa.RecordBatch) -> Any:
            self.batches.append(batch.select(names))
            yield from ()

        def terminate(self) -> Any:
            if not self.batches:
                return
            table = pa.Table.from_batches(self.batches).cast(arrow_in)
            out = recognize_table(table, compile_clause(parsed, names))
            yield from out.cast(arrow_out).to_batches()

    keys = [F.col(f"`{c}`") for c in parsed.partition] or [F.lit(0).alias(WHOLE)]
    order = []
    for key in parsed.order:
        column = F.col(f"`{key.column}`")
        if key.descending:
            order.append(column.desc_nulls_first() if key.nulls_first else column.desc_nulls_last())
        else:
            order.append(column.asc_nulls_first() if key.nulls_first else column.asc_nulls_last())
    table_arg = df.asTable().partitionBy(*keys)
    if order:
        table_arg = table_arg.orderBy(*order)
    udtf: Any = MatchPartition  # arrow_udtf turns the class into a callable over table arguments
    result: DataFrame = udtf(table_arg)
    return result
