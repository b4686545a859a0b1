"""Seeded synthetic event streams for the workloads in ``configs/``.

Each generator returns ``n`` events as a DataFrame ordered by ``t`` (int64
nanoseconds): the column ``type`` first, then every attribute of its
workload's schema in declaration order, with pandas nullable dtypes. An
attribute an event type does not declare is NA in that type's rows.
Ordinary traffic is drawn with ``numpy.random.default_rng(seed)``; the card
and sensor generators also plant, at a low rate, the situations their
workload's rules look for (card testing, fires, forced doors, ...), so that
those rules fire now and then.

>>> df = generate("card_fraud", 2000, seed=7)
>>> df.equals(generate("card_fraud", 2000, seed=7)), bool(df["t"].is_monotonic_increasing)
(True, True)
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from sharp_cer.errors import EventsError

_SEC = 1_000_000_000
_T0 = 1_709_544_600 * _SEC  # Monday 2024-03-04 09:30:00 UTC
_DTYPES = {"int": "Int64", "double": "Float64", "string": "string", "bool": "boolean", "primary_time": "int64"}

_Chunk = Mapping[str, Any]  # column name -> values (a sequence or an array), always with "type" and "t"


def _attrs(spec: str) -> dict[str, str]:
    return {name.strip(): kind.strip() for name, kind in (item.split(":") for item in spec.split(","))}


# Event types and their attributes in declaration order; they match configs/*.toml.
_STOCK = _attrs("id:int, name:string, volume:int, price:double, t:primary_time")
_CARD = "card:int, bank:string, seq:int, "
_SENSOR = "sensor:string, zone:string, seq:int, "
_SCHEMAS: dict[str, dict[str, dict[str, str]]] = {
    "stocks": {"BUY": _STOCK, "SELL": _STOCK},
    "card_fraud": {
        "PURCHASE": _attrs(
            _CARD
            + "merchant:string, mcc:int, amount:double, country:string, channel:string, approved:bool, t:primary_time"
        ),
        "LOGIN": _attrs(_CARD + "device:string, country:string, ok:bool, t:primary_time"),
        "CHALLENGE": _attrs(_CARD + "method:string, ok:bool, t:primary_time"),
        "PROFILE_CHANGE": _attrs(_CARD + "field:string, t:primary_time"),
        "TRAVEL_NOTICE": _attrs(_CARD + "country:string, t:primary_time"),
    },
    "sharp_ds1": {kind: _attrs("id:int, x:double, y:double, v:int, t:primary_time") for kind in "ABCDEFGHIJ"},
    "sharp_ds2": {kind: _attrs("id:int, x:int, t:primary_time") for kind in "ABCDEF"},
    "iot_sensors": {
        "TEMP": _attrs(_SENSOR + "celsius:double, t:primary_time"),
        "SMOKE": _attrs(_SENSOR + "obscuration:double, t:primary_time"),
        "MOTION": _attrs(_SENSOR + "occupied:bool, t:primary_time"),
        "HVAC": _attrs(_SENSOR + "mode:string, setpoint:double, t:primary_time"),
        "BADGE": _attrs(_SENSOR + "door:string, badge:string, granted:bool, t:primary_time"),
        "DOOR": _attrs(_SENSOR + "door:string, state:string, t:primary_time"),
    },
    "heartbeats": {
        "HB": _attrs("device:string, site:string, mode:string, t:primary_time"),
        "CMD": _attrs("device:string, cmd:int, t:primary_time"),
        "ACK": _attrs("device:string, cmd:int, t:primary_time"),
    },
}


def _records(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Rows as dicts -> a chunk (missing keys become None)."""
    keys = dict.fromkeys(k for row in rows for k in row)
    return {k: [row.get(k) for row in rows] for k in keys} if rows else {"type": [], "t": []}


