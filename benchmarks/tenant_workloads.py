"""Multi-tenant rule workloads over the stock tape, as a platform would host them.

A platform offers a catalogue of rule templates; each tenant subscribes to a
few and fills in its own constants: a price or volume threshold, a window,
sometimes a ticker. Templates begin with a generic part (the shape of the
market move) and end with the tenant's condition, so tenants' copies of a
template share their prefix; a few templates are ticker-specific from the
first event and share nothing but predicates. Each tenant measures its
windows in time units (``[t]``, 70%) or in events, and rules are per ticker
(``PARTITION BY [name]``) or across the tape, so a workload spans four
groups.

Final steps are selective (a tenant is alerted on a rare move, not on every
trade), which keeps matches to a realistic fraction of the events.

    >>> queries = workload(12, seed=3)
    >>> len(queries), queries[0][0]
    (12, 't000_dip_buy')
    >>> from core_tape import SCHEMA
    >>> from sharp_cer.language import parse_and_check
    >>> all(parse_and_check(text, SCHEMA) for _, text in queries)
    True
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from core_tape import TICKERS


@dataclass(frozen=True)
class Template:
    """A rule template: CEQL with ``{placeholders}`` for tenant constants."""

    name: str
    text: str
    weight: int  # how many tenants, relatively, subscribe to it


TEMPLATES = (
    # a ticker sells off twice, then someone buys cheap: the tenant's price level
    Template(
        "dip_buy",
        "SELECT * FROM Stock WHERE SELL AS s1 ; SELL AS s2 ; BUY AS b "
        "FILTER s2[volume > 800] AND b[price < {low_price}] PARTITION BY [name] {window}",
        4,
    ),
    # three buys in a row of one ticker, the last above the tenant's size
    Template(
        "momentum",
        "SELECT * FROM Stock WHERE BUY AS b1 : BUY AS b2 : BUY AS b3 "
        "FILTER b1[price > 30] AND b3[volume > {big_volume}] PARTITION BY [name] {window}",
        3,
    ),
    # a block buy followed by sells of the tenant's size, anywhere on the tape
    Template(
        "block_then_sells",
        "SELECT * FROM Stock WHERE BUY AS block ; SELL AS s1 ; SELL AS s2 "
        "FILTER block[volume > 990] AND s1[volume > 950] AND s2[volume > {big_volume}] {window}",
        3,
    ),
    # round trip within one ticker: buy, sell, then a buy above the tenant's price
    Template(
        "round_trip",
        "SELECT * FROM Stock WHERE BUY AS a ; SELL AS b ; BUY AS c "
        "FILTER a[price < 6] AND b[price > 39] AND c[price > {high_price}] PARTITION BY [name] {window}",
        2,
    ),
    # a tenant watching its own pair of tickers: nothing to share but predicates
    Template(
        "pair_watch",
        "SELECT * FROM Stock WHERE SELL AS s ; BUY AS b "
        "FILTER s[name = '{ticker}' AND volume > 950] AND b[name = '{other}' AND price < {low_price}] "
        "{window}",
        1,
    ),
)


def workload(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` named queries: tenants subscribe to templates (weighted), each
    with its own constants. Names are ``t<tenant>_<template>``."""
    rng = random.Random(seed)
    weights = [t.weight for t in TEMPLATES]
    queries = []
    for i in range(n):
        # every template once first, so even a small workload spans them all
        template = rng.choices(TEMPLATES, weights)[0] if i >= len(TEMPLATES) else TEMPLATES[i]
        ticker, other = rng.sample(TICKERS, 2)
        constants = {
            "low_price": round(rng.uniform(5.0, 5.6), 2),
            "high_price": round(rng.uniform(39.0, 39.9), 2),
            "big_volume": rng.randrange(960, 1000),
            # most tenants measure windows in time units, some in events (another group)
            "window": (
                f"WITHIN {rng.choice([30, 60, 100, 200])} [t]"
                if rng.random() < 0.7
                else f"WITHIN {rng.choice([20, 50, 100])} EVENTS"
            ),
            "ticker": ticker,
            "other": other,
        }
        queries.append((f"t{i:03d}_{template.name}", template.text.format(**constants)))
    return queries
