"""Argument types and flags shared by several commands: integers with a
floor, latency bounds, the shedders' names and the latency flags, and a
number of seconds' range (``seconds_problem``)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: the command line's first imports stay light (``entry``)
    from ..language import LatencyBound

#: the shedders of ``shedding.SHEDDERS``, named here so that the CLI starts
#: without importing the engine (a test keeps the two lists equal)
SHEDDER_NAMES = (
    "sharp",
    "sharp-instance",
    "random-input",
    "random-state",
    "selectivity",
    "darling",
    "hybrid",
    "truncate",
    "value",
)


class UsageError(Exception):
    """A flag's value argparse could not refuse by itself: ``main`` prints
    it with the usage and exits 2, as argparse does."""


def at_least(lowest: int) -> Callable[[str], int]:
    """An argparse type: an integer no smaller than ``lowest``.

    >>> at_least(1)("3"), at_least(0)("0")
    (3, 0)
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, found {text!r}") from None
        if value < lowest:
            raise argparse.ArgumentTypeError(f"expected an integer of at least {lowest}, found {value}")
        return value

    return parse


def latency_bound(text: str) -> LatencyBound:
    """``--latency-bound``: ``250ms``, ``2s``, a number of cost units or ``40%``.

    >>> latency_bound("250ms").milliseconds, latency_bound("40%").fraction, latency_bound("500").cost_units
    (250.0, 0.4, 500.0)
    """
    from ..language import LatencyBound

    try:
        return LatencyBound.parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a latency bound: give milliseconds (250ms), cost units (500) or a fraction (40%)"
        ) from None


def add_latency_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of latency as users feel it: the bound, how events arrive, the engine's capacity."""
    bound = parser.add_mutually_exclusive_group()
    bound.add_argument(
        "--latency-bound",
        type=latency_bound,
        metavar="BOUND",
        help="every query's bound from an event's arrival to its matches, queueing included: "
        "250ms, cost units (500), or 40%% of the unshedded mean latency (a fraction reads the events file twice)",
    )
    bound.add_argument(
        "--latency-bound-fraction",
        type=float,
        metavar="F",
        help="every query's bound as a fraction of its mean latency in an unshedded run (--latency-bound F*100%%; "
        "reads the events file twice: once unshedded, once shedding)",
    )
    pace = parser.add_mutually_exclusive_group()
    pace.add_argument("--rate", type=float, metavar="EVENTS_PER_S", help="the events arrive at this fixed rate")
    pace.add_argument(
        "--replay-speed", type=float, metavar="X", help="the events arrive at their primary time, X times as fast"
    )
    parser.add_argument(
        "--capacity",
        type=float,
        metavar="UNITS_PER_S",
        help="serve this many cost units per second (deterministic, reproducible); default: the workload's "
        "capacity, else wall time",
    )


def bound_option(args: argparse.Namespace) -> LatencyBound | None:
    """The bound of ``--latency-bound`` or ``--latency-bound-fraction``
    (``UsageError`` on a fraction out of (0, 1])."""
    if args.latency_bound_fraction is None:
        given: LatencyBound | None = args.latency_bound
        return given
    fraction = args.latency_bound_fraction
    if not 0 < fraction <= 1:
        raise UsageError(f"--latency-bound-fraction must be in (0, 1], not {fraction:g}")
    from ..language import LatencyBound

    return LatencyBound(fraction=fraction)


def seconds_problem(value: float | None, flag: str, *, zero: bool) -> str | None:
    """A number of seconds that is not finite, or negative (or zero, unless ``zero``).

    >>> seconds_problem(float("nan"), "--trigger", zero=True)
    'error: --trigger must be a finite number of seconds >= 0, not nan'
    >>> seconds_problem(0.5, "--timeout", zero=False) is None
    True
    """
    if value is None:
        return None
    low = ">= 0" if zero else "> 0"
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        return f"error: {flag} must be a finite number of seconds {low}, not {value:g}"
    return None
