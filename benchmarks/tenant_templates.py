"""Tenants as they write rules: twenty templates of fraud, security and IoT
shapes, each tenant naming its variables its own way (issue 34).

A platform offers a catalogue of rule shapes; a tenant copies one, names the
variables as its team likes (``f1``, ``first``, ``login_a``, ...), picks its
thresholds from the values its domain uses (an amount of 500, 1,000, 2,000
or 5,000; a temperature of 70, 80 or 90), its own window and the variables
it wants to see, and sometimes writes a condition another way round
(``5000 < c.amount``, the conjuncts in another order). Thresholds that are
tenant-specific beyond a menu sit in cross-event conditions (``a.amount +
b.amount > 7300``), which are checked per query at enumeration and do not
split states.

Events come from :func:`stream`: one stream ``Ops`` of logins, transfers,
card payments, password resets, sensor readings and alarms over 500 ids
(users or devices; most templates are ``PARTITION BY [id]``), dense in the
sense that every event is of a type some template reads.

    >>> queries = workload(40, seed=3)
    >>> len(queries), queries[0][0]
    (40, 't0000_fraud_failed_logins_transfer')
    >>> from sharp_cer.language import parse_and_check
    >>> all(parse_and_check(text, SCHEMA) for _, text in queries)
    True
    >>> len(stream(1000, seed=1))
    1000
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sharp_cer.events.batch import EventBatch
from sharp_cer.events.loaders import load_pandas
from sharp_cer.language import Schema

SCHEMA = Schema.parse(
    """CREATE STREAM Ops {
         EVENT LOGIN { id:int, ok:bool, country:int, device:int },
         EVENT TRANSFER { id:int, amount:double, country:int },
         EVENT CARD { id:int, amount:double, online:bool },
         EVENT RESET { id:int },
         EVENT READING { id:int, temp:double, humidity:double },
         EVENT ALARM { id:int, level:int }
       }"""
)

#: Menus tenants pick their thresholds from.
MENUS: dict[str, tuple[object, ...]] = {
    "amount": (500, 1000, 2000, 5000),
    "small": (1, 2),
    "country": (1, 2, 3, 4, 5),
    "level": (3, 4, 5),
    "temp": (70, 80, 90),
    "low": (5, 10),
    "humidity": (80, 90),
    "device": (1, 2, 3),
}


@dataclass(frozen=True)
class Template:
    """A rule shape: ``{v0}``, ``{v1}``, ... are the tenant's variables,
    ``{amount}`` and the like its thresholds (``MENUS``), ``{free}`` a
    tenant-specific number in a cross-event condition. ``swaps`` are
    rewritings a tenant may apply (same meaning, other words)."""

    name: str
    pattern: str
    partition: bool = True
    swaps: tuple[tuple[str, str], ...] = ()


T = Template
TEMPLATES = (
    # fraud
    T(
        "fraud_failed_logins_transfer",
        "LOGIN AS {v0} ; LOGIN AS {v1} ; TRANSFER AS {v2} "
        "FILTER {v0}[ok = false] AND {v1}[ok = false] AND {v2}[amount > {amount}]",
        swaps=(("{v0}[ok = false] AND {v1}[ok = false]", "{v1}[ok = false] AND NOT ({v0}[ok = true])"),),
    ),
    T(
        "fraud_new_country_transfer",
        "LOGIN AS {v0} ; TRANSFER AS {v1} FILTER {v0}[ok = true] AND {v1}[amount > {amount}] "
        "AND {v1}.country != {v0}.country",
    ),
    T(
        "fraud_online_card_burst",
        "CARD AS {v0} ; CARD AS {v1} ; CARD AS {v2} "
        "FILTER {v0}[online = true] AND {v1}[online = true] AND {v2}[online = true AND amount > {amount}]",
        swaps=(("{v2}[online = true AND amount > {amount}]", "{v2}[{amount} < amount AND online = true]"),),
    ),
    T(
        "fraud_card_testing",
        "CARD AS {v0} ; CARD AS {v1} FILTER {v0}[amount < {small}] AND {v1}[amount > {amount}]",
    ),
    T(
        "fraud_structuring",
        "TRANSFER AS {v0} ; TRANSFER AS {v1} ; TRANSFER AS {v2} "
        "FILTER {v0}[amount > 500] AND {v1}[amount > 500] AND {v2}[amount > 500] "
        "AND {v0}.amount + {v1}.amount + {v2}.amount > {free}",
    ),
    T(
        "fraud_reset_then_transfer",
        "RESET AS {v0} ; LOGIN AS {v1} ; TRANSFER AS {v2} FILTER {v1}[ok = true] AND {v2}[amount > {amount}]",
    ),
    T(
        "fraud_card_then_transfer",
        "CARD AS {v0} ; TRANSFER AS {v1} FILTER {v0}[amount > 1000] AND {v1}[amount > {amount}]",
    ),
    # security
    T(
        "sec_impossible_travel",
        "LOGIN AS {v0} ; LOGIN AS {v1} FILTER {v0}[ok = true] AND {v1}[ok = true] AND {v0}.country != {v1}.country "
        "AND {v1}.device != {v0}.device",
    ),
    T(
        "sec_reset_foreign_login",
        "LOGIN AS {v0} ; RESET AS {v1} ; LOGIN AS {v2} FILTER {v0}[ok = false] AND {v2}[country = {country}]",
    ),
    T(
        "sec_alarm_pair",
        "ALARM AS {v0} ; ALARM AS {v1} FILTER {v0}[level >= {level}] AND {v1}[level >= {level}]",
        swaps=(("{v0}[level >= {level}]", "NOT ({v0}[level < {level}])"),),
    ),
    T(
        "sec_device_login_alarm",
        "LOGIN AS {v0} ; ALARM AS {v1} FILTER {v0}[device = {device}] AND {v1}[level > 3]",
    ),
    T(
        "sec_double_reset",
        "RESET AS {v0} ; RESET AS {v1} ; LOGIN AS {v2} FILTER {v2}[ok = false AND country = {country}]",
    ),
    T(
        "sec_failed_then_alarm",
        "LOGIN AS {v0} ; LOGIN AS {v1} ; ALARM AS {v2} FILTER {v0}[ok = false] AND {v1}[ok = false] "
        "AND {v2}[level >= {level}]",
    ),
    # IoT
    T(
        "iot_three_hot",
        "READING AS {v0} ; READING AS {v1} ; READING AS {v2} "
        "FILTER {v0}[temp > {temp}] AND {v1}[temp > {temp}] AND {v2}[temp > {temp}]",
        swaps=(("{v0}[temp > {temp}]", "{v0}[{temp} < temp]"),),
    ),
    T(
        "iot_spike",
        "READING AS {v0} ; READING AS {v1} FILTER {v0}[temp > 60] AND {v1}[temp > 60] "
        "AND {v1}.temp - {v0}.temp > {free}",
    ),
    T(
        "iot_humid_alarm",
        "READING AS {v0} ; ALARM AS {v1} FILTER {v0}[humidity > {humidity}] AND {v1}[level >= {level}]",
    ),
    T(
        "iot_cold_then_hot",
        "READING AS {v0} : READING AS {v1} FILTER {v0}[temp < {low}] AND {v1}[temp > {temp}]",
    ),
    T(
        "iot_alarm_then_rise",
        "ALARM AS {v0} ; READING AS {v1} ; READING AS {v2} FILTER {v0}[level > 4] AND {v1}[temp > 60] "
        "AND {v2}.temp > {v1}.temp + {free}",
    ),
    # across the whole stream, not per id
    T(
        "global_big_transfers",
        "TRANSFER AS {v0} ; TRANSFER AS {v1} FILTER {v0}[amount > 9000] AND {v1}[amount > {amount}] "
        "AND {v1}.country = {v0}.country",
        partition=False,
    ),
    T(
        "global_alarm_storm",
        "ALARM AS {v0} ; ALARM AS {v1} ; ALARM AS {v2} FILTER {v0}[level = 5] AND {v1}[level = 5] AND {v2}[level = 5]",
        partition=False,
    ),
)

#: How tenants' teams name variables: a style per tenant.
STYLES = (
    lambda k: f"v{k + 1}",
    lambda k: ("first", "second", "third")[k],
    lambda k: "abc"[k],
    lambda k: f"e{k}",
    lambda k: ("opening", "middle", "closing")[k],
    lambda k: f"step_{k + 1}",
    lambda k: ("x", "y", "z")[k],
)


def workload(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` named queries, ``t<tenant>_<template>``: every template once
    first, then templates drawn uniformly; each tenant with its own variable
    names (a style, sometimes with its tenant number in them), thresholds
    from the menus, a tenant-specific number where a template has one, a
    window, a SELECT list, and sometimes a rewriting of its conditions."""
    rng = random.Random(seed)
    queries = []
    for i in range(n):
        template = TEMPLATES[i] if i < len(TEMPLATES) else rng.choice(TEMPLATES)
        style = rng.choice(STYLES)
        suffix = f"_{i}" if rng.random() < 0.3 else ""
        names = {f"v{k}": style(k) + suffix for k in range(3)}
        constants = {key: rng.choice(menu) for key, menu in MENUS.items()}
        constants["free"] = rng.randrange(5, 40) if template.name.startswith("iot") else rng.randrange(6000, 12000)
        pattern = template.pattern
        for old, new in template.swaps:
            if rng.random() < 0.5:
                pattern = pattern.replace(old, new)
        pattern = pattern.format(**names, **constants)
        used = [names[f"v{k}"] for k in range(3) if "{" + f"v{k}" + "}" in template.pattern]
        selection = "*" if rng.random() < 0.5 else ", ".join(rng.sample(used, rng.randint(1, len(used))))
        partition = " PARTITION BY [id]" if template.partition else ""
        window = f" WITHIN {rng.choice([20, 50, 100, 200])} EVENTS"
        queries.append((f"t{i:04d}_{template.name}", f"SELECT {selection} FROM Ops WHERE {pattern}{partition}{window}"))
    return queries


