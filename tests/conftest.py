"""Test-suite settings: under CI (``CI=true``) hypothesis is derandomized,
so each CI run draws the same examples and a red run can be repeated."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")
