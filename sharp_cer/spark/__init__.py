"""The Spark pipeline: batch detection over DataFrames and files
(``detect``, ``run_detection``), streaming detection (``detect_stream``), one engine per partition key on the
workers, and the session it runs on (``spark_session``). Importing this
package does not import PySpark, calling into it does; without PySpark
installed it raises ``MissingExtraError`` (the ``spark`` extra installs it).

Modules renamed in 0.2.0 (``stream_group``: ``stream_key_group``) import
under their old names until 0.3, with a ``DeprecationWarning``."""

from __future__ import annotations

from typing import Any

from sharp_cer._extras import check
from sharp_cer._moved import renamed

check(["pyspark"], "sharp_cer.spark")

__all__ = ["Detection", "detect", "detect_stream", "join_events", "match_recognize", "run_detection", "spark_session"]


def __getattr__(name: str) -> Any:
    if name in ("Detection", "detect", "join_events", "run_detection"):
        from . import pipeline as module

        return getattr(module, name)
    if name == "match_recognize":
        from .recognize import match_recognize

        return match_recognize
    if name == "detect_stream":
        from .stream import detect_stream

        return detect_stream
    if name == "spark_session":
        from .session import spark_session

        return spark_session
    raise AttributeError(name)


renamed(f"{__name__}.stream_group", f"{__name__}.stream_key_group")
