"""Block-wise CSV loading (issue 22): a line is a row, blocks of any size
load alike, and every line is accounted for (rows read + lines skipped)."""

from __future__ import annotations

import json
from pathlib import Path
from unittest.mock import patch

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.events.csv_blocks import JOIN_LINES
from sharp_cer.events.loaders import (
    _read_jsonl_block,
    collect,
    iter_csv,
    iter_jsonl,
    iter_parquet,
    load_csv,
    load_jsonl,
    load_parquet,
)
from sharp_cer.language import Schema

STOCK = Schema.parse(
    "CREATE STREAM S { EVENT BUY { id:int, name:string, price:double, volume:int }, EVENT SELL { id:int } }"
)


def test_one_unbalanced_quote_costs_one_line(tmp_path: Path) -> None:
    # the case: row 6 of 1,000 opens a quote it never closes
    rows = [f"BUY,{i},n{i},1.5,{i}" for i in range(1000)]
    rows[5] = 'BUY,5,"n5,1.5,5'
    path = tmp_path / "quote.csv"
    path.write_text("\n".join(rows) + "\n")
    batch, report = load_csv(path, STOCK)
    assert (report.read, report.accepted, report.skipped) == (1000, 999, 0)
    (letter,) = report.dead_letters
    assert (letter.position, letter.line, letter.kind, letter.raw) == (5, 6, "field_count", 'BUY,5,"n5,1.5,5')
    assert batch.columns["id"].to_list() == [i for i in range(1000) if i != 5]


def test_lines_read_are_rows_plus_skipped_lines() -> None:
    text = 'type,id\r\n\r\nSELL,1\r\n   \r\nSELL,x\r\nBUY,2,"a\r\nb",1.5,3\r\nSELL,3\r\n'
    batch, report = load_csv(text, STOCK)
    # lines: header, blank, SELL 1, blank, SELL x, BUY (two lines), SELL 3
    assert (report.read, report.accepted, report.skipped) == (4, 3, 3)
    assert [d.line for d in report.dead_letters] == [5]
    assert batch.columns["name"].to_list() == [None, "a\r\nb", None]
    assert "3 lines skipped" in report.summary()


def test_hexadecimal_and_signed_ints_read_as_the_patterns_say() -> None:
    batch, report = load_csv("SELL,0x10\nSELL,+5\nSELL,-7\nSELL, 8 \n", STOCK)
    assert batch.columns["id"].to_list() == [5, -7, 8]
    assert [(d.line, d.found) for d in report.dead_letters] == [(1, "'0x10'")]


def test_many_rows_of_few_names_keep_their_values() -> None:
    names = ["MSFT", "", "IBM", "ORCL"]
    text = "".join(f"BUY,{i},{names[i % 4]},{i / 2},{i}\n" for i in range(4000))
    batch, report = load_csv(text, STOCK)
    # an empty field is a null (issue 33.14)
    assert report.accepted == 4000 and not report.dead_letters
    assert batch.columns["name"].to_list() == [names[i % 4] or None for i in range(4000)]
    assert batch.columns["price"].to_list() == [i / 2 for i in range(4000)]


FIELD = st.sampled_from(["1", "22", "-3", "x", "", " 4 ", "2.5", "MSFT", "1e3", '"q"', '"a,b"', '"c\nd"', '"'])
ROW = st.one_of(
    st.tuples(st.sampled_from(["BUY", "SELL", "HOLD", " SELL"]), st.lists(FIELD, max_size=5)).map(
        lambda r: ",".join([r[0], *r[1]])
    ),
    st.just(""),
    st.just("  "),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(ROW, max_size=30), st.sampled_from(["\n", "\r\n"]), st.integers(1, 64))
def test_blocks_of_any_size_load_alike(lines: list[str], end: str, block_bytes: int) -> None:
    text = "".join(line + end for line in lines)
    whole_batch, whole = load_csv(text, STOCK, header=False)
    batch, report = collect(iter_csv(text, STOCK, header=False, block_bytes=block_bytes), "<csv text>")
    assert report.dead_letters == whole.dead_letters
    assert (report.read, report.accepted, report.skipped) == (whole.read, whole.accepted, whole.skipped)
    assert batch.positions.tolist() == whole_batch.positions.tolist()
    assert all(batch.columns[a].to_list() == whole_batch.columns[a].to_list() for a in batch.columns)
    # every physical line is a row, a skipped line or part of a multi-line row
    physical = text.count("\n")
    assert report.read + report.skipped <= physical
    if '"' not in text:
        blank = sum(1 for line in lines if not line.strip())
        assert (report.read, report.skipped) == (physical - blank, blank)
        for d in report.dead_letters:
            assert d.raw == lines[d.line - 1]


