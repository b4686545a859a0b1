"""The Arrow type of each measure, from the input's schema, so an output
column has one type however many NULLs it holds, in-process and on Spark.

>>> import pyarrow as pa
>>> from sharp_cer.recognize.clause_parser import parse_clause
>>> c = parse_clause("MATCH_RECOGNIZE (MEASURES AVG(A.v) AS a, COUNT(*) AS n, CLASSIFIER() AS c, "
...                  "v + 1 AS w PATTERN (A+))")
>>> [str(t) for t in measure_types(c, pa.schema([("v", pa.int32())]))]
['double', 'int64', 'string', 'int64']
"""

from __future__ import annotations

import pyarrow as pa

from . import nodes

_STRING_FUNCTIONS = ("classifier", "lower", "upper")
_SAME_AS_ARGUMENT = ("prev", "next", "first", "last", "min", "max", "arbitrary", "abs")


def _numeric(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_integer(kind):
        return pa.int64()
    if pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        return pa.float64()
    return kind


def expression_type(node: nodes.Expr, schema: pa.Schema) -> pa.DataType:
    """The Arrow type ``node`` evaluates to (null when it is always NULL)."""
    if isinstance(node, nodes.Literal):
        value = node.value
        if value is None:
            return pa.null()
        if isinstance(value, bool):
            return pa.bool_()
        return pa.int64() if isinstance(value, int) else pa.float64() if isinstance(value, float) else pa.string()
    if isinstance(node, nodes.Column):
        return schema.field(node.name).type
    if isinstance(node, nodes.Call):
        name = node.name
        if name in ("count", "match_number"):
            return pa.int64()
        if name in _STRING_FUNCTIONS:
            return pa.string()
        if name == "avg":
            return pa.float64()
        args = [expression_type(a, schema) for a in node.args if not isinstance(a, nodes.Star)]
        if name == "sum" and args:
            return _numeric(args[0])
        if name == "array_agg" and args:
            return pa.list_(args[0])
        if name == "coalesce":
            return next((a for a in args if a != pa.null()), pa.null())
        if name in _SAME_AS_ARGUMENT and args:
            return args[0]
        return pa.null()
    if isinstance(node, nodes.Unary):
        return pa.bool_() if node.op == "NOT" else expression_type(node.operand, schema)
    if isinstance(node, nodes.Binary):
        if node.op == "||":
            return pa.string()
        if node.op not in ("+", "-", "*", "/", "%"):
            return pa.bool_()
        left, right = expression_type(node.left, schema), expression_type(node.right, schema)
        if pa.types.is_integer(left) and pa.types.is_integer(right):
            return pa.int64()
        if pa.types.is_null(left):
            return _numeric(right)
        if pa.types.is_null(right):
            return _numeric(left)
        return pa.float64()
    if isinstance(node, nodes.Case):
        kinds = [expression_type(v, schema) for _, v in node.whens]
        if node.otherwise is not None:
            kinds.append(expression_type(node.otherwise, schema))
        return next((k for k in kinds if k != pa.null()), pa.null())
    return pa.bool_()  # IS NULL, BETWEEN, IN


def measure_types(clause: nodes.Clause, schema: pa.Schema) -> list[pa.DataType]:
    """The type of each measure of ``clause`` over input with ``schema``."""
    return [expression_type(m.expr, schema) for m in clause.measures]
