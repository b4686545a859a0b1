"""Deprecated alias of :mod:`sharp_cer.planner` (moved in 0.2.0; goes in 0.3)."""

from __future__ import annotations

from sharp_cer._moved import moved

moved(__name__, "sharp_cer.planner")