def test_jsonl_and_parquet_in_pieces_load_alike(tmp_path: Path) -> None:
    lines = [f'{{"type": "SELL", "id": {i}}}' if i % 7 else '{"type": "SELL", "id": "x"' for i in range(40)]
    text = "\n".join(lines[:20]) + "\n\n" + "\n".join(lines[20:]) + "\n"
    whole_batch, whole = load_jsonl(text, STOCK)
    batch, report = collect(iter_jsonl(text, STOCK, block_bytes=50), "<jsonl text>")
    assert report.dead_letters == whole.dead_letters and (report.read, report.skipped) == (40, 1)
    assert [d.line for d in report.dead_letters] == [1, 8, 15, 23, 30, 37]  # the blank line 21 shifts the rest
    assert batch.columns["id"].to_list() == whole_batch.columns["id"].to_list()

    path = tmp_path / "e.parquet"
    pd.DataFrame({"type": ["SELL", "BUY", "SELL"] * 5, "id": [str(i) for i in range(15)]}).to_parquet(path)
    whole_batch, whole = load_parquet(path, STOCK)
    batch, report = collect(iter_parquet(path, STOCK, batch_rows=4), str(path))
    assert report.dead_letters == whole.dead_letters and report.read == 15
    assert [d.line for d in report.dead_letters] == [2, 5, 8, 11, 14]  # BUY rows lack name, price, volume
    assert batch.positions.tolist() == whole_batch.positions.tolist() == [0, 2, 3, 5, 6, 8, 9, 11, 12, 14]


JSON_ROW = st.one_of(
    st.fixed_dictionaries({"type": st.just("SELL"), "id": st.integers(-(2**63), 2**63 - 1)}),
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["BUY", "HOLD"]),
            "id": st.integers(-5, 5),
            "name": st.text(max_size=3),
            "price": st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-9, 9)),
            "volume": st.integers(0, 9),
        }
    ),
    st.dictionaries(st.sampled_from(["type", "id", "price"]), st.one_of(st.none(), st.integers(), st.text(max_size=2))),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(JSON_ROW.map(json.dumps), st.just(""), st.just(" ")), max_size=25), st.integers(16, 400))
def test_jsonl_blocks_read_by_pyarrow_load_as_line_by_line(lines: list[str], block_bytes: int) -> None:
    text = "".join(line + "\n" for line in lines) or "\n"
    batch, report = collect(iter_jsonl(text, STOCK, block_bytes=block_bytes), "<jsonl text>")
    with patch("sharp_cer.events.loaders._read_jsonl_block", return_value=None):
        slow_batch, slow = collect(iter_jsonl(text, STOCK, block_bytes=block_bytes), "<jsonl text>")
    assert report.dead_letters == slow.dead_letters
    assert (report.read, report.accepted, report.skipped) == (slow.read, slow.accepted, slow.skipped)
    assert batch.positions.tolist() == slow_batch.positions.tolist()
    assert all(batch.columns[a].to_list() == slow_batch.columns[a].to_list() for a in batch.columns)


def test_a_clean_jsonl_block_is_read_by_pyarrow() -> None:
    rows = [{"type": "BUY", "id": i, "name": "n", "price": i / 4, "volume": 3} for i in range(50)]
    rows[7] = {"type": "SELL", "id": 2**62}
    text = "\r\n".join(json.dumps(r) for r in rows) + "\r\n\r\n"
    fast = _read_jsonl_block(text.encode(), "t", STOCK.event_types(), 1)
    assert fast is not None and fast[1] == 1  # one blank line
    batch, report = load_jsonl(text, STOCK)
    assert (report.read, report.accepted, report.skipped) == (50, 50, 1)
    assert batch.columns["id"].to_list() == [2**62 if i == 7 else i for i in range(50)]
    assert batch.columns["price"].to_list()[6:9] == [1.5, None, 2.0]
    # a null where the type declares the attribute: pyarrow cannot tell it from an absent key
    assert _read_jsonl_block(b'{"type": "SELL", "id": null}\n', "t", STOCK.event_types(), 1) is None


def test_an_open_quote_holds_back_a_bounded_number_of_lines() -> None:
    rows = ["SELL,1", 'SELL,"2'] + [f"SELL,{i}" for i in range(3, 400)] + ['SELL,"x",1"']
    text = "".join(r + "\n" for r in rows)
    reads = [report.read for _, report in iter_csv(text, STOCK, block_bytes=256)]
    # the quote of line 2 finds its partner only on the last line, 398 lines on: it stands alone
    assert sum(reads) == len(rows) and max(reads) < JOIN_LINES + 40
    batch, report = load_csv(text, STOCK)
    assert [(d.line, d.kind) for d in report.dead_letters] == [(400, "field_count")]
    assert batch.columns["id"].to_list()[:3] == [1, 2, 3]


@pytest.mark.parametrize("block_bytes", [1, 2, 3, 64])
def test_a_byte_order_mark_is_dropped_whatever_the_block_size(tmp_path: Path, block_bytes: int) -> None:
    from sharp_cer.events.loaders import collect, iter_csv
    from sharp_cer.language import Schema

    schema = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbfA,1\nA,2\n")
    batch, report = collect(iter_csv(str(path), schema, block_bytes=block_bytes), str(path))
    assert [batch.row(i)["attributes"]["x"] for i in range(len(batch))] == [1, 2]
    assert report.dead_letters == []
