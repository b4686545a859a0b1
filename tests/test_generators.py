"""The synthetic event generators against the workloads in configs/."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from sharp_cer.errors import EventsError
from sharp_cer.events.generators import GENERATORS, generate, sharp_ds1, write_core_csv
from sharp_cer.language.workload import Workload, load_workload

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
WORKLOADS = {
    "stock_trading": "stocks",
    "card_fraud": "card_fraud",
    "iot_sensors": "iot_sensors",
    "device_heartbeats": "heartbeats",
}
DTYPES = {"int": "Int64", "double": "Float64", "string": "string", "bool": "boolean", "primary_time": "int64"}
N = 6000  # enough for every event type of every generator to occur


@pytest.fixture(scope="module", params=sorted(WORKLOADS))
def workload(request: pytest.FixtureRequest) -> Workload:
    return load_workload(CONFIGS / f"{request.param}.toml")


@pytest.fixture(scope="module")
def events(workload: Workload) -> pd.DataFrame:
    assert workload.generator is not None
    return generate(workload.generator, N, seed=11)


def test_each_config_names_its_generator(workload: Workload) -> None:
    assert workload.path is not None
    assert workload.generator == WORKLOADS[workload.path.stem]
    assert workload.warnings() == []


def test_registry_holds_the_workload_generators_and_sharps_dataset() -> None:
    assert sorted(GENERATORS) == ["card_fraud", "heartbeats", "iot_sensors", "sharp_ds1", "sharp_ds2", "stocks"]


def test_sharp_ds1_follows_section_6_1_and_drifts_as_fig_15() -> None:
    # types uniform over A..J, id in 1..10, x in [-90, 90), y in [-180, 180), v in 1..3e6
    df = generate("sharp_ds1", 60_000, seed=3)
    shares = df["type"].value_counts(normalize=True)
    assert sorted(shares.index) == list("ABCDEFGHIJ") and (abs(shares - 0.1) < 0.01).all()
    assert (df["id"].min(), df["id"].max()) == (1, 10)
    assert df["x"].min() >= -90 and df["x"].max() < 90 and df["y"].min() >= -180 and df["y"].max() < 180
    assert df["v"].min() >= 1 and df["v"].max() <= 3_000_000 and abs(df["v"].mean() - 1.5e6) < 3e4
    wide = sharp_ds1(20_000, seed=3, v_high=1_000_000_000)
    assert wide["v"].max() > 3_000_000  # the selectivity experiment's wider V
    drifted = sharp_ds1(20_000, seed=3, drift_at=9_000)
    d_before = drifted[(drifted["type"] == "D") & (drifted.index < 9_000)]["v"]
    d_after = drifted[(drifted["type"] == "D") & (drifted.index >= 9_000)]["v"]
    assert d_before.min() >= 1_000_000 and d_before.max() < 3_500_000
    assert d_after.max() < 2_000_000 and d_after.mean() < d_before.mean() / 2
    others = drifted[drifted["type"] != "D"]["v"]
    assert others.max() > 2_500_000  # only D drifts


def test_sharp_ds2_follows_section_6_1() -> None:
    # types uniform over A..F, id uniform in 1..25, x uniform in 1..100
    df = generate("sharp_ds2", 60_000, seed=3)
    shares = df["type"].value_counts(normalize=True)
    assert sorted(shares.index) == list("ABCDEF") and (abs(shares - 1 / 6) < 0.01).all()
    assert (df["id"].min(), df["id"].max(), df["x"].min(), df["x"].max()) == (1, 25, 1, 100)
    assert abs(df["x"].mean() - 50.5) < 0.5 and bool(df["t"].is_monotonic_increasing)


def test_deterministic_for_a_seed(workload: Workload, events: pd.DataFrame) -> None:
    assert workload.generator is not None
    pd.testing.assert_frame_equal(generate(workload.generator, N, seed=11), events)
    assert not generate(workload.generator, N, seed=12).equals(events)


@pytest.mark.parametrize("n", [0, 1, 7, 2500])
def test_exactly_n_events_sorted_by_time(workload: Workload, n: int) -> None:
    assert workload.generator is not None
    df = generate(workload.generator, n, seed=5)
    assert len(df) == n
    assert df["t"].dtype == np.int64
    assert df["t"].is_monotonic_increasing
    assert list(df.index) == list(range(n))


def test_event_types_and_attributes_match_the_schema(workload: Workload, events: pd.DataFrame) -> None:
    declared = {e.name: e.attributes for e in workload.schema.event_types()}
    assert set(events["type"]) == set(declared)
    union = {name: kind for attributes in declared.values() for name, kind in attributes.items()}
    assert list(events.columns) == ["type", *union]
    assert str(events["type"].dtype) == "string"
    for name, kind in union.items():
        assert str(events[name].dtype) == DTYPES[kind], name
    for event_type, attributes in declared.items():
        rows = events[events["type"] == event_type]
        for name in union:
            if name in attributes:
                assert rows[name].notna().all(), f"{event_type}.{name} has missing values"
            else:
                assert rows[name].isna().all(), f"{event_type} rows carry {name}, which {event_type} does not declare"


def test_primary_time_is_named_t_everywhere(workload: Workload) -> None:
    assert {e.primary_time for e in workload.schema.event_types()} == {"t"}


def test_unknown_generator_raises_events_error_naming_the_known_ones() -> None:
    with pytest.raises(EventsError) as info:
        generate("taxis", 10)
    message = str(info.value)
    assert "taxis" in message
    for name in GENERATORS:
        assert name in message


def test_stock_generator_keeps_the_core_benchmark_parameters() -> None:
    df = generate("stocks", 20_000, seed=3)
    assert set(df["type"]) == {"BUY", "SELL"}
    assert abs((df["type"] == "BUY").mean() - 0.5) < 0.02
    assert df["name"].nunique() == 20
    assert df["volume"].between(100, 1000).all()
    assert df["price"].between(5, 40).all()
    gaps = np.diff(df["t"].to_numpy())
    assert set(np.unique(gaps)) == {0, 1_000_000_000, 2_000_000_000, 3_000_000_000}
    assert list(df["id"]) == list(range(len(df)))


def test_seq_counts_each_key_events() -> None:
    for name, key in [("card_fraud", "card"), ("iot_sensors", "sensor")]:
        df = generate(name, 3000, seed=4)
        expected = df.groupby(key, sort=False).cumcount() + 1
        assert (df["seq"].astype("int64") == expected).all(), name


def test_planted_situations_occur() -> None:
    cards = generate("card_fraud", 60_000, seed=0)
    purchases = cards[cards["type"] == "PURCHASE"]
    assert cards["device"].str.match(r"^(emu|headless)-").fillna(False).any()  # account takeover
    assert ((purchases["amount"] < 2) & (purchases["channel"] == "online")).sum() >= 3  # card testing
    assert (purchases.groupby("merchant")["approved"].apply(lambda a: (~a).sum()) >= 8).any()  # BIN attack
    sensors = generate("iot_sensors", 60_000, seed=0)
    assert (sensors["celsius"] > 57).any()  # fire
    assert (sensors["sensor"].str.startswith("FRZ-") & (sensors["celsius"] > -70)).any()  # freezer failure
    assert (sensors["state"] == "forced").any()  # forced door
    assert (sensors["obscuration"] > 3).any()  # fire or faulty detector


def _parse(field: str, kind: str) -> Any:
    if field == "":
        return None
    if kind in ("int", "primary_time"):
        return int(field)
    if kind == "double":
        return float(field)
    if kind == "bool":
        assert field in ("true", "false"), field
        return field == "true"
    return field


def _value(value: Any) -> Any:
    if pd.isna(value):
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


def test_write_core_csv_round_trips(workload: Workload, events: pd.DataFrame, tmp_path: Path) -> None:
    attributes = {e.name: list(e.attributes) for e in workload.schema.event_types()}
    kinds = {e.name: e.attributes for e in workload.schema.event_types()}
    path = tmp_path / "events.csv"
    write_core_csv(events, attributes, path)
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert len(rows) == len(events)
    for row, (_, event) in zip(rows, events.iterrows(), strict=True):
        event_type = event["type"]
        assert row[0] == event_type
        assert len(row) == 1 + len(attributes[event_type])
        for field, name in zip(row[1:], attributes[event_type], strict=True):
            assert _parse(field, kinds[event_type][name]) == _value(event[name]), (event_type, name, field)


def test_write_core_csv_rejects_types_missing_from_the_schema(tmp_path: Path) -> None:
    with pytest.raises(EventsError, match="SELL"):
        write_core_csv(generate("stocks", 50), {"BUY": ["id"]}, tmp_path / "x.csv")