def _finish(
    schema: Mapping[str, dict[str, str]], chunks: list[_Chunk], n: int, counter: str | None = None
) -> pd.DataFrame:
    """Merge chunks, keep the first n events by time (ties keep chunk order),
    blank the attributes a row's type does not declare and, with ``counter``,
    number each counter value's events 1, 2, ... in the ``seq`` column."""

    def column(name: str) -> np.ndarray:
        return np.concatenate(
            [np.asarray(c[name], dtype=object) if name in c else np.full(len(c["t"]), None, object) for c in chunks]
        )

    t = np.concatenate([np.asarray(c["t"], dtype=np.int64) for c in chunks])
    order = np.argsort(t, kind="stable")[:n]
    types = column("type")[order]
    data: dict[str, Any] = {"type": pd.array(types, dtype="string")}
    union = {name: kind for attrs in schema.values() for name, kind in attrs.items()}
    for name, kind in union.items():
        if kind == "primary_time":
            data[name] = t[order]
            continue
        values = column(name)[order]
        values[~np.isin(types, [e for e, attrs in schema.items() if name in attrs])] = None
        data[name] = pd.array(values, dtype=_DTYPES[kind])
    frame = pd.DataFrame(data)
    if counter is not None:
        frame["seq"] = (frame.groupby(counter, sort=False).cumcount() + 1).astype("Int64")
    return frame


# ---------------------------------------------------------------- stocks

# The first ten are the tickers of CORE's stock queries.
_TICKERS = np.array(
    [
        *["INTC", "RIMM", "QQQ", "IPIX", "AMAT", "CSCO", "YHOO", "DELL", "ORCL", "MSFT"],
        *["AAPL", "AMZN", "GOOG", "IBM", "NVDA", "QCOM", "SUNW", "TXN", "EBAY", "JNPR"],
    ]
)


def stocks(n: int, seed: int = 0) -> pd.DataFrame:
    """The CORE paper's synthetic stock tape: BUY or SELL with equal odds, one
    of 20 tickers uniformly, 100 to 1000 shares, a price uniform in [5, 40)
    (rounded to cents), 0, 1, 2 or 3 whole seconds between trades; ``id``
    numbers the trades from 0.

    >>> stocks(3, seed=1)[["type", "id", "name", "volume", "price"]]
       type  id  name  volume  price
    0  SELL   0  SUNW     380  33.97
    1  SELL   1  EBAY     882  19.32
    2   BUY   2  AMAT     481  24.24
    """
    rng = np.random.default_rng(seed)
    trades = {
        "type": np.where(rng.random(n) < 0.5, "BUY", "SELL"),
        "id": np.arange(n),
        "name": _TICKERS[rng.integers(0, _TICKERS.size, n)],
        "volume": rng.integers(100, 1001, n),
        "price": np.round(rng.uniform(5.0, 40.0, n), 2),
        "t": _T0 + np.cumsum(rng.integers(0, 4, n)) * _SEC,
    }
    return _finish(_SCHEMAS["stocks"], [trades], n)


def sharp_ds1(
    n: int,
    seed: int = 0,
    *,
    v_high: int = 3_000_000,
    drift_at: int | None = None,
) -> pd.DataFrame:
    """Sharp's synthetic dataset DS1 (§6.1): a type uniform over A to J, an
    ``id`` uniform in 1..10, ``x`` uniform in [-90, 90), ``y`` in
    [-180, 180) and ``v`` uniform in 1..``v_high`` (the paper's selectivity
    experiment widens it); one event per second. With ``drift_at``, D
    events' ``v`` is drawn from [1e6, 3.5e6) before that offset and from
    [1, 2e6) from it on (the concept drift of the paper's Fig. 15).

    >>> df = sharp_ds1(4, seed=1)
    >>> list(df.columns), set(df["type"]) <= set("ABCDEFGHIJ")
    (['type', 'id', 'x', 'y', 'v', 't'], True)
    >>> drifted = sharp_ds1(4000, seed=1, drift_at=2000)
    >>> d = drifted[drifted["type"] == "D"]
    >>> bool((d["v"][d.index < 2000] >= 1_000_000).all()), bool((d["v"][d.index >= 2000] < 2_000_000).all())
    (True, True)
    """
    rng = np.random.default_rng(seed)
    types = np.array(list("ABCDEFGHIJ"))[rng.integers(0, 10, n)]
    v = rng.integers(1, v_high + 1, n)
    if drift_at is not None:
        is_d, early = types == "D", np.arange(n) < drift_at
        before, after = is_d & early, is_d & ~early
        v[before] = rng.integers(1_000_000, 3_500_000, int(before.sum()))
        v[after] = rng.integers(1, 2_000_000, int(after.sum()))
    rows = {
        "type": types,
        "id": rng.integers(1, 11, n),
        "x": rng.uniform(-90.0, 90.0, n),
        "y": rng.uniform(-180.0, 180.0, n),
        "v": v,
        "t": _T0 + np.arange(n) * _SEC,
    }
    return _finish(_SCHEMAS["sharp_ds1"], [rows], n)


