# The module's name before 0.2.0, for type checkers: it imports (with a
# DeprecationWarning, see sharp_cer/spark/__init__.py) until 0.3.
from .stream_key_group import *  # noqa: F403
from .stream_key_group import KeyGroupStream as StreamGroup  # noqa: F401
