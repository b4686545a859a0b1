"""Events: schemas in, columnar batches out."""

from __future__ import annotations