def sharp_ds2(n: int, seed: int = 0) -> pd.DataFrame:
    """Sharp's synthetic dataset DS2 (§6.1): a type uniform over A to F, an
    ``id`` uniform in 1..25 and ``x`` uniform in 1..100; one event per
    second.

    >>> sharp_ds2(3, seed=1)[["type", "id", "x"]]
      type  id   x
    0    C  24  83
    1    D   1  95
    2    E   4  25
    """
    rng = np.random.default_rng(seed)
    rows = {
        "type": np.array(list("ABCDEF"))[rng.integers(0, 6, n)],
        "id": rng.integers(1, 26, n),
        "x": rng.integers(1, 101, n),
        "t": _T0 + np.arange(n) * _SEC,
    }
    return _finish(_SCHEMAS["sharp_ds2"], [rows], n)


# ---------------------------------------------------------------- card fraud

_CARDS, _CARD0 = 4000, 4_000_000  # card tokens are _CARD0 .. _CARD0 + _CARDS - 1
_BANKS = np.array(["ACME", "NORTHWIND", "GLOBEX", "INITECH"])
_COUNTRIES = np.array(["US", "CA", "GB", "DE", "MX"])
# 500 everyday merchants (grocery, restaurants, fuel, retail, department stores,
# taxis, fast food, hotels), then 60 whose goods resell easily (electronics,
# jewellery, quasi-cash, money transfer).
_EVERYDAY_MCC, _RESALE_MCC = [5411, 5812, 5541, 5999, 5311, 4121, 5814, 7011], [5732, 5944, 6051, 4829]
_MCC = np.concatenate([np.resize(_EVERYDAY_MCC, 500), np.resize(_RESALE_MCC, 60)])  # merchant number -> MCC
_MERCHANTS = np.array([f"M{i:04d}" for i in range(_MCC.size)])