def stream(n: int, seed: int = 0) -> EventBatch:
    """``n`` events of ``Ops`` over 500 ids: logins (30%, one in ten
    failed), transfers and card payments (15% each; amounts log-normal, a
    few above 5,000), resets (5%), readings (30%; temperatures around 50,
    rarely above 90) and alarms (5%, levels 1-5, one in fifty at 5). Alerts
    are rare: most logins and transfers stay in one country."""
    rng = np.random.default_rng(seed)
    kinds = np.array(["LOGIN", "TRANSFER", "CARD", "RESET", "READING", "ALARM"])
    kind = kinds[rng.choice(6, size=n, p=[0.30, 0.15, 0.15, 0.05, 0.30, 0.05])]
    frame = pd.DataFrame(
        {
            "type": kind,
            "id": rng.integers(0, 500, n),
            "ok": rng.random(n) > 0.1,
            "country": rng.choice(5, size=n, p=[0.96, 0.01, 0.01, 0.01, 0.01]) + 1,
            "device": rng.integers(1, 4, n),
            "amount": np.round(rng.lognormal(5.5, 1.3, n), 2),
            "online": rng.random(n) < 0.4,
            "temp": np.round(rng.normal(50, 15, n), 1),
            "humidity": np.round(rng.uniform(20, 95, n), 1),
            "level": rng.choice(5, size=n, p=[0.5, 0.3, 0.12, 0.06, 0.02]) + 1,
        }
    )
    batch, report = load_pandas(frame, SCHEMA)
    assert report.accepted == n, report.summary()
    return batch
