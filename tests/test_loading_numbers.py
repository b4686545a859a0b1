"""Number fields parsed by pyarrow's CSV reader (issue 22): a block read
with its numbers typed loads exactly as the same block read as strings and
cast by the loader's patterns (values, dead letters, their raw lines)."""

from __future__ import annotations

from unittest.mock import patch

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.events.csv_blocks import _Numbers
from sharp_cer.events.loaders import collect, iter_csv, load_arrow, load_csv
from sharp_cer.language import Schema

STOCK = Schema.parse(
    "CREATE STREAM S { EVENT BUY { id:int, name:string, price:double, t:primary_time }, "
    "EVENT SELL { id:int, name:string, price:double, t:primary_time } }"
)

# texts arrow and the patterns may read apart: signs, blanks, hexadecimal, exponents, specials, overflow
NUMBER = st.sampled_from(
    ["0", "7", "-3", "+5", " 8", "9 ", "\t4", "", " ", "0x10", "0X1f", "1.50", ".5", "5.", "1e3", "1E-2",
     "nan", "NaN", "inf", "-Infinity", "9223372036854775807", "9223372036854775808", "00012", "1_000", "x"]
)  # fmt: skip
NAME = st.sampled_from(["MSFT", "IBM", "", " ", "a b", "é"])
ROW = st.tuples(st.sampled_from(["BUY", "SELL", "HOLD", "", " SELL"]), NUMBER, NAME, NUMBER, NUMBER).map(
    lambda r: ",".join(r)
)


def _as_strings() -> object:
    return patch.object(_Numbers, "columns", lambda self, data: {})


def _load(text: str, block_bytes: int, lateness: int) -> tuple[object, object]:
    batch, report = collect(
        iter_csv(text, STOCK, header=False, block_bytes=block_bytes, allowed_lateness=lateness), "<csv text>"
    )
    return [batch.row(i) for i in range(len(batch))], report


@settings(max_examples=200, deadline=None)
@given(st.lists(ROW, min_size=1, max_size=40), st.integers(8, 400), st.sampled_from([0, 3]))
def test_typed_blocks_load_as_string_blocks(lines: list[str], block_bytes: int, lateness: int) -> None:
    text = "".join(line + "\n" for line in lines)
    typed = _load(text, block_bytes, lateness)
    with _as_strings():
        plain = _load(text, block_bytes, lateness)
    assert typed == plain


def test_a_dead_letter_keeps_its_number_as_written() -> None:
    text = "BUY,1,a,1.50,10\nSELL,2,b,2.50,4\nBUY,3,c,+3.0,11\n"
    with patch.object(_Numbers, "parsed", autospec=True, side_effect=_Numbers.parsed) as parsed:
        batch, report = load_csv(text, STOCK, header=False)
    assert [c.args[1] for c in parsed.call_args_list] == [True]  # the block was read with its numbers typed
    assert batch.columns["price"].to_list() == [1.5, 3.0]
    (late,) = report.dead_letters
    assert (late.line, late.kind, late.raw) == (2, "late", "SELL,2,b,2.50,4")


def test_text_in_a_number_field_reads_the_block_as_strings() -> None:
    rows = [f"BUY,{i},n,{i / 4},{i}" for i in range(200)]
    rows[150] = "BUY,150,n,0x10,150"
    batch, report = load_csv("\n".join(rows) + "\n", STOCK)
    assert report.accepted == 199 and [d.raw for d in report.dead_letters] == ["BUY,150,n,0x10,150"]
    assert batch.columns["price"].to_list()[:3] == [0.0, 0.25, 0.5]


def test_a_large_batch_of_dictionary_text_columns_converts_in_threads() -> None:
    # a categorical column (a dictionary of strings) is text to parse, like a string column
    n = 60_000  # over the size at which columns are converted in parallel
    table = pa.table(
        {
            "type": pa.array(["BUY"] * n).dictionary_encode(),
            "id": pa.array([str(i % 7) for i in range(n)]).dictionary_encode(),
            "name": pa.array(["n"] * n),
            "price": pa.array([str(i % 4 / 2) for i in range(n)]).dictionary_encode(),
            "t": pa.array([str(i) for i in range(n)]),
        }
    )
    batch, report = load_arrow(table, STOCK)
    assert report.accepted == n
    assert batch.columns["id"].to_list()[:8] == [0, 1, 2, 3, 4, 5, 6, 0]
    assert batch.columns["price"].to_list()[:5] == [0.0, 0.5, 1.0, 1.5, 0.0]