def card_fraud(n: int, seed: int = 0) -> pd.DataFrame:
    """An authorisation feed of 4000 cards at four banks: mostly purchases
    (lognormal amounts, median about 30), with logins, step-up challenges
    (always one right before an approved online purchase of 1000 or more),
    profile changes and travel notices, one event every 0.4 s on average.
    About one event in 800 starts a planted fraud pattern. ``seq`` counts
    each card's events.

    >>> df = card_fraud(3000, seed=2)
    >>> sorted(df["type"].unique())
    ['CHALLENGE', 'LOGIN', 'PROFILE_CHANGE', 'PURCHASE', 'TRAVEL_NOTICE']
    >>> int(df.loc[df["type"] == "LOGIN", "amount"].notna().sum())
    0
    """
    rng = np.random.default_rng(seed)
    bank = rng.choice(_BANKS, _CARDS, p=[0.35, 0.2, 0.25, 0.2])
    home = rng.choice(_COUNTRIES, _CARDS, p=[0.7, 0.1, 0.08, 0.07, 0.05])
    platform = rng.choice(["ios-", "android-", "web-"], _CARDS)
    c = rng.integers(0, _CARDS, n)
    t = _T0 + np.cumsum(rng.exponential(0.4 * _SEC, n)).astype(np.int64)
    kind = rng.choice(
        ["PURCHASE", "LOGIN", "CHALLENGE", "PROFILE_CHANGE", "TRAVEL_NOTICE"], n, p=[0.86, 0.09, 0.03, 0.013, 0.007]
    )
    channel = rng.choice(["chip", "contactless", "online", "swipe"], n, p=[0.45, 0.25, 0.25, 0.05])
    merchant = np.where(rng.random(n) < 0.03, rng.integers(500, _MCC.size, n), rng.integers(0, 500, n))
    amount = np.round(rng.lognormal(3.4, 1.0, n), 2)
    approved = rng.random(n) < 0.97
    elsewhere = (kind == "TRAVEL_NOTICE") | ((channel == "online") & (rng.random(n) < 0.2))
    feed = {
        "type": kind,
        "t": t,
        "card": _CARD0 + c,
        "bank": bank[c],
        "merchant": _MERCHANTS[merchant],
        "mcc": _MCC[merchant],
        "amount": amount,
        "country": np.where(elsewhere, rng.choice(_COUNTRIES, n), home[c]),
        "channel": channel,
        "approved": approved,
        "device": np.char.add(platform[c], c.astype(str)),
        "ok": rng.random(n) < 0.93,
        "method": rng.choice(["3ds", "otp", "biometric"], n),
        "field": rng.choice(["email", "phone", "address", "pin", "limit"], n, p=[0.15, 0.15, 0.2, 0.3, 0.2]),
    }
    big = (kind == "PURCHASE") & (channel == "online") & approved & (amount >= 1000)
    step_up = {
        "type": np.full(big.sum(), "CHALLENGE"),
        "t": t[big] - rng.integers(2, 30, big.sum()) * _SEC,
        "card": _CARD0 + c[big],
        "bank": bank[c[big]],
        "method": np.full(big.sum(), "3ds"),
        "ok": np.full(big.sum(), True),
    }
    planted: list[dict[str, Any]] = []
    for start in rng.uniform(t[0], t[-1], n // 800) if n else []:
        planted += _card_episode(rng, int(rng.integers(0, 7)), int(start), bank, home)
    return _finish(_SCHEMAS["card_fraud"], [feed, step_up, _records(planted)], n, counter="card")


def _card_episode(
    rng: np.random.Generator, kind: int, t0: int, bank: np.ndarray, home: np.ndarray
) -> list[dict[str, Any]]:
    """The events of one planted fraud pattern (see configs/card_fraud.toml)."""
    rows: list[dict[str, Any]] = []
    victim = int(rng.integers(0, _CARDS))

    def add(kind: str, after_s: float, card: int = victim, **attrs: Any) -> None:
        rows.append({"type": kind, "t": t0 + int(after_s * _SEC), "card": _CARD0 + card, "bank": bank[card], **attrs})

    def buy(after_s: float, amount: float, channel: str = "online", card: int = victim, **attrs: Any) -> None:
        m = attrs.pop("merchant", int(rng.integers(0, 500)))
        attrs = {"country": home[card], "approved": True, "merchant": _MERCHANTS[m], "mcc": _MCC[m], **attrs}
        add("PURCHASE", after_s, card, amount=round(amount, 2), channel=channel, **attrs)

    if kind == 0:  # card testing: tiny online probes, then the real spend
        probes = int(rng.integers(3, 7))
        for k in range(probes):
            buy(40 * k, rng.uniform(0.5, 1.99))
        buy(40 * probes + rng.uniform(30, 300), rng.uniform(300, 2500))
    elif kind == 1:  # cloned card: used at home, then abroad; sometimes a travel notice in between
        abroad = rng.choice(np.setdiff1d(_COUNTRIES, [home[victim]]))
        buy(0, rng.lognormal(3.4, 0.8), "chip")
        if rng.random() < 0.3:
            add("TRAVEL_NOTICE", 300, country=abroad)
        buy(rng.uniform(1200, 5400), rng.uniform(80, 900), rng.choice(["contactless", "swipe"]), country=abroad)
    elif kind == 2:  # account takeover: odd device logs in, contact details change, big online spend
        device = f"{rng.choice(['emu-android', 'headless-chrome'])}-{rng.integers(1000)}"
        login_at, change_at = rng.permutation([0.0, rng.uniform(30, 600)])
        add("LOGIN", login_at, device=device, country=home[victim], ok=True)
        add("PROFILE_CHANGE", change_at, field=rng.choice(["email", "phone", "address"]))
        buy(rng.uniform(900, 2400), rng.uniform(500, 3000))
    elif kind == 3:  # step-up bypass: a login, then a big online purchase without a challenge
        add("LOGIN", 0, device=f"web-{victim}", country=home[victim], ok=True)
        buy(rng.uniform(60, 600), rng.uniform(1000, 4000))
    elif kind == 4:  # resale spree: several big purchases at resale-friendly merchants
        for k in range(int(rng.integers(4, 8))):
            shop = int(rng.integers(500, _MCC.size))
            buy(300 * k + rng.uniform(0, 200), rng.uniform(400, 1500), "chip", merchant=shop)
    elif kind == 5:  # BIN attack: many cards declined at one merchant's checkout
        m = int(rng.integers(0, 500))
        for k in range(int(rng.integers(8, 21))):
            buy(6 * k, rng.uniform(1, 60), card=int(rng.integers(0, _CARDS)), merchant=m, approved=False)
    else:  # failed authentication, then a cash-out
        add(rng.choice(["LOGIN", "CHALLENGE"]), 0, device=f"web-{victim}", country=home[victim], method="otp", ok=False)
        buy(rng.uniform(60, 480), rng.uniform(700, 2500), rng.choice(["chip", "online"]))
    return rows


# ---------------------------------------------------------------- IoT sensors

_ZONES = ["HQ-1-LOBBY", "HQ-2-OPEN", "HQ-3-OPEN", "HQ-B1-SRV", "HOSP-1-ER", "HOSP-2-WARD", "HOSP-B1-LAB"]
_ZONES += ["DC1-1-HALLA", "DC1-1-HALLB", "DC1-0-NOC"]
# Periodic sensors: type, name, zone, relative reporting rate.
_PERIODIC = [
    (kind, f"{prefix}-{zone}", zone, rate)
    for zone in _ZONES
    for kind, prefix, rate in [
        ("TEMP", "TMP", 1.0),
        ("SMOKE", "SMK", 1.0),
        ("MOTION", "PIR", 1.5),
        ("HVAC", "AHU", 0.01),
    ]
] + [("TEMP", f"FRZ-HOSP-B1-LAB-{i}", "HOSP-B1-LAB", 0.5) for i in (1, 2, 3)]


def iot_sensors(n: int, seed: int = 0) -> pd.DataFrame:
    """A building gateway feed: periodic heat, smoke, motion and air-handler
    reports from ten zones of three sites plus three lab freezers (one report
    every 0.5 s on average), and badge-in / door-open / door-closed traffic
    at one door per zone. About one event in 1500 starts a planted incident:
    a fire, a freezer failure, a forced door, badge brute force, a cooling
    failure, an air handler off, a flapping smoke detector or a door opened
    without a badge. ``seq`` counts each sensor's messages.

    >>> df = iot_sensors(5000, seed=3)
    >>> list(df.columns[:6]), sorted(df["type"].unique())[:3]
    (['type', 'sensor', 'zone', 'seq', 'celsius', 't'], ['BADGE', 'DOOR', 'HVAC'])
    """
    rng = np.random.default_rng(seed)
    kinds, names, zones, rates = (np.array(column) for column in zip(*_PERIODIC, strict=True))
    room = np.array([21.0 + 0.5 * (_ZONES.index(zone) % 3) for zone in zones])  # each zone's usual temperature
    s = rng.choice(len(_PERIODIC), n, p=rates / rates.sum())
    t = _T0 + np.cumsum(rng.exponential(0.5 * _SEC, n)).astype(np.int64)
    feed = {
        "type": kinds[s],
        "sensor": names[s],
        "zone": zones[s],
        "t": t,
        "celsius": np.where(np.char.startswith(names[s], "FRZ-"), rng.normal(-80.0, 1.2, n), rng.normal(room[s], 0.4)),
        "obscuration": np.abs(rng.normal(0.15, 0.1, n)),
        "occupied": rng.random(n) < 0.5,
        "mode": rng.choice(["heat", "cool", "off"], n, p=[0.3, 0.5, 0.2]),
        "setpoint": rng.choice([20.0, 21.0, 22.0, 23.0], n),
    }
    planted: list[dict[str, Any]] = []
    for start in rng.uniform(t[0], t[-1], n // 1500) if n else []:
        planted += _sensor_episode(rng, int(rng.integers(0, 8)), int(start), feed)
    feed["celsius"], feed["obscuration"] = feed["celsius"].round(2), feed["obscuration"].round(3)
    doors = _door_traffic(rng, int(t[0]), int(t[-1])) if n else []
    return _finish(_SCHEMAS["iot_sensors"], [feed, _records(doors + planted)], n, counter="sensor")


def _door_traffic(rng: np.random.Generator, start: int, end: int) -> list[dict[str, Any]]:
    """Badge granted, door open, door closed at every door, about every six
    minutes; one access in twenty begins with a refused badge and a retry."""
    rows: list[dict[str, Any]] = []
    for zone in _ZONES:
        at = float(start)
        while (at := at + (20 + rng.exponential(360)) * _SEC) <= end:
            badge = f"B{rng.integers(10000, 60000)}"
            if rng.random() < 0.05:
                rows.append(_access(zone, int(at - rng.uniform(3, 10) * _SEC), "BADGE", badge=badge, granted=False))
            rows.append(_access(zone, int(at), "BADGE", badge=badge, granted=True))
            rows.append(_access(zone, int(at + rng.uniform(1, 4) * _SEC), "DOOR", state="open"))
            rows.append(_access(zone, int(at + rng.uniform(6, 25) * _SEC), "DOOR", state="closed"))
    return rows


def _access(zone: str, t: int, kind: str, **attrs: Any) -> dict[str, Any]:
    sensor = f"RDR-{zone}" if kind == "BADGE" else f"CNT-{zone}"
    return {"type": kind, "t": t, "sensor": sensor, "zone": zone, "door": f"D-{zone}", **attrs}


def _sensor_episode(rng: np.random.Generator, kind: int, t0: int, feed: dict[str, Any]) -> list[dict[str, Any]]:
    """Plant one incident (see configs/iot_sensors.toml): rewrite the readings
    of the affected sensors in ``feed`` and return the extra events."""

    def rewrite(sensor: str, column: str, seconds: float, value: Callable[[np.ndarray], np.ndarray]) -> None:
        lo, hi = np.searchsorted(feed["t"], [t0, t0 + int(seconds * _SEC)])
        rows = lo + np.flatnonzero(feed["sensor"][lo:hi] == sensor)
        feed[column][rows] = value((feed["t"][rows] - t0) / _SEC)

    zone = _ZONES[int(rng.integers(0, len(_ZONES)))]
    hall = rng.choice(["DC1-1-HALLA", "DC1-1-HALLB", "DC1-0-NOC"])
    if kind == 0:  # fire: heat climbs 0.3 C/s, smoke 0.1 %/m per second
        rewrite(f"TMP-{zone}", "celsius", 240, lambda s: 22.0 + 0.3 * s + rng.normal(0, 0.5, s.size))
        rewrite(f"SMK-{zone}", "obscuration", 240, lambda s: 0.2 + 0.1 * s)
    elif kind == 1:  # freezer failure: warms 4 C per minute for 12 minutes
        rewrite(f"FRZ-HOSP-B1-LAB-{rng.integers(1, 4)}", "celsius", 720, lambda s: -80.0 + s / 15)
    elif kind == 2:  # forced door after a refused badge
        return [
            _access(zone, t0, "BADGE", badge=f"B{rng.integers(90000, 99999)}", granted=False),
            _access(zone, t0 + int(rng.uniform(3, 15) * _SEC), "DOOR", state="forced"),
            _access(zone, t0 + int(rng.uniform(40, 120) * _SEC), "DOOR", state="closed"),
        ]
    elif kind == 3:  # badge brute force: several refused badges, then the door gives
        tries = int(rng.integers(3, 6))
        badges = [f"B{rng.integers(90000, 99999)}" for _ in range(tries)]
        rows = [_access(zone, t0 + k * 20 * _SEC, "BADGE", badge=b, granted=False) for k, b in enumerate(badges)]
        return [*rows, _access(zone, t0 + tries * 20 * _SEC, "DOOR", state=rng.choice(["open", "forced"]))]
    elif kind == 4:  # cooling failure: told to cool to 20 C, the hall warms to 30 C over 40 minutes
        rewrite(f"TMP-{hall}", "celsius", 2400, lambda s: 23.0 + 7.0 * s / 2400 + rng.normal(0, 0.3, s.size))
        return [{"type": "HVAC", "t": t0, "sensor": f"AHU-{hall}", "zone": hall, "mode": "cool", "setpoint": 20.0}]
    elif kind == 5:  # air handler off: the hall warms to 36 C over 25 minutes
        rewrite(f"TMP-{hall}", "celsius", 1500, lambda s: 22.0 + 14.0 * s / 1500 + rng.normal(0, 0.3, s.size))
        return [{"type": "HVAC", "t": t0, "sensor": f"AHU-{hall}", "zone": hall, "mode": "off", "setpoint": 21.0}]
    elif kind == 6:  # flapping smoke detector: alarm and clear by turns for five minutes
        office = rng.choice(["HQ-1-LOBBY", "HQ-2-OPEN", "HQ-3-OPEN", "HQ-B1-SRV"])
        rewrite(f"SMK-{office}", "obscuration", 300, lambda s: np.where(np.arange(s.size) % 2 == 0, 4.5, 0.3))
    else:  # door opened with no badge at all (tailgating, propped)
        return [
            _access(zone, t0, "DOOR", state="open"),
            _access(zone, t0 + int(rng.uniform(10, 60) * _SEC), "DOOR", state="closed"),
        ]
    return []


# ---------------------------------------------------------------- registry and CSV

# ---------------------------------------------------------------- heartbeats


def heartbeats(n: int, seed: int = 0) -> pd.DataFrame:
    """A fleet of 300 devices at three sites (see configs/device_heartbeats.toml):
    each sends a heartbeat ``HB`` every 10 s (give or take 1 s) in mode
    ``normal``; about one device in 15 goes silent for a minute or two
    (an outage); about one in 10 enters maintenance (a last heartbeat in
    mode ``maintenance``), stays silent 1 to 6 minutes and comes back; and
    a command ``CMD`` to a device every minute or so is acknowledged
    (``ACK`` with its number) within 300 ms, except one in 30 (never) and one
    in 30 (after 1 to 2 s).

    >>> df = heartbeats(3000, seed=1)
    >>> sorted(df["type"].unique()), list(df.columns)
    (['ACK', 'CMD', 'HB'], ['type', 'device', 'site', 'mode', 't', 'cmd'])
    """
    # about 40 events a second: long enough for n events, doubled until it is
    duration = max(20.0, 1.2 * n / 40) * _SEC
    while True:
        rows = _fleet(np.random.default_rng(seed), duration)
        if len(rows) >= n:
            return _finish(_SCHEMAS["heartbeats"], [_records(rows)], n)
        duration *= 2


def _fleet(rng: np.random.Generator, duration: float) -> list[dict[str, Any]]:
    """The fleet's events over ``duration`` ns (see ``heartbeats``), unsorted."""
    devices = 300
    rows: list[dict[str, Any]] = []
    for d in range(devices):
        name, site = f"dev-{d:03d}", ("north", "south", "east")[d % 3]
        silent: list[tuple[float, float]] = []
        roll = rng.random()
        if roll < 1 / 15:  # an outage
            start = rng.uniform(0, duration)
            silent.append((start, start + rng.uniform(60, 120) * _SEC))
        elif roll < 1 / 15 + 1 / 10:  # maintenance
            start = rng.uniform(0, duration)
            silent.append((start, start + rng.uniform(60, 360) * _SEC))
        t = rng.uniform(0, 10 * _SEC)
        entered = False
        while t < duration:
            window = next(((a, b) for a, b in silent if a <= t < b), None)
            if window is None:
                rows.append({"type": "HB", "device": name, "site": site, "mode": "normal", "t": _T0 + int(t)})
                t += rng.uniform(9, 11) * _SEC
                continue
            if roll >= 1 / 15 and not entered:  # maintenance: announced by the last heartbeat
                rows.append({"type": "HB", "device": name, "site": site, "mode": "maintenance", "t": _T0 + int(t)})
                entered = True
            t = window[1]
        t = rng.uniform(0, 60 * _SEC)
        cmd = 0
        while t < duration:
            cmd += 1
            rows.append({"type": "CMD", "device": name, "cmd": cmd, "t": _T0 + int(t)})
            fate = rng.random()
            if fate >= 1 / 30:
                delay = rng.uniform(1, 2) * _SEC if fate < 2 / 30 else rng.uniform(0.02, 0.3) * _SEC
                rows.append({"type": "ACK", "device": name, "cmd": cmd, "t": _T0 + int(t + delay)})
            t += rng.uniform(40, 80) * _SEC
    return rows


GENERATORS: dict[str, Callable[[int, int], pd.DataFrame]] = {
    "heartbeats": heartbeats,
    "stocks": stocks,
    "card_fraud": card_fraud,
    "iot_sensors": iot_sensors,
    "sharp_ds1": sharp_ds1,
    "sharp_ds2": sharp_ds2,
}


def generate(name: str, n: int, seed: int = 0) -> pd.DataFrame:
    """Run the generator ``name``; EventsError names the known ones otherwise.

    >>> generate("stocks", 5).shape[0]
    5
    >>> generate("taxis", 5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sharp_cer.errors.EventsError: unknown generator 'taxis'; known generators: card_fraud, heartbeats, ...
    """
    if name not in GENERATORS:
        raise EventsError(f"unknown generator {name!r}; known generators: {', '.join(sorted(GENERATORS))}")
    return GENERATORS[name](n, seed)


def write_core_csv(
    df: pd.DataFrame, schema_event_attributes: dict[str, list[str]], path: str | os.PathLike[str]
) -> None:
    """Write events in CORE's CSV convention: no header, one row per event with
    its type and then that type's attributes in declaration order (so rows
    of different types may differ in length); booleans as true/false, NA as
    an empty field.

    >>> import pathlib, tempfile
    >>> events = pd.DataFrame({"type": ["BUY", "ALERT"], "price": [12.5, None], "ok": [None, True], "t": [5, 9]})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = pathlib.Path(tmp) / "events.csv"
    ...     write_core_csv(events, {"BUY": ["price", "t"], "ALERT": ["ok", "price", "t"]}, out)
    ...     print(out.read_text(), end="")
    BUY,12.5,5
    ALERT,true,,9
    """
    unknown = sorted(set(df["type"].dropna()) - set(schema_event_attributes))
    if unknown:
        known = ", ".join(schema_event_attributes)
        raise EventsError(f"event types {', '.join(unknown)} are not in schema_event_attributes (it has {known})")
    position = {name: i for i, name in enumerate(df.columns)}
    with open(path, "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        for row in df.itertuples(index=False, name=None):
            kind = row[position["type"]]
            writer.writerow([kind, *(_cell(row[position[a]]) for a in schema_event_attributes[kind])])


def _cell(value: Any) -> str:
    if pd.isna(value):  # None, NA, NaN, NaT
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return str(value)
